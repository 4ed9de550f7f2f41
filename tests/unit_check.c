/* unit_check.c - the structural checker (vfat_check).
 *
 * Images are formatted with vfat_mkfs and then populated by hand (FAT
 * entries and directory slots written byte by byte here, not with the
 * writer), so that every test knows exactly what is on disk. Each test
 * damages one thing and asserts that the matching finding kind appears;
 * clean images must give 0 findings. A seeded mutation loop then feeds
 * thousands of damaged images (bit flips, truncation, swapped entries,
 * random FAT links) that must come back without crashing (run it under
 * the asan preset for UB), leaving the image untouched.
 *
 * VFAT_CHECK_DUMP=DIR makes the binary write its named damaged images
 * there (tests/test_core_check.py compares them with fsck.fat).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "unit_test.h"
#include "vfat.h"
#include "fat.h"

/* ---- findings collector ----------------------------------------------- */

struct got {
	char *text;
	size_t len, cap;
	int n;
};

static void collect(void *ctx, const char *line)
{
	struct got *g = ctx;
	size_t l = strlen(line);

	if (g->len + l + 2 > g->cap) {
		g->cap = (g->len + l + 2) * 2;
		g->text = realloc(g->text, g->cap);
		if (!g->text)
			abort();
	}
	memcpy(g->text + g->len, line, l);
	g->len += l;
	g->text[g->len++] = '\n';
	g->text[g->len] = 0;
	g->n++;
}

static int has_kind(const struct got *g, const char *kind)
{
	char pat[64];
	size_t pl;
	const char *p = g->text;

	if (!p)
		return 0;
	pl = (size_t)snprintf(pat, sizeof(pat), "%s: ", kind);
	while (*p) {
		if (!strncmp(p, pat, pl))
			return 1;
		p = strchr(p, '\n');
		if (!p)
			break;
		p++;
	}
	return 0;
}

static uint64_t rng_next(uint64_t *s);

/* ---- image building ---------------------------------------------------- */

struct img {
	uint8_t *b;
	size_t size;
	struct fat_geom g;
	const struct fatent_ops *ops;
	uint32_t next;       /* next cluster handed out by alloc */
};

static void img_free(struct img *im) { free(im->b); im->b = NULL; }

static int img_new(struct img *im, int type, size_t size, uint32_t cluster)
{
	struct vfat_mkfs_opts o;
	char err[200];

	memset(im, 0, sizeof(*im));
	vfat_mkfs_opts_default(&o);
	o.fat_type = type;
	o.cluster_bytes = cluster;
	im->b = calloc(1, size);
	im->size = size;
	if (!im->b || vfat_mkfs(im->b, size, &o, err, sizeof(err)) ||
	    fat_parse_boot(im->b, size, &im->g, err, sizeof(err))) {
		fprintf(stderr, "img_new(%d, %zu): %s\n", type, size, err);
		return -1;
	}
	im->ops = fatent_ops_for(im->g.fat_type);
	im->next = type == 32 ? 3 : 2;
	return 0;
}

static uint32_t fget(const struct img *im, uint32_t c)
{
	return im->ops->get(im->b + im->g.fat_off, c);
}

/* Set FAT entry c in every copy. */
static void fset(struct img *im, uint32_t c, uint32_t v)
{
	for (uint32_t i = 0; i < im->g.nfats; i++)
		im->ops->put(im->b + im->g.fat_off + i * im->g.fat_bytes, c, v);
}

static uint8_t *cdata(const struct img *im, uint32_t c)
{
	return im->b + im->g.data_off + (uint64_t)(c - 2) * im->g.cluster_size;
}

/* n consecutive clusters linked into a chain, zeroed; returns the first. */
static uint32_t alloc_chain(struct img *im, uint32_t n)
{
	uint32_t first = im->next;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t c = im->next++;
		fset(im, c, i + 1 < n ? c + 1 : im->ops->eoc);
		memset(cdata(im, c), 0, im->g.cluster_size);
	}
	return first;
}

/* Entry idx of a directory (dir 0 = root); follows the chain. */
static uint8_t *slot(const struct img *im, uint32_t dir, size_t idx)
{
	uint32_t epc = im->g.cluster_size / 32;

	if (dir == 0 && im->g.fat_type != 32)
		return im->b + im->g.root_off + idx * 32;
	if (dir == 0)
		dir = im->g.root_cluster;
	while (idx >= epc) {
		dir = fget(im, dir);
		idx -= epc;
	}
	return cdata(im, dir) + idx * 32;
}

static void put_short(uint8_t *de, const char *sn11, uint8_t attr,
		      uint32_t first, uint32_t size, uint8_t nt)
{
	memset(de, 0, 32);
	memcpy(de, sn11, 11);
	de[11] = attr;
	de[12] = nt;
	put16(de + 14, 0x2993);
	put16(de + 16, 0x3ADB);
	put16(de + 18, 0x3ADB);
	put16(de + 24, 0x3ADB);
	put16(de + 22, 0x2993);
	put16(de + 26, (uint16_t)first);
	put16(de + 20, (uint16_t)(first >> 16));
	put32(de + 28, size);
}

