/* unit_names.c - the name policy (core/src/names.c) against expectations
 * derived by hand from Linux 6.1 fs/fat (namei_vfat.c, dir.c,
 * nls_cp437.c), fsck.fat 4.2's bad_name() and docs/write-paths.md's dummy rules.
 * Each table row says why its answer is what the kernel gives. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "names.h"
#include "unit_test.h"

/* ------------------------------------------------------------------ */
/* Helpers: a fake directory (list of 11-byte names) and a scripted
 * random stream that counts its calls. */

struct fake_dir {
	const char *names[16]; /* 11 bytes each */
};

static int dir_exists(void *ctx, const uint8_t sn[11])
{
	const struct fake_dir *d = ctx;
	for (int i = 0; i < 16 && d->names[i]; i++)
		if (memcmp(d->names[i], sn, 11) == 0)
			return 1;
	return 0;
}

struct stream {
	const uint32_t *v;
	size_t n, calls;
};

static uint32_t stream_next(void *ctx)
{
	struct stream *s = ctx;
	uint32_t r = s->calls < s->n ? s->v[s->calls] : 0xDEADBEEF;
	s->calls++;
	return r;
}

/* UTF-8 literal -> UTF-16 (test input is always valid). */
static size_t u16(const char *s, uint16_t *out)
{
	size_t n = 0;
	int err = vfat_utf8_to_utf16(s, strlen(s), out, 300, &n);
	CHECK_EQ_INT(err, 0);
	return n;
}

/* ------------------------------------------------------------------ */

static void test_checksum(void)
{
	CHECK_EQ_INT(vfat_lfn_checksum((const uint8_t *)"VMLINUX    "), 44);
	CHECK_EQ_INT(vfat_lfn_checksum((const uint8_t *)"README  TXT"), 115);
	CHECK_EQ_INT(vfat_lfn_checksum((const uint8_t *)"ABCDEFGHA  "), 98);
	/* the v1 dummy of r = 1: 20 00 01 00 00 00 00 00 2F 00 00 */
	uint8_t d[11];
	vfat_dummy_v1(1, d);
	/* by hand (rotate right, add): 0x20; 0x10; 0x08+1 = 0x09; 0x84;
	 * 0x42; 0x21; 0x90; 0x48; 0x24+0x2F = 0x53; 0xA9; 0xD4 */
	CHECK_EQ_INT(vfat_lfn_checksum(d), 0xD4);
}

static void test_dummy_v1(void)
{
	uint8_t d[11];
	static const uint8_t zero[11] = { 0x20, 0, 1, 0, 0, 0, 0, 0, 0x2F, 0, 0 };
	static const uint8_t full[11] = { 0x20, 0, 0x1F, 0x1F, 0x1F, 0x1F,
					  0x1F, 0x1F, 0x2F, 0, 0 };
	/* 0x12345678 in 5-bit chunks, low first: 18 13 15 08 03 09 */
	static const uint8_t mid[11] = { 0x20, 0, 0x18, 0x13, 0x15, 0x08,
					 0x03, 0x09, 0x2F, 0, 0 };

	vfat_dummy_v1(0, d);
	CHECK_EQ_MEM(d, zero, 11);
	vfat_dummy_v1(0x40000000, d); /* masked to 30 bits: 0, becomes 1 */
	CHECK_EQ_MEM(d, zero, 11);
	vfat_dummy_v1(0x3FFFFFFF, d);
	CHECK_EQ_MEM(d, full, 11);
	vfat_dummy_v1(0x12345678, d);
	CHECK_EQ_MEM(d, mid, 11);
	CHECK(vfat_is_dummy_v1(d));
	CHECK(vfat_is_dummy_v1(zero));
	CHECK(vfat_is_dummy_v1(full));
	CHECK(!vfat_is_dummy_v1((const uint8_t *)"README  TXT"));
	/* r = 0 cannot be written: all six chunks zero is no dummy */
	static const uint8_t none[11] = { 0x20, 0, 0, 0, 0, 0, 0, 0, 0x2F, 0, 0 };
	CHECK(!vfat_is_dummy_v1(none));
	uint8_t bad[11];
	memcpy(bad, mid, 11);
	bad[4] = 0x20; /* chunk out of 5-bit range */
	CHECK(!vfat_is_dummy_v1(bad));
	memcpy(bad, mid, 11);
	bad[8] = ' ';
	CHECK(!vfat_is_dummy_v1(bad));
	CHECK(!vfat_shortname_valid(mid));
}

