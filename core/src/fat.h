/* fat.h - internal layout of the core: geometry, FAT table operations,
 * directory layer. One file per concern, as Linux fs/fat:
 *   boot.c     boot sector parse/validate (geometry), FSInfo
 *   fatent.c   FAT12/16/32 behind one table of operations, chains
 *   mkfs.c     formatting
 *   dir.c      directory slots: iterate, parse LFN sets, search, add, remove
 *   namei.c    path walk and the operations (policies: dual, nodual v1/v3)
 *   names.c    pure name policy (names.h)
 *   check.c    structural checker (independent of dir.c's writer logic)
 */
#ifndef VFAT_FAT_H
#define VFAT_FAT_H

#include <stddef.h>
#include <stdint.h>
#include <errno.h>
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

struct vfat_vol {
	uint8_t *buf;
	size_t size;
	struct fat_geom g;
	const struct fatent_ops *ops;
	struct vfat_opts opts;
	uint64_t rng;            /* splitmix64 state */
	uint32_t free_hint;      /* next cluster to try when allocating */
	uint32_t free_count;     /* tracked for FSInfo on FAT32 */
};

uint32_t vol_rand32(void *v);   /* takes a vfat_vol * */

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
void fat_update_fsinfo(vfat_vol *v);

#endif /* VFAT_FAT_H */
