/* gen.h - random names from the docs/op-script.md name classes and random
 * op-scripts over them (vfat gen, fuzz targets, campaign). Seeded:
 * the same seed gives the same script everywhere. */
#ifndef VFAT_GEN_H
#define VFAT_GEN_H
#include <stddef.h>
#include <stdint.h>
#include "opscript.h"

enum vfat_name_class {
	NC_UPPER83, NC_LOWER83, NC_LONG, NC_SLOT13, NC_N255, NC_LATIN, NC_CJK,
	NC_ASTRAL, NC_DOTS, NC_SPACES, NC_TRAILDOTS, NC_LONGCHARS, NC_INVALID,
	NC_RESERVED, NC_CASE, NC_E5, NC_CP437, NC_LOWBYTE, NC_MARKS, NC_COUNT
};

extern const char *const vfat_name_class_names[NC_COUNT];

struct vfat_rng { uint64_t s; };
uint32_t vfat_rng32(struct vfat_rng *r);
uint32_t vfat_rng_below(struct vfat_rng *r, uint32_t n);

/* Parse "upper83,cjk,..." (or "all") into a bit mask; -EINVAL names the
 * first unknown class in err. */
int vfat_name_classes_parse(const char *list, uint32_t *mask, char *err, size_t errlen);
/* A random name of class c (UTF-8, NUL-terminated) into out[max]. */
void vfat_gen_name(struct vfat_rng *r, int c, char *out, size_t max);
/* Append nops random ops to s: the six ops of the first grammar. */
int vfat_gen_script(uint64_t seed, int nops, uint32_t class_mask, struct vfat_script *s);
/* The same, and with meta about one op in four of the second grammar
 * (truncate, chattr, touch, label) drawn from a stream of its own: the
 * other ops are those of vfat_gen_script for the seed, in order. */
int vfat_gen_script_meta(uint64_t seed, int nops, uint32_t class_mask, int meta,
			 struct vfat_script *s);
#endif
