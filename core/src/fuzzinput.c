/* fuzzinput.c - decode fuzz input bytes into options, geometry and an
 * op-script (see fuzzinput.h for the layout and the guarantees).
 *
 * The decoder keeps a believed picture of the tree (like gen.c) so that
 * most ops aim at paths that exist: renames onto existing entries,
 * case-flipped and dot-suffixed spellings of existing names, rmdir of
 * non-empty directories. The belief may be wrong; the model in the
 * harness decides what each op must do.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzzinput.h"
#include "gen.h"
#include "fat.h"

#define MAX_BELIEF 64
#define PATH_MAX_LEN 1400

struct rd {
	const uint8_t *p;
	size_t n, i;
};

static uint8_t get8(struct rd *r) { return r->i < r->n ? r->p[r->i++] : 0; }
static uint16_t get16le(struct rd *r) { uint16_t lo = get8(r); return (uint16_t)(lo | get8(r) << 8); }

/* Paths point into the script's own copies of the op strings. */
struct belief {
	const char *path[MAX_BELIEF];
	int isdir[MAX_BELIEF];
	int n;
};

static void b_add(struct belief *b, const char *p, int isdir)
{
	int i = b->n < MAX_BELIEF ? b->n++ : (int)(strlen(p) % MAX_BELIEF);
	b->path[i] = p;
	b->isdir[i] = isdir;
}

static void b_del(struct belief *b, int i)
{
	b->n--;
	b->path[i] = b->path[b->n];
	b->isdir[i] = b->isdir[b->n];
}

/* Index of the k-th believed entry (want_dir -1 = any); -1 if none. */
static int b_pick(const struct belief *b, unsigned k, int want_dir)
{
	int cand = 0;
	for (int i = 0; i < b->n; i++)
		if (want_dir < 0 || b->isdir[i] == want_dir)
			cand++;
	if (!cand)
		return -1;
	k %= (unsigned)cand;
	for (int i = 0; i < b->n; i++)
		if ((want_dir < 0 || b->isdir[i] == want_dir) && k-- == 0)
			return i;
	return -1;
}

/* A name: a generated one of some class, or raw input bytes. */
static void name_spec(struct rd *r, uint64_t seed, char *out, size_t max)
{
	uint8_t c = get8(r);

	if (c < 0xC0) {
		struct vfat_rng g = { seed * 0x100000001B3ull ^ get16le(r) };
		vfat_gen_name(&g, c % NC_COUNT, out, max);
		return;
	}
	size_t len = get8(r), k = 0;
	if (c & 1)
		len += 128;  /* long raw names reach the 255-unit limit */
	while (k < len && k + 1 < max && r->i < r->n) {
		uint8_t ch = get8(r);
		if (!ch)
			break;
		out[k++] = (char)ch;
	}
	out[k] = 0;
	if (!k)
		snprintf(out, max, "r");
}

/* A path: an existing believed one (maybe respelled), or a new name in
 * the root or a believed directory. */
static void path_spec(struct rd *r, struct belief *b, uint64_t seed,
		      int want_dir, char *out, size_t max)
{
	uint8_t s = get8(r);
	char name[1100];
	int i;

	if ((s & 3) < 2 && (i = b_pick(b, get8(r), (s & 4) ? want_dir : -1)) >= 0) {
		snprintf(out, max, "%s", b->path[i]);
		if ((s & 3) == 1 && out[0] == '/') {
			char *last = strrchr(out, '/') + 1;
			switch ((s >> 3) & 3) {
			case 0: /* flip ASCII case */
				for (char *p = last; *p; p++)
					if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))
						*p ^= 0x20;
				break;
			case 1: /* trailing dots are stripped by the kernel */
				if (strlen(out) + 3 < max)
					strcat(out, (s & 0x20) ? "..." : ".");
				break;
			case 2: /* a child of it (ENOTDIR under a file) */
				name_spec(r, seed, name, sizeof(name));
				if (strlen(out) + strlen(name) + 2 < max) {
					strcat(out, "/");
					strcat(out, name);
				}
				break;
			default: /* upper-case everything: hits 8.3 aliases */
				for (char *p = last; *p; p++)
					if (*p >= 'a' && *p <= 'z')
						*p ^= 0x20;
				break;
			}
		}
		return;
	}
	name_spec(r, seed, name, sizeof(name));
	i = (s & 8) ? b_pick(b, get8(r), 1) : -1;
	snprintf(out, max, "%s/%s", i >= 0 ? b->path[i] : "", name);
}

