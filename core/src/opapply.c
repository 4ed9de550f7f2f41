/* opapply.c - apply one op of an op-script to a volume: each op maps to
 * the core's calls and returns 0 or -errno. Kept apart from the parser
 * (opscript.c) because fuzz_ops compiles comparison tracing only into
 * the code that reads input bytes: here the per-byte content loop would
 * otherwise run a trace-cmp callback for every byte written (~4% of
 * fuzz_ops' time, measured with perf).
 */
#include <stdlib.h>
#include <errno.h>
#include "opscript.h"

void vfat_content(uint32_t seed, uint8_t *buf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (uint8_t)((seed + 31u * (uint32_t)i) & 0xFF);
}

static int apply_data(vfat_vol *v, const char *path, uint32_t off, uint32_t size,
		      uint32_t seed)
{
	uint8_t *buf;
	int r;

	if (size == 0)
		return vfat_write(v, path, off, NULL, 0);
	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	vfat_content(seed, buf, size);
	r = vfat_write(v, path, off, buf, size);
	free(buf);
	return r;
}

int vfat_op_apply(vfat_vol *v, const struct vfat_op *op)
{
	int r;

	switch (op->kind) {
	case OP_MKDIR: return vfat_mkdir(v, op->a);
	case OP_CREATE:
		r = vfat_create(v, op->a);
		if (r == 0 && op->n[0])
			r = apply_data(v, op->a, 0, op->n[0], op->n[1]);
		return r;
	case OP_WRITE: return apply_data(v, op->a, op->n[0], op->n[1], op->n[2]);
	case OP_RENAME: return vfat_rename(v, op->a, op->b);
	case OP_UNLINK: return vfat_unlink(v, op->a);
	case OP_RMDIR: return vfat_rmdir(v, op->a);
	case OP_TRUNCATE: return vfat_truncate(v, op->a, op->n[0]);
	case OP_CHATTR: return vfat_set_attrs(v, op->a, (uint8_t)op->n[0]);
	case OP_TOUCH: return vfat_utimes(v, op->a, &op->t[0], &op->t[1]);
	case OP_LABEL: return vfat_set_label(v, op->a);
	}
	return -EINVAL;
}
