/* unit_lookup.c - lookups and the seeded streams of the writer (issue 16).
 *
 * 1. v3 lookups follow the July 2009 reader patch (FAT_NO_83NAME): an
 *    entry whose NT byte has 0x20 is found by its long name only, and
 *    alias uniqueness (fat_scan) does not see it. A v3 dummy is no path;
 *    a short-only entry flagged 0x20 is found by no name at all. Dual and
 *    v1 compare such short names as stock 6.1 does. Checked in a small
 *    directory (linear scan) and in a large one (the hash index).
 * 2. The dummies and the jiffies stand-in (the BA####~D hex tail) draw
 *    from two streams: the dummy of a name does not change when its alias
 *    needed the hex tail (FOOLON~1..9.TXT taken, then foolongname.txt),
 *    and equals what the ported kernel module writes with the same seed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "unit_test.h"
#include "vfat.h"
#include "fat.h"

#define IMG_SIZE (8u << 20)

static uint8_t *new_image(void)
{
	struct vfat_mkfs_opts mo;
	uint8_t *buf = calloc(1, IMG_SIZE);
	char err[200];

	vfat_mkfs_opts_default(&mo);
	mo.fat_type = 16;
	if (!buf || vfat_mkfs(buf, IMG_SIZE, &mo, err, sizeof(err))) {
		fprintf(stderr, "mkfs failed: %s\n", err);
		exit(2);
	}
	return buf;
}

static vfat_vol *open_mode(uint8_t *buf, enum vfat_names names, enum vfat_dummy dummy,
			   uint64_t seed)
{
	struct vfat_opts o;
	vfat_vol *v;
	char err[200];

	vfat_opts_default(&o);
	o.names = names;
	o.dummy = dummy;
	o.seed = seed;
	if (vfat_open(&v, buf, IMG_SIZE, &o, err, sizeof(err))) {
		fprintf(stderr, "open failed: %s\n", err);
		exit(2);
	}
	return v;
}

struct find { const char *name; struct vfat_dirent d; int hits; };

static int find_cb(void *ctx, const struct vfat_dirent *e)
{
	struct find *f = ctx;

	if (!strcmp(e->name, f->name)) {
		f->d = *e;
		f->hits++;
	}
	return 0;
}

/* The readdir record of dir/name (hits = how many entries show it). */
static struct find entry_of(vfat_vol *v, const char *dir, const char *name)
{
	struct find f = { name, { .name = "" }, 0 };

	vfat_readdir(v, dir, find_cb, &f);
	return f;
}

/* The 11 bytes as a path component, as stock 6.1 shows a short name:
 * base without trailing spaces, '.', extension without trailing spaces. */
static void short_path(const char *dir, const uint8_t sn[11], char *out)
{
	int b = 8, e = 3, n;

	while (b && sn[b - 1] == ' ')
		b--;
	while (e && sn[8 + e - 1] == ' ')
		e--;
	n = sprintf(out, "%s/", dir);
	memcpy(out + n, sn, (size_t)b);
	n += b;
	if (e) {
		out[n++] = '.';
		memcpy(out + n, sn + 8, (size_t)e);
		n += e;
	}
	out[n] = 0;
}

/* Set NT byte bits on the short entry whose 11 bytes are sn. */
static int flag_entry(uint8_t *buf, const uint8_t sn[11], uint8_t bits)
{
	int n = 0;

	for (size_t off = 0; off + 32 <= IMG_SIZE; off += 32)
		if (!memcmp(buf + off, sn, 11) && buf[off + 11] != ATTR_LFN) {
			buf[off + 12] |= bits;
			n++;
		}
	return n;
}

/* Issue 16 #1: core v3, seed 1, mkdir "/a long directory name" gets
 * 1e 13 12 1e 7e 2a 2a 0e 20 20 20 (NT 0x20; kernel-nodual-v3 with
 * nodual_seed=1 writes the same, issue 16 #2); rmdir of the path those
 * bytes spell must fail (the kernel without FAT_NO_83NAME removed it). */