static void test_dummy_v3(void)
{
	uint8_t d[11];

	/* File. r0 = 13: '~' at 13%8 = 5, r = 1; '/' at (5+1+1%7)%8 = 7,
	 * r = 0. Byte 0: inv[0] = 01, r = 0 < 35 -> r1 = 2600.
	 * Byte 1: 2600 = 74*35 + 10 -> inv[10] = 10, r = 74.
	 * Byte 2: 74%35 = 4 -> 05, r = 2 -> r2 = 34. Byte 3: inv[34] = 7C,
	 * r = 0 -> r3 = 1000. Byte 4: 1000%35 = 20 -> inv[20] = 1A, r = 28
	 * -> r4 = 0xFFFFFFFF. Byte 6: 4294967295 % 35 = 10 -> 10, r stays
	 * large: no sixth call. */
	static const uint32_t fs[] = { 13, 2600, 34, 1000, 0xFFFFFFFF };
	struct stream s = { fs, 5, 0 };
	memcpy(d, "XXXXXXXXABC", 11);
	vfat_dummy_v3(stream_next, &s, 0, d);
	static const uint8_t fexp[11] = { 0x01, 0x10, 0x05, 0x7C, 0x1A, '~',
					  0x10, '/', 'A', 'B', 'C' };
	CHECK_EQ_MEM(d, fexp, 11);
	CHECK_EQ_INT(s.calls, 5);
	CHECK(vfat_is_dummy_v3(d, 0x20, 0));
	CHECK(!vfat_is_dummy_v3(d, 0x20, 1)); /* a dir has no '/' */
	CHECK(!vfat_is_dummy_v3(d, 0x00, 0)); /* NT byte must flag it */
	CHECK(!vfat_shortname_valid(d));

	/* Directory. r0 = 0xFFFFFFFF: '~' at 7, r = 0x1FFFFFFF = 536870911.
	 * 536870911 % 35 = 31 -> 3F, r = 15339168; % 35 = 33 -> 5D,
	 * r = 438261; % 35 = 26 -> 22, r = 12521; % 35 = 26 -> 22, r = 357;
	 * % 35 = 7 -> 0C, r = 10 -> r1 = 0: inv[0] = 01 -> r2 = 0: 01 ->
	 * r3 = 70 (drawn after the last byte too). */
	static const uint32_t ds[] = { 0xFFFFFFFF, 0, 0, 70 };
	struct stream t = { ds, 4, 0 };
	memcpy(d, "XXXXXXXX   ", 11);
	vfat_dummy_v3(stream_next, &t, 1, d);
	static const uint8_t dexp[11] = { 0x3F, 0x5D, 0x22, 0x22, 0x0C, 0x01,
					  0x01, '~', ' ', ' ', ' ' };
	CHECK_EQ_MEM(d, dexp, 11);
	CHECK_EQ_INT(t.calls, 4);
	CHECK(vfat_is_dummy_v3(d, 0x20, 1));
	CHECK(!vfat_is_dummy_v3(d, 0x20, 0));

	/* '/' can land on every position except the '~' one: r0 = 8*k+t
	 * with r>>3 = k -> slash (t+1+k%7)%8. t = 0, k = 6: slash 7. */
	static const uint32_t es[] = { 6 * 8 + 0, 1000, 1000, 1000, 1000,
				       1000, 1000 };
	struct stream e = { es, 7, 0 };
	vfat_dummy_v3(stream_next, &e, 0, d);
	CHECK_EQ_INT(d[0], '~');
	CHECK_EQ_INT(d[7], '/');
	/* plain names are no v3 dummies */
	CHECK(!vfat_is_dummy_v3((const uint8_t *)"README~1TXT", 0x20, 0));
}

/* ------------------------------------------------------------------ */
/* Alias generation */

struct alias_case {
	const char *name;             /* UTF-8 */
	enum vfat_shortname rule;
	const char *existing[12];     /* 11-byte short names in the dir */
	uint32_t rnd[2];              /* stands in for the two jiffies */
	int result;                   /* 1, 0 or -errno */
	const char *sn;               /* expected 11 bytes (result >= 0) */
	int lcase;
	int rand_calls;
};

#define MX VFAT_SN_MIXED
#define NT VFAT_SN_WINNT
#define W95 VFAT_SN_WIN95
#define LO VFAT_SN_LOWER
/* BASE~1..BASE~9 then pad: 11 bytes each */
#define TILDES(b, pad) b "~1" pad, b "~2" pad, b "~3" pad, b "~4" pad, \
	b "~5" pad, b "~6" pad, b "~7" pad, b "~8" pad, b "~9" pad

