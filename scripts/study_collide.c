/* study_collide.c - driver of the collision study (vfatfuzz study collisions).
 *
 * Builds REAL directories with the core: for each trial, a fresh in-memory
 * volume, mkdir "/d", then N creates (files "/d/n%05d___.txt", or with
 * --dirs mkdirs "/d/d%05d___") with the write options given, exactly what
 * `vfat apply --seed SEED` does with the op-script that --script prints. The
 * short entries are then read back from the directory with vfat_readdir (in
 * directory order = creation order, nothing is deleted) and searched for
 * equal 11-byte short entries.
 *
 *   study_collide --dummy v1|v3 [--unique] [--dirs] --n N --trials T --seed S
 *   study_collide ... --script        the op-script of one trial on stdout
 *   study_collide ... --image PATH    write the image of trial 0 (seed S)
 *
 * One line per trial: "trial SEED FIRST PROJ PAIRS ENTRIES", where FIRST is
 * the number of entries created when the first duplicate short entry
 * appeared (0 = none in N; so the directory of the first n entries has a
 * duplicate iff 0 < FIRST <= n), PROJ the same for a projection of the
 * dummy (v3: tilde position, slash position and the first drawn byte; v1:
 * the low 10 random bits), PAIRS the number of equal pairs among all N, and
 * ENTRIES the number of entries read back (must be N), then the numbers of
 * equal pairs in two projections A and B (see proj_ab).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vfat.h"

struct acc {
	uint8_t (*sn)[11];
	int n, cap;
};

static int collect(void *ctx, const struct vfat_dirent *e)
{
	struct acc *a = ctx;

	if (a->n == a->cap)
		return -ENOSPC;
	memcpy(a->sn[a->n++], e->shortname, 11);
	return 0;
}

/* Open-addressing set of 64-bit keys (key 0 is stored as 1 + flag). */
struct set {
	uint64_t *k;
	size_t mask;
};

static int set_init(struct set *s, int n)
{
	size_t cap = 16;

	while (cap < (size_t)n * 2)
		cap <<= 1;
	s->k = calloc(cap, sizeof(*s->k));
	s->mask = cap - 1;
	return s->k ? 0 : -ENOMEM;
}

/* returns 1 when key was already present */
static int set_add(struct set *s, uint64_t key)
{
	size_t h;

	key = key * 2 + 1; /* never 0 */
	h = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 17) & s->mask;
	while (s->k[h]) {
		if (s->k[h] == key)
			return 1;
		h = (h + 1) & s->mask;
	}
	s->k[h] = key;
	return 0;
}