static void test_v3_dummy_is_no_path(void)
{
	static const uint8_t seen[11] = { 0x1e, 0x13, 0x12, 0x1e, 0x7e, 0x2a, 0x2a, 0x0e, 0x20, 0x20, 0x20 };
	uint8_t *buf = new_image();
	vfat_vol *v = open_mode(buf, VFAT_NAMES_NODUAL, VFAT_DUMMY_V3, 1);
	struct vfat_stat st;
	struct find f;
	char p[64];

	CHECK_EQ_INT(vfat_mkdir(v, "/a long directory name"), 0);
	f = entry_of(v, "/", "a long directory name");
	CHECK_EQ_INT(f.hits, 1);
	CHECK_EQ_MEM(f.d.shortname, seen, 11);
	CHECK_EQ_INT(f.d.ntcase, 0x20);
	short_path("", f.d.shortname, p);
	CHECK_EQ_INT(vfat_stat(v, p, &st), -ENOENT);
	CHECK_EQ_INT(vfat_rmdir(v, p), -ENOENT);
	CHECK_EQ_INT(vfat_stat(v, "/A LONG directory NAME", &st), 0);
	CHECK_EQ_INT(vfat_rmdir(v, "/a long directory name"), 0);
	vfat_close(v);
	free(buf);
}

/* In directory dir: a short-only FOO.TXT and the alias MIXEDN~1.TXT of
 * "Mixed Name.txt", both written in dual mode, then flagged 0x20 by hand. */
static void make_flagged(uint8_t *buf, const char *dir, int nfill)
{
	vfat_vol *v = open_mode(buf, VFAT_NAMES_DUAL, VFAT_DUMMY_V1, 1);
	char p[128];

	if (strcmp(dir, "/"))
		CHECK_EQ_INT(vfat_mkdir(v, dir), 0);
	for (int i = 0; i < nfill; i++) {   /* 1 slot each */
		snprintf(p, sizeof(p), "%s/F%d.DAT", dir, i);
		CHECK_EQ_INT(vfat_create(v, p), 0);
	}
	snprintf(p, sizeof(p), "%s/FOO.TXT", dir);
	CHECK_EQ_INT(vfat_create(v, p), 0);
	snprintf(p, sizeof(p), "%s/Mixed Name.txt", dir);
	CHECK_EQ_INT(vfat_create(v, p), 0);
	vfat_close(v);
	CHECK_EQ_INT(flag_entry(buf, (const uint8_t *)"FOO     TXT", FAT_NO_83NAME), 1);
	CHECK_EQ_INT(flag_entry(buf, (const uint8_t *)"MIXEDN~1TXT", FAT_NO_83NAME), 1);
}

static void lookups_of_flagged(const char *dir, int nfill)
{
	uint8_t *buf = new_image(), *copy = malloc(IMG_SIZE);
	struct vfat_stat st;
	char foo[128], alias[128], lng[128], foo2[128];
	vfat_vol *v;

	make_flagged(buf, dir, nfill);
	memcpy(copy, buf, IMG_SIZE);
	snprintf(foo, sizeof(foo), "%s/foo.txt", dir);
	snprintf(foo2, sizeof(foo2), "%s/FOO.TXT", dir);
	snprintf(alias, sizeof(alias), "%s/MIXEDN~1.TXT", dir);
	snprintf(lng, sizeof(lng), "%s/mixed name.TXT", dir);

	/* dual and v1: stock 6.1 compares every short name (and the NT byte's
	 * 0x20 means nothing to it) */
	for (int mode = 0; mode < 2; mode++) {
		memcpy(buf, copy, IMG_SIZE);
		v = mode ? open_mode(buf, VFAT_NAMES_NODUAL, VFAT_DUMMY_V1, 1)
			 : open_mode(buf, VFAT_NAMES_DUAL, VFAT_DUMMY_V1, 1);
		CHECK_EQ_INT(vfat_stat(v, foo, &st), 0);
		CHECK_EQ_INT(vfat_stat(v, alias, &st), 0);
		CHECK_EQ_INT(vfat_stat(v, lng, &st), 0);
		CHECK_EQ_INT(vfat_create(v, foo2), -EEXIST);
		vfat_close(v);
	}

	/* v3 (July 2009): found by the long name only; the short-only entry
	 * is found by no name, and FOO.TXT can be made again (fat_scan skips
	 * the flagged entry, as vfat_find_form of the patched kernel) */
	memcpy(buf, copy, IMG_SIZE);
	v = open_mode(buf, VFAT_NAMES_NODUAL, VFAT_DUMMY_V3, 1);
	CHECK_EQ_INT(vfat_stat(v, foo, &st), -ENOENT);
	CHECK_EQ_INT(vfat_stat(v, alias, &st), -ENOENT);
	CHECK_EQ_INT(vfat_stat(v, lng, &st), 0);
	CHECK_EQ_INT(vfat_create(v, foo2), 0);
	CHECK_EQ_INT(vfat_stat(v, foo, &st), 0);       /* the new one */
	CHECK_EQ_INT(vfat_unlink(v, foo), 0);
	CHECK_EQ_INT(vfat_stat(v, foo, &st), -ENOENT);  /* the flagged one stays */
	CHECK_EQ_INT(entry_of(v, strcmp(dir, "/") ? dir : "/", "FOO.TXT").hits, 1);
	vfat_close(v);
	free(copy);
	free(buf);
}