static const struct alias_case alias_cases[] = {
	/* Upper-case 8.3: bare under every rule. */
	{ "README.TXT", MX, {0}, {0}, 1, "README  TXT", 0, 0 },
	{ "README.TXT", W95, {0}, {0}, 1, "README  TXT", 0, 0 },
	{ "README.TXT", NT, {0}, {0}, 1, "README  TXT", 0, 0 },
	{ "README.TXT", LO, {0}, {0}, 1, "README  TXT", 0, 0 },
	/* Lower case: win95 creation (mixed, win95, lower) wants an LFN and
	 * uses the 8.3 form itself as alias, without ~1; winnt stores it
	 * bare with both NT case bits. */
	{ "readme.txt", MX, {0}, {0}, 0, "README  TXT", 0, 0 },
	{ "readme.txt", W95, {0}, {0}, 0, "README  TXT", 0, 0 },
	{ "readme.txt", LO, {0}, {0}, 0, "README  TXT", 0, 0 },
	{ "readme.txt", NT, {0}, {0}, 1, "README  TXT", 0x18, 0 },
	{ "README.txt", NT, {0}, {0}, 1, "README  TXT", 0x10, 0 },
	{ "readme.TXT", NT, {0}, {0}, 1, "README  TXT", 0x08, 0 },
	{ "README.txt", MX, {0}, {0}, 0, "README  TXT", 0, 0 },
	{ "abcdefgh", NT, {0}, {0}, 1, "ABCDEFGH   ", 0x08, 0 },
	{ "abcdefgh", MX, {0}, {0}, 0, "ABCDEFGH   ", 0, 0 },
	/* Mixed case inside one part: never bare. */
	{ "ReadMe.txt", NT, {0}, {0}, 0, "README  TXT", 0, 0 },
	{ "ReadMe.txt", MX, {0}, {0}, 0, "README  TXT", 0, 0 },
	/* Digits are both cases at once. */
	{ "12345678.123", MX, {0}, {0}, 1, "12345678123", 0, 0 },
	{ "12345678.123", NT, {0}, {0}, 1, "12345678123", 0, 0 },
	{ "a1", NT, {0}, {0}, 1, "A1         ", 0x08, 0 },
	/* The 8.3 form exists already: -EEXIST, whatever the case. */
	{ "README.TXT", MX, {"README  TXT"}, {0}, -EEXIST, NULL, 0, 0 },
	{ "readme.txt", MX, {"README  TXT"}, {0}, -EEXIST, NULL, 0, 0 },
	{ "readme.txt", NT, {"README  TXT"}, {0}, -EEXIST, NULL, 0, 0 },
	{ "abc~1.txt", MX, {"ABC~1   TXT"}, {0}, -EEXIST, NULL, 0, 0 },
	/* Long base: cut to 6 + ~N. */
	{ "longfilename.txt", MX, {0}, {0}, 0, "LONGFI~1TXT", 0, 0 },
	{ "longfilename.txt", MX, {"LONGFI~1TXT"}, {0}, 0, "LONGFI~2TXT", 0, 0 },
	{ "longfilename.txt", MX, {"LONGFI~1TXT", "LONGFI~2TXT"}, {0}, 0,
	  "LONGFI~3TXT", 0, 0 },
	{ "longfilename.txt", NT, {0}, {0}, 0, "LONGFI~1TXT", 0, 0 },
	{ "LONGFILENAME.TXT", MX, {0}, {0}, 0, "LONGFI~1TXT", 0, 0 },
	{ "ABCDEFGHI", MX, {0}, {0}, 0, "ABCDEF~1   ", 0, 0 },
	/* ~1..~8 taken: ~9; a name with ~N of another extension is no
	 * collision. */
	{ "longfilename.txt", MX, {"LONGFI~1TXT", "LONGFI~2TXT", "LONGFI~3TXT",
	  "LONGFI~4TXT", "LONGFI~5TXT", "LONGFI~6TXT", "LONGFI~7TXT",
	  "LONGFI~8TXT", "LONGFI~9DOC"}, {0}, 0, "LONGFI~9TXT", 0, 0 },
	/* ~1..~9 taken: hex tail. i = r0 = 0x12345678 -> "5678"; digit
	 * '1' + ((r1 >> 16) & 7) = '1' + 5; base cut to 2. */
	{ "longfilename.txt", MX, {TILDES("LONGFI", "TXT")},
	  {0x12345678, 0x00050000}, 0, "LO5678~6TXT", 0, 2 },
	/* ... and when that exists, i -= 11: 0x5678 - 0xB = 0x566D. */
	{ "longfilename.txt", MX, {TILDES("LONGFI", "TXT"), "LO5678~6TXT"},
	  {0x12345678, 0x00050000}, 0, "LO566D~6TXT", 0, 2 },
	/* i wraps below zero: 5 - 11 -> 0xFFFA; digit from bits 16-18 only */
	{ "longfilename.txt", MX, {TILDES("LONGFI", "TXT"), "LO0005~8TXT"},
	  {0x00000005, 0xFFFFFFFF}, 0, "LOFFFA~8TXT", 0, 2 },
	/* short base with hex tail: baselen 1 keeps its one byte */
	{ "+", MX, {TILDES("_", "        ")}, {0xABCD, 0}, 0, "_ABCD~1    ", 0, 2 },
	{ "a+b", MX, {TILDES("A_B", "      ")}, {0x0001F00D, 0x00070000}, 0,
	  "A_F00D~8   ", 0, 2 },
	/* Replace chars + , ; = [ ] become '_' and force a tail. */
	{ "a+b", MX, {0}, {0}, 0, "A_B~1      ", 0, 0 },
	{ "[a];b,c=d", MX, {0}, {0}, 0, "_A__B_~1   ", 0, 0 },
	/* Leading dots are skipped; a name that is only an extension uses
	 * it as base. */
	{ ".bashrc", MX, {0}, {0}, 0, "BASHRC~1   ", 0, 0 },
	{ "...test", MX, {0}, {0}, 0, "TEST~1     ", 0, 0 },
	{ ".a.b", MX, {0}, {0}, 0, "A~1     B  ", 0, 0 },
	{ ".profile.d", MX, {0}, {0}, 0, "PROFIL~1D  ", 0, 0 },
	/* Several dots: the last one starts the extension. */
	{ "a.b.c", MX, {0}, {0}, 0, "AB~1    C  ", 0, 0 },
	{ "archive.tar.gz", MX, {0}, {0}, 0, "ARCHIV~1GZ ", 0, 0 },
	/* Extension longer than 3. */
	{ "file.html", MX, {0}, {0}, 0, "FILE~1  HTM", 0, 0 },
	{ "ABCDEFGH.TXTX", MX, {0}, {0}, 0, "ABCDEF~1TXT", 0, 0 },
	{ "ab.html", NT, {0}, {0}, 0, "AB~1    HTM", 0, 0 },
	/* Spaces are skipped (leading, inner, before the dot). */
	{ "my file.txt", MX, {0}, {0}, 0, "MYFILE~1TXT", 0, 0 },
	{ " abc", MX, {0}, {0}, 0, "ABC~1      ", 0, 0 },
	{ "ABC .TXT", MX, {0}, {0}, 0, "ABC~1   TXT", 0, 0 },
	{ "ABCDEFGH .TXT", MX, {0}, {0}, 0, "ABCDEF~1TXT", 0, 0 },
	{ "a.t x", MX, {0}, {0}, 0, "A~1     TX ", 0, 0 },
	/* CP437 letters: e-acute is 0x82, upper-cased through charset2upper
	 * to 0x90; such bytes count as neither case, so the name is never
	 * bare under win95 nor winnt, but gets no tail. */
	{ "\xc3\xa9.txt", MX, {0}, {0}, 0, "\x90       TXT", 0, 0 },
	{ "\xc3\xa9.txt", NT, {0}, {0}, 0, "\x90       TXT", 0, 0 },
	{ "\xc3\x89", MX, {0}, {0}, 0, "\x90          ", 0, 0 },
	/* a-ring U+00E5 is CP437 0x86 -> 0x8F; sigma U+03C3 is CP437 0xE5
	 * but upper-cases to 0xE4, so no CP437 name starts with 0xE5 and
	 * the 0x05 substitution never fires with codepage 437. */
	{ "\xc3\xa5.txt", MX, {0}, {0}, 0, "\x8f       TXT", 0, 0 },
	{ "\xcf\x83x", MX, {0}, {0}, 0, "\xe4X         ", 0, 0 },
	/* a-grave 0x85 has no upper case in CP437: stays 0x85 */
	{ "\xc3\xa0", MX, {0}, {0}, 0, "\x85          ", 0, 0 },
	/* CJK: no CP437 mapping -> '_' per UTF-16 unit, tail forced. */
	{ "\xe4\xb8\xad\xe6\x96\x87.txt", MX, {0}, {0}, 0, "__~1    TXT", 0, 0 },
	/* Astral: each surrogate half is one '_'. */
	{ "\xf0\x9f\x98\x80", MX, {0}, {0}, 0, "__~1       ", 0, 0 },
	/* Base of exactly 6 after cuts keeps all 6 before ~N. */
	{ "abcdef+", MX, {0}, {0}, 0, "ABCDEF~1   ", 0, 0 },
	{ "abcde+", MX, {0}, {0}, 0, "ABCDE_~1   ", 0, 0 },
	/* DEL (0x7F) passes the kernel's bad-char test; counts as no case */
	{ "a\x7f", MX, {0}, {0}, 0, "A\x7f         ", 0, 0 },
	/* reserved device names are ordinary names for vfat */
	{ "CON", MX, {0}, {0}, 1, "CON        ", 0, 0 },
	{ "nul.txt", NT, {0}, {0}, 1, "NUL     TXT", 0x18, 0 },
};

