/* mkfs.c - format an empty FAT12/16/32 volume.
 *
 * Layout follows mkfs.fat's conventions closely enough that every tool
 * accepts the result (backup boot sector at 6 and FSInfo at 1 on FAT32,
 * media 0xF8, FAT[1] = end of chain), but it is deterministic: no clock,
 * no random volume id unless given.
 */
#include <stdio.h>
#include <string.h>
#include "fat.h"

void vfat_mkfs_opts_default(struct vfat_mkfs_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->volume_id = 0x20090627;
}

static int fail(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
	return -EINVAL;
}

struct plan {
	int type;
	uint32_t ss, spc, reserved, nfats, root_entries, fat_sectors;
	uint64_t total;
	uint32_t clusters;
};

/* Iterate FAT size until it covers the clusters it leaves room for. */
static void size_fat(struct plan *p)
{
	uint32_t root_sec = p->root_entries * DIRENT_SIZE / p->ss;
	uint64_t data, bytes;

	p->fat_sectors = 1;
	for (int i = 0; i < 64; i++) {
		uint64_t meta = p->reserved + (uint64_t)p->nfats * p->fat_sectors + root_sec;
		data = p->total > meta ? p->total - meta : 0;
		p->clusters = (uint32_t)(data / p->spc);
		bytes = ((uint64_t)p->clusters + 2) * (uint64_t)p->type / 8 + 1;
		uint32_t need = (uint32_t)((bytes + p->ss - 1) / p->ss);
		if (need <= p->fat_sectors)
			break;
		p->fat_sectors = need;
	}
}

static int type_fits(const struct plan *p)
{
	switch (p->type) {
	case 12: return p->clusters >= 1 && p->clusters <= 4084;
	case 16: return p->clusters >= 4085 && p->clusters <= 65524;
	default: return p->clusters >= 65525 && p->clusters <= 0x0FFFFFF5;
	}
}

/* Smallest cluster that gives a valid count for the type (mkfs.fat also
 * prefers small clusters on small volumes). */
static int choose_geometry(struct plan *p, uint32_t cluster_bytes)
{
	uint32_t spc;

	for (spc = 1; spc <= 128; spc *= 2) {
		if (cluster_bytes && spc * p->ss != cluster_bytes)
			continue;
		p->spc = spc;
		size_fat(p);
		if (type_fits(p))
			return 0;
	}
	return -EINVAL;
}

static void write_bpb(uint8_t *b, const struct plan *p, uint32_t volid)
{
	memset(b, 0, p->ss);
	b[0] = 0xEB;
	b[1] = p->type == 32 ? 0x58 : 0x3C;
	b[2] = 0x90;
	memcpy(b + 3, "VFATFUZZ", 8);
	put16(b + 11, (uint16_t)p->ss);
	b[13] = (uint8_t)p->spc;
	put16(b + 14, (uint16_t)p->reserved);
	b[16] = (uint8_t)p->nfats;
	put16(b + 17, (uint16_t)p->root_entries);
	if (p->total < 65536 && p->type != 32)
		put16(b + 19, (uint16_t)p->total);
	else
		put32(b + 32, (uint32_t)p->total);
	b[21] = 0xF8;
	put16(b + 24, 32);  /* sectors per track */
	put16(b + 26, 64);  /* heads */
	if (p->type == 32) {
		put32(b + 36, p->fat_sectors);
		put32(b + 44, 2);       /* root cluster */
		put16(b + 48, 1);       /* FSInfo */
		put16(b + 50, 6);       /* backup boot sector */
		b[64] = 0x80;
		b[66] = 0x29;
		put32(b + 67, volid);
		memcpy(b + 71, "NO NAME    ", 11);
		memcpy(b + 82, "FAT32   ", 8);
	} else {
		put16(b + 22, (uint16_t)p->fat_sectors);
		b[36] = 0x80;
		b[38] = 0x29;
		put32(b + 39, volid);
		memcpy(b + 43, "NO NAME    ", 11);
		memcpy(b + 54, p->type == 12 ? "FAT12   " : "FAT16   ", 8);
	}
	b[510] = 0x55;
	b[511] = 0xAA;
}

static void write_fsinfo(uint8_t *fi, const struct plan *p)
{
	memset(fi, 0, p->ss);
	put32(fi, 0x41615252);
	put32(fi + 484, 0x61417272);
	put32(fi + 488, p->clusters - 1);  /* root takes one */
	put32(fi + 492, 2);
	put32(fi + 508, 0xAA550000);
}

int vfat_mkfs(uint8_t *buf, size_t size, const struct vfat_mkfs_opts *o,
	      char *err, size_t errlen)
{
	struct vfat_mkfs_opts def;
	struct plan p;
	struct fatent_ops const *ops;
	uint64_t fat_off;

	if (!o) {
		vfat_mkfs_opts_default(&def);
		o = &def;
	}
	memset(&p, 0, sizeof(p));
	p.ss = o->sector_size ? o->sector_size : 512;
	if (p.ss < 512 || p.ss > 4096 || (p.ss & (p.ss - 1)))
		return fail(err, errlen, "sector size must be 512, 1024, 2048 or 4096");
	p.total = size / p.ss;
	p.nfats = o->nfats ? o->nfats : 2;
	if (p.nfats > 4)
		return fail(err, errlen, "at most 4 FATs");
	p.type = o->fat_type;
	if (!p.type)
		p.type = size < 16u << 20 ? 12 : size < 512u << 20 ? 16 : 32;
	if (p.type != 12 && p.type != 16 && p.type != 32)
		return fail(err, errlen, "FAT type must be 12, 16 or 32");
	p.reserved = o->reserved ? o->reserved : (p.type == 32 ? 32 : 1);
	if (p.type == 32 && p.reserved < 9)
		return fail(err, errlen, "FAT32 needs at least 9 reserved sectors");
	p.root_entries = p.type == 32 ? 0 : (o->root_entries ? o->root_entries : 512);
	if (p.type != 32 && (p.root_entries * DIRENT_SIZE) % p.ss)
		p.root_entries = (p.root_entries * DIRENT_SIZE + p.ss - 1) / p.ss * p.ss / DIRENT_SIZE;
	if (p.root_entries > 65535 - 15)
		return fail(err, errlen, "too many root entries");
	if (p.total < 16 || p.total > 0xFFFFFFFFu)
		return fail(err, errlen, "image size out of range for FAT");
	if (choose_geometry(&p, o->cluster_bytes))
		return fail(err, errlen, "no cluster size gives a valid FAT of that type for this size");

	memset(buf, 0, (size_t)((p.reserved + (uint64_t)p.nfats * p.fat_sectors) * p.ss +
				p.root_entries * DIRENT_SIZE));
	write_bpb(buf, &p, o->volume_id);
	ops = fatent_ops_for(p.type);
	for (uint32_t i = 0; i < p.nfats; i++) {
		fat_off = ((uint64_t)p.reserved + (uint64_t)i * p.fat_sectors) * p.ss;
		ops->put(buf + fat_off, 0, 0x0FFFFF00 | 0xF8);
		ops->put(buf + fat_off, 1, ops->eoc);
		if (p.type == 32)
			ops->put(buf + fat_off, 2, ops->eoc);
	}
	if (p.type == 32) {
		uint64_t data_off = ((uint64_t)p.reserved + (uint64_t)p.nfats * p.fat_sectors) * p.ss;
		write_fsinfo(buf + p.ss, &p);
		memcpy(buf + 6 * p.ss, buf, 2 * p.ss);
		memset(buf + data_off, 0, (size_t)p.spc * p.ss);
	}
	return 0;
}