/* Checksum computed here, independently of names.c. */
static uint8_t cksum(const uint8_t *sn)
{
	uint8_t s = 0;

	for (int i = 0; i < 11; i++)
		s = (uint8_t)(((s & 1) << 7) + (s >> 1) + sn[i]);
	return s;
}

/* LFN slots for an ASCII (or raw unit) name followed by the short entry;
 * returns the index after the short entry. */
static size_t put_long_units(struct img *im, uint32_t dir, size_t idx,
			     const uint16_t *u, size_t ulen, const char *sn11,
			     uint8_t attr, uint32_t first, uint32_t size, uint8_t nt)
{
	static const uint8_t off[13] = { 1, 3, 5, 7, 9, 14, 16, 18, 20, 22, 24, 28, 30 };
	size_t nslots = (ulen + 12) / 13;
	uint8_t ck = cksum((const uint8_t *)sn11);

	for (size_t s = 0; s < nslots; s++) {
		size_t ord = nslots - s;
		uint8_t *de = slot(im, dir, idx + s);
		memset(de, 0, 32);
		de[0] = (uint8_t)(ord | (s == 0 ? 0x40 : 0));
		de[11] = ATTR_LFN;
		de[13] = ck;
		for (int k = 0; k < 13; k++) {
			size_t p = (ord - 1) * 13 + (size_t)k;
			uint16_t v = p < ulen ? u[p] : p == ulen ? 0x0000 : 0xFFFF;
			put16(de + off[k], v);
		}
	}
	put_short(slot(im, dir, idx + nslots), sn11, attr, first, size, nt);
	return idx + nslots + 1;
}

static size_t put_long(struct img *im, uint32_t dir, size_t idx,
		       const char *name, const char *sn11, uint8_t attr,
		       uint32_t first, uint32_t size, uint8_t nt)
{
	uint16_t u[300];
	size_t n = strlen(name);

	for (size_t i = 0; i < n; i++)
		u[i] = (uint8_t)name[i];
	return put_long_units(im, dir, idx, u, n, sn11, attr, first, size, nt);
}

/* A subdirectory of one cluster with '.' and '..'; entry at parent idx. */
static uint32_t put_dir(struct img *im, uint32_t parent, uint8_t *de,
			const char *sn11)
{
	uint32_t c = alloc_chain(im, 1);

	put_short(de, sn11, ATTR_DIR, c, 0, 0);
	put_short(slot(im, c, 0), ".          ", ATTR_DIR, c, 0, 0);
	put_short(slot(im, c, 1), "..         ", ATTR_DIR, parent, 0, 0);
	return c;
}

/* FAT32: FSInfo free count and hint as the real values. */
static void fix_fsinfo(struct img *im)
{
	uint32_t nfree = 0;
	uint8_t *fi;

	if (im->g.fat_type != 32)
		return;
	for (uint32_t c = 2; c < im->g.nclusters + 2; c++)
		if (fget(im, c) == 0)
			nfree++;
	fi = im->b + (uint64_t)im->g.fsinfo_sector * im->g.sector_size;
	put32(fi + 488, nfree);
	put32(fi + 492, im->next - 1);
}

/* The reference tree, the same on every FAT type:
 *   /FILE1.TXT               short only, cluster_size + 100 bytes (2 clusters)
 *   /Long file name.txt      LFN + LONGFI~1.TXT, empty
 *   /DIR1/                   short only
 *   /DIR1/Inner File.bin     LFN + INNERF~1.BIN, 10 bytes
 *   /dummy file              LFN + v1 dummy 20 00 01..06 2F 00 00, 10 bytes
 *   /v3 dummy.txt            LFN + v3 dummy (NT 0x20), 10 bytes
 *   /readme                  short only, 10 bytes
 */
enum { R_FILE1 = 0, R_LONG = 1, R_LONG_SHORT = 3, R_DIR1 = 4, R_DUMMY = 5,
       R_DUMMY_SHORT = 6, R_V3 = 7, R_V3_SHORT = 8, R_README = 9, R_END = 10 };
enum { D_INNER = 2, D_INNER_SHORT = 4 };

struct tree {
	uint32_t file1, dir1, inner, dummy, v3, readme;
};

/* plain: the v1 dummy of /dummy file is replaced by a classic alias, so
 * that fsck.fat (which calls v1 dummies bad short names) can judge the
 * other damages alone. */
static int plain;

static const char v1_dummy[11] = { 0x20, 0x00, 1, 2, 3, 4, 5, 6, 0x2F, 0x00, 0x00 };
static const char v3_dummy[11] = { 0x01, '~', 0x02, '/', 0x03, 0x04, 0x05, 0x06, 'T', 'X', 'T' };

