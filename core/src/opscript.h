/* opscript.h - the op-script format of docs/op-script.md, parsed and applied.
 * The parser is strict (one clear error with the line number); the
 * applier maps each op to the core's calls and returns 0 or -errno. */
#ifndef VFAT_OPSCRIPT_H
#define VFAT_OPSCRIPT_H
#include <stddef.h>
#include <stdint.h>
#include "vfat.h"

/* New kinds go at the end: fuzz inputs and generated scripts name kinds
 * by number (fuzzinput.c, gen.c). */
enum vfat_opkind { OP_MKDIR, OP_CREATE, OP_WRITE, OP_RENAME, OP_UNLINK, OP_RMDIR,
		   OP_TRUNCATE, OP_CHATTR, OP_TOUCH, OP_LABEL };
#define VFAT_OP_KINDS (OP_LABEL + 1)

#define VFAT_OP_MAX_SIZE (1u << 26)   /* 64 MiB per create/write/truncate */
#define VFAT_OP_MAX_SEC 0x7FFFFFFFFFFFFFFFull   /* a touch time fits a time_t */

struct vfat_op {
	enum vfat_opkind kind;
	char *a, *b;          /* paths (UTF-8, NUL-free); label: a = the text */
	uint32_t n[3];        /* create: size seed; write: offset size seed;
			       * truncate: size; chattr: the attribute byte */
	struct vfat_time t[2];  /* touch: mtime, atime */
	int line;
};

struct vfat_script {
	struct vfat_op *ops;
	size_t n, cap;
};

int vfat_script_parse(const char *text, size_t len, struct vfat_script *s,
		      char *err, size_t errlen);
void vfat_script_free(struct vfat_script *s);
const char *vfat_op_name(enum vfat_opkind k);
/* byte i = (seed + 31*i) mod 256 */
void vfat_content(uint32_t seed, uint8_t *buf, size_t n);
int vfat_op_apply(vfat_vol *v, const struct vfat_op *op);
/* Append op to s (copies the strings); 0 or -ENOMEM. */
int vfat_script_add(struct vfat_script *s, const struct vfat_op *op);
/* Write an op as one script line (JSON-escaped) into out. */
int vfat_op_format(const struct vfat_op *op, char *out, size_t max);
#endif