static uint64_t fnv(const uint8_t *b, int n)
{
	uint64_t h = 1469598103934665603ull;

	for (int i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/* 11 bytes -> 63 bits: exact for v1 (bytes 2..7 hold 5 bits each) and for
 * the compared content of v3 bytes; fall back to a hash plus a memcmp check
 * done by the caller when a hit occurs. */
static uint64_t key_of(const uint8_t sn[11])
{
	return fnv(sn, 11) >> 1;
}

static uint64_t proj_of(const uint8_t sn[11], int v3)
{
	if (!v3)
		return sn[2] | (uint64_t)(sn[3] & 0x1F) << 5;
	int t = -1, s = -1, first = -1;

	for (int i = 0; i < 8; i++) {
		if (sn[i] == '~' && t < 0)
			t = i;
		else if (sn[i] == '/' && s < 0)
			s = i;
		else if (first < 0)
			first = sn[i];
	}
	return (uint64_t)(t + 1) | (uint64_t)(s + 1) << 4 | (uint64_t)first << 8;
}

/* Projections whose equal pairs are counted over the whole directory (a
 * sharp uniformity check: about C(N,2)/|space| pairs per trial).
 * v1: A = random bits 0-14 (bytes 2-4), B = bits 15-29 (bytes 5-7).
 * v3: A = (tilde, slash, first drawn byte), B = the same plus the second. */
static uint64_t proj_ab(const uint8_t sn[11], int v3, int which)
{
	if (!v3) {
		int o = which ? 5 : 2;

		return sn[o] | (uint64_t)sn[o + 1] << 5 | (uint64_t)sn[o + 2] << 10;
	}
	int t = -1, s = -1, d[2] = { -1, -1 }, nd = 0;

	for (int i = 0; i < 8; i++) {
		if (sn[i] == '~' && t < 0)
			t = i;
		else if (sn[i] == '/' && s < 0)
			s = i;
		else if (nd < 2)
			d[nd++] = sn[i];
	}
	return (uint64_t)(t + 1) | (uint64_t)(s + 1) << 4 | (uint64_t)d[0] << 8 |
	       (which ? (uint64_t)(d[1] + 1) << 16 : 0);
}

static int cmp64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static long pairs_of(uint64_t *k, int n)
{
	long pairs = 0, run = 1;

	qsort(k, (size_t)n, sizeof(*k), cmp64);
	for (int i = 1; i <= n; i++) {
		if (i < n && k[i] == k[i - 1]) {
			run++;
		} else {
			pairs += run * (run - 1) / 2;
			run = 1;
		}
	}
	return pairs;
}

static int usage(const char *m)
{
	fprintf(stderr, "study_collide: %s\n", m);
	return 2;
}

static void name_of(char *out, size_t max, int dirs, int i)
{
	if (dirs)
		snprintf(out, max, "/d/d%05d___", i);
	else
		snprintf(out, max, "/d/n%05d___.txt", i);
}

int main(int argc, char **argv)
{
	struct vfat_opts o;
	int n = -1, trials = 1, dirs = 0, script = 0;
	unsigned long long seed = 0;
	const char *image = NULL;

	vfat_opts_default(&o);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--unique")) {
			o.unique = 1;
		} else if (!strcmp(a, "--dirs")) {
			dirs = 1;
		} else if (!strcmp(a, "--script")) {
			script = 1;
		} else if (!val) {
			return usage("missing value or unknown option");
		} else if (!strcmp(a, "--dummy")) {
			if (!strcmp(val, "v1"))
				o.dummy = VFAT_DUMMY_V1;
			else if (!strcmp(val, "v3"))
				o.dummy = VFAT_DUMMY_V3;
			else
				return usage("--dummy: v1 or v3");
			i++;
		} else if (!strcmp(a, "--n")) {
			n = atoi(val);
			i++;
		} else if (!strcmp(a, "--trials")) {
			trials = atoi(val);
			i++;
		} else if (!strcmp(a, "--seed")) {
			seed = strtoull(val, NULL, 10);
			i++;
		} else if (!strcmp(a, "--image")) {
			image = val;
			i++;
		} else {
			return usage("unknown option");
		}
	}
	if (n < 1 || n > 32767 || trials < 1)
		return usage("need --n 1..32767 and --trials >= 1");
	if (o.dummy == VFAT_DUMMY_V3)
		o.shortname = VFAT_SN_WINNT;

	char path[64];

	if (script) {
		printf("# study_collide: %d %s in one directory\n", n, dirs ? "directories" : "files");
		printf("mkdir \"/d\"\n");
		for (int i = 0; i < n; i++) {
			name_of(path, sizeof(path), dirs, i);
			printf(dirs ? "mkdir \"%s\"\n" : "create \"%s\" 0 0\n", path);
		}
		return 0;
	}

	/* 32767 entries x 2 slots in /d; a cluster per subdirectory */
	size_t size = dirs ? (size_t)(8 << 20) + (size_t)n * 512 * 2 : (size_t)(8 << 20);
	struct vfat_mkfs_opts mo;

	vfat_mkfs_opts_default(&mo);
	mo.fat_type = dirs ? 32 : 16;
	if (dirs) {
		mo.cluster_bytes = 512;
		if (size < (64u << 20))
			size = 64u << 20;
	}
	uint8_t *buf = malloc(size);
	struct acc a = { malloc((size_t)n * 11), 0, n };
	struct set s1, s2;

	if (!buf || !a.sn)
		return usage("out of memory");
	for (int t = 0; t < trials; t++) {
		char err[256];
		vfat_vol *v;
		int r;

		o.seed = seed + (unsigned long long)t;
		memset(buf, 0, size);
		r = vfat_mkfs(buf, size, &mo, err, sizeof(err));
		if (r)
			return usage(err);
		r = vfat_open(&v, buf, size, &o, err, sizeof(err));
		if (r)
			return usage(err);
		if ((r = vfat_mkdir(v, "/d")) != 0) {
			fprintf(stderr, "study_collide: mkdir /d: %s\n", vfat_errname(r));
			return 1;
		}
		for (int i = 0; i < n; i++) {
			name_of(path, sizeof(path), dirs, i);
			r = dirs ? vfat_mkdir(v, path) : vfat_create(v, path);
			if (r) {
				fprintf(stderr, "study_collide: %s: %s\n", path, vfat_errname(r));
				return 1;
			}
		}
		a.n = 0;
		r = vfat_readdir(v, "/d", collect, &a);
		vfat_close(v);
		if (r) {
			fprintf(stderr, "study_collide: readdir: %s\n", vfat_errname(r));
			return 1;
		}
		if (set_init(&s1, a.n) || set_init(&s2, a.n))
			return usage("out of memory");
		int first = 0, proj = 0;
		long pairs = 0;

		for (int i = 0; i < a.n; i++) {
			if (set_add(&s1, key_of(a.sn[i]))) {
				/* confirm bytewise (the key is a hash) and count pairs */
				int eq = 0;

				for (int j = 0; j < i; j++)
					if (!memcmp(a.sn[i], a.sn[j], 11))
						eq++;
				pairs += eq;
				if (eq && !first)
					first = i + 1;
			}
			if (!proj && set_add(&s2, proj_of(a.sn[i], o.dummy == VFAT_DUMMY_V3)))
				proj = i + 1;
		}
		free(s1.k);
		free(s2.k);
		long pa, pb;
		uint64_t *kk = malloc((size_t)a.n * sizeof(*kk));

		if (!kk)
			return usage("out of memory");
		for (int i = 0; i < a.n; i++)
			kk[i] = proj_ab(a.sn[i], o.dummy == VFAT_DUMMY_V3, 0);
		pa = pairs_of(kk, a.n);
		for (int i = 0; i < a.n; i++)
			kk[i] = proj_ab(a.sn[i], o.dummy == VFAT_DUMMY_V3, 1);
		pb = pairs_of(kk, a.n);
		free(kk);
		printf("trial %llu %d %d %ld %d %ld %ld\n", (unsigned long long)o.seed, first, proj, pairs,
		       a.n, pa, pb);
		if (image && t == 0) {
			FILE *f = fopen(image, "wb");

			if (!f || fwrite(buf, 1, size, f) != size || fclose(f))
				return usage("cannot write --image");
		}
	}
	free(buf);
	free(a.sn);
	return 0;
}