static int build(struct img *im, int type, struct tree *t)
{
	size_t sz = type == 12 ? (1u << 20) : type == 16 ? (4u << 20) : (34u << 20);
	size_t i;

	if (img_new(im, type, sz, 512))
		return -1;
	if (type == 32)   /* a root of 4 clusters (64 entries), like the fixed ones */
		fset(im, im->g.root_cluster, alloc_chain(im, 3));
	t->file1 = alloc_chain(im, 2);
	put_short(slot(im, 0, R_FILE1), "FILE1   TXT", ATTR_ARCH, t->file1,
		  im->g.cluster_size + 100, 0);
	i = put_long(im, 0, R_LONG, "Long file name.txt", "LONGFI~1TXT", ATTR_ARCH, 0, 0, 0);
	if (i != R_DIR1)
		return -1;
	t->dir1 = put_dir(im, 0, slot(im, 0, R_DIR1), "DIR1       ");
	t->inner = alloc_chain(im, 1);
	i = put_long(im, t->dir1, D_INNER, "Inner File.bin", "INNERF~1BIN", ATTR_ARCH, t->inner, 10, 0);
	if (i != D_INNER_SHORT + 1)
		return -1;
	t->dummy = alloc_chain(im, 1);
	i = put_long(im, 0, R_DUMMY, "dummy file", plain ? "DUMMYF~1   " : v1_dummy,
		     ATTR_ARCH, t->dummy, 10, 0);
	if (i != R_V3)
		return -1;
	t->v3 = alloc_chain(im, 1);
	i = put_long(im, 0, R_V3, "v3 dummy.txt", v3_dummy, ATTR_ARCH, t->v3, 10, FAT_NO_83NAME);
	if (i != R_README)
		return -1;
	t->readme = alloc_chain(im, 1);
	put_short(slot(im, 0, R_README), "README     ", ATTR_ARCH, t->readme, 10, 0);
	fix_fsinfo(im);
	return 0;
}

static int run(const struct img *im, struct got *g)
{
	free(g->text);
	memset(g, 0, sizeof(*g));
	return vfat_check(im->b, im->size, collect, g);
}

static const char *dump_dir;

static void dump(const struct img *im, const char *name)
{
	char path[4096];
	FILE *f;

	if (!dump_dir)
		return;
	snprintf(path, sizeof(path), "%s/%s.img", dump_dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(im->b, 1, im->size, f) != im->size) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(2);
	}
	fclose(f);
}

/* Expect exactly kind (among possibly others) on a damaged image. */
static void expect(const struct img *im, const char *name, const char *kind)
{
	struct got g = { 0 };
	int r = run(im, &g);

	CHECK(r > 0);
	if (!has_kind(&g, kind)) {
		ut_failed++;
		fprintf(stderr, "%s: no '%s' finding; got %d:\n%s", name, kind, r,
			g.text ? g.text : "");
	} else {
		ut_passed++;
	}
	dump(im, name);
	free(g.text);
}

static void expect_clean(const struct img *im, const char *name)
{
	struct got g = { 0 };
	int r = run(im, &g);

	if (r != 0)
		fprintf(stderr, "%s: expected clean, got %d:\n%s", name, r, g.text ? g.text : "");
	CHECK_EQ_INT(r, 0);
	dump(im, name);
	free(g.text);
}

/* ---- the damage cases --------------------------------------------------- */

typedef void (*damage_fn)(struct img *im, const struct tree *t);