static void test_aliases(void)
{
	for (size_t i = 0; i < sizeof(alias_cases) / sizeof(alias_cases[0]);
	     i++) {
		const struct alias_case *c = &alias_cases[i];
		struct fake_dir d = { {0} };
		uint16_t u[300];
		uint8_t out[11], lcase = 0xFF;
		for (int k = 0; k < 12 && c->existing[k]; k++)
			d.names[k] = c->existing[k];
		struct stream s = { c->rnd, 2, 0 };
		struct vfat_alias_env env = { dir_exists, &d, stream_next, &s };
		size_t n = u16(c->name, u);
		CHECK(c->sn == NULL || strlen(c->sn) == 11);
		for (int k = 0; k < 12 && c->existing[k]; k++)
			CHECK_EQ_INT(strlen(c->existing[k]), 11);
		int r = vfat_create_shortname(u, n, c->rule, &env, out, &lcase);
		if (r != c->result)
			fprintf(stderr, "alias case %zu (%s):\n", i, c->name);
		CHECK_EQ_INT(r, c->result);
		if (c->result < 0 || r != c->result)
			continue;
		if (memcmp(out, c->sn, 11))
			fprintf(stderr, "alias case %zu (%s):\n", i, c->name);
		CHECK_EQ_MEM(out, c->sn, 11);
		CHECK_EQ_INT(lcase, c->lcase);
		CHECK_EQ_INT(s.calls, c->rand_calls);
	}
	/* A NULL exists callback stands for an empty directory. */
	struct vfat_alias_env none = { NULL, NULL, NULL, NULL };
	uint16_t u[16];
	uint8_t out[11], lcase;
	CHECK_EQ_INT(vfat_create_shortname(u, u16("x.y", u), MX, &none, out,
					   &lcase), 0);
	CHECK_EQ_MEM(out, "X       Y  ", 11);
	/* Unknown rule and empty names are refused, not guessed. */
	CHECK_EQ_INT(vfat_create_shortname(u, 1, (enum vfat_shortname)9,
					   &none, out, &lcase), -EINVAL);
	CHECK_EQ_INT(vfat_create_shortname(u, 0, MX, &none, out, &lcase),
		     -EINVAL);
	/* Only skip characters: no base at all (unreachable through
	 * vfat_prepare_longname, which refuses such names first). */
	CHECK_EQ_INT(vfat_create_shortname(u, u16(". .", u), MX, &none, out,
					   &lcase), -EINVAL);
}

