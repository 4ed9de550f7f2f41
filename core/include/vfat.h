/* vfat.h - public API of the vfatfuzz VFAT core.
 *
 * The core has no global state: a volume handle carries the image buffer,
 * its geometry, the write options and the seeded random generator, so that a
 * fuzz target can run millions of iterations in one process.
 *
 * Every function returns 0 (or a count) on success and a negative errno
 * value on failure, as the Linux fat module does, so that outcomes can be
 * compared with a kernel applying the same op-script.
 */
#ifndef VFAT_H
#define VFAT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How a name that is not a valid 8.3 name under the creation rule gets its
 * short entry. */
enum vfat_names {
	VFAT_NAMES_NODUAL = 0, /* the seed patch: LFN slots + dummy short entry */
	VFAT_NAMES_DUAL = 1,   /* classic: LFN slots + generated alias BASE~N */
};

enum vfat_dummy {
	VFAT_DUMMY_V1 = 1, /* June 2009 seed: 20 00 r r r r r r 2F 00 00 */
	VFAT_DUMMY_V3 = 3, /* July 2009 revision: '~', '/', invalid chars */
};

/* Values match the kernel's VFAT_SFN_* combinations of shortname=. */
enum vfat_shortname {
	VFAT_SN_LOWER = 1, /* display lower, create win95 */
	VFAT_SN_WIN95 = 2, /* display win95, create win95 */
	VFAT_SN_WINNT = 3, /* display winnt, create winnt */
	VFAT_SN_MIXED = 4, /* display winnt, create win95 (Debian default) */
};

struct vfat_opts {
	enum vfat_names names;
	enum vfat_dummy dummy;
	int unique;                   /* redraw dummies until unique in dir */
	enum vfat_shortname shortname; /* v3 forces WINNT */
	uint64_t seed;                /* seeds dummies and (apart) hex tails */
};

/* Fill *o with the defaults: nodual, v1, not unique, mixed, seed 0. */
void vfat_opts_default(struct vfat_opts *o);

struct vfat_mkfs_opts {
	int fat_type;            /* 0 = choose from size, else 12, 16 or 32 */
	uint32_t sector_size;    /* 0 = 512 */
	uint32_t cluster_bytes;  /* 0 = choose like mkfs.fat */
	uint32_t nfats;          /* 0 = 2 */
	uint32_t root_entries;   /* FAT12/16; 0 = 512 (224 on tiny images) */
	uint32_t reserved;       /* reserved sectors; 0 = 1 (32 on FAT32) */
	uint32_t volume_id;
};

void vfat_mkfs_opts_default(struct vfat_mkfs_opts *o);

/* Format buf (size bytes) as an empty FAT volume. Deterministic: same
 * options and size give the same bytes. */
int vfat_mkfs(uint8_t *buf, size_t size, const struct vfat_mkfs_opts *o,
	      char *err, size_t errlen);

typedef struct vfat_vol vfat_vol;

/* Open an image held in memory. The volume writes into buf in place and
 * never keeps a pointer past vfat_close. err gets one line on failure
 * (-EINVAL: not a usable FAT image). */
int vfat_open(vfat_vol **out, uint8_t *buf, size_t size,
	      const struct vfat_opts *opts, char *err, size_t errlen);
void vfat_close(vfat_vol *v);

/* Paths are absolute, '/'-separated, UTF-8. */
int vfat_mkdir(vfat_vol *v, const char *path);
int vfat_create(vfat_vol *v, const char *path);       /* O_CREAT|O_EXCL */
int vfat_write(vfat_vol *v, const char *path, uint64_t off,
	       const uint8_t *data, size_t len);       /* file must exist */
int vfat_truncate(vfat_vol *v, const char *path, uint64_t size);
int vfat_read(vfat_vol *v, const char *path, uint64_t off, uint8_t *out,
	      size_t len, size_t *got);
int vfat_rename(vfat_vol *v, const char *from, const char *to);

