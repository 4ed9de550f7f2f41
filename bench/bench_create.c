/* bench_create - time the core creating N long-named files in one
 * directory, then looking each one up (bench/bench_core.py drives it).
 *
 *   bench_create N [--names dual|nodual] [--size BYTES_PER_FILE] [--image MiB]
 *
 * Everything happens in memory (no image I/O is timed). Prints one JSON
 * line: {"n", "mode", "create_s", "lookup_s", "create_us_per_file", ...}.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "vfat.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
	const char *mode = "dual";
	long fsize = 10, mib = 64;
	struct vfat_mkfs_opts mo;
	struct vfat_opts o;
	vfat_vol *v;
	char err[200], path[256];
	uint8_t data[4096];

	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--names")) mode = argv[i + 1];
		else if (!strcmp(argv[i], "--size")) fsize = strtol(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--image")) mib = strtol(argv[i + 1], NULL, 10);
		else { fprintf(stderr, "bench_create: unknown option %s\n", argv[i]); return 2; }
	}
	if (n <= 0 || fsize < 0 || fsize > (long)sizeof(data) || mib <= 0) {
		fprintf(stderr, "bench_create: bad arguments\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(7 + 31 * i);
	size_t size = (size_t)mib << 20;
	uint8_t *buf = calloc(1, size);
	if (!buf) { fprintf(stderr, "bench_create: out of memory\n"); return 2; }
	vfat_mkfs_opts_default(&mo);
	if (vfat_mkfs(buf, size, &mo, err, sizeof(err))) { fprintf(stderr, "bench_create: mkfs: %s\n", err); return 2; }
	vfat_opts_default(&o);
	o.names = strcmp(mode, "nodual") ? VFAT_NAMES_DUAL : VFAT_NAMES_NODUAL;
	o.seed = 1;
	if (vfat_open(&v, buf, size, &o, err, sizeof(err))) { fprintf(stderr, "bench_create: open: %s\n", err); return 2; }
	if (vfat_mkdir(v, "/dir")) { fprintf(stderr, "bench_create: mkdir failed\n"); return 2; }

	double t0 = now();
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/dir/long file name number %06ld.txt", i);
		int r = vfat_create(v, path);
		if (!r && fsize)
			r = vfat_write(v, path, 0, data, (size_t)fsize);
		if (r) { fprintf(stderr, "bench_create: create %s: %s\n", path, vfat_errname(r)); return 2; }
	}
	double t1 = now();
	for (long i = 0; i < n; i++) {
		struct vfat_stat st;
		snprintf(path, sizeof(path), "/dir/long file name number %06ld.txt", i);
		if (vfat_stat(v, path, &st) || st.size != (uint32_t)fsize) {
			fprintf(stderr, "bench_create: lookup %s failed\n", path);
			return 2;
		}
	}
	double t2 = now();
	vfat_close(v);
	free(buf);
	printf("{\"n\": %ld, \"mode\": \"%s\", \"create_s\": %.6f, \"lookup_s\": %.6f, "
	       "\"create_us_per_file\": %.3f, \"lookup_us_per_file\": %.3f}\n",
	       n, mode, t1 - t0, t2 - t1, (t1 - t0) * 1e6 / n, (t2 - t1) * 1e6 / n);
	return 0;
}
