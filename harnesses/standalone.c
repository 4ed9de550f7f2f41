/* standalone.c - a main() for the fuzz targets without a fuzzing engine:
 * runs LLVMFuzzerTestOneInput once on each file named (directories are
 * walked one level), or -repeat=N times each, printing executions per
 * second. Used for benchmarks, gcc builds and replaying a corpus. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* optional, as under libFuzzer: a target's one-time set-up */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static long repeat = 1, execs;

static void run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f) {
		fprintf(stderr, "standalone: cannot open %s\n", path);
		exit(2);
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n > 0 ? (size_t)n : 1);
	if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
		fprintf(stderr, "standalone: cannot read %s\n", path);
		exit(2);
	}
	fclose(f);
	for (long i = 0; i < repeat; i++, execs++)
		LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (!strncmp(argv[i], "-repeat=", 8)) {
			repeat = atol(argv[i] + 8);
			continue;
		}
		if (argv[i][0] == '-')
			continue;   /* libFuzzer flags are ignored */
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			DIR *d = opendir(argv[i]);
			struct dirent *e;
			while (d && (e = readdir(d))) {
				char p[4096];
				if (e->d_name[0] == '.')
					continue;
				snprintf(p, sizeof(p), "%s/%s", argv[i], e->d_name);
				if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
					run_file(p);
			}
			if (d)
				closedir(d);
		} else {
			run_file(argv[i]);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	fprintf(stderr, "standalone: %ld executions in %.2f s (%.0f exec/s)\n", execs, s, s > 0 ? (double)execs / s : 0.0);
	return 0;
}