/* The hex tail advances by 11 through all 65536 values; a directory
 * holding every candidate is answered with -ENOSPC, not a hang. */
static int all_taken(void *ctx, const uint8_t sn[11])
{
	(void)ctx;
	(void)sn;
	return 1;
}

static void test_alias_exhaustion(void)
{
	uint16_t u[32];
	uint8_t out[11], lcase;
	uint32_t rnd[2] = { 0, 0 };
	struct stream s = { rnd, 2, 0 };
	struct vfat_alias_env env = { all_taken, NULL, stream_next, &s };
	size_t n = u16("longfilename.txt", u);
	/* a bare 8.3 name that exists is -EEXIST before any tail */
	n = u16("README.TXT", u);
	CHECK_EQ_INT(vfat_create_shortname(u, n, MX, &env, out, &lcase),
		     -EEXIST);
	CHECK_EQ_INT(s.calls, 0);
	n = u16("longfilename.txt", u);
	CHECK_EQ_INT(vfat_create_shortname(u, n, MX, &env, out, &lcase),
		     -ENOSPC);
	CHECK_EQ_INT(s.calls, 2);
}

/* ------------------------------------------------------------------ */
/* Long-name validity, one row per name class of docs/op-script.md */

struct valid_case {
	const char *name;
	size_t len;   /* 0: strlen */
	int result;   /* 0 or -errno */
	size_t ulen;  /* when 0 */
};

static char long_a[400], long_dots[400], long_bad[400], long_bad2[400],
	astral127[700], astral128[700];

static void fill_long_names(void)
{
	memset(long_a, 'a', 256);                 /* 256 units */
	memset(long_dots, 'b', 255);              /* 255 + "..." */
	memcpy(long_dots + 255, "...", 4);
	memset(long_bad, 'c', 257);               /* 257 units then 0xFF */
	long_bad[257] = (char)0xFF;
	memset(long_bad2, 'd', 255);              /* 255 units then 0xFF */
	long_bad2[255] = (char)0xFF;
	for (int i = 0; i < 128; i++)
		memcpy(astral128 + 4 * i, "\xf0\x9f\x98\x80", 4);
	memcpy(astral127, astral128, 4 * 127);
	astral127[4 * 127] = 'x';                 /* 254 + 1 = 255 units */
}