static const uint32_t sizes[] = { 0, 1, 13, 511, 512, 513, 1024, 2048, 4096, 4097, 6000, 8191 };

/* A size from one byte: sizes[b % 12]; on the tiny volume the top two bits
 * also scale it by 1, 2, 4 or 8 (up to 64 KiB: two or three writes fill
 * it, a write runs out part-way and keeps pages). */
static uint32_t size_of(uint8_t b, int tiny)
{
	uint32_t n = sizes[b % (sizeof(sizes) / sizeof(sizes[0]))];

	return tiny ? n << (b >> 6) : n;
}

/* Times at FAT's edges: before 1980 and the 1980 clamp, odd seconds (2-s
 * modify time), midnight and a second before it (day-only access date),
 * 2100 (not a leap year), 2107's clamp and past it, 2^31 and 2^32. */
static const int64_t times[] = {
	0, 315532799, 315532800, 315532801, 946684799, 951782400, 1246079973,
	2147483647, 2147483648, 4107542399, 4107542400, 4294967295, 4354819198,
	4354819199, 4354819200, 86399,
};
static const uint32_t nsecs[] = { 0, 1, 500000000, 999999999 };

/* Labels: valid, lower case, too long, forbidden characters, a leading
 * space, spaces only, non-ASCII, the default name, and removal. */
static const char *const labels[] = {
	"VFATFUZZ", "", "lower", "NO NAME", "A B", "12345678901", "123456789012",
	" LEAD", "BAD*", "   ", "\xc3\x84", "DOT.", "X",
};

/* The ops of the second grammar (truncate, chattr, touch, label) come
 * from kind bytes 0xE0-0xFF, so inputs whose kind bytes are below keep
 * their old decoding. */
static void meta_op(struct rd *r, struct belief *b, uint64_t seed, uint8_t k,
		    struct vfat_op *op, char *a, size_t amax, int tiny)
{
	op->kind = (enum vfat_opkind)(OP_TRUNCATE + (k & 3));
	switch (op->kind) {
	case OP_TRUNCATE:
		path_spec(r, b, seed, 0, a, amax);
		op->n[0] = size_of(get8(r), tiny);
		break;
	case OP_CHATTR:
		path_spec(r, b, seed, (k >> 2) & 1, a, amax);
		op->n[0] = get8(r) & 0x27;
		break;
	case OP_TOUCH:
		path_spec(r, b, seed, (k >> 2) & 1, a, amax);
		for (int i = 0; i < 2; i++) {
			uint8_t t = get8(r);
			op->t[i].sec = times[t % (sizeof(times) / sizeof(times[0]))];
			op->t[i].nsec = nsecs[(t >> 4) & 3];
		}
		break;
	default:
		snprintf(a, amax, "%s", labels[get8(r) % (sizeof(labels) / sizeof(labels[0]))]);
		break;
	}
}

/* A mkdir kind byte with bit 3 set (0x08, 0x18, ... 0xD8) starts a
 * chain: 7-10 more directories, each inside the one before, so that an
 * input of a few ops reaches a tree 8+ deep (the census's deep-tree). The
 * chain's members join the belief (the first one does so in the caller,
 * after its op is added, like any mkdir). */
