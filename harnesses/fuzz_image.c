/* fuzz_image - hostile image bytes: open, list, read, check and a short
 * tail of ops must never trigger a sanitizer, loop forever or leak.
 *
 * Input: a 16-byte header, then either
 *   - a whole image (header byte 0 bit 7 clear): the seeds in
 *     corpus/fuzz_image/ are real mkfs.fat images, some filled by mtools;
 *   - or patches to a template (bit 7 set): bits 0-1 pick a core-made
 *     template (FAT12, FAT16, small FAT32, FAT12 with 2 KiB clusters) and
 *     the rest is a list of (offset u16 scaled by 4 << (bits 2-4), length
 *     u8, bytes) records written over it, so that small inputs reach deep
 *     into boot sector, FATs and directories.
 * Header bytes 1-15 drive the op tail: the write options (names, dummy,
 * rule, seed) and up to 6 ops on names taken from the listing.
 * Nothing is asserted about the results: bad images are the point; the
 * only failures are sanitizer reports, timeouts and leaks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vfat.h"
#include "fuzzinput.h"

#define HDR 16
#define MAX_WALK 400          /* directories visited per input */
#define MAX_DEPTH 12

struct tmpl { uint8_t *img; size_t size; };
static struct tmpl tmpls[4];

static const struct tmpl *get_tmpl(int k)
{
	static const int type[4] = { 12, 16, 32, 12 };
	static const uint32_t cs[4] = { 512, 512, 512, 2048 };
	char err[200];

	if (!tmpls[k].img) {
		tmpls[k].size = vfat_fuzz_image_size(type[k], cs[k], 0);
		tmpls[k].img = malloc(tmpls[k].size);
		if (!tmpls[k].img || vfat_fuzz_make_image(type[k], cs[k], 0, tmpls[k].img, tmpls[k].size,
							  err, sizeof(err)))
			abort();
	}
	return &tmpls[k];
}

struct walkctx {
	vfat_vol *v;
	int visited;
	char names[8][256];   /* a few names seen, for the op tail */
	int nnames;
};

static void walk(struct walkctx *w, const char *path, int depth);

struct dctx {
	struct walkctx *w;
	const char *path;
	int depth;
	char **sub;
	int nsub;
};

static int on_entry(void *ctx, const struct vfat_dirent *e)
{
	struct dctx *d = ctx;
	size_t pl = strlen(d->path), nl = strlen(e->name);
	char *p;

	if (!nl || pl + nl + 2 > 4000)
		return 0;
	p = malloc(pl + nl + 2);
	if (!p)
		abort();
	memcpy(p, d->path, pl);
	p[pl] = '/';
	memcpy(p + pl + 1, e->name, nl + 1);
	if (d->w->nnames < 8 && pl + nl + 2 <= 256)
		memcpy(d->w->names[d->w->nnames++], p, pl + nl + 2);
	if ((e->attr & 0x10) && d->nsub < 16) {
		d->sub[d->nsub++] = p;
		return 0;
	}
	if (!(e->attr & 0x10)) {
		uint8_t buf[4096];
		size_t got;
		vfat_read(d->w->v, p, 0, buf, sizeof(buf), &got);
		vfat_read(d->w->v, p, (uint64_t)e->size / 2, buf, 100, &got);
	}
	free(p);
	return 0;
}

static void walk(struct walkctx *w, const char *path, int depth)
{
	char *sub[16];
	struct dctx d = { w, path, depth, sub, 0 };

	if (depth > MAX_DEPTH || w->visited++ >= MAX_WALK)
		return;
	vfat_readdir(w->v, path[0] ? path : "/", on_entry, &d);
	for (int i = 0; i < d.nsub; i++) {
		walk(w, sub[i], depth + 1);
		free(sub[i]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vfat_opts o;
	struct walkctx w;
	uint8_t *img;
	size_t isz;
	vfat_vol *v;
	char err[200];

	if (size < HDR)
		return 0;
	if (data[0] & 0x80) {
		const struct tmpl *t = get_tmpl(data[0] & 3);
		unsigned scale = 4u << ((data[0] >> 2) & 7);
		isz = t->size;
		img = malloc(isz);
		if (!img)
			abort();
		memcpy(img, t->img, isz);
		for (size_t i = HDR; i + 3 <= size;) {
			size_t off = (size_t)(data[i] | data[i + 1] << 8) * scale, len = data[i + 2];
			i += 3;
			if (len > size - i)
				len = size - i;
			if (off < isz)
				memcpy(img + off, data + i, len < isz - off ? len : isz - off);
			i += len;
		}
	} else {
		isz = size - HDR;
		img = malloc(isz ? isz : 1);
		if (!img)
			abort();
		memcpy(img, data + HDR, isz);
	}

	vfat_check(img, isz, NULL, NULL);
	vfat_opts_default(&o);
	o.names = (data[1] & 1) ? VFAT_NAMES_DUAL : VFAT_NAMES_NODUAL;
	o.dummy = (data[1] & 2) ? VFAT_DUMMY_V3 : VFAT_DUMMY_V1;
	o.unique = (data[1] >> 2) & 1;
	o.shortname = (enum vfat_shortname)(1 + ((data[1] >> 3) & 3));
	o.seed = data[2];
	if (vfat_open(&v, img, isz, &o, err, sizeof(err)) == 0) {
		memset(&w, 0, sizeof(w));
		w.v = v;
		walk(&w, "", 0);
		/* the op tail: names from the listing and fresh ones */
		int nops = data[3] % 7;
		for (int k = 0; k < nops; k++) {
			uint8_t b = data[4 + k], c = data[10 + (k % 6)];
			const char *a = w.nnames ? w.names[c % w.nnames] : "/x";
			char fresh[64];
			snprintf(fresh, sizeof(fresh), "/%s%c%u", (b & 0x40) ? "Long Name " : "N", 'a' + (c & 15), (unsigned)k);
			uint8_t buf[600];
			memset(buf, b, sizeof(buf));
			switch (b & 7) {
			case 0: vfat_mkdir(v, fresh); break;
			case 1: vfat_create(v, fresh); vfat_write(v, fresh, 0, buf, sizeof(buf)); break;
			case 2: vfat_rename(v, a, fresh); break;
			case 3: vfat_unlink(v, a); break;
			case 4: vfat_rmdir(v, a); break;
			case 5: vfat_write(v, a, (uint64_t)c * 300, buf, sizeof(buf)); break;
			case 6: vfat_truncate(v, a, (uint64_t)c * 17); break;
			default: {
				const char *t2 = w.nnames ? w.names[(c + 1) % w.nnames] : "/y";
				vfat_rename(v, a, t2);
				break;
			}
			}
		}
		if (nops) {
			w.visited = 0;
			w.nnames = 0;
			walk(&w, "", 0);
		}
		vfat_close(v);
		if (nops)
			vfat_check(img, isz, NULL, NULL);
	}
	free(img);
	return 0;
}
