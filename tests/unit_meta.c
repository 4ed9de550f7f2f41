/* unit_meta.c - the second grammar in the core (issue 27), byte by byte:
 *
 * 1. truncate: a shrink across a cluster boundary makes the last kept
 *    cluster end-of-chain and frees the rest, zeroes the tail of the
 *    sector holding the new end, sets ATTR_ARCH (fat_free); an extension
 *    zero-fills; truncate to 0 frees the whole chain and clears the start.
 * 2. times: FAT's fields for utimensat's times (2-s mtime, day atime,
 *    the 1980 and 2107 clamps, 2100 not a leap year), the creation time
 *    untouched, and the decoding the listing uses.
 * 3. attributes: the root takes only the empty set; a directory keeps
 *    ATTR_DIR; a write sets ATTR_ARCH again.
 * 4. the label: boot sector offsets 43 (FAT16) and 71 (FAT32), the root
 *    entry made once and renamed, removal, refusals; vfat_check flags a
 *    boot label without a root entry and two labels that differ.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "unit_test.h"
#include "vfat.h"
#include "fat.h"

#define IMG_SIZE (40u << 20)

static uint8_t *new_image(int fat)
{
	struct vfat_mkfs_opts mo;
	uint8_t *buf = calloc(1, IMG_SIZE);
	char err[200];

	vfat_mkfs_opts_default(&mo);
	mo.fat_type = fat;
	mo.cluster_bytes = fat == 16 ? 1024 : 0;
	if (!buf || vfat_mkfs(buf, IMG_SIZE, &mo, err, sizeof(err))) {
		fprintf(stderr, "mkfs failed: %s\n", err);
		exit(2);
	}
	return buf;
}

static vfat_vol *open_vol(uint8_t *buf)
{
	struct vfat_opts o;
	vfat_vol *v;
	char err[200];

	vfat_opts_default(&o);
	o.names = VFAT_NAMES_DUAL;
	if (vfat_open(&v, buf, IMG_SIZE, &o, err, sizeof(err))) {
		fprintf(stderr, "open failed: %s\n", err);
		exit(2);
	}
	return v;
}

static void count(void *ctx, const char *line)
{
	(void)line;
	++*(int *)ctx;
}

static int findings(const uint8_t *buf)
{
	int n = 0;
	return vfat_check(buf, IMG_SIZE, count, &n);
}

static void test_truncate(void)
{
	uint8_t *buf = new_image(16), data[5000];
	vfat_vol *v = open_vol(buf);
	struct vfat_stat st;
	uint32_t c0, c1, c2;
	size_t got;

	memset(data, 0xAB, sizeof(data));
	CHECK_EQ_INT(vfat_create(v, "/f"), 0);
	CHECK_EQ_INT(vfat_write(v, "/f", 0, data, 5000), 0);      /* 5 clusters */
	CHECK_EQ_INT(vfat_stat(v, "/f", &st), 0);
	c0 = st.first_cluster;
	c1 = fat_get(v, c0);
	c2 = fat_get(v, c1);
	CHECK_EQ_INT(vfat_set_attrs(v, "/f", 0), 0);               /* archive bit off */
	CHECK_EQ_INT(vfat_truncate(v, "/f", 1500), 0);             /* 2 clusters kept */
	CHECK(fat_is_eoc(v, fat_get(v, c1)));
	CHECK_EQ_INT(fat_get(v, c2), 0);
	CHECK_EQ_INT(vfat_stat(v, "/f", &st), 0);
	CHECK_EQ_INT(st.size, 1500);
	CHECK_EQ_INT(st.attr, ATTR_ARCH);                          /* fat_free */
	/* the rest of the sector holding the new end is zero, the next one not */
	CHECK_EQ_INT(cluster_ptr(v, c1)[1500 - 1024], 0);
	CHECK_EQ_INT(cluster_ptr(v, c1)[1535 - 1024], 0);
	CHECK_EQ_INT(cluster_ptr(v, c1)[1499 - 1024], 0xAB);
	CHECK_EQ_INT(cluster_ptr(v, c1)[1536 - 1024], 0xAB);
	/* extension: zeros after the old end, one more cluster */
	CHECK_EQ_INT(vfat_truncate(v, "/f", 3000), 0);
	CHECK_EQ_INT(vfat_read(v, "/f", 0, data, 3000, &got), 0);
	CHECK_EQ_INT(got, 3000);
	CHECK_EQ_INT(data[1499], 0xAB);
	CHECK_EQ_INT(data[1500], 0);
	CHECK_EQ_INT(data[2999], 0);
	CHECK_EQ_INT(vfat_truncate(v, "/f", 0), 0);
	CHECK_EQ_INT(vfat_stat(v, "/f", &st), 0);
	CHECK_EQ_INT(st.first_cluster, 0);
	CHECK_EQ_INT(fat_get(v, c0), 0);
	CHECK_EQ_INT(vfat_truncate(v, "/", 0), -EISDIR);
	CHECK_EQ_INT(vfat_truncate(v, "/f/", 0), -ENOTDIR);
	CHECK_EQ_INT(vfat_truncate(v, "/nope", 0), -ENOENT);
	vfat_close(v);
	CHECK_EQ_INT(findings(buf), 0);
	free(buf);
}