static const struct valid_case valid_cases[] = {
	/* 8.3 upper, lower, mixed */
	{ "README.TXT", 0, 0, 10 },
	{ "readme.txt", 0, 0, 10 },
	{ "ReadMe.Txt", 0, 0, 10 },
	/* long ASCII, slot boundaries */
	{ "a long file name.with.dots", 0, 0, 26 },
	{ "abcdefghijklm", 0, 0, 13 },
	{ "abcdefghijklmnopqrstuvwxyz", 0, 0, 26 },
	/* 255 units fit; 256 do not; trailing dots do not count */
	{ long_a, 255, 0, 255 },
	{ long_a, 256, -ENAMETOOLONG, 0 },
	{ long_dots, 258, 0, 255 },
	/* too long wins over a bad byte beyond unit 257, as in
	 * utf8s_to_utf16s (which stops at 257); a bad byte inside is
	 * -EINVAL even past 255 units */
	{ long_bad, 258, -ENAMETOOLONG, 0 },
	{ long_bad2, 256, -EINVAL, 0 },
	/* Latin-1 and other BMP letters, CJK, astral */
	{ "caf\xc3\xa9", 0, 0, 4 },
	{ "\xce\xb1\xce\xb2\xce\xb3", 0, 0, 3 },
	{ "\xe4\xb8\xad\xe6\x96\x87", 0, 0, 2 },
	{ "\xf0\x9f\x98\x80", 0, 0, 2 },
	{ astral127, 4 * 127 + 1, 0, 255 },
	{ astral128, 4 * 128, -ENAMETOOLONG, 0 },
	/* leading and inner dots; trailing dots are stripped */
	{ ".hidden", 0, 0, 7 },
	{ "a.b.c", 0, 0, 5 },
	{ "abc.", 0, 0, 3 },
	{ "abc...", 0, 0, 3 },
	/* nothing left after stripping: -ENOENT */
	{ "", 0, -ENOENT, 0 },
	{ ".", 0, -ENOENT, 0 },
	{ "..", 0, -ENOENT, 0 },
	{ "...", 0, -ENOENT, 0 },
	/* spaces: leading and inner fine, trailing refused (also when
	 * only dots follow it) */
	{ " lead", 0, 0, 5 },
	{ "in ner", 0, 0, 6 },
	{ "trail ", 0, -EINVAL, 0 },
	{ "trail .", 0, -EINVAL, 0 },
	{ " ", 0, -EINVAL, 0 },
	/* valid in long names only */
	{ "a+b,c;d=e[f]g", 0, 0, 13 },
	/* invalid everywhere */
	{ "a*b", 0, -EINVAL, 0 },
	{ "a?b", 0, -EINVAL, 0 },
	{ "a<b", 0, -EINVAL, 0 },
	{ "a>b", 0, -EINVAL, 0 },
	{ "a|b", 0, -EINVAL, 0 },
	{ "a\"b", 0, -EINVAL, 0 },
	{ "a:b", 0, -EINVAL, 0 },
	{ "a\\b", 0, -EINVAL, 0 },
	{ "a/b", 0, -EINVAL, 0 },
	{ "a\x01", 0, -EINVAL, 0 },
	{ "\x1f", 0, -EINVAL, 0 },
	{ "a\tb", 0, -EINVAL, 0 },
	{ "a\0b", 3, -EINVAL, 0 },
	{ "a\x7f", 0, 0, 2 }, /* DEL is not a bad char for the kernel */
	/* reserved device names */
	{ "CON", 0, 0, 3 },
	{ "nul.txt", 0, 0, 7 },
	{ "AUX", 0, 0, 3 },
	{ "COM1", 0, 0, 4 },
	{ "LPT1.doc", 0, 0, 8 },
	/* names starting with 0xE5: U+00E5 a-ring, and sigma, which is
	 * CP437 byte 0xE5 */
	{ "\xc3\xa5ngstr\xc3\xb6m", 0, 0, 8 },
	{ "\xcf\x83" "abc", 0, 0, 4 },
	/* names differing only by case are both valid (lookup decides) */
	{ "Case", 0, 0, 4 },
	{ "CASE", 0, 0, 4 },
	/* 3 slots exactly */
	{ long_a, 39, 0, 39 },
	/* malformed UTF-8 */
	{ "\xff", 0, -EINVAL, 0 },
	{ "\xc0\x80", 0, -EINVAL, 0 },         /* overlong NUL */
	{ "\xe0\x80\xaf", 0, -EINVAL, 0 },     /* overlong '/' */
	{ "\xed\xa0\x80", 0, -EINVAL, 0 },     /* surrogate */
	{ "\xf4\x90\x80\x80", 0, -EINVAL, 0 }, /* > U+10FFFF */
	{ "\xe4\xb8", 0, -EINVAL, 0 },         /* truncated */
	{ "\x80", 0, -EINVAL, 0 },             /* lone continuation */
	{ "\xf8\x88\x80\x80\x80", 0, -EINVAL, 0 }, /* 5-byte form */
};

static void test_longname_validity(void)
{
	fill_long_names();
	for (size_t i = 0; i < sizeof(valid_cases) / sizeof(valid_cases[0]);
	     i++) {
		const struct valid_case *c = &valid_cases[i];
		uint16_t u[VFAT_MAX_UNI];
		size_t n = 0, len = c->len ? c->len : strlen(c->name);
		int r = vfat_prepare_longname(c->name, len, u, &n);
		if (r != c->result)
			fprintf(stderr, "validity case %zu:\n", i);
		CHECK_EQ_INT(r, c->result);
		if (r == 0 && c->result == 0)
			CHECK_EQ_INT(n, c->ulen);
	}
	/* surrogate pair layout */
	uint16_t u[VFAT_MAX_UNI];
	size_t n;
	CHECK_EQ_INT(vfat_prepare_longname("\xf0\x9f\x98\x80", 4, u, &n), 0);
	CHECK_EQ_INT(u[0], 0xD83D);
	CHECK_EQ_INT(u[1], 0xDE00);
	CHECK_EQ_INT(vfat_prepare_longname("\xf4\x8f\xbf\xbf", 4, u, &n), 0);
	CHECK_EQ_INT(u[0], 0xDBFF);
	CHECK_EQ_INT(u[1], 0xDFFF);
}

static void test_utf_roundtrip(void)
{
	static const char *s[] = { "abc", "caf\xc3\xa9", "\xe4\xb8\xad",
				   "\xf0\x9f\x98\x80x", "\xef\xbf\xbf" };
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		uint16_t u[16];
		char back[64];
		size_t n = u16(s[i], u);
		int w = vfat_utf16_to_utf8(u, n, back, sizeof(back));
		CHECK_EQ_INT(w, (int)strlen(s[i]));
		CHECK(strcmp(back, s[i]) == 0);
	}
	/* unpaired surrogates become U+FFFD; 0x0000 ends the name */
	uint16_t lone[] = { 'a', 0xD800, 'b', 0xDC00, 0x0000, 'z' };
	char out[32];
	CHECK_EQ_INT(vfat_utf16_to_utf8(lone, 6, out, sizeof(out)), 8);
	CHECK(strcmp(out, "a\xef\xbf\xbd" "b\xef\xbf\xbd") == 0);
	uint16_t hi_end[] = { 'a', 0xD83D };
	CHECK_EQ_INT(vfat_utf16_to_utf8(hi_end, 2, out, sizeof(out)), 4);
	/* room for the bytes and the NUL, or -ENAMETOOLONG */
	uint16_t e[] = { 0xE9 };
	CHECK_EQ_INT(vfat_utf16_to_utf8(e, 1, out, 3), 2);
	CHECK_EQ_INT(vfat_utf16_to_utf8(e, 1, out, 2), -ENAMETOOLONG);
	/* the converter's own limit */
	uint16_t u[4];
	size_t n;
	CHECK_EQ_INT(vfat_utf8_to_utf16("abcd", 4, u, 3, &n), -ENAMETOOLONG);
	CHECK_EQ_INT(vfat_utf8_to_utf16("ab\xf0\x9f\x98\x80", 6, u, 3, &n),
		     -ENAMETOOLONG);
	CHECK_EQ_INT(vfat_utf8_to_utf16("ab\xf0\x9f\x98\x80", 6, u, 4, &n), 0);
	CHECK_EQ_INT(n, 4);
}

