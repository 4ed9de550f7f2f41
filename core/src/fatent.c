/* fatent.c - FAT12/16/32 behind one table of operations, and chains.
 *
 * Callers pass only cluster numbers already checked with
 * fat_valid_cluster (or 0/1, which map inside FAT sector 0), so get/put
 * never leave the FAT: fat_parse_boot guarantees the FAT holds
 * nclusters + 2 entries.
 */
#include <stdlib.h>
#include <string.h>
#include "fat.h"

static uint32_t fat12_get(const uint8_t *fat, uint32_t c)
{
	uint32_t v = get16(fat + c + c / 2);
	return (c & 1) ? v >> 4 : v & 0xFFF;
}

static void fat12_put(uint8_t *fat, uint32_t c, uint32_t val)
{
	uint8_t *p = fat + c + c / 2;

#ifdef VFAT_FAULT_FAT12_PACKING
	/* planted fault: odd clusters packed as if they were even */
	c &= ~1u;
#endif
	if (c & 1) {
		p[0] = (uint8_t)((p[0] & 0x0F) | (val & 0x0F) << 4);
		p[1] = (uint8_t)(val >> 4);
	} else {
		p[0] = (uint8_t)val;
		p[1] = (uint8_t)((p[1] & 0xF0) | ((val >> 8) & 0x0F));
	}
}

static uint32_t fat16_get(const uint8_t *fat, uint32_t c) { return get16(fat + 2 * c); }
static void fat16_put(uint8_t *fat, uint32_t c, uint32_t val) { put16(fat + 2 * c, (uint16_t)val); }

static uint32_t fat32_get(const uint8_t *fat, uint32_t c) { return get32(fat + 4 * c) & 0x0FFFFFFF; }
static void fat32_put(uint8_t *fat, uint32_t c, uint32_t val)
{
	/* the top four bits are reserved and must be preserved */
	uint32_t old = get32(fat + 4 * c);
	put32(fat + 4 * c, (old & 0xF0000000) | (val & 0x0FFFFFFF));
}

static const struct fatent_ops fat12_ops = { fat12_get, fat12_put, 0xFFF, 0xFF7, 0xFFF };
static const struct fatent_ops fat16_ops = { fat16_get, fat16_put, 0xFFFF, 0xFFF7, 0xFFFF };
static const struct fatent_ops fat32_ops = { fat32_get, fat32_put, 0x0FFFFFFF, 0x0FFFFFF7, 0x0FFFFFFF };

const struct fatent_ops *fatent_ops_for(int fat_type)
{
	switch (fat_type) {
	case 12: return &fat12_ops;
	case 16: return &fat16_ops;
	default: return &fat32_ops;
	}
}

uint32_t fat_get(const vfat_vol *v, uint32_t clus)
{
	return v->ops->get(v->buf + v->g.fat_off, clus);
}

static void cc_drop(struct chain_cache *c)
{
	free(c->arr);
	c->arr = NULL;
}

void fat_chain_cache_free(vfat_vol *v)
{
	for (int i = 0; i < CHAIN_CACHE; i++)
		cc_drop(&v->cc[i]);
}

void fat_set(vfat_vol *v, uint32_t clus, uint32_t val)
{
	uint32_t i;

	for (int k = 0; k < CHAIN_CACHE; k++)
		if (v->cc[k].arr && clus >= v->cc[k].lo && clus <= v->cc[k].hi)
			cc_drop(&v->cc[k]);

	for (i = 0; i < v->g.nfats; i++) {
#ifdef VFAT_FAULT_SECOND_FAT
		/* planted fault: only the first FAT is written */
		if (i > 0)
			break;
#endif
		v->ops->put(v->buf + v->g.fat_off + i * v->g.fat_bytes, clus, val);
	}
}

int fat_is_eoc(const vfat_vol *v, uint32_t val)
{
	return val >= (v->ops->bad + 1);
}

int fat_valid_cluster(const vfat_vol *v, uint32_t clus)
{
	return clus >= 2 && clus <= v->g.nclusters + 1;
}

uint8_t *cluster_ptr(const vfat_vol *v, uint32_t clus)
{
	return v->buf + v->g.data_off + (uint64_t)(clus - 2) * v->g.cluster_size;
}

