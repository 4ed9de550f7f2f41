/* fat.h - internal layout of the core: geometry, FAT table operations,
 * directory layer. One file per concern, as Linux fs/fat:
 *   boot.c     boot sector parse/validate (geometry), FSInfo
 *   fatent.c   FAT12/16/32 behind one table of operations, chains
 *   mkfs.c     formatting
 *   dir.c      directory slots: iterate, parse LFN sets, search, add, remove
 *   namei.c    path walk and the operations (policies: dual, nodual v1/v3)
 *   file.c     attributes and times of an inode; misc.c FAT time fields
 *   label.c    the volume label (boot sector and root entry)
 *   names.c    pure name policy (names.h)
 *   check.c    structural checker (independent of dir.c's writer logic);
 *              check_fat.c its FAT checks, check_lfn.c its LFN checks
 */
#ifndef VFAT_FAT_H
#define VFAT_FAT_H

#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include "vfat.h"

#define DIRENT_SIZE 32
#define ATTR_RO 0x01
#define ATTR_HIDDEN 0x02
#define ATTR_SYS 0x04
#define ATTR_VOLUME 0x08
#define ATTR_DIR 0x10
#define ATTR_ARCH 0x20
#define ATTR_LFN 0x0F
#define DELETED_FLAG 0xE5
#define CASE_LOWER_BASE 0x08
#define CASE_LOWER_EXT 0x10
#define FAT_NO_83NAME 0x20

static inline uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}
/* All n bytes zero: one memcmp of the range against itself shifted by a
 * byte, so that a long free tail of a directory is skipped in one call
 * (per-slot loads cost a shadow check each under ASan). */
static inline int mem_all_zero(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}
static inline void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

/* Geometry read from (and validated against) the boot sector. All byte
 * offsets are checked to lie inside the image by fat_parse_boot. */
struct fat_geom {
	int fat_type;            /* 12, 16, 32 */
	uint32_t sector_size;
	uint32_t sec_per_clus;
	uint32_t cluster_size;   /* bytes */
	uint32_t reserved;       /* sectors */
	uint32_t nfats;
	uint32_t fat_sectors;    /* per FAT */
	uint32_t root_entries;   /* FAT12/16 */
	uint64_t total_sectors;
	uint64_t fat_off;        /* byte offset of FAT #0 */
	uint64_t fat_bytes;      /* bytes per FAT */
	uint64_t root_off;       /* FAT12/16 fixed root */
	uint32_t root_bytes;
	uint64_t data_off;       /* byte offset of cluster 2 */
	uint32_t nclusters;      /* data clusters: valid numbers 2..nclusters+1 */
	uint32_t root_cluster;   /* FAT32 */
	uint32_t fsinfo_sector;  /* FAT32, 0 = none */
};

/* Parse and validate; err gets one line. -EINVAL for unusable images. */
int fat_parse_boot(const uint8_t *buf, size_t size, struct fat_geom *g,
		   char *err, size_t errlen);

struct fatent_ops {
	uint32_t (*get)(const uint8_t *fat, uint32_t clus);
	void (*put)(uint8_t *fat, uint32_t clus, uint32_t val);
	uint32_t eoc;        /* value written for end of chain */
	uint32_t bad;        /* bad-cluster marker */
	uint32_t mask;
};
const struct fatent_ops *fatent_ops_for(int fat_type);

/* Cluster chains of recently opened directories: every operation walks
 * its path, and re-reading a long directory chain from the FAT dominated
 * creates in large directories. An entry dies when fat_set touches a
 * cluster in its [lo, hi] range. */
#define CHAIN_CACHE 4
struct chain_cache {
	uint32_t first, n, lo, hi;
	uint32_t *arr;           /* NULL = empty slot */
	uint64_t stamp;
};

struct vfat_vol {
	uint8_t *buf;
	size_t size;
	struct fat_geom g;
	const struct fatent_ops *ops;
	struct vfat_opts opts;
	uint64_t rng;            /* splitmix64 state of the dummies */
	uint64_t jrng;           /* splitmix64 state of the jiffies stand-in */
	uint32_t free_hint;      /* next cluster to try when allocating */
	uint32_t free_count;     /* tracked for FSInfo on FAT32 */
	struct dix_cache *dix;   /* name indexes of large directories */
	struct inode_table *inodes; /* entries' on-disk bytes until write-back */
	struct chain_cache cc[CHAIN_CACHE];
	uint64_t cc_clock;
};

/* Two seeded streams, so that the dummies do not depend on whether an
 * alias needed the hex-tail fallback (which reads jiffies in the kernel):
 * vol_rand32 feeds the dummies (state = seed), vol_jiffies32 the hex tail
 * (state = seed ^ VFAT_JIFFIES_SALT). Both are splitmix64; the ported
 * kernel module (nodual_seed) draws the same two streams. */