static void d_loop(struct img *im, const struct tree *t) { fset(im, t->file1 + 1, t->file1); }
static void d_cross(struct img *im, const struct tree *t)
{
	put16(slot(im, 0, R_README) + 26, (uint16_t)(t->file1 + 1));
	put16(slot(im, 0, R_README) + 20, (uint16_t)((t->file1 + 1) >> 16));
}
static void d_lost(struct img *im, const struct tree *t) { fset(im, im->next + 5, im->ops->eoc); }
static void d_long(struct img *im, const struct tree *t) { put32(slot(im, 0, R_FILE1) + 28, 100); }
static void d_short(struct img *im, const struct tree *t) { put32(slot(im, 0, R_FILE1) + 28, 100000); }
static void d_range_ptr(struct img *im, const struct tree *t) { fset(im, t->file1, im->g.nclusters + 10); }
static void d_range_first(struct img *im, const struct tree *t)
{
	put16(slot(im, 0, R_README) + 26, 1);
	put16(slot(im, 0, R_README) + 20, 0);
}
static void d_free(struct img *im, const struct tree *t) { fset(im, t->file1 + 1, 0); }
static void d_bad(struct img *im, const struct tree *t) { fset(im, t->file1 + 1, im->ops->bad); }
static void d_zero(struct img *im, const struct tree *t) { put16(slot(im, 0, R_FILE1) + 26, 0); put16(slot(im, 0, R_FILE1) + 20, 0); }
static void d_media(struct img *im, const struct tree *t) { fset(im, 0, im->ops->mask & ~0xFFu); }
static void d_eoc(struct img *im, const struct tree *t) { fset(im, 1, 0x10); }
static void d_dirty_state(struct img *im, const struct tree *t)
{
	im->b[im->g.fat_type == 32 ? 65 : 37] |= 1;
	if (im->g.fat_type == 32)   /* as Linux: only the primary is written */
		im->b[6 * 512 + 65] |= 1;
}
static void d_dirty_fat1(struct img *im, const struct tree *t)
{
	/* FAT12 has no flags in FAT[1]: there, the boot sector byte */
	if (im->g.fat_type == 12)
		im->b[37] |= 1;
	else
		fset(im, 1, im->ops->eoc & ~(im->g.fat_type == 16 ? 0x8000u : 0x08000000u));
}
static void d_copies(struct img *im, const struct tree *t)
{
	im->ops->put(im->b + im->g.fat_off + im->g.fat_bytes, t->readme, 0);
}
static void d_lfn_ck(struct img *im, const struct tree *t)
{
	slot(im, 0, R_LONG)[13] ^= 0x55;
	slot(im, 0, R_LONG + 1)[13] ^= 0x55;
}
static void d_lfn_ck_inner(struct img *im, const struct tree *t) { slot(im, 0, R_LONG + 1)[13] ^= 1; }
static void d_lfn_order(struct img *im, const struct tree *t)
{
	uint8_t tmp[32];
	memcpy(tmp, slot(im, 0, R_LONG), 32);
	memcpy(slot(im, 0, R_LONG), slot(im, 0, R_LONG + 1), 32);
	memcpy(slot(im, 0, R_LONG + 1), tmp, 32);
}
static void d_lfn_no40(struct img *im, const struct tree *t) { slot(im, 0, R_LONG)[0] &= 0x3F; }
static void d_lfn_extra(struct img *im, const struct tree *t)
{
	/* a one-slot set, then a stray ordinal-1 slot before its short entry */
	put_long(im, 0, R_END, "abc", "ABC~1      ", ATTR_ARCH, 0, 0, 0);
	memcpy(slot(im, 0, R_END + 2), slot(im, 0, R_END + 1), 32);
	memcpy(slot(im, 0, R_END + 1), slot(im, 0, R_END), 32);
	slot(im, 0, R_END + 1)[0] = 0x01;
}
static void d_lfn_pad(struct img *im, const struct tree *t)
{
	/* "Long file name.txt" is 18 units: unit 19 is padding, in slot 2 */
	put16(slot(im, 0, R_LONG) + 16, 'x');
}
static void d_lfn_noterm(struct img *im, const struct tree *t)
{
	/* the terminator (unit 18, offset 14 of slot 2) overwritten */
	put16(slot(im, 0, R_LONG) + 14, 'x');
}
static void d_lfn_orphan(struct img *im, const struct tree *t)
{
	/* the short entry goes, its slots stay */
	slot(im, 0, R_LONG_SHORT)[0] = DELETED_FLAG;
}
static void d_lfn_orphan2(struct img *im, const struct tree *t)
{
	/* a slot set interrupted by a free entry in the middle */
	memmove(slot(im, 0, R_END + 1), slot(im, 0, R_LONG + 1), 32 * 2);
	memset(slot(im, 0, R_LONG + 1), 0, 32);
	slot(im, 0, R_LONG + 1)[0] = DELETED_FLAG;
	memset(slot(im, 0, R_LONG_SHORT), 0, 32);
}
static void d_lfn_toolong(struct img *im, const struct tree *t)
{
	uint16_t u[270];
	for (int i = 0; i < 270; i++)
		u[i] = (uint16_t)('a' + i % 26);
	put_long_units(im, 0, R_END, u, 270, "VERYLO~1   ", ATTR_ARCH, 0, 0, 0);
}
static void d_lfn_cluster(struct img *im, const struct tree *t) { put16(slot(im, 0, R_LONG) + 26, 7); }
static void d_dot_missing(struct img *im, const struct tree *t) { slot(im, t->dir1, 0)[0] = DELETED_FLAG; }
static void d_dot_target(struct img *im, const struct tree *t) { put16(slot(im, t->dir1, 1) + 26, 5); }
static void d_dot_root(struct img *im, const struct tree *t)
{
	put_short(slot(im, 0, R_END), ".          ", ATTR_DIR, 0, 0, 0);
}
static void d_sn_invalid(struct img *im, const struct tree *t) { memcpy(slot(im, 0, R_README), "RE*DME  TXT", 11); }
static void d_sn_dup(struct img *im, const struct tree *t)
{
	put_short(slot(im, 0, R_END), "FILE1   TXT", ATTR_ARCH, 0, 0, 0);
}
static void d_dummy_bad(struct img *im, const struct tree *t)
{
	/* '.' where the v1 dummy has '/', checksum kept consistent */
	uint8_t *sn = slot(im, 0, R_DUMMY_SHORT);
	sn[8] = '.';
	slot(im, 0, R_DUMMY)[13] = cksum(sn);
}
static void d_dummy_nolfn(struct img *im, const struct tree *t) { slot(im, 0, R_DUMMY)[0] = DELETED_FLAG; }
static void d_dummy_coll(struct img *im, const struct tree *t)
{
	put_long(im, 0, R_END, "another dummy", v1_dummy, ATTR_ARCH, 0, 0, 0);
}
static void d_dummy_coll_v3(struct img *im, const struct tree *t)
{
	put_long(im, 0, R_END, "another v3 dummy", v3_dummy, ATTR_ARCH, 0, 0, FAT_NO_83NAME);
}
static void d_ln_dup(struct img *im, const struct tree *t)
{
	put_long(im, 0, R_END, "LONG FILE NAME.TXT", "LONGFI~2TXT", ATTR_ARCH, 0, 0, 0);
}
static void d_ln_sn(struct img *im, const struct tree *t)
{
	put_long(im, 0, R_END, "ReadMe", "README~1   ", ATTR_ARCH, 0, 0, 0);
}
static void d_ln_invalid(struct img *im, const struct tree *t)
{
	put_long(im, 0, R_END, "a*b", "AB~1       ", ATTR_ARCH, 0, 0, 0);
}
static void d_ln_dot(struct img *im, const struct tree *t)
{
	put_long(im, 0, R_END, "trailing.", "TRAILI~1   ", ATTR_ARCH, 0, 0, 0);
}
static void d_attr(struct img *im, const struct tree *t) { slot(im, 0, R_README)[11] = 0xA0; }
static void d_dir_size(struct img *im, const struct tree *t) { put32(slot(im, 0, R_DIR1) + 28, 512); }
static void d_label_sub(struct img *im, const struct tree *t)
{
	put_short(slot(im, t->dir1, D_INNER_SHORT + 1), "INNER LABEL", ATTR_VOLUME, 0, 0, 0);
}
static void d_after_end(struct img *im, const struct tree *t)
{
	put_short(slot(im, 0, R_END + 3), "LATE    TXT", ATTR_ARCH, 0, 0, 0);
}
static void d_dir_cycle(struct img *im, const struct tree *t)
{
	/* a subdirectory of DIR1 whose cluster is DIR1's own */
	put_short(slot(im, t->dir1, D_INNER_SHORT + 1), "LOOP       ", ATTR_DIR, t->dir1, 0, 0);
}
static void d_dir_zero(struct img *im, const struct tree *t) { put16(slot(im, 0, R_DIR1) + 26, 0); put16(slot(im, 0, R_DIR1) + 20, 0); }