static void test_name_eq(void)
{
	uint16_t a[16], b[16];
	size_t na, nb;
	na = u16("ReadMe.TXT", a), nb = u16("readme.txt", b);
	CHECK(vfat_name_eq(a, na, b, nb));
	/* only ASCII folds (nls_ascii) */
	na = u16("\xc3\x89t\xc3\xa9", a), nb = u16("\xc3\xa9t\xc3\xa9", b);
	CHECK(!vfat_name_eq(a, na, b, nb));
	na = u16("\xc3\xa9T\xc3\xa9", a), nb = u16("\xc3\xa9t\xc3\xa9", b);
	CHECK(vfat_name_eq(a, na, b, nb));
	na = u16("abc", a), nb = u16("abcd", b);
	CHECK(!vfat_name_eq(a, na, b, nb));
	/* '@' and '`' sit next to the letters but do not fold */
	na = u16("@", a), nb = u16("`", b);
	CHECK(!vfat_name_eq(a, na, b, nb));
	na = u16("[", a), nb = u16("{", b);
	CHECK(!vfat_name_eq(a, na, b, nb));
}

/* ------------------------------------------------------------------ */

static void test_lfn_slots(void)
{
	uint8_t slots[VFAT_MAX_SLOTS * 32];
	uint16_t u[300];
	size_t n = u16("abc", u);

	CHECK_EQ_INT(vfat_build_lfn_slots(u, n, 0x5A, slots), 1);
	static const uint8_t one[32] = {
		0x41, 'a', 0, 'b', 0, 'c', 0, 0, 0, 0xFF, 0xFF,
		0x0F, 0x00, 0x5A,
		0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
		0xFF, 0xFF,
		0x00, 0x00,
		0xFF, 0xFF, 0xFF, 0xFF,
	};
	CHECK_EQ_MEM(slots, one, 32);

	/* exactly 13: no terminator, no padding */
	n = u16("abcdefghijklm", u);
	CHECK_EQ_INT(vfat_build_lfn_slots(u, n, 1, slots), 1);
	CHECK_EQ_INT(slots[0], 0x41);
	CHECK_EQ_INT(slots[30], 'm');
	CHECK_EQ_INT(slots[31], 0);
	CHECK_EQ_INT(slots[28], 'l');

	/* 14: two slots, highest ordinal first; the first holds 'n' + 0 */
	n = u16("abcdefghijklmn", u);
	CHECK_EQ_INT(vfat_build_lfn_slots(u, n, 7, slots), 2);
	CHECK_EQ_INT(slots[0], 0x42);
	CHECK_EQ_INT(slots[1], 'n');
	CHECK_EQ_INT(slots[3], 0);
	CHECK_EQ_INT(slots[4], 0);
	CHECK_EQ_INT(slots[5], 0xFF);
	CHECK_EQ_INT(slots[32], 0x01);
	CHECK_EQ_INT(slots[33], 'a');
	CHECK_EQ_INT(slots[32 + 13], 7);
	CHECK_EQ_INT(slots[32 + 11], 0x0F);
	CHECK_EQ_INT(slots[32 + 30], 'm');

	/* 255 units: 20 slots, the first 0x54, holding units 247..254,
	 * then 0x0000, then four 0xFFFF */
	for (int i = 0; i < 255; i++)
		u[i] = (uint16_t)(0x100 + i);
	CHECK_EQ_INT(vfat_build_lfn_slots(u, 255, 0, slots), 20);
	CHECK_EQ_INT(slots[0], 0x54);
	CHECK_EQ_INT(slots[1] | slots[2] << 8, 0x100 + 247);
	CHECK_EQ_INT(slots[14] | slots[15] << 8, 0x100 + 252);
	CHECK_EQ_INT(slots[18] | slots[19] << 8, 0x100 + 254);
	CHECK_EQ_INT(slots[20] | slots[21] << 8, 0x0000);
	CHECK_EQ_INT(slots[22] | slots[23] << 8, 0xFFFF);
	CHECK_EQ_INT(slots[28] | slots[29] << 8, 0xFFFF);
	CHECK_EQ_INT(slots[30] | slots[31] << 8, 0xFFFF);
	CHECK_EQ_INT(slots[19 * 32], 0x01);
	CHECK_EQ_INT(slots[19 * 32 + 1] | slots[19 * 32 + 2] << 8, 0x100);
	CHECK_EQ_INT(vfat_build_lfn_slots(u, 256, 0, slots), -ENAMETOOLONG);
	CHECK_EQ_INT(vfat_build_lfn_slots(u, 0, 0, slots), -EINVAL);
}