/* A time as utimensat(2) takes it: seconds since the epoch, nanoseconds.
 * The core's local time is UTC (the kernel oracle mounts without tz= or
 * time_offset=, in a guest whose sys_tz is 0). */
struct vfat_time {
	int64_t sec;
	uint32_t nsec;
};
/* FAT_IOCTL_SET_ATTRIBUTES: attrs is a set of ATTR_RO 0x01, ATTR_HIDDEN
 * 0x02, ATTR_SYS 0x04, ATTR_ARCH 0x20 (others are ignored, as Linux does:
 * a directory keeps ATTR_DIR). The root takes only the empty set (EINVAL). */
int vfat_set_attrs(vfat_vol *v, const char *path, uint8_t attrs);
/* utimensat(path, {atime, mtime}): mtime to 2 s, atime to the day, both
 * clamped to 1980-01-01 .. 2107-12-31 23:59:58 as Linux 6.1 does. The
 * root has no entry: ok, nothing changes. */
int vfat_utimes(vfat_vol *v, const char *path, const struct vfat_time *mtime,
		const struct vfat_time *atime);
/* The volume label (boot sector and root-directory entry), as dosfstools'
 * fatlabel writes it: label is UTF-8, at most 11 CP437 bytes, none of
 * fatlabel's forbidden characters; "" removes the label. -EINVAL for a bad
 * label, -ENOSPC when a FAT12/16 root has no free slot for the entry. */
int vfat_set_label(vfat_vol *v, const char *label);
/* The label's 11 bytes in the boot sector (NULL when the boot sector has
 * no extended signature) and in the root entry (NULL when none). */
int vfat_get_label(vfat_vol *v, uint8_t boot[11], int *has_boot,
		   uint8_t root[11], int *has_root);
int vfat_unlink(vfat_vol *v, const char *path);
int vfat_rmdir(vfat_vol *v, const char *path);

struct vfat_stat {
	int is_dir;
	uint32_t size;
	uint32_t first_cluster;
	uint8_t attr;
};
int vfat_stat(vfat_vol *v, const char *path, struct vfat_stat *st);

/* One directory entry as readdir sees it. */
struct vfat_dirent {
	char name[1024];        /* UTF-8: the long name, else the short one */
	uint8_t shortname[11];  /* raw 11 bytes of the short entry */
	uint8_t attr;
	uint8_t ntcase;         /* byte 12 */
	uint32_t first_cluster;
	uint32_t size;
	int nlfn;               /* LFN slots in front of it (0 = none) */
	int is_dummy;           /* short entry is a v1 or v3 dummy */
	/* the three times as Linux 6.1 reads them (fat_time_fat2unix, UTC) */
	struct vfat_time mtime, atime, crtime;
};

/* Calls cb for each entry of directory path except "." and "..";
 * a non-zero return from cb stops the walk and is returned. */
typedef int (*vfat_readdir_cb)(void *ctx, const struct vfat_dirent *e);
int vfat_readdir(vfat_vol *v, const char *path, vfat_readdir_cb cb,
		 void *ctx);

/* Structural check of an image (does not modify it). report is called
 * once per finding with one line of text. Returns the number of findings,
 * or a negative errno when the image is unusable. */
typedef void (*vfat_report_fn)(void *ctx, const char *line);
int vfat_check(const uint8_t *buf, size_t size, vfat_report_fn report,
	       void *ctx);

/* The same check through a reusable checker: its tables stay allocated
 * between calls, so that a fuzz target checking after every op does not
 * allocate (vfat_check is vfat_checker_new + vfat_check_with + free).
 * A checker serves one caller at a time. */
typedef struct vfat_checker vfat_checker;
int vfat_checker_new(vfat_checker **out);     /* 0 or -ENOMEM */
void vfat_checker_free(vfat_checker *c);
int vfat_check_with(vfat_checker *c, const uint8_t *buf, size_t size,
		    vfat_report_fn report, void *ctx);

/* errno value -> "ENOENT" style name (for op results). */
const char *vfat_errname(int err);

#ifdef __cplusplus
}
#endif
#endif /* VFAT_H */