static int mkdir_chain(struct rd *r, struct belief *b, struct vfat_fuzz_input *in)
{
	char name[1100], a[PATH_MAX_LEN];
	int rc = 0;

	for (int d = 7 + get8(r) % 4; d > 0 && in->script.n < VFAT_FUZZ_MAX_OPS && rc == 0; d--) {
		const struct vfat_op *prev = &in->script.ops[in->script.n - 1];
		struct vfat_op op;

		name_spec(r, in->opts.seed, name, sizeof(name));
		if (strlen(prev->a) + strlen(name) + 2 >= sizeof(a))
			break;
		memcpy(a, prev->a, strlen(prev->a));
		a[strlen(prev->a)] = '/';
		memcpy(a + strlen(prev->a) + 1, name, strlen(name) + 1);
		b_add(b, prev->a, 1);
		memset(&op, 0, sizeof(op));
		op.kind = OP_MKDIR;
		op.a = a;
		op.line = (int)in->script.n + 1;
		rc = vfat_script_add(&in->script, &op);
	}
	return rc;
}

#define CHURN_EMPTY 4097   /* an empty file frees nothing: a churn's takes 2+ clusters */

/* A create kind byte with bit 3 set (0x09, 0x0A, 0x19, ... below 0xE0) is
 * churn: the file is unlinked at once and created again under the same
 * name, its size from the next byte, so that an input of a few ops frees
 * clusters and then allocates (the census's reuse-after-unlink; the
 * campaign sizes a corpus entry's window so that the second create passes
 * its end into the hole: vfz/campaign/fitwindow.py). Neither create is
 * empty (size 0 reads as CHURN_EMPTY). The name stays in the belief (the
 * caller adds it, as for any create). */
static int churn(struct rd *r, struct vfat_fuzz_input *in, int tiny)
{
	struct vfat_op *c = &in->script.ops[in->script.n - 1];
	char a[PATH_MAX_LEN];
	struct vfat_op op;
	uint32_t seed = (c->n[1] + 1) & 0xFF;
	int rc;

	if (!c->n[0])
		c->n[0] = CHURN_EMPTY;
	if (in->script.n + 2 > VFAT_FUZZ_MAX_OPS)
		return 0;
	snprintf(a, sizeof(a), "%s", c->a);
	memset(&op, 0, sizeof(op));
	op.kind = OP_UNLINK;
	op.a = a;
	op.line = (int)in->script.n + 1;
	rc = vfat_script_add(&in->script, &op);
	if (rc)
		return rc;
	op.kind = OP_CREATE;
	op.n[0] = size_of(get8(r), tiny);
	if (!op.n[0])
		op.n[0] = CHURN_EMPTY;
	op.n[1] = seed;
	op.line++;
	return vfat_script_add(&in->script, &op);
}

int vfat_fuzz_decode(const uint8_t *data, size_t size,
		     struct vfat_fuzz_input *in)
{
	struct rd r = { data, size, 0 };
	struct belief bel, *b = &bel;
	char a[PATH_MAX_LEN], bb[PATH_MAX_LEN];
	uint8_t f, s;
	int rc = 0;

	memset(in, 0, sizeof(*in));
	vfat_opts_default(&in->opts);
	f = get8(&r);
	s = get8(&r);
	in->opts.names = (f & 1) ? VFAT_NAMES_DUAL : VFAT_NAMES_NODUAL;
	in->opts.dummy = (f & 2) ? VFAT_DUMMY_V3 : VFAT_DUMMY_V1;
	in->opts.unique = (f >> 2) & 1;
	in->fat_type = ((f >> 3) & 3) == 1 ? 16 : ((f >> 3) & 3) == 2 ? 32 : 12;
	/* the fourth FAT-type value is a tiny FAT12 of TINY_CLUSTERS clusters
	 * (512 B-4 KiB) and a 32-slot root: a script of a few dozen ops fills
	 * it (ENOSPC part-way through a write, allocation wrapping into freed
	 * holes, reuse after unlink, a directory that cannot grow, a full
	 * root); the model in the harness predicts what Linux does then */
	in->tiny = ((f >> 3) & 3) == 3;
	in->cluster_bytes = 512u << ((f >> 5) & 3);
	in->opts.shortname = (enum vfat_shortname)(1 + s % 4);
	in->opts.seed = get16le(&r);
	in->opts.seed |= (uint64_t)get16le(&r) << 16;

