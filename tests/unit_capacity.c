/* unit_capacity.c - a write, a gap fill and a truncate growth that run out
 * of clusters keep what Linux 6.1 keeps (generic_perform_write page by
 * page, cont_expand_zero for the gap, fat_write_failed cutting back to
 * i_size): the size stops at the last 4 KiB page boundary the free
 * clusters reach, or where the data starts when the gap reached it; the
 * clusters past the size are free again and the op fails with -ENOSPC.
 * Measured against the kernel oracle (corpus/regressions/full-volume-short-write).
 * A directory that grows for a new entry takes all the clusters it needs
 * or none (test_dir_growth_all_or_none).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "unit_test.h"
#include "vfat.h"
#include "fat.h"

#define IMG_SIZE (200u << 10)
#define CS 512u

static uint8_t buf[IMG_SIZE], data[300000];

static vfat_vol *fresh(void)
{
	struct vfat_mkfs_opts mo;
	struct vfat_opts o;
	vfat_vol *v;
	char err[200];

	memset(buf, 0, sizeof(buf));
	vfat_mkfs_opts_default(&mo);
	mo.fat_type = 12;
	mo.cluster_bytes = CS;
	vfat_opts_default(&o);
	o.names = VFAT_NAMES_DUAL;
	if (vfat_mkfs(buf, IMG_SIZE, &mo, err, sizeof(err)) ||
	    vfat_open(&v, buf, IMG_SIZE, &o, err, sizeof(err))) {
		fprintf(stderr, "mkfs/open failed: %s\n", err);
		exit(2);
	}
	return v;
}

static uint32_t free_clusters(const vfat_vol *v)
{
	uint32_t n = 0;

	for (uint32_t c = 2; c < v->g.nclusters + 2; c++)
		n += fat_get(v, c) == 0;
	return n;
}

static uint32_t size_of(vfat_vol *v, const char *path)
{
	struct vfat_stat st;

	return vfat_stat(v, path, &st) ? 0xFFFFFFFFu : st.size;
}

static void check_clean(vfat_vol *v)
{
	vfat_close(v);
	CHECK_EQ_INT(vfat_check(buf, IMG_SIZE, NULL, NULL), 0);
}

/* A write from 0 past the room: the last whole page stays. */
static void test_short_write(void)
{
	vfat_vol *v = fresh();
	uint32_t f = free_clusters(v), want = f * CS / 4096 * 4096;

	CHECK_EQ_INT(vfat_create(v, "/a"), 0);
	CHECK_EQ_INT(vfat_write(v, "/a", 0, data, (f + 3) * CS), -ENOSPC);
	CHECK_EQ_INT(size_of(v, "/a"), want);
	CHECK_EQ_INT(free_clusters(v), f - want / CS);
	check_clean(v);
}

/* A write whose gap reaches its offset but whose data does not fit: the
 * size is the offset (the gap's last zero chunk ended there). */
static void test_gap_reaches_offset(void)
{
	vfat_vol *v = fresh();
	uint32_t f = free_clusters(v), off = f * CS / 4096 * 4096 + 300;

	CHECK(off <= f * CS);
	CHECK_EQ_INT(vfat_create(v, "/d"), 0);
	CHECK_EQ_INT(vfat_write(v, "/d", off, data, 5000), -ENOSPC);
	CHECK_EQ_INT(size_of(v, "/d"), off);
	check_clean(v);
}

/* Nothing fits: the size stays, no cluster is taken. */
static void test_nothing_fits(void)
{
	vfat_vol *v = fresh();
	uint32_t f = free_clusters(v), filled;

	CHECK_EQ_INT(vfat_create(v, "/a"), 0);
	CHECK_EQ_INT(vfat_write(v, "/a", 0, data, f * CS), 0);
	CHECK_EQ_INT(free_clusters(v), 0);
	CHECK_EQ_INT(vfat_truncate(v, "/a", 3000), 0);   /* frees all but 6 */
	filled = free_clusters(v);
	CHECK_EQ_INT(vfat_create(v, "/b"), 0);
	CHECK_EQ_INT(vfat_write(v, "/b", 10, data, (filled + 1) * CS), -ENOSPC);
	CHECK_EQ_INT(size_of(v, "/b"), filled * CS / 4096 * 4096);
	check_clean(v);
}

/* truncate growth: fat_cont_expand fills page by page and keeps what it
 * reached; fat_setattr still answers the error. */
static void test_truncate_grow(void)
{
	vfat_vol *v = fresh();
	uint32_t f = free_clusters(v);

	CHECK_EQ_INT(vfat_create(v, "/b"), 0);
	CHECK_EQ_INT(vfat_truncate(v, "/b", (uint64_t)f * CS + 1), -ENOSPC);
	CHECK_EQ_INT(size_of(v, "/b"), f * CS / 4096 * 4096);
	CHECK_EQ_INT(vfat_mkdir(v, "/e"), f * CS % 4096 ? 0 : -ENOSPC);
	check_clean(v);
}

