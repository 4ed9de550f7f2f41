/* check.h - private to the structural checker: its state and the
 * functions its files share.
 *   check.c      the walk: helpers, one function per directory slot kind,
 *                name uniqueness, the entry points (vfat_check*)
 *   check_fat.c  the FAT: volume-level checks, chains, free and lost clusters
 *   check_lfn.c  long name sets: slot order, checksum, padding, characters
 * Nothing here is part of the core's interface (include/vfat.h).
 */
#ifndef VFAT_CHECK_H
#define VFAT_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include "fat.h"
#include "names.h"

#define ROOT_OBJ 1u
#define MAX_ORD 63                 /* ordinal field is 6 bits */
#define UBUF_UNITS (MAX_ORD * VFAT_LFN_CHARS)
#define PATH_DEPTH 64              /* components shown in a finding */
#define PATH_LEN 8192
#define NAME_LEN (UBUF_UNITS * 3 * 4 + 64)
#define MAX_DIR_ENTRIES 65536      /* kernel FAT_MAX_DIR_SIZE / 32 */
#define MAX_LINES 100000           /* findings passed to report; all are counted */

/* One named thing in the tree: the root, a directory or a file. */
struct obj {
	uint32_t parent;
	uint32_t first;      /* first cluster (0: none / fixed root) */
	uint32_t nclaimed;   /* clusters of its chain it owns */
	/* its name, rendered only when a finding shows a path: the long
	 * name's units (name_len > 0: in ck.names) or else the short entry */
	uint32_t name_len;
	size_t name_off;
	const uint8_t *sde;  /* the short entry in the image (NULL: root) */
};

#define D_LFN 1u
#define D_DUMMY 2u

/* One live short entry of the directory being walked. */
struct dent {
	uint8_t sn[11];
	uint8_t flags;
	uint32_t obj;
	size_t slot;         /* index of the short entry in the directory */
	size_t lfn_off;      /* long name units in ck.units (folded later) */
	size_t lfn_len;
	size_t sdisp_off;    /* short display name units */
	size_t sdisp_len;
};

struct skey {
	uint8_t sn[11];
	uint32_t di;
};

struct lkey {
	const uint16_t *u;
	size_t len;
	int tag;             /* 0 = long name, 1 = short name */
	uint32_t di;
};

struct ck {
	const uint8_t *buf;
	size_t size;
	struct fat_geom g;
	const struct fatent_ops *ops;
	const uint8_t *fat;
	uint32_t maxc;       /* highest valid cluster number */
	uint32_t eoc_min;
	uint32_t epc;        /* directory entries per cluster */

	uint32_t *owner;     /* [maxc + 1]: object owning each cluster */
	uint32_t *claims;    /* the clusters given an owner, to clear next time */
	size_t nclaims, capclaims;
	struct obj *objs;
	size_t nobj, capobj;
	uint16_t *names;     /* long names of the objects (UTF-16 units) */
	size_t nnames, capnames;

	/* per directory */
	struct dent *dents;
	size_t ndents, capdents;
	uint16_t *units;
	size_t nunits, capunits;
	uint32_t *clist;
	size_t capclist;
	struct skey *skeys;
	size_t capskeys;
	struct lkey *lkeys;
	size_t caplkeys;

	uint32_t *stack;
	size_t nstack, capstack;
	uint32_t *kids;
	size_t nkids, capkids;

	vfat_report_fn report;
	void *rctx;
	long nfind;

	/* the root's first live volume label before the end mark */
	int has_root_label;
	uint8_t root_label[11];

	uint16_t ubuf[UBUF_UNITS];
	char path[PATH_LEN];
	char path2[PATH_LEN];
	char detail[PATH_LEN];
	char line[3 * PATH_LEN];
	char nbuf[NAME_LEN];
	char ebuf[NAME_LEN];
	char pnbuf[NAME_LEN];   /* path rendering: a component's name */
	char pebuf[NAME_LEN];
};

/* The long name set being read in a directory (check_lfn.c). */
enum lfn_state { LFN_NONE, LFN_OPEN, LFN_BROKEN };

struct lfn_set {
	enum lfn_state st;
	int nslots;          /* ordinal of the first slot */
	int expect;          /* next ordinal wanted */
	uint8_t csum;
	size_t start;        /* slot index of the first slot */
};

static inline uint32_t fatget(const struct ck *k, uint32_t c)
{
	return k->ops->get(k->fat, c) & k->ops->mask;
}

static inline const uint8_t *clus_data(const struct ck *k, uint32_t c)
{
	return k->buf + k->g.data_off + (uint64_t)(c - 2) * k->g.cluster_size;
}

/* check.c: tables, names, paths and findings */
int ck_grow(void **p, size_t *cap, size_t need, size_t elsz);
void ck_hex11(const uint8_t sn[11], char out[23]);
size_t ck_units_to_name(struct ck *k, const uint16_t *u, size_t n);
void ck_render_path(struct ck *k, uint32_t id, const char *extra,
		    char *out, size_t max);
#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
void ck_finding(struct ck *k, const char *kind, uint32_t id,
		const char *extra, const char *fmt, ...);

/* check_fat.c */
void ck_fat_before_walk(struct ck *k);
void ck_fat_after_walk(struct ck *k);
int ck_claim_chain(struct ck *k, uint32_t id, int is_root);
void ck_file_chain(struct ck *k, uint32_t id, uint32_t size);

/* check_label.c: boot sector and root labels, as fsck.fat compares them */
void ck_label(struct ck *k);

/* check_lfn.c */
void ck_lfn_interrupt(struct ck *k, uint32_t dir, struct lfn_set *s,
		      size_t at, const char *why);
void ck_lfn_slot(struct ck *k, uint32_t dir, struct lfn_set *s,
		 const uint8_t *de, size_t i);
int ck_lfn_attach(struct ck *k, uint32_t dir, const struct lfn_set *s,
		  const uint8_t *sn, size_t i);
size_t ck_lfn_len(const struct ck *k, const struct lfn_set *s);
size_t ck_lfn_finish(struct ck *k, uint32_t id, const struct lfn_set *s);

#endif