	memset(b, 0, sizeof(*b));
	while (r.i < r.n && in->script.n < VFAT_FUZZ_MAX_OPS && rc == 0) {
		static const enum vfat_opkind kinds[8] = { OP_MKDIR, OP_CREATE, OP_CREATE, OP_WRITE,
			OP_RENAME, OP_RENAME, OP_UNLINK, OP_RMDIR };
		struct vfat_op op;
		uint8_t k = get8(&r);
		int i;

		memset(&op, 0, sizeof(op));
		op.kind = kinds[k & 7];
		op.a = a;
		op.line = (int)in->script.n + 1;
		if ((k & 0xE0) == 0xE0)
			meta_op(&r, b, in->opts.seed, k, &op, a, sizeof(a), in->tiny);
		switch (op.kind) {
		case OP_MKDIR:
			path_spec(&r, b, in->opts.seed, 1, a, sizeof(a));
			break;
		case OP_CREATE:
			path_spec(&r, b, in->opts.seed, 0, a, sizeof(a));
			op.n[0] = size_of(get8(&r), in->tiny);
			op.n[1] = get8(&r);
			break;
		case OP_WRITE:
			path_spec(&r, b, in->opts.seed, 0, a, sizeof(a));
			/* the tiny volume: offsets up to 4 pages, gaps that fill it */
			op.n[0] = get16le(&r) % ((in->tiny ? 4 : 1) * VFAT_FUZZ_MAX_OFF + 1);
			op.n[1] = size_of(get8(&r), in->tiny);
			op.n[2] = get8(&r);
			break;
		case OP_RENAME:
			path_spec(&r, b, in->opts.seed, (k >> 3) & 1, a, sizeof(a));
			path_spec(&r, b, in->opts.seed, (k >> 3) & 1, bb, sizeof(bb));
			op.b = bb;
			break;
		case OP_UNLINK:
		case OP_RMDIR:
			path_spec(&r, b, in->opts.seed, op.kind == OP_RMDIR, a, sizeof(a));
			break;
		default:
			break;          /* decoded by meta_op */
		}
		rc = vfat_script_add(&in->script, &op);
		if (rc)
			break;
		if ((k & 0x0F) == 0x08 && (k & 0xE0) != 0xE0)
			rc = mkdir_chain(&r, b, in);
		else if (op.kind == OP_CREATE && (k & 0x08) && (k & 0xE0) != 0xE0)
			rc = churn(&r, in, in->tiny);
		if (rc)
			break;
		const struct vfat_op *cp = &in->script.ops[in->script.n - 1];
		for (i = 0; i < b->n; i++)
			if (!strcmp(b->path[i], cp->a))
				break;
		switch (op.kind) {
		case OP_MKDIR:
		case OP_CREATE:
			b_add(b, cp->a, op.kind == OP_MKDIR);
			break;
		case OP_RENAME:
			if (i < b->n) {
				int isdir = b->isdir[i];
				b_del(b, i);
				b_add(b, cp->b, isdir);
			}
			break;
		case OP_UNLINK:
		case OP_RMDIR:
			if (i < b->n && (k & 8))
				b_del(b, i);
			break;
		default:
			break;
		}
	}
	if (rc)
		vfat_script_free(&in->script);
	return rc;
}

void vfat_fuzz_input_free(struct vfat_fuzz_input *in)
{
	vfat_script_free(&in->script);
}

#define F32_CLUSTERS 2048u
#define TINY_CLUSTERS 40u    /* fills within a script: 2 writes of 512 B clusters, ~14 of 4 KiB */
#define TINY_ROOT 32u        /* root slots: a few long names fill it */
#define F32_RESERVED 32u

static uint32_t f32_fat_sectors(void)
{
	return ((F32_CLUSTERS + 2) * 4 + 511) / 512;
}