int fat_chain_buf(const vfat_vol *v, uint32_t first, uint32_t *buf, uint32_t bufn,
		  uint32_t **out, uint32_t *n)
{
	uint32_t cap = bufn, cnt = 0, c = first;
	uint32_t *arr = buf;

	*out = NULL;
	*n = 0;
	if (first == 0)
		return 0;
	if (!arr || !cap) {
		cap = 16;
		arr = malloc(cap * sizeof(*arr));
		if (!arr)
			return -ENOMEM;
	}
	while (1) {
		if (!fat_valid_cluster(v, c) || cnt > v->g.nclusters) {
			if (arr != buf)
				free(arr);      /* bad link, or longer than the volume: loop */
			return -EIO;
		}
		if (cnt == cap) {
			uint32_t *na = arr == buf ? malloc((size_t)cap * 2 * sizeof(*arr))
						  : realloc(arr, (size_t)cap * 2 * sizeof(*arr));
			if (!na) {
				if (arr != buf)
					free(arr);
				return -ENOMEM;
			}
			if (arr == buf)
				memcpy(na, buf, (size_t)cap * sizeof(*arr));
			arr = na;
			cap *= 2;
		}
		arr[cnt++] = c;
		c = fat_get(v, c);
		if (fat_is_eoc(v, c))
			break;
	}
	*out = arr;
	*n = cnt;
	return 0;
}

int fat_chain(const vfat_vol *v, uint32_t first, uint32_t **out, uint32_t *n)
{
	return fat_chain_buf(v, first, NULL, 0, out, n);
}

static int chain_copy(const uint32_t *arr, uint32_t n, uint32_t *buf, uint32_t bufn,
		      uint32_t **out)
{
	uint32_t *dst = buf;

	if (n > bufn) {
		dst = malloc((size_t)n * sizeof(*dst));
		if (!dst)
			return -ENOMEM;
	}
	memcpy(dst, arr, (size_t)n * sizeof(*dst));
	*out = dst;
	return 0;
}

int fat_dir_chain(vfat_vol *v, uint32_t first, uint32_t *buf, uint32_t bufn,
		  uint32_t **out, uint32_t *n)
{
	struct chain_cache *c, *victim = &v->cc[0];
	uint32_t *arr;
	int r;

	for (int k = 0; k < CHAIN_CACHE; k++) {
		c = &v->cc[k];
		if (c->arr && c->first == first) {
			r = chain_copy(c->arr, c->n, buf, bufn, out);
			if (r)
				return r;
			c->stamp = ++v->cc_clock;
			*n = c->n;
			return 0;
		}
		if (!c->arr || c->stamp < victim->stamp)
			victim = c;
	}
	r = fat_chain(v, first, &arr, n);
	if (r || *n == 0) {
		*out = NULL;
		return r;
	}
	r = chain_copy(arr, *n, buf, bufn, out);
	if (r) {
		free(arr);
		return r;
	}
	/* the walked array becomes the cache entry */
	cc_drop(victim);
	victim->arr = arr;
	victim->first = first;
	victim->n = *n;
	victim->lo = victim->hi = arr[0];
	for (uint32_t k = 1; k < *n; k++) {
		if (arr[k] < victim->lo) victim->lo = arr[k];
		if (arr[k] > victim->hi) victim->hi = arr[k];
	}
	victim->stamp = ++v->cc_clock;
	return 0;
}

/* The kernel starts its search at prev_free + 1 and wraps to 2 (fatent.c
 * fat_alloc_clusters); doing the same keeps cluster numbers equal to a
 * kernel writer's. */
int fat_alloc_cluster(vfat_vol *v, uint32_t prev, uint32_t *out)
{
	uint32_t max = v->g.nclusters + 2, c = v->free_hint + 1, count;

	for (count = 2; count < max; count++, c++) {
		if (c >= max)
			c = 2;
		if (fat_get(v, c) == 0) {
			fat_set(v, c, v->ops->eoc);
			if (prev)
				fat_set(v, prev, c);
			memset(cluster_ptr(v, c), 0, v->g.cluster_size);
			v->free_hint = c;
#ifndef VFAT_FAULT_FSINFO
			if (v->free_count != 0xFFFFFFFF)
				v->free_count--;
#endif
			*out = c;
			return 0;
		}
	}
	return -ENOSPC;
}

void fat_free_chain(vfat_vol *v, uint32_t first)
{
	uint32_t c = first, steps = 0, next;

	dix_invalidate(v, first);   /* a removed directory's index dies with it */
	while (fat_valid_cluster(v, c) && steps++ <= v->g.nclusters) {
		next = fat_get(v, c);
		if (next == 0)
			break;          /* already free: a cross-link or loop */
		fat_set(v, c, 0);
#ifndef VFAT_FAULT_FSINFO
		if (v->free_count != 0xFFFFFFFF)
			v->free_count++;
#endif
		if (fat_is_eoc(v, next))
			break;
		c = next;
	}
}

/* As the kernel's fat_clusters_flush: free count and next-free hint. */
void fat_update_fsinfo(vfat_vol *v)
{
	uint8_t *fi;

	if (v->g.fat_type != 32 || !v->g.fsinfo_sector)
		return;
	fi = v->buf + (uint64_t)v->g.fsinfo_sector * v->g.sector_size;
	if (get32(fi) != 0x41615252 || get32(fi + 484) != 0x61417272)
		return;
	put32(fi + 488, v->free_count);
	put32(fi + 492, v->free_hint);
}