struct seen { const char *name; struct vfat_dirent d; };

static int find_cb(void *ctx, const struct vfat_dirent *e)
{
	struct seen *s = ctx;
	if (!strcmp(e->name, s->name))
		s->d = *e;
	return 0;
}

static struct vfat_dirent entry_of(vfat_vol *v, const char *dir, const char *name)
{
	struct seen s = { name, { .name = "" } };
	vfat_readdir(v, dir, find_cb, &s);
	return s.d;
}

static void test_times(void)
{
	uint8_t *buf = new_image(32);
	vfat_vol *v = open_vol(buf);
	struct vfat_time m = { 1246079973, 500000000 }, a = { 1246079973, 0 };
	struct vfat_dirent d;
	uint16_t t, dt;

	CHECK_EQ_INT(vfat_mkdir(v, "/d"), 0);
	d = entry_of(v, "/", "d");
	int64_t crtime = d.crtime.sec;
	CHECK_EQ_INT(vfat_utimes(v, "/d/.", &m, &a), 0);          /* "." names /d */
	d = entry_of(v, "/", "d");
	CHECK_EQ_INT(d.mtime.sec, 1246079972);                    /* 2-s resolution */
	CHECK_EQ_INT(d.atime.sec, 1246060800);                    /* the day */
	CHECK_EQ_INT(d.crtime.sec, crtime);                       /* i_crtime stays */
	m.sec = 0;
	a.sec = 9999999999LL;
	CHECK_EQ_INT(vfat_utimes(v, "/d", &m, &a), 0);
	d = entry_of(v, "/", "d");
	CHECK_EQ_INT(d.mtime.sec, 315532800);                     /* 1980-01-01 */
	CHECK_EQ_INT(d.atime.sec, 4354732800LL);                  /* 2107-12-31 */
	CHECK_EQ_INT(vfat_utimes(v, "/", &m, &a), 0);             /* the root: nothing */
	CHECK_EQ_INT(vfat_utimes(v, "/x", &m, &a), -ENOENT);
	/* 2100-03-01 (2100 is not a leap year) and 2107's last even second */
	fat_time_unix2fat(4107542400LL, &t, &dt);
	CHECK_EQ_INT(dt, (120 << 9) | (3 << 5) | 1);
	CHECK_EQ_INT(t, 0);
	fat_time_unix2fat(4354819198LL, &t, &dt);
	CHECK_EQ_INT(dt, (127 << 9) | (12 << 5) | 31);
	CHECK_EQ_INT(t, (23 << 11) | (59 << 5) | 29);
	CHECK_EQ_INT(fat_time_fat2unix(t, dt), 4354819198LL);
	CHECK_EQ_INT(fat_time_fat2unix(0, 0), 315532800);         /* month, day 0 count as 1 */
	CHECK_EQ_INT(fat_clamp_time(-5), 315532800);
	vfat_close(v);
	CHECK_EQ_INT(findings(buf), 0);
	free(buf);
}