size_t vfat_fuzz_image_size(int fat_type, uint32_t cs, int tiny)
{
	if (tiny && fat_type == 12)   /* boot sector, 2 one-sector FATs, the root */
		return (size_t)TINY_CLUSTERS * cs + 3 * 512 + TINY_ROOT * 32;
	switch (fat_type) {
	case 16: return (size_t)4200 * cs + 65536;
	case 32: return (size_t)(F32_RESERVED + 2 * f32_fat_sectors()) * 512 + (size_t)F32_CLUSTERS * cs;
	default: return (size_t)1024 * cs;
	}
}

static int make_small_fat32(uint32_t cs, uint8_t *buf, size_t size)
{
	uint32_t fs = f32_fat_sectors(), spc = cs / 512;
	uint64_t total = size / 512, data_off = (uint64_t)(F32_RESERVED + 2 * fs) * 512;
	uint8_t *fi = buf + 512;

	memset(buf, 0, (size_t)data_off + cs);
	buf[0] = 0xEB; buf[1] = 0x58; buf[2] = 0x90;
	memcpy(buf + 3, "VFATFUZZ", 8);
	put16(buf + 11, 512);
	buf[13] = (uint8_t)spc;
	put16(buf + 14, F32_RESERVED);
	buf[16] = 2;
	buf[21] = 0xF8;
	put16(buf + 24, 32);
	put16(buf + 26, 64);
	put32(buf + 32, (uint32_t)total);
	put32(buf + 36, fs);
	put32(buf + 44, 2);
	put16(buf + 48, 1);
	put16(buf + 50, 6);
	buf[64] = 0x80;
	buf[66] = 0x29;
	put32(buf + 67, 0x20090627);
	memcpy(buf + 71, "NO NAME    ", 11);
	memcpy(buf + 82, "FAT32   ", 8);
	buf[510] = 0x55;
	buf[511] = 0xAA;
	put32(fi, 0x41615252);
	put32(fi + 484, 0x61417272);
	put32(fi + 488, F32_CLUSTERS - 1);
	put32(fi + 492, 2);
	put32(fi + 508, 0xAA550000);
	memcpy(buf + 6 * 512, buf, 2 * 512);
	for (uint32_t i = 0; i < 2; i++) {
		uint8_t *fat = buf + (F32_RESERVED + i * fs) * 512;
		put32(fat, 0x0FFFFFF8);
		put32(fat + 4, 0x0FFFFFFF);
		put32(fat + 8, 0x0FFFFFFF);
	}
	return 0;
}

int vfat_fuzz_make_image(int fat_type, uint32_t cs, int tiny, uint8_t *buf,
			 size_t size, char *err, size_t errlen)
{
	struct vfat_mkfs_opts o;

	if (cs < 512 || cs > 4096 || (cs & (cs - 1)) || size != vfat_fuzz_image_size(fat_type, cs, tiny)) {
		snprintf(err, errlen, "bad fuzz geometry");
		return -EINVAL;
	}
	if (fat_type == 32)
		return make_small_fat32(cs, buf, size);
	vfat_mkfs_opts_default(&o);
	o.fat_type = fat_type;
	o.cluster_bytes = cs;
	if (tiny)
		o.root_entries = TINY_ROOT;
	memset(buf, 0, size);
	return vfat_mkfs(buf, size, &o, err, errlen);
}

void vfat_fuzz_format_options(const struct vfat_fuzz_input *in, char *out,
			      size_t max)
{
	static const char *const sn[] = { "", "lower", "win95", "winnt", "mixed" };

	snprintf(out, max, "--names %s --dummy %s --shortname %s --seed %llu%s",
		 in->opts.names == VFAT_NAMES_DUAL ? "dual" : "nodual",
		 in->opts.dummy == VFAT_DUMMY_V3 ? "v3" : "v1",
		 sn[in->opts.shortname], (unsigned long long)in->opts.seed,
		 in->opts.unique ? " --unique" : "");
}