#define VFAT_JIFFIES_SALT 0x6A09E667F3BCC908ull
uint32_t vol_rand32(void *v);     /* takes a vfat_vol * */
uint32_t vol_jiffies32(void *v);  /* takes a vfat_vol * */
/* The July 2009 reader side (FAT_NO_83NAME) is in force: nodual v3. */
static inline int vol_no83name(const vfat_vol *v)
{
	return v->opts.names == VFAT_NAMES_NODUAL && v->opts.dummy == VFAT_DUMMY_V3;
}

/* FAT access on the volume (writes go to every FAT copy). */
uint32_t fat_get(const vfat_vol *v, uint32_t clus);
void fat_set(vfat_vol *v, uint32_t clus, uint32_t val);
int fat_is_eoc(const vfat_vol *v, uint32_t val);
int fat_valid_cluster(const vfat_vol *v, uint32_t clus);
uint8_t *cluster_ptr(const vfat_vol *v, uint32_t clus);
/* Allocate one free cluster, zero it, mark it EOC and link it after
 * prev (0 = none). -ENOSPC when full. */
int fat_alloc_cluster(vfat_vol *v, uint32_t prev, uint32_t *out);
/* Free a whole chain (bounded: stops at loops and bad links). */
void fat_free_chain(vfat_vol *v, uint32_t first);
/* Collect the chain into a malloc'd array; -EIO on loop, bad link or
 * cross-image pointer. */
int fat_chain(const vfat_vol *v, uint32_t first, uint32_t **out, uint32_t *n);
/* The same into buf while the chain fits in bufn entries (*out == buf),
 * else into a malloc'd array: the caller frees *out when it is not buf. */
int fat_chain_buf(const vfat_vol *v, uint32_t first, uint32_t *buf, uint32_t bufn,
		  uint32_t **out, uint32_t *n);
/* The same through the directory chain cache: *out is buf when the chain
 * fits in bufn entries, else a malloc'd array the caller frees. Either
 * way a copy: fat_set may drop the cached array while the caller still
 * uses the chain (a directory that grows). */
int fat_dir_chain(vfat_vol *v, uint32_t first, uint32_t *buf, uint32_t bufn,
		  uint32_t **out, uint32_t *n);
void fat_chain_cache_free(vfat_vol *v);
void fat_update_fsinfo(vfat_vol *v);

#endif /* VFAT_FAT_H */

/* ---- directory layer (dir.c) ---------------------------------------- */

#define FAT_MAX_DIR_SLOTS 65536   /* kernel FAT_MAX_DIR_SIZE / 32 */

/* A directory opened for one operation: its cluster chain is collected
 * once so that slot i maps to bytes in O(1). first == 0 is the root. */
/* Most directories span a few clusters: their chain lives in the handle
 * (no malloc per lookup; a fat_dir is never copied by value). */
#define DIR_INLINE_CLUSTERS 8

struct fat_dir {
	vfat_vol *v;
	uint32_t first;      /* cluster in '..' terms: 0 = root */
	int fixed;           /* FAT12/16 root region */
	uint32_t *clus;      /* inl, or malloc'd when the chain is longer */
	uint32_t nclus;
	size_t nslots;
	uint32_t inl[DIR_INLINE_CLUSTERS];
};

/* One entry: its LFN slots (if a valid set precedes it) and short entry. */
struct fat_entry {
	size_t start;        /* first slot of the set */
	size_t pos;          /* slot of the short entry */
	int nlfn;            /* 0 = no (valid) long name */
	size_t ulen;
	uint16_t uname[256]; /* long name if nlfn, else the short display name */
	uint8_t *de;         /* the short entry, inside the image */
};

int dir_open(vfat_vol *v, uint32_t first, struct fat_dir *d);
void dir_close(struct fat_dir *d);
uint8_t *dir_slot(const struct fat_dir *d, size_t i);
/* Next entry from *cursor: 1 = got one, 0 = end. Skips '.', '..',
 * volume labels, deleted and free slots, as fat_search_long does. */
int dir_next(struct fat_dir *d, size_t *cursor, struct fat_entry *e,
	     int want_dots);
/* Find a name (UTF-16, already stripped): long name or short display
 * name, case-insensitively. 0 = found, -ENOENT. */
int dir_find(struct fat_dir *d, const uint16_t *u, size_t ulen,
	     struct fat_entry *e);
/* Which names of entry e a lookup compares, as fat_search_long of the
 * volume's mode: DIR_CMP_NAME = e->uname (the long name, or the display
 * name of a short-only entry), DIR_CMP_ALIAS = the short name of an entry
 * that has a long name too. Dual and v1: everything but the short name of
 * a dummy. v3 (July 2009, FAT_NO_83NAME): an entry whose NT byte has 0x20
 * is found by its long name only, whatever its 11 bytes. */