struct dcase {
	const char *name;
	damage_fn fn;
	const char *kind;
	int needs_dummy;     /* damages the v1 dummy: not in plain images */
};

static const struct dcase cases[] = {
	{ "chain-loop", d_loop, "chain-loop", 0 },
	{ "cross-link", d_cross, "cross-link", 0 },
	{ "lost", d_lost, "lost-clusters", 0 },
	{ "chain-long", d_long, "chain-long", 0 },
	{ "chain-short", d_short, "chain-short", 0 },
	{ "range-pointer", d_range_ptr, "cluster-range", 0 },
	{ "range-first", d_range_first, "cluster-range", 0 },
	{ "chain-free", d_free, "chain-free", 0 },
	{ "chain-bad", d_bad, "chain-bad", 0 },
	{ "first-zero", d_zero, "first-cluster-zero", 0 },
	{ "fat-media", d_media, "fat-media", 0 },
	{ "fat-eoc", d_eoc, "fat-eoc", 0 },
	{ "dirty-state", d_dirty_state, "dirty", 0 },
	{ "dirty-fat1", d_dirty_fat1, "dirty", 0 },
	{ "fat-copies", d_copies, "fat-copies", 0 },
	{ "lfn-checksum", d_lfn_ck, "lfn-checksum", 0 },
	{ "lfn-checksum-inner", d_lfn_ck_inner, "lfn-checksum", 0 },
	{ "lfn-order-swap", d_lfn_order, "lfn-order", 0 },
	{ "lfn-order-no40", d_lfn_no40, "lfn-order", 0 },
	{ "lfn-order-extra", d_lfn_extra, "lfn-order", 0 },
	{ "lfn-padding", d_lfn_pad, "lfn-padding", 0 },
	{ "lfn-padding-noterm", d_lfn_noterm, "lfn-padding", 0 },
	{ "lfn-orphan", d_lfn_orphan, "lfn-orphan", 0 },
	{ "lfn-orphan-interrupted", d_lfn_orphan2, "lfn-orphan", 0 },
	{ "lfn-toolong", d_lfn_toolong, "lfn-toolong", 0 },
	{ "lfn-cluster", d_lfn_cluster, "lfn-cluster", 0 },
	{ "dot-missing", d_dot_missing, "dot-missing", 0 },
	{ "dot-target", d_dot_target, "dot-target", 0 },
	{ "dot-root", d_dot_root, "dot-misplaced", 0 },
	{ "shortname-invalid", d_sn_invalid, "shortname-invalid", 0 },
	{ "shortname-dup", d_sn_dup, "shortname-dup", 0 },
	{ "dummy-malformed", d_dummy_bad, "dummy-malformed", 1 },
	{ "dummy-nolfn", d_dummy_nolfn, "dummy-nolfn", 1 },
	{ "dummy-collision", d_dummy_coll, "dummy-collision", 1 },
	{ "dummy-collision-v3", d_dummy_coll_v3, "dummy-collision", 0 },
	{ "longname-dup", d_ln_dup, "longname-dup", 0 },
	{ "longname-shortname", d_ln_sn, "longname-shortname", 0 },
	{ "longname-invalid", d_ln_invalid, "longname-invalid", 0 },
	{ "longname-dot", d_ln_dot, "longname-invalid", 0 },
	{ "attr", d_attr, "attr", 0 },
	{ "dir-size", d_dir_size, "dir-size", 0 },
	{ "volume-label", d_label_sub, "volume-label", 0 },
	{ "after-end", d_after_end, "after-end", 0 },
	{ "dir-cycle", d_dir_cycle, "cross-link", 0 },
	{ "dir-zero", d_dir_zero, "first-cluster-zero", 0 },
};

