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
 * Why two models. This C model runs in fuzz_ops' process after every op,
 * thousands of times a second, so it covers only what the fuzz target
 * checks: the ops' results (errno precedence included), the tree
 * (names as listed, types, sizes, contents, attribute bytes, the times a
 * touch set) and which new names are bare 8.3 entries. The volume label
 * is predicted as a result only (its bytes are the checker's to judge). It does not compute dual-mode aliases: it learns the short
 * entries the core wrote from the core's own listing (mnode.seen, sn),
 * and it knows no space limits (fuzz_ops' decoder keeps scripts inside
 * the volume), no PATH_MAX, no writer but the kernel's semantics. The
 * Python model (vfz/model/) is the campaign's and diff's oracle for every
 * writer, the real kernel included: it predicts aliases itself, the
 * FAT12/16 root filling up (ENOSPC), PATH_MAX, and the profiles of writers
 * that differ by design (mtools). Both are written from Linux's fs/fat
 * and VFS rules, independently of the core and of each other;
 * tests/test_models_agree.py runs the same `vfat gen` scripts through both
 * (this one through harnesses/model_driver.c) and compares their per-op
 * results wherever both model an op.
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
};

void model_init(struct model *m, const struct vfat_opts *o);
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
