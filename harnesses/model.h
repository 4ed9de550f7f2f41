/* model.h - in-process model of the tree a VFAT writer should produce,
 * used by fuzz_ops to predict the result of every op and to compare the
 * core's listing with it.
 *
 * The model follows the Linux 6.1 vfat semantics the core documents
 * (docs/write-paths.md, docs/op-script.md): names are keyed case-
 * insensitively with ASCII folding, trailing dots are stripped, a
 * clash is EEXIST, a case-only rename is a no-op, rename replaces an
 * existing file (or empty directory) in place (the target keeps its
 * name), rmdir of a non-empty directory is ENOTEMPTY, and the errno
 * precedence of the core's path walk is reproduced. It decodes UTF-8
 * and checks long-name validity itself; it borrows from names.h only
 * what depends on the short-name tables (vfat_create_shortname to know
 * whether a name is stored as a bare 8.3 entry or whose 8.3 form
 * already exists, and the display of an alias).
 *
 * Capacity. Given the volume's free clusters, cluster size and root
 * (model_space_read, from the image before the script), the model keeps
 * a free-cluster count and a slot table per directory, and predicts
 * ENOSPC as Linux 6.1 (and the core) answer it: a write or a truncate
 * growth goes page by page (4 KiB), the zero gap first, and when a page
 * cannot get its clusters the file is cut back to the largest page
 * boundary its clusters plus every free one reach (a write: or its
 * offset, when the gap got that far), never below its old size; the op
 * answers ENOSPC and keeps what it wrote (model.fail_changed says so). A
 * new directory takes its cluster before its name is checked (given back
 * when its entry finds no room). An entry takes a bare 8.3 slot or
 * ceil(UTF-16 units / 13) LFN slots and its short entry, in the first
 * run of free slots long enough; a subdirectory or FAT32 root out of
 * such a run takes its free tail and the new clusters the rest needs,
 * all or none, up to 65536 slots; the FAT12/16 root is fixed. unlink,
 * rmdir and a replacing rename free the clusters of what goes; a new
 * volume label takes one root slot. Without a space (model_init's sp
 * NULL) capacity is unbounded.
 *
 * Why two models. This C model runs in fuzz_ops' process after every op,
 * thousands of times a second, so it covers only what the fuzz target
 * checks: the ops' results (errno precedence and ENOSPC included), the
 * tree (names as listed, types, sizes, contents, attribute bytes, the
 * times a touch set), which new names are bare 8.3 entries, and the
 * capacity of the core's own volumes (the Linux rules above). The volume
 * label is predicted as a result only (its bytes are the checker's to
 * judge). It does not compute dual-mode aliases: it learns the short
 * entries the core wrote from the core's own listing (mnode.seen, sn),
 * and it knows no PATH_MAX and no writer but the kernel's semantics. The
 * Python model (vfz/model/) is the campaign's and diff's oracle for every
 * writer, the real kernel included: it predicts aliases itself, PATH_MAX,
 * capacity read from any image (vfz/model/space.py, root.py), and the
 * profiles of writers that differ by design (mtools, vvfat). Both are
 * written from Linux's fs/fat and VFS rules, independently of the core
 * and of each other; tests/test_models_agree.py runs the same `vfat gen`
 * scripts through both (this one through harnesses/model_driver.c), on a
 * large volume and on small ones that fill, and compares their per-op
 * results (ENOSPC included) wherever both model an op.
 */
#ifndef VFZ_MODEL_H
#define VFZ_MODEL_H
#include <stddef.h>
#include <stdint.h>
#include "vfat.h"
#include "opscript.h"

struct mnode {
	char *name;              /* UTF-8, as the listing must show it */
	uint16_t u[256];         /* the same name in UTF-16 */
	size_t ulen;
	int is_dir;
	struct mnode *parent;
	struct mnode **kids;
	size_t nkids, capkids;
	uint8_t *data;           /* file content */
	uint32_t size, cap;
	/* naming: the prediction made when the entry was (re)named, and
	 * what the core's listing showed last (filled in by the harness) */
	int pred_pending;        /* prediction not yet compared */
	int pred_short;          /* 1: bare 8.3 entry pred_sn/pred_lcase */
	uint8_t pred_sn[11], pred_lcase;
	int seen;
	uint8_t sn[11], ntcase;
	int nlfn;
	int touched;             /* content changed: verify it */
	/* the inode: attribute byte, and the modify/access times when a
	 * touch set them (0: stamped by the writer's clock, not predicted) */
	uint8_t attr;
	int times_known;
	int64_t mtime, atime;
	/* capacity (a bounded model only): the slots this entry takes in its
	 * parent's table, and a directory's own table */
	uint32_t slot0, nslot;
	struct mtable *tab;
	/* a file's mmu_private (core/src/inode.c): where a write past the
	 * end starts its zero-fill; 0 for a new node (the model's nodes are
	 * all made by ops) */
	uint32_t mmu;
};

/* A directory's slots: used[i] for slot i; per slots per cluster (0: the
 * fixed FAT12/16 root, which cannot grow). */
struct mtable {
	uint8_t *used;
	uint32_t n, per;
};

/* What the model's capacity starts from: read once per image. */
struct model_space {
	uint32_t free;          /* free data clusters */
	uint32_t cs;            /* bytes per cluster */
	uint32_t bs;            /* bytes per block (the sector): mmu_private's unit */
	uint32_t root_per;      /* 0: fixed root of root_n slots; else FAT32, slots per cluster */
	uint32_t root_n;        /* root slots (FAT32: its clusters x root_per) */
	uint8_t *root_used;     /* root_n flags: slots in use before the script */
	long label_slot;        /* the root's label entry, or -1 */
};

struct model {
	struct mnode *root;
	struct vfat_opts opts;
	enum vfat_shortname rule;   /* creation rule in force */
	/* directories whose listing the last successful op changed (the
	 * parents of its paths, a new or moved directory): fuzz_ops
	 * compares only these after the op, the whole tree at the end */
	struct mnode *changed[4];
	int nchanged;
	/* capacity: bounded (a space was given), its free clusters and
	 * cluster size, the root label's slot (-1: none) */
	int bounded;
	uint32_t free, cs, bs;     /* bs: bytes per block (sector) */
	long label_slot;
	/* the last op failed (ENOSPC) but changed the tree: a write or
	 * truncate growth kept some pages, or only stamped the file's mtime;
	 * fail_node is the file */
	int fail_changed;
	struct mnode *fail_node;
};

/* The space of an image (free clusters, cluster size, the root's slots);
 * 0, or -EINVAL when the image is not usable. Free with model_space_free. */
int model_space_read(struct model_space *sp, const uint8_t *img, size_t size);
void model_space_free(struct model_space *sp);
/* sp NULL: unbounded capacity. */
void model_init(struct model *m, const struct vfat_opts *o, const struct model_space *sp);
void model_free(struct model *m);
/* Linux 6.1's stored times for utimensat's (clamp to FAT's range, then
 * 2 s for the modify time, the UTC day for the access date). */
int64_t model_mtime(int64_t sec);
int64_t model_atime(int64_t sec);
/* Predict the result of op and, when it is 0, apply it to the model. */
int model_apply(struct model *m, const struct vfat_op *op);
/* Case-insensitive (ASCII) equality of two UTF-16 names. */
int model_name_eq(const uint16_t *a, size_t alen, const uint16_t *b, size_t blen);
#endif