#define DIR_CMP_NAME 1
#define DIR_CMP_ALIAS 2
int dir_compared(const vfat_vol *v, const struct fat_entry *e);
/* What a slot is to the short-name scans: not a short entry (LFN, free,
 * volume label), one fat_scan sees, or one it does not (v3, NT byte 0x20:
 * FAT_NO_83NAME). */
#define DIR_SHORT_NONE 0
#define DIR_SHORT_SEEN 1
#define DIR_SHORT_HIDDEN 2
int dir_short_kind(const vfat_vol *v, const uint8_t *de);
/* 1 when vfat_find_form (fat_scan) sees this short entry: every in-use
 * short entry, except in v3 those with the NT byte's 0x20 (FAT_NO_83NAME). */
int dir_scan_sees(const vfat_vol *v, const uint8_t *de);
/* 1 when a short entry with these 11 bytes exists (vfat_find_form). */
int dir_short_exists(struct fat_dir *d, const uint8_t sn[11]);
/* 1 when any in-use short entry holds these 11 bytes, hidden ones included:
 * --unique redraws a dummy until no entry of the directory repeats it. */
int dir_bytes_exist(struct fat_dir *d, const uint8_t sn[11]);
/* Write n prepared slots (LFN slots then the short entry) into the
 * first run of n free slots, growing the directory as fat_add_entries
 * does; *pos gets the short entry's slot. */
int dir_add_slots(struct fat_dir *d, const uint8_t *slots, int n,
		  size_t *pos);
/* Mark slots start..pos deleted (0xE5). */
void dir_remove(struct fat_dir *d, size_t start, size_t pos);
/* 1 when the directory holds nothing but '.', '..' (fat_dir_empty). */
int dir_is_empty(struct fat_dir *d);

/* namei.c: the short entry a path names (inside the image), for the ops
 * on an inode (setattr, utimes); *de = NULL for the root, which has none.
 * "name/" must be a directory (ENOTDIR). */
int namei_resolve(vfat_vol *v, const char *path, uint8_t **de);
/* misc.c: FAT times <-> seconds since the epoch (UTC), Linux's rules. */
int64_t fat_clamp_time(int64_t sec);   /* into 1980-01-01 .. 2107-12-31 23:59:58 */
void fat_time_unix2fat(int64_t sec, uint16_t *time, uint16_t *date);
int64_t fat_time_fat2unix(uint16_t time, uint16_t date);
/* Stamp the core's "now" on an entry's modify time. */
void fat_stamp_mtime(uint8_t *de);
/* inode.c: a short entry's on-disk bytes between Linux's write-backs.
 * inode_written: the slot at de was written to disk as disk (add_entry);
 * inode_dirty: its in-memory inode is about to change (keeps the bytes it
 * holds now, unless recorded already); inode_remove: mark the short entry
 * deleted over its on-disk bytes (unlink, rmdir, a rename's old name). */
void inode_written(vfat_vol *v, const uint8_t *de, const uint8_t *disk);
void inode_dirty(vfat_vol *v, const uint8_t *de);
void inode_remove(vfat_vol *v, uint8_t *de);
/* inode_mmu: a file's mmu_private (its size for a file this mount has not
 * written); inode_set_mmu: what an op left it at. */
uint64_t inode_mmu(vfat_vol *v, const uint8_t *de);
void inode_set_mmu(vfat_vol *v, const uint8_t *de, uint64_t mmu);
void inode_free(vfat_vol *v);
/* The high word only counts on FAT32 (kernel fat_get_start). */
/* dirindex.c: accelerator behind dir_find/dir_short_exists/dir_add_slots */
void dix_free(vfat_vol *v);
void dix_invalidate(vfat_vol *v, uint32_t first);
int dix_find(struct fat_dir *d, const uint16_t *u, size_t ulen, struct fat_entry *e); /* 1 = no index */
int dix_short_exists(struct fat_dir *d, const uint8_t sn[11], int hidden_too);        /* -1 = no index */
size_t dix_free_hint(struct fat_dir *d);
void dix_added(struct fat_dir *d, size_t start, size_t pos);
void dix_removing(struct fat_dir *d, size_t start, size_t pos);

static inline uint32_t de_start(const vfat_vol *v, const uint8_t *de)
{
	uint32_t c = get16(de + 26);
	if (v->g.fat_type == 32)
		c |= (uint32_t)get16(de + 20) << 16;
	return c;
}
static inline void de_set_start(uint8_t *de, uint32_t c)
{
	put16(de + 26, (uint16_t)c);
	put16(de + 20, (uint16_t)(c >> 16));
}