static void test_shortname_valid(void)
{
	static const struct { const char *sn; int ok; } t[] = {
		{ "README  TXT", 1 },
		{ "readme  txt", 1 },  /* fsck.fat 4.2 does not mind case */
		{ "A B     TXT", 1 },  /* nor inner spaces (no -S) */
		{ "A+B,C;D=[]X", 1 },
		{ "LONGFI~1TXT", 1 },
		{ "\x90       TXT", 1 },
		{ "\x05" "BC        ", 1 }, /* 0x05 at 0 stands for 0xE5 */
		{ "\xe5" "BC        ", 1 }, /* (deleted; not bad_name's job) */
		{ " ABC       ", 0 },
		{ "A.B        ", 0 },  /* '.' is in fsck 4.2's bad set */
		{ ".          ", 0 },
		{ "A*B        ", 0 }, { "A?B        ", 0 }, { "A<B        ", 0 },
		{ "A>B        ", 0 }, { "A|B        ", 0 }, { "A\"B        ", 0 },
		{ "A\\B        ", 0 }, { "A/B        ", 0 }, { "A:B        ", 0 },
		{ "A\x7f" "B        ", 0 },
		{ "A\x05" "B        ", 0 },
		{ "\x01" "BC        ", 0 },
		{ "ABC     T\x1fT", 0 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		CHECK_EQ_INT(strlen(t[i].sn), 11);
		int v = vfat_shortname_valid((const uint8_t *)t[i].sn);
		if (v != t[i].ok)
			fprintf(stderr, "valid case %zu:\n", i);
		CHECK_EQ_INT(v, t[i].ok);
	}
	uint8_t nul[11] = { 'A', 0, ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ' };
	CHECK(!vfat_shortname_valid(nul));
}

static void check_shown(const char *sn, uint8_t nt, enum vfat_shortname rule,
			const char *want)
{
	uint16_t out[12];
	char utf8[64];
	int n = vfat_shortname_to_utf16_rule((const uint8_t *)sn, nt, rule,
					     out);
	CHECK(n >= 0 && n <= 12);
	vfat_utf16_to_utf8(out, (size_t)n, utf8, sizeof(utf8));
	if (strcmp(utf8, want))
		fprintf(stderr, "shown %s as '%s', want '%s'\n", sn, utf8, want);
	CHECK(strcmp(utf8, want) == 0);
}

static void test_shortname_display(void)
{
	check_shown("README  TXT", 0, MX, "README.TXT");
	check_shown("README  TXT", 0x18, MX, "readme.txt");
	check_shown("README  TXT", 0x08, MX, "readme.TXT");
	check_shown("README  TXT", 0x10, MX, "README.txt");
	check_shown("README  TXT", 0x18, NT, "readme.txt");
	check_shown("README  TXT", 0x18, W95, "README.TXT"); /* bits ignored */
	check_shown("README  TXT", 0x00, LO, "readme.txt");  /* always lower */
	check_shown("NOEXT      ", 0, MX, "NOEXT");
	check_shown("A B     C  ", 0, MX, "A B.C");
	check_shown("        TXT", 0, MX, ".TXT");
	check_shown("ABC     T X", 0, MX, "ABC.T X");
	/* 0x05 shows as 0xE5 = sigma; charset2lower keeps it */
	check_shown("\x05" "BC     TXT", 0, MX, "\xcf\x83" "BC.TXT");
	check_shown("\x05" "BC     TXT", 0x08, MX, "\xcf\x83" "bc.TXT");
	/* CP437 0x90 E-acute, lower case 0x82 e-acute */
	check_shown("\x90       TXT", 0, MX, "\xc3\x89.TXT");
	check_shown("\x90       TXT", 0x08, MX, "\xc3\xa9.TXT");
	/* Phi 0xE8 lowers to phi 0xED */
	check_shown("\xe8          ", 0x08, MX, "\xcf\x86");
	/* a NUL byte ends the part */
	check_shown("AB\0XXXXXTXT", 0, MX, "AB.TXT");
	/* the v1 dummy reads as "./": its base is a space then NUL */
	uint8_t d[11];
	uint16_t out[12];
	vfat_dummy_v1(0x155, d);
	CHECK_EQ_INT(vfat_shortname_to_utf16(d, 0, out), 2);
	CHECK_EQ_INT(out[0], '.');
	CHECK_EQ_INT(out[1], '/');
	/* nothing but spaces: the kernel skips the entry */
	CHECK_EQ_INT(vfat_shortname_to_utf16((const uint8_t *)"           ",
					     0, out), 0);
	/* CP437 graphics in short names map to their Unicode characters */
	check_shown("\x01" "BC        ", 0, MX, "\x01" "BC");
	check_shown("\xb0\xdb         ", 0, MX, "\xe2\x96\x91\xe2\x96\x88");
}

int main(void)
{
	test_checksum();
	test_dummy_v1();
	test_dummy_v3();
	test_aliases();
	test_alias_exhaustion();
	test_longname_validity();
	test_utf_roundtrip();
	test_name_eq();
	test_lfn_slots();
	test_shortname_valid();
	test_shortname_display();
	return ut_finish("unit_names");
}