static void test_attrs(void)
{
	uint8_t *buf = new_image(16), b = 1;
	vfat_vol *v = open_vol(buf);
	struct vfat_stat st;

	CHECK_EQ_INT(vfat_mkdir(v, "/d"), 0);
	CHECK_EQ_INT(vfat_create(v, "/d/f"), 0);
	CHECK_EQ_INT(vfat_set_attrs(v, "/", ATTR_RO), -EINVAL);
	CHECK_EQ_INT(vfat_set_attrs(v, "/", 0), 0);
	CHECK_EQ_INT(vfat_set_attrs(v, "/d/f/..", ATTR_RO | ATTR_HIDDEN | 0xC0), -ENOTDIR);
	CHECK_EQ_INT(vfat_set_attrs(v, "/d/..", ATTR_RO), -EINVAL);      /* the root again */
	CHECK_EQ_INT(vfat_set_attrs(v, "/d", ATTR_RO | ATTR_SYS | ATTR_VOLUME), 0);
	CHECK_EQ_INT(vfat_stat(v, "/d", &st), 0);
	CHECK_EQ_INT(st.attr, ATTR_DIR | ATTR_RO | ATTR_SYS);
	CHECK_EQ_INT(vfat_set_attrs(v, "/d/f", ATTR_RO), 0);
	CHECK_EQ_INT(vfat_write(v, "/d/f", 0, &b, 1), 0);                /* root may write */
	CHECK_EQ_INT(vfat_stat(v, "/d/f", &st), 0);
	CHECK_EQ_INT(st.attr, ATTR_RO | ATTR_ARCH);                       /* fat_write_end */
	CHECK_EQ_INT(vfat_rename(v, "/d/f", "/g"), 0);
	CHECK_EQ_INT(vfat_stat(v, "/g", &st), 0);
	CHECK_EQ_INT(st.attr, ATTR_RO | ATTR_ARCH);                       /* the inode moved */
	vfat_close(v);
	CHECK_EQ_INT(findings(buf), 0);
	free(buf);
}

/* Damage the boot sector's label (and FAT32's backup, so that the backup
 * check does not speak too). */
static void set_boot(uint8_t *buf, int fat, const char *l)
{
	memcpy(buf + (fat == 32 ? 71 : 43), l, 11);
	if (fat == 32)
		memcpy(buf + 6 * 512 + 71, l, 11);
}

static void test_label(int fat)
{
	uint8_t *buf = new_image(fat), boot[11], root[11];
	vfat_vol *v = open_vol(buf);
	int lo = fat == 32 ? 71 : 43, hb, hr;

	CHECK_EQ_INT(vfat_set_label(v, "BAD*"), -EINVAL);
	CHECK_EQ_INT(vfat_set_label(v, " LEAD"), -EINVAL);
	CHECK_EQ_INT(vfat_set_label(v, "   "), -EINVAL);
	CHECK_EQ_INT(vfat_set_label(v, "\xc3\x84"), -EINVAL);
	CHECK_EQ_INT(vfat_set_label(v, "123456789012"), -EINVAL);
	CHECK_EQ_INT(vfat_set_label(v, "Fuzz"), 0);
	CHECK_EQ_MEM(buf + lo, "Fuzz       ", 11);
	CHECK_EQ_INT(vfat_set_label(v, "12345678901"), 0);
	CHECK_EQ_MEM(buf + lo, "12345678901", 11);
	CHECK_EQ_INT(vfat_get_label(v, boot, &hb, root, &hr), 0);
	CHECK(hb && hr);
	CHECK_EQ_MEM(root, "12345678901", 11);
	if (fat == 32)   /* the backup boot sector follows */
		CHECK_EQ_MEM(buf + 6 * 512 + lo, "12345678901", 11);
	CHECK_EQ_INT(findings(buf), 0);
	/* damage: another label in the boot sector, then none in the root */
	set_boot(buf, fat, "OTHER      ");
	CHECK_EQ_INT(findings(buf), 1);
	CHECK_EQ_INT(vfat_set_label(v, ""), 0);
	CHECK_EQ_MEM(buf + lo, "NO NAME    ", 11);
	CHECK_EQ_INT(vfat_get_label(v, boot, &hb, root, &hr), 0);
	CHECK(!hr);
	CHECK_EQ_INT(findings(buf), 0);
	set_boot(buf, fat, "LONELY     ");
	CHECK_EQ_INT(findings(buf), 1);
	vfat_close(v);
	free(buf);
}

int main(void)
{
	test_truncate();
	test_times();
	test_attrs();
	test_label(16);
	test_label(32);
	return ut_finish("unit_meta");
}