/* mmu_private (core/src/inode.c) decides where a gap's zero-fill starts:
 * after a truncate to the same size it is the size exactly, so a write at
 * 129 into a 1-byte file that runs out keeps the gap to 129 (Linux; the
 * core kept 1: main job seed 3007, case truncate-lowers-mmu-private); a
 * rename keeps it with the file; right after the write that made the
 * file it is the end of the block, so the same write keeps 1; and a file
 * the volume held when it was opened starts at its size, exactly. */
static void test_mmu_private(void)
{
	vfat_vol *v = fresh();
	uint32_t f = free_clusters(v);

	CHECK_EQ_INT(vfat_create(v, "/a"), 0);
	CHECK_EQ_INT(vfat_write(v, "/a", 0, data, 1), 0);
	CHECK_EQ_INT(vfat_create(v, "/b"), 0);
	CHECK_EQ_INT(vfat_write(v, "/b", 0, data, 1), 0);
	CHECK_EQ_INT(vfat_create(v, "/fill"), 0);
	CHECK_EQ_INT(vfat_write(v, "/fill", 0, data, (f - 2) * CS), 0);
	CHECK_EQ_INT(free_clusters(v), 0);
	CHECK_EQ_INT(vfat_write(v, "/b", 129, data, 6000), -ENOSPC);
	CHECK_EQ_INT(size_of(v, "/b"), 1);             /* inside the mapped block */
	CHECK_EQ_INT(vfat_truncate(v, "/a", 1), 0);    /* the same size */
	CHECK_EQ_INT(vfat_rename(v, "/a", "/c"), 0);
	CHECK_EQ_INT(vfat_write(v, "/c", 129, data, 6000), -ENOSPC);
	CHECK_EQ_INT(size_of(v, "/c"), 129);
	/* after the ENOSPC: the size exactly, so the next gap fills too */
	CHECK_EQ_INT(vfat_write(v, "/c", 200, data, 6000), -ENOSPC);
	CHECK_EQ_INT(size_of(v, "/c"), 200);
	check_clean(v);
	/* opened again: /b, 1 byte, is an inode read from disk */
	{
		struct vfat_opts o;
		char err[200];

		vfat_opts_default(&o);
		o.names = VFAT_NAMES_DUAL;
		CHECK_EQ_INT(vfat_open(&v, buf, IMG_SIZE, &o, err, sizeof(err)), 0);
		CHECK_EQ_INT(vfat_write(v, "/b", 129, data, 6000), -ENOSPC);
		CHECK_EQ_INT(size_of(v, "/b"), 129);
		check_clean(v);
	}
}

/* A directory out of slots takes every cluster the new entry needs or
 * none (fat_add_new_entries -> fat_alloc_clusters frees what it got):
 * a 21-slot name in a directory whose free tail is 4 slots needs two
 * clusters of 16 slots; with one free cluster the create fails and the
 * cluster stays free, so a 512-byte file still fits. Before, the core
 * kept the first new cluster in the directory (found by fuzz_ops on its
 * tiny volume). */
static void test_dir_growth_all_or_none(void)
{
	vfat_vol *v = fresh();
	char name[300] = "/d/";
	uint32_t f;

	CHECK_EQ_INT(vfat_mkdir(v, "/d"), 0);
	for (int i = 0; i < 10; i++) {
		char p[16];
		snprintf(p, sizeof(p), "/d/F%d.TXT", i);
		CHECK_EQ_INT(vfat_create(v, p), 0);
	}
	f = free_clusters(v);
	CHECK_EQ_INT(vfat_create(v, "/big"), 0);
	CHECK_EQ_INT(vfat_write(v, "/big", 0, data, (f - 1) * CS), 0);
	CHECK_EQ_INT(free_clusters(v), 1);
	memset(name + 3, 'l', 250);
	name[253] = 0;
	CHECK_EQ_INT(vfat_create(v, name), -ENOSPC);
	CHECK_EQ_INT(free_clusters(v), 1);
	CHECK_EQ_INT(vfat_create(v, "/x"), 0);
	CHECK_EQ_INT(vfat_write(v, "/x", 0, data, CS), 0);
	CHECK_EQ_INT(free_clusters(v), 0);
	check_clean(v);
}

int main(void)
{
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 31);
	test_short_write();
	test_gap_reaches_offset();
	test_nothing_fits();
	test_truncate_grow();
	test_mmu_private();
	test_dir_growth_all_or_none();
	return ut_finish("unit_capacity");
}
