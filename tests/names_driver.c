/* names_driver.c - line-oriented front end to core/src/names.c for the
 * tests that hold it against real tools (test_names_kernel.py,
 * test_names_fsck.py). Built by those tests with cc; not part of CMake.
 *
 * Input lines (hex = bytes in hex), one answer line each except R:
 *   R <rule>            start an empty directory, shortname rule 1..4
 *   N <hex utf8>        create a name in it as the kernel would: lookup
 *                       (long names and shown short names, ASCII case
 *                       folded), then vfat_create_shortname. Answer
 *                       "ERR <errno>" or "<11-byte hex> <lcase hex> <lfn>"
 *   V <hex 11 bytes>    vfat_shortname_valid: "0" or "1"
 *   D <rule> <nt hex> <hex 11 bytes>
 *                       vfat_shortname_to_utf16_rule as UTF-8 hex ("-"
 *                       for nothing shown)
 * Hex tails draw rand32 from a counter, so their digits are arbitrary. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"

struct entry {
	uint16_t u[VFAT_MAX_UNI];
	size_t ulen;
	uint8_t sn[11], lcase;
	int lfn;
};

struct dir {
	struct entry e[2048];
	int n;
	enum vfat_shortname rule;
	uint32_t counter;
};

static size_t unhex(const char *h, uint8_t *out, size_t max)
{
	size_t n = 0;
	unsigned v;
	while (n < max && sscanf(h, "%2x", &v) == 1) {
		out[n++] = (uint8_t)v;
		h += 2;
	}
	return n;
}

static void puthex(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%02x", b[i]);
}

static int dir_has_short(void *ctx, const uint8_t sn[11])
{
	const struct dir *d = ctx;
	for (int i = 0; i < d->n; i++)
		if (memcmp(d->e[i].sn, sn, 11) == 0)
			return 1;
	return 0;
}

static uint32_t next_counter(void *ctx)
{
	return ++((struct dir *)ctx)->counter * 0x9E3779B9u;
}

/* The VFS looks the name up before creating it: by long name, or by the
 * short name as displayed. */
static int dir_lookup(const struct dir *d, const uint16_t *u, size_t n)
{
	for (int i = 0; i < d->n; i++) {
		const struct entry *e = &d->e[i];
		uint16_t s[12];
		int sl = vfat_shortname_to_utf16_rule(e->sn, e->lcase, d->rule, s);
		if ((e->lfn && vfat_name_eq(u, n, e->u, e->ulen)) ||
		    vfat_name_eq(u, n, s, (size_t)sl))
			return 1;
	}
	return 0;
}

static void do_create(struct dir *d, const char *hex)
{
	uint8_t name[1024];
	size_t len = unhex(hex, name, sizeof(name));
	struct entry *e = &d->e[d->n];
	int r;

	if (d->n >= (int)(sizeof(d->e) / sizeof(d->e[0]))) {
		printf("ERR %d\n", ENOSPC);
		return;
	}
	memset(e, 0, sizeof(*e));
	r = vfat_prepare_longname((const char *)name, len, e->u, &e->ulen);
	if (r == 0 && dir_lookup(d, e->u, e->ulen))
		r = -EEXIST;
	if (r == 0) {
		struct vfat_alias_env env = { dir_has_short, d, next_counter, d };
		r = vfat_create_shortname(e->u, e->ulen, d->rule, &env, e->sn,
					  &e->lcase);
		if (r >= 0) {
			e->lfn = (r == 0);
			r = 0;
		}
	}
	if (r) {
		printf("ERR %d\n", -r);
		return;
	}
	d->n++;
	puthex(e->sn, 11);
	printf(" %02x %d\n", e->lcase, e->lfn);
}

static void do_display(const char *args)
{
	int rule;
	unsigned nt;
	char hex[64];
	uint8_t sn[11];
	uint16_t u[12];
	char utf8[64];

	if (sscanf(args, "%d %x %63s", &rule, &nt, hex) != 3 ||
	    unhex(hex, sn, 11) != 11) {
		printf("?\n");
		return;
	}
	int n = vfat_shortname_to_utf16_rule(sn, (uint8_t)nt,
					     (enum vfat_shortname)rule, u);
	int w = vfat_utf16_to_utf8(u, (size_t)n, utf8, sizeof(utf8));
	if (n == 0 || w <= 0) {
		printf("-\n");
		return;
	}
	puthex((const uint8_t *)utf8, (size_t)w);
	printf("\n");
}

int main(void)
{
	static struct dir d;
	char line[4096];

	d.rule = VFAT_SN_MIXED;
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == 'R') {
			d.n = 0;
			d.rule = (enum vfat_shortname)atoi(line + 2);
		} else if (line[0] == 'N') {
			do_create(&d, line + 2);
		} else if (line[0] == 'V') {
			uint8_t sn[11];
			if (unhex(line + 2, sn, 11) != 11)
				printf("?\n");
			else
				printf("%d\n", vfat_shortname_valid(sn));
		} else if (line[0] == 'D') {
			do_display(line + 2);
		} else {
			printf("?\n");
		}
		fflush(stdout);
	}
	return 0;
}