static void test_v3_no83name_lookups(void)
{
	lookups_of_flagged("/", 0);        /* linear scan */
	lookups_of_flagged("/big", 600);   /* > 512 slots: the hash index */
}

/* The dummy of foolongname.txt, seed 42, after FOOLON~1.TXT..FOOLON~9.TXT
 * (taken = 1: the alias needs the hex tail) or alone (taken = 0). */
static void dummy_after(enum vfat_dummy dummy, int taken, uint8_t out[11], uint8_t *nt)
{
	uint8_t *buf = new_image();
	vfat_vol *v = open_mode(buf, VFAT_NAMES_NODUAL, dummy, 42);
	struct find f;
	char p[32];

	for (int i = 1; taken && i <= 9; i++) {
		snprintf(p, sizeof(p), "/FOOLON~%d.TXT", i);
		CHECK_EQ_INT(vfat_create(v, p), 0);
	}
	CHECK_EQ_INT(vfat_create(v, "/foolongname.txt"), 0);
	f = entry_of(v, "/", "foolongname.txt");
	CHECK_EQ_INT(f.hits, 1);
	memcpy(out, f.d.shortname, 11);
	*nt = f.d.ntcase;
	vfat_close(v);
	free(buf);
}

static void test_separate_streams(void)
{
	/* what kernel-nodual (v1, nodual_seed=42) wrote for this script */
	static const uint8_t kernel_v1[11] = { 0x20, 0x00, 0x06, 0x11, 0x0c, 0x0e, 0x1d, 0x1e, 0x2f, 0x00, 0x00 };
	uint8_t a[11], b[11], nta, ntb;

	dummy_after(VFAT_DUMMY_V1, 1, a, &nta);
	dummy_after(VFAT_DUMMY_V1, 0, b, &ntb);
	CHECK_EQ_MEM(a, b, 11);
	CHECK_EQ_MEM(a, kernel_v1, 11);
	dummy_after(VFAT_DUMMY_V3, 1, a, &nta);
	dummy_after(VFAT_DUMMY_V3, 0, b, &ntb);
	CHECK_EQ_MEM(a, b, 11);
	CHECK_EQ_INT(nta, 0x20);
	CHECK_EQ_MEM(a + 8, "TXT", 3);
}

/* The hex tail is replayable too: same seed, same alias; and it comes from
 * its own stream (a dual volume draws nothing else, so its first hex tail
 * is the jiffies stream's first two numbers). */
static void test_hex_tail_replays(void)
{
	uint8_t sn[2][11];

	for (int run = 0; run < 2; run++) {
		uint8_t *buf = new_image();
		vfat_vol *v = open_mode(buf, VFAT_NAMES_DUAL, VFAT_DUMMY_V1, 42);
		char p[32];

		for (int i = 1; i <= 9; i++) {
			snprintf(p, sizeof(p), "/FOOLON~%d.TXT", i);
			CHECK_EQ_INT(vfat_create(v, p), 0);
		}
		CHECK_EQ_INT(vfat_create(v, "/foolongname.txt"), 0);
		memcpy(sn[run], entry_of(v, "/", "foolongname.txt").d.shortname, 11);
		vfat_close(v);
		free(buf);
	}
	CHECK_EQ_MEM(sn[0], sn[1], 11);
	CHECK(sn[0][6] == '~' && sn[0][7] >= '1' && sn[0][7] <= '8');
	CHECK_EQ_MEM(sn[0], "FO", 2);
	CHECK_EQ_MEM(sn[0] + 8, "TXT", 3);
}

int main(void)
{
	test_v3_dummy_is_no_path();
	test_v3_no83name_lookups();
	test_separate_streams();
	test_hex_tail_replays();
	return ut_finish("unit_lookup");
}
