/* boot.c - boot sector parsing: geometry and its validation.
 *
 * Every later byte access trusts the offsets computed here, so this is
 * where hostile images are stopped: all regions must lie inside the image
 * and the FAT must be large enough for the cluster count.
 */
#include <stdio.h>
#include <string.h>
#include "fat.h"

#define FAT12_MAX_CLUSTERS 4084   /* kernel MAX_FAT12 */
#define FAT16_MAX_CLUSTERS 65524
#define FAT32_MAX_CLUSTERS 0x0FFFFFF5

static int fail(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
	return -EINVAL;
}

static int is_pow2(uint32_t x) { return x && !(x & (x - 1)); }

static int parse_bpb(const uint8_t *b, struct fat_geom *g, char *err,
		     size_t errlen)
{
	uint32_t ts16, fat16;

	memset(g, 0, sizeof(*g));
	g->sector_size = get16(b + 11);
	g->sec_per_clus = b[13];
	g->reserved = get16(b + 14);
	g->nfats = b[16];
	g->root_entries = get16(b + 17);
	ts16 = get16(b + 19);
	fat16 = get16(b + 22);
	g->total_sectors = ts16 ? ts16 : get32(b + 32);
	g->fat_sectors = fat16 ? fat16 : get32(b + 36);

	if (g->sector_size < 512 || g->sector_size > 4096 || !is_pow2(g->sector_size))
		return fail(err, errlen, "bad bytes per sector in boot sector");
	if (!is_pow2(g->sec_per_clus))
		return fail(err, errlen, "bad sectors per cluster in boot sector");
	if (g->reserved == 0)
		return fail(err, errlen, "no reserved sectors in boot sector");
	if (g->nfats == 0)
		return fail(err, errlen, "no FATs in boot sector");
	if (g->fat_sectors == 0)
		return fail(err, errlen, "FAT size is zero in boot sector");
	if (g->total_sectors == 0)
		return fail(err, errlen, "total sector count is zero in boot sector");
	if (!fat16) {
		g->fat_type = 32;
		if (g->root_entries)
			return fail(err, errlen, "FAT32 boot sector with root entries");
		g->root_cluster = get32(b + 44);
		g->fsinfo_sector = get16(b + 48);
	} else if ((g->root_entries * DIRENT_SIZE) % g->sector_size) {
		return fail(err, errlen, "root entries do not fill whole sectors");
	} else if (g->root_entries == 0) {
		return fail(err, errlen, "FAT12/16 boot sector without root entries");
	}
	g->cluster_size = g->sector_size * g->sec_per_clus;
	return 0;
}

static int layout(struct fat_geom *g, size_t size, char *err, size_t errlen)
{
	uint64_t ss = g->sector_size, data_sec, bits, fat_entries;

	g->fat_off = (uint64_t)g->reserved * ss;
	g->fat_bytes = (uint64_t)g->fat_sectors * ss;
	g->root_off = g->fat_off + (uint64_t)g->nfats * g->fat_bytes;
	g->root_bytes = g->root_entries * DIRENT_SIZE;
	g->data_off = g->root_off + g->root_bytes;
	if (g->data_off >= g->total_sectors * ss)
		return fail(err, errlen, "FATs and root directory exceed the volume");
	if (g->total_sectors * ss > size)
		return fail(err, errlen, "image is smaller than the volume its boot sector describes");
	data_sec = g->total_sectors - g->data_off / ss;
	g->nclusters = (uint32_t)(data_sec / g->sec_per_clus);
	if (g->nclusters == 0)
		return fail(err, errlen, "volume has no data clusters");
	if (g->fat_type != 32)
		g->fat_type = g->nclusters <= FAT12_MAX_CLUSTERS ? 12 : 16;
	if (g->fat_type == 16 && g->nclusters > FAT16_MAX_CLUSTERS)
		return fail(err, errlen, "too many clusters for FAT16");
	if (g->fat_type == 32 && g->nclusters > FAT32_MAX_CLUSTERS)
		return fail(err, errlen, "too many clusters for FAT32");
	bits = (uint64_t)g->fat_type;
	fat_entries = g->fat_bytes * 8 / bits;
	if (fat_entries < (uint64_t)g->nclusters + 2)
		return fail(err, errlen, "FAT is too small for the cluster count");
	if (g->fat_type == 32) {
		if (g->root_cluster < 2 || g->root_cluster > g->nclusters + 1)
			return fail(err, errlen, "FAT32 root cluster out of range");
		if (g->fsinfo_sector >= g->reserved || g->fsinfo_sector == 0xFFFF)
			g->fsinfo_sector = 0;
	}
	return 0;
}

int fat_parse_boot(const uint8_t *buf, size_t size, struct fat_geom *g,
		   char *err, size_t errlen)
{
	int r;

	if (!buf || size < 512)
		return fail(err, errlen, "image is smaller than one sector");
	r = parse_bpb(buf, g, err, errlen);
	if (r)
		return r;
	return layout(g, size, err, errlen);
}
