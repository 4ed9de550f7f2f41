/* super.c - the volume handle: open, close, options, seeded generator. */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "fat.h"

void vfat_opts_default(struct vfat_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->names = VFAT_NAMES_NODUAL;
	o->dummy = VFAT_DUMMY_V1;
	o->shortname = VFAT_SN_MIXED;
}

/* splitmix64: small, fast, and the same sequence on every platform, so a
 * seed printed by one run replays the same dummies in another. */
static uint32_t splitmix32(uint64_t *state)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return (uint32_t)((z ^ (z >> 31)) >> 32);
}

uint32_t vol_rand32(void *p)
{
	return splitmix32(&((vfat_vol *)p)->rng);
}

uint32_t vol_jiffies32(void *p)
{
	return splitmix32(&((vfat_vol *)p)->jrng);
}

/* As fat_fill_super: prev_free starts at 2, or the FSInfo hint on FAT32. */
static void read_fsinfo(vfat_vol *v)
{
	const uint8_t *fi;
	uint32_t max = v->g.nclusters + 2;

	v->free_hint = 2;
	v->free_count = 0xFFFFFFFF;
	if (v->g.fat_type == 32 && v->g.fsinfo_sector) {
		fi = v->buf + (uint64_t)v->g.fsinfo_sector * v->g.sector_size;
		if (get32(fi) == 0x41615252 && get32(fi + 484) == 0x61417272) {
			v->free_count = get32(fi + 488);
			v->free_hint = get32(fi + 492);
		}
	}
	if (v->free_count != 0xFFFFFFFF && v->free_count > v->g.nclusters)
		v->free_count = 0xFFFFFFFF;
	v->free_hint %= max;
	if (v->free_hint < 2)
		v->free_hint = 2;
}

int vfat_open(vfat_vol **out, uint8_t *buf, size_t size,
	      const struct vfat_opts *opts, char *err, size_t errlen)
{
	vfat_vol *v;
	int r;

	*out = NULL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	r = fat_parse_boot(buf, size, &v->g, err, errlen);
	if (r) {
		free(v);
		return r;
	}
	v->buf = buf;
	v->size = size;
	v->ops = fatent_ops_for(v->g.fat_type);
	if (opts)
		v->opts = *opts;
	else
		vfat_opts_default(&v->opts);
	v->rng = v->opts.seed;
	v->jrng = v->opts.seed ^ VFAT_JIFFIES_SALT;
	read_fsinfo(v);
	*out = v;
	return 0;
}

void vfat_close(vfat_vol *v)
{
	if (!v)
		return;
	fat_update_fsinfo(v);
	dix_free(v);
	inode_free(v);
	fat_chain_cache_free(v);
	free(v);
}

const char *vfat_errname(int err)
{
	switch (-err) {
	case 0: return "ok";
	case ENOENT: return "ENOENT";
	case EIO: return "EIO";
	case ENOMEM: return "ENOMEM";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case ENOTDIR: return "ENOTDIR";
	case EISDIR: return "EISDIR";
	case EINVAL: return "EINVAL";
	case EFBIG: return "EFBIG";
	case ENOSPC: return "ENOSPC";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case ENOTEMPTY: return "ENOTEMPTY";
	case ELOOP: return "ELOOP";
	default: return "EUNKNOWN";
	}
}