static void test_cases(int type)
{
	struct img im;
	struct tree t;
	char name[128];

	if (build(&im, type, &t)) {
		CHECK(!"build");
		return;
	}
	snprintf(name, sizeof(name), "%sfat%d-clean", plain ? "plain-" : "", type);
	expect_clean(&im, name);
	img_free(&im);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (plain && cases[i].needs_dummy)
			continue;
		if (build(&im, type, &t)) {
			CHECK(!"build");
			return;
		}
		cases[i].fn(&im, &t);
		fix_fsinfo(&im);
		snprintf(name, sizeof(name), "%sfat%d-%s", plain ? "plain-" : "", type, cases[i].name);
		expect(&im, name, cases[i].kind);
		img_free(&im);
	}
}

/* Precise details of a few findings: wording is part of the contract. */
static void test_wording(void)
{
	struct img im;
	struct tree t;
	struct got g = { 0 };
	char want[256];

	build(&im, 16, &t);
	d_lfn_ck(&im, &t);
	run(&im, &g);
	snprintf(want, sizeof(want),
		 "lfn-checksum: /Long file name.txt: slot checksum 0x%02x != 0x%02x of the short entry %d\n",
		 cksum((const uint8_t *)"LONGFI~1TXT") ^ 0x55, cksum((const uint8_t *)"LONGFI~1TXT"),
		 R_LONG_SHORT);
	CHECK(g.text && strstr(g.text, want));
	img_free(&im);

	build(&im, 16, &t);
	d_cross(&im, &t);
	run(&im, &g);
	snprintf(want, sizeof(want),
		 "cross-link: /README: cluster %u (chain position 0) is also used by /FILE1.TXT\n",
		 t.file1 + 1);
	CHECK(g.text && strstr(g.text, want));
	img_free(&im);

	/* findings in a subdirectory carry its path */
	build(&im, 12, &t);
	put32(slot(&im, t.dir1, D_INNER_SHORT) + 28, 5000);
	run(&im, &g);
	CHECK(g.text && strstr(g.text, "chain-short: /DIR1/Inner File.bin: size 5000 bytes"));
	CHECK_EQ_INT(g.n, 1);
	img_free(&im);
	free(g.text);
}

/* Linux writes 0x7F into aliases ("a<DEL>" -> "A<DEL>"), the Microsoft
 * spec allows it: no finding (fsck.fat 4.2 disagrees; its oracle says so). */
static void test_del_alias(void)
{
	struct img im;
	struct tree t;

	plain = 1;
	build(&im, 12, &t);
	put_short(slot(&im, 0, R_END), "A\x7f         ", ATTR_ARCH, 0, 0, 0);
	put_long(&im, 0, R_END + 1, "b\x7f long", "B\x7fLONG~1   ", ATTR_ARCH, 0, 0, 0);
	expect_clean(&im, "plain-fat12-del-alias");
	/* but a DEL in a short name is no licence for other bad bytes */
	memcpy(slot(&im, 0, R_END), "A\x7f*        ", 11);
	expect(&im, "plain-fat12-del-star", "shortname-invalid");
	img_free(&im);
	plain = 0;
}

/* FAT32 only: FSInfo and the root cluster. */
static void test_fat32(void)
{
	struct img im;
	struct tree t;
	uint8_t *fi;

	plain = 1;   /* no v1 dummy: these images also go to fsck.fat */
	build(&im, 32, &t);
	fi = im.b + 512;
	put32(fi + 488, get32(fi + 488) + 3);
	expect(&im, "plain-fat32-fsinfo-count", "fsinfo");
	put32(fi + 488, 0xFFFFFFFF);
	expect_clean(&im, "plain-fat32-fsinfo-unknown");
	put32(fi + 492, 1);
	expect(&im, "plain-fat32-fsinfo-hint", "fsinfo");
	put32(fi + 492, 0xFFFFFFFF);
	put32(fi, 0x12345678);
	expect(&im, "plain-fat32-fsinfo-signature", "fsinfo");
	put32(fi, 0x41615252);
	expect_clean(&im, "plain-fat32-fsinfo-restored");
	im.b[6 * 512 + 71] ^= 0x40;   /* the label in the backup boot sector */
	expect(&im, "plain-fat32-boot-backup", "boot-backup");
	im.b[6 * 512 + 71] ^= 0x40;
	fset(&im, im.g.root_cluster, 0);
	fix_fsinfo(&im);
	expect(&im, "plain-fat32-root-free", "root-cluster");
	img_free(&im);

	/* a root directory of five clusters */
	build(&im, 32, &t);
	{
		uint32_t c = alloc_chain(&im, 1);
		fset(&im, im.g.root_cluster + 3, c);
		for (int k = R_END; k <= 70; k++) {
			char sn[12];
			snprintf(sn, sizeof(sn), "ROOT%02d  TXT", k);
			put_short(slot(&im, 0, (size_t)k), sn, ATTR_ARCH, 0, 0, 0);
		}
		fix_fsinfo(&im);
		expect_clean(&im, "plain-fat32-root-five-clusters");
		/* a loop in the root chain must be found and not followed */
		fset(&im, c, im.g.root_cluster);
		expect(&im, "plain-fat32-root-loop", "chain-loop");
	}
	img_free(&im);
	plain = 0;
}

/* A deep tree (no recursion in the checker) and a wide directory. */
static void test_deep(void)
{
	struct img im;
	struct got g = { 0 };
	uint32_t parent = 0, c;
	uint8_t *de = NULL;
	int r;

	if (img_new(&im, 16, 8u << 20, 512)) {
		CHECK(!"img");
		return;
	}
	de = slot(&im, 0, 0);
	for (int i = 0; i < 3000; i++) {
		c = put_dir(&im, parent, de, "D          ");
		de = slot(&im, c, 2);
		parent = c;
	}
	r = run(&im, &g);
	if (r)
		fprintf(stderr, "deep: %s", g.text);
	CHECK_EQ_INT(r, 0);
	/* close it into a cycle: the last one points at the first */
	put_short(de, "D          ", ATTR_DIR, get16(slot(&im, 0, 0) + 26), 0, 0);
	r = run(&im, &g);
	CHECK(has_kind(&g, "cross-link"));
	CHECK(g.text && strstr(g.text, "cross-link: /.../D/D/D/"));   /* deep paths are cut */
	CHECK(g.text && strlen(g.text) < 64 * 2 + 200);
	img_free(&im);

	/* 700 files in one directory, names unique by construction */
	if (img_new(&im, 16, 8u << 20, 512)) {
		CHECK(!"img");
		return;
	}
	{
		uint32_t dc = alloc_chain(&im, 150);
		size_t i = 2;
		put_short(slot(&im, 0, 0), "BIG        ", ATTR_DIR, dc, 0, 0);
		put_short(slot(&im, dc, 0), ".          ", ATTR_DIR, dc, 0, 0);
		put_short(slot(&im, dc, 1), "..         ", ATTR_DIR, 0, 0, 0);
		for (int k = 0; k < 700; k++) {
			char ln[32], sn[12];
			snprintf(ln, sizeof(ln), "file number %d", k);
			snprintf(sn, sizeof(sn), "F%07d   ", k);
			i = put_long(&im, dc, i, ln, sn, ATTR_ARCH, 0, 0, 0);
		}
		r = run(&im, &g);
		if (r)
			fprintf(stderr, "wide: %s", g.text);
		CHECK_EQ_INT(r, 0);
		/* make two long names collide */
		put_long(&im, dc, i, "FILE NUMBER 5", "DUPLIC~1   ", ATTR_ARCH, 0, 0, 0);
		r = run(&im, &g);
		CHECK(has_kind(&g, "longname-dup"));
	}
	img_free(&im);
	free(g.text);
}

/* A directory spanning the whole volume, filled with garbage: the output
 * is capped, every finding still counted, and it comes back quickly. */
static void test_huge(void)
{
	struct img im;
	struct got g = { 0 };
	uint64_t s = 42;
	uint32_t dc, n;
	int r;

	if (img_new(&im, 16, 8u << 20, 512)) {
		CHECK(!"img");
		return;
	}
	n = im.g.nclusters - 1;
	dc = alloc_chain(&im, n);
	put_short(slot(&im, 0, 0), "HUGE       ", ATTR_DIR, dc, 0, 0);
	for (size_t i = 0; i < (size_t)n * im.g.cluster_size; i += 8) {
		uint64_t v = rng_next(&s);
		memcpy(cdata(&im, dc) + i, &v, 8);
	}
	r = run(&im, &g);
	CHECK(r > 100000);
	CHECK_EQ_INT(g.n, 100001);
	CHECK(has_kind(&g, "truncated"));
	CHECK(has_kind(&g, "dir-too-large"));
	img_free(&im);
	free(g.text);
}

/* Unusable images: negative errno and exactly one "unusable:" line. */
static void test_unusable(void)
{
	struct img im;
	struct tree t;
	struct got g = { 0 };
	uint8_t junk[4096];

	memset(junk, 0x5A, sizeof(junk));
	CHECK(vfat_check(junk, sizeof(junk), collect, &g) < 0);
	CHECK_EQ_INT(g.n, 1);
	CHECK(g.text && !strncmp(g.text, "unusable: /: ", 13));
	free(g.text);
	memset(&g, 0, sizeof(g));
	CHECK(vfat_check(junk, 100, NULL, NULL) < 0);
	CHECK(vfat_check(junk, 0, NULL, NULL) < 0);

	build(&im, 16, &t);
	CHECK(vfat_check(im.b, im.size / 2, NULL, NULL) < 0);   /* truncated */
	CHECK_EQ_INT(vfat_check(im.b, im.size, NULL, NULL), 0);
	img_free(&im);
}

/* ---- seeded random damage ----------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static void mutate(struct img *im, size_t region, uint64_t *s)
{
	int nmut = 1 + (int)(rng_next(s) % 8);

	for (int m = 0; m < nmut; m++) {
		uint64_t r = rng_next(s);
		size_t pos = (size_t)(rng_next(s) % region);
		switch (r % 8) {
		case 0: /* bit flip anywhere in the metadata */
			im->b[pos] ^= (uint8_t)(1u << (r >> 8) % 8);
			break;
		case 1: /* random byte in the boot sector */
			im->b[pos % 512] = (uint8_t)(r >> 16);
			break;
		case 2: { /* random FAT link, often a small cluster number */
			uint32_t c = (uint32_t)(rng_next(s) % (im->g.nclusters + 2));
			uint32_t v = (r >> 12) & 1 ? (uint32_t)(rng_next(s) % (im->next + 4))
						   : (uint32_t)rng_next(s);
			im->ops->put(im->b + im->g.fat_off, c, v & im->ops->mask);
			break;
		}
		case 3: { /* swap two directory entries of the root / DIR1 area */
			size_t a = (size_t)(rng_next(s) % (region / 32)) * 32;
			uint8_t tmp[32];
			memcpy(tmp, im->b + pos / 32 * 32, 32);
			memcpy(im->b + pos / 32 * 32, im->b + a, 32);
			memcpy(im->b + a, tmp, 32);
			break;
		}
		case 4: /* random 32-bit field */
			if (pos + 4 <= region)
				put32(im->b + pos, (uint32_t)rng_next(s));
			break;
		case 5: /* byte from the special values that parsers trip on */
			{
				static const uint8_t sp[] = { 0x00, 0xE5, 0x0F, 0x2E, 0x40, 0x41, 0x05, 0xFF, 0x20, 0x10 };
				im->b[pos] = sp[(r >> 8) % sizeof(sp)];
			}
			break;
		case 6: { /* plausible but wrong geometry */
			static const uint8_t spc[] = { 1, 2, 4, 8, 16, 32, 64, 128, 0, 3 };
			switch ((r >> 8) % 6) {
			case 0: im->b[13] = spc[(r >> 16) % sizeof(spc)]; break;
			case 1: im->b[16] = (uint8_t)(1 + (r >> 16) % 4); break;
			case 2: put16(im->b + 14, (uint16_t)(1 + (r >> 16) % 64)); break;
			case 3: put16(im->b + 17, (uint16_t)(16 * ((r >> 16) % 64))); break;
			case 4: if (im->g.fat_type == 32)
					put32(im->b + 44, (uint32_t)((r >> 16) % (im->g.nclusters + 8)));
				else
					put16(im->b + 22, (uint16_t)(1 + (r >> 16) % 64));
				break;
			default: put16(im->b + 48, (uint16_t)((r >> 16) % 40)); break;
			}
			break;
		}
		default: /* burst of garbage */
			for (int i = 0; i < 32 && pos + (size_t)i < region; i++)
				im->b[pos + (size_t)i] = (uint8_t)rng_next(s);
			break;
		}
	}
}

static void test_random(int type, int iters, uint64_t seed)
{
	struct img im;
	struct tree t;
	uint8_t *orig, *before;
	size_t region;
	uint64_t s = seed;
	int neg = 0, pos = 0;

	if (iters <= 0)
		return;
	if (build(&im, type, &t)) {
		CHECK(!"build");
		return;
	}
	/* metadata plus the first clusters (where the tree lives) */
	region = (size_t)im.g.data_off + 16 * im.g.cluster_size;
	if (region > im.size)
		region = im.size;
	orig = malloc(region);
	before = malloc(region);
	if (!orig || !before)
		abort();
	memcpy(orig, im.b, region);
	for (int it = 0; it < iters; it++) {
		size_t size = im.size;
		int r;
		memcpy(im.b, orig, region);
		mutate(&im, region, &s);
		if (rng_next(&s) % 10 == 0)
			size = (size_t)(rng_next(&s) % im.size);
		memcpy(before, im.b, region);
		r = vfat_check(im.b, size, NULL, NULL);
		if (r < 0)
			neg++;
		else if (r > 0)
			pos++;
		if (memcmp(before, im.b, region)) {
			CHECK(!"vfat_check modified the image");
			break;
		}
	}
	printf("random fat%d: %d iterations, %d unusable, %d with findings, %d clean\n",
	       type, iters, neg, pos, iters - neg - pos);
	CHECK(pos > iters / 4);   /* the damage is actually seen */
	free(orig);
	free(before);
	img_free(&im);
}

int main(void)
{
	const char *it = getenv("VFAT_CHECK_ITERS");
	int iters = it ? atoi(it) : 1500;

	dump_dir = getenv("VFAT_CHECK_DUMP");
	for (plain = 0; plain < 2; plain++) {
		test_cases(12);
		test_cases(16);
		test_cases(32);
	}
	plain = 0;
	test_wording();
	test_fat32();
	test_del_alias();
	test_deep();
	test_unusable();
	test_huge();
	test_random(12, iters, 1);
	test_random(16, iters, 2);
	test_random(32, iters / 3, 3);
	return ut_finish("unit_check");
}
