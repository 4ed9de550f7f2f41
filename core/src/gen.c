/* gen.c - random names by class and random op-scripts.
 *
 * The generator keeps a rough picture of the tree it has built so that
 * most ops aim at things that exist (renames onto existing files, rmdir of
 * non-empty dirs, case-only renames); it does not predict outcomes, that
 * is the model's job. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include "gen.h"
#include "cp437.h"

const char *const vfat_name_class_names[NC_COUNT] = {
	"upper83", "lower83", "long", "slot13", "n255", "latin", "cjk",
	"astral", "dots", "spaces", "traildots", "longchars", "invalid",
	"reserved", "case", "e5", "cp437", "lowbyte", "marks",
};

uint32_t vfat_rng32(struct vfat_rng *r)
{
	uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return (uint32_t)((z ^ (z >> 31)) >> 32);
}

uint32_t vfat_rng_below(struct vfat_rng *r, uint32_t n)
{
	return n ? vfat_rng32(r) % n : 0;
}

int vfat_name_classes_parse(const char *list, uint32_t *mask, char *err, size_t errlen)
{
	const char *p = list;

	*mask = 0;
	if (!strcmp(list, "all")) {
		*mask = (1u << NC_COUNT) - 1;
		return 0;
	}
	while (*p) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		int c;
		for (c = 0; c < NC_COUNT; c++)
			if (strlen(vfat_name_class_names[c]) == l && !strncmp(vfat_name_class_names[c], p, l))
				break;
		if (c == NC_COUNT) {
			snprintf(err, errlen, "unknown name class '%.*s' (known: upper83 lower83 long slot13 n255 latin cjk astral dots spaces traildots longchars invalid reserved case e5 cp437 lowbyte marks, or all)", (int)l, p);
			return -EINVAL;
		}
		*mask |= 1u << c;
		p += l + (e ? 1 : 0);
	}
	return *mask ? 0 : -EINVAL;
}

static const char *pick(struct vfat_rng *r, const char *const *tab, size_t n)
{
	return tab[vfat_rng_below(r, (uint32_t)n)];
}
#define PICK(r, tab) pick(r, tab, sizeof(tab) / sizeof(tab[0]))

static void ascii_run(struct vfat_rng *r, char *o, size_t n, const char *alpha)
{
	size_t al = strlen(alpha);
	for (size_t i = 0; i < n; i++)
		o[i] = alpha[vfat_rng_below(r, (uint32_t)al)];
	o[n] = 0;
}

static void append(char *out, size_t max, const char *s)
{
	size_t l = strlen(out);
	snprintf(out + l, max - l, "%s", s);
}

/* Append the UTF-8 form of BMP code point u (never a surrogate here). */
static void append_uni(char *out, size_t max, uint16_t u)
{
	char b[4];

	if (u < 0x80) {
		b[0] = (char)u; b[1] = 0;
	} else if (u < 0x800) {
		b[0] = (char)(0xc0 | u >> 6); b[1] = (char)(0x80 | (u & 0x3f)); b[2] = 0;
	} else {
		b[0] = (char)(0xe0 | u >> 12); b[1] = (char)(0x80 | ((u >> 6) & 0x3f));
		b[2] = (char)(0x80 | (u & 0x3f)); b[3] = 0;
	}
	append(out, max, b);
}

/* One of CP437's 128 high characters, then (one time in two) its case
 * pair where CP437 has one: vfat_create_shortname upper-cases through
 * nls_cp437, so the pairs are what reach the alias code's case rules. */
static void gen_cp437(struct vfat_rng *r, char *out, size_t max)
{
	uint8_t b = (uint8_t)(0x80 + vfat_rng_below(r, 128));
	uint8_t pair = cp437_upper[b] != b ? cp437_upper[b] : cp437_lower[b];

	append_uni(out, max, cp437_to_uni[b]);
	if (pair != b && vfat_rng_below(r, 2))
		append_uni(out, max, cp437_to_uni[pair]);
}

/* A BMP character outside CP437 whose UTF-16 low byte is uniform over
 * 0x00..0xff: readers that keep one byte per unit (U-Boot) see every
 * byte value, control bytes, '\\', '/' and 0xe5 included. The high
 * bytes name blocks with case pairs (Latin Extended, Cyrillic, fullwidth)
 * and without (CJK, Hangul, kana); U+FFFE/U+FFFF are left out (the LFN
 * padding unit is a separate question). */
static void gen_lowbyte(struct vfat_rng *r, char *out, size_t max)
{
	static const uint8_t hi[] = { 0x01, 0x04, 0x30, 0x4e, 0x54, 0xac, 0xff };
	uint16_t u;

	do
		u = (uint16_t)(hi[vfat_rng_below(r, sizeof(hi))] << 8 | vfat_rng_below(r, 256));
	while (u >= 0xfffe || u == 0x0192);	/* U+0192 is CP437 0x9f */
	append_uni(out, max, u);
}

/* Combining marks after a base letter, and characters that case mapping
 * or NLS conversion treats specially: the Kelvin sign and long s (which
 * Unicode case-folds to ASCII letters), dotted/dotless i, final sigma,
 * micro (in CP437 at 0xe6, upper case outside it), sharp s and its
 * capital, zero-width and format characters, the BOM, NBSP, soft hyphen. */
static void gen_marks(struct vfat_rng *r, char *out, size_t max)
{
	static const uint16_t special[] = { 0x212a, 0x017f, 0x0130, 0x0131, 0x03c2, 0x00b5,
		0x00df, 0x1e9e, 0x200b, 0x200d, 0x200e, 0xfeff, 0x00a0, 0x00ad, 0x2028, 0x2126,
		0x01c5, 0x03f4, 0x1fbe };

	if (vfat_rng_below(r, 2)) {
		append(out, max, vfat_rng_below(r, 2) ? "e" : "\xc3\xa9");
		append_uni(out, max, (uint16_t)(0x0300 + vfat_rng_below(r, 0x70)));
	} else {
		append_uni(out, max, special[vfat_rng_below(r, sizeof(special) / sizeof(special[0]))]);
	}
}

void vfat_gen_name(struct vfat_rng *r, int c, char *out, size_t max)
{
	static const char *const latin[] = { "\xc3\xa9", "\xc3\x9f", "\xc3\xa4", "\xc3\x85", "\xc3\xb1",
		"\xc3\x87", "\xd0\x96", "\xce\xa9", "\xc5\x93", "\xc3\xbf" };
	static const char *const cjk[] = { "\xe6\xbc\xa2", "\xe5\xad\x97", "\xe3\x83\x86", "\xe3\x82\xb9",
		"\xed\x95\x9c", "\xe4\xb8\xad", "\xe6\x96\x87" };
	static const char *const astral[] = { "\xf0\x9f\x98\x80", "\xf0\x9d\x84\x9e", "\xf0\xa0\x80\x8b" };
	static const char *const reserved[] = { "CON", "NUL", "AUX", "PRN", "COM1", "LPT1", "con.txt", "Nul.dat", "COM9" };
	static const char *const invalid[] = { "*", "?", "<", ">", "|", "\"", ":", "\\", "\x01", "\x1f", "\x7f" };
	static const char *const e5[] = { "\xc3\xa5", "\xcf\x83", "\xce\xa3" };
	static const char *const lc[] = { "+", ",", ";", "=", "[", "]" };
	char run[300];
	size_t n;
	uint32_t k;

	out[0] = 0;
	switch (c) {
	case NC_UPPER83:
		ascii_run(r, run, 1 + vfat_rng_below(r, 8), "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-~!#$%&'()@^{}");
		append(out, max, run);
		if (vfat_rng_below(r, 2)) {
			ascii_run(r, run, 1 + vfat_rng_below(r, 3), "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
			append(out, max, ".");
			append(out, max, run);
		}
		break;
	case NC_LOWER83:
		/* one draw per statement: the order of draws inside one
		 * expression or argument list is unspecified in C, and gcc
		 * and clang differ (the same seed must give the same names) */
		k = vfat_rng_below(r, 2);
		ascii_run(r, run, 1 + vfat_rng_below(r, 8), k ? "abcdefghijklmnopqrstuvwxyz0123" : "aBcDeFgHiJ");
		append(out, max, run);
		if (vfat_rng_below(r, 2)) {
			k = vfat_rng_below(r, 2);
			ascii_run(r, run, 1 + vfat_rng_below(r, 3), k ? "txtdocbin" : "TxTDoC");
			append(out, max, ".");
			append(out, max, run);
		}
		break;
	case NC_LONG:
		ascii_run(r, run, 9 + vfat_rng_below(r, 40), "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ 0123456789_-");
		if (run[0] == ' ') run[0] = 'x';
		if (run[strlen(run) - 1] == ' ') run[strlen(run) - 1] = 'y';
		append(out, max, run);
		if (vfat_rng_below(r, 2))
			append(out, max, ".text");
		break;
	case NC_SLOT13:
		n = 13 * (1 + vfat_rng_below(r, 19));
		n += vfat_rng_below(r, 3);
		n -= 1;
		if (n > 255) n = 255;
		ascii_run(r, run, n, "abcdefghijklmnopqrstuvwxyz0123456789");
		append(out, max, run);
		break;
	case NC_N255:
		ascii_run(r, run, 254 + vfat_rng_below(r, 3), "abcdefghijklmnopqrstuvwxyz0123456789ABCDEF");
		append(out, max, run);
		break;
	case NC_LATIN:
		for (n = 1 + vfat_rng_below(r, 6); n; n--) {
			append(out, max, PICK(r, latin));
			if (vfat_rng_below(r, 2)) append(out, max, "a");
		}
		if (vfat_rng_below(r, 2)) append(out, max, ".txt");
		break;
	case NC_CJK:
		for (n = 1 + vfat_rng_below(r, 8); n; n--)
			append(out, max, PICK(r, cjk));
		break;
	case NC_ASTRAL:
		for (n = 1 + vfat_rng_below(r, 4); n; n--) {
			append(out, max, PICK(r, astral));
			if (vfat_rng_below(r, 2)) append(out, max, "x");
		}
		break;
	case NC_DOTS:
		ascii_run(r, run, 1 + vfat_rng_below(r, 6), "abcXYZ");
		switch (vfat_rng_below(r, 4)) {
		case 0: append(out, max, "."); append(out, max, run); break;
		case 1: append(out, max, run); append(out, max, ".b.c"); break;
		case 2: append(out, max, ".."); append(out, max, run); break;
		default: append(out, max, run); append(out, max, ".tar.gz"); break;
		}
		break;
	case NC_SPACES:
		ascii_run(r, run, 1 + vfat_rng_below(r, 6), "abcDEF");
		switch (vfat_rng_below(r, 3)) {
		case 0: append(out, max, " "); append(out, max, run); break;
		case 1: append(out, max, run); append(out, max, " x y"); break;
		default: append(out, max, run); append(out, max, " "); break;
		}
		break;
	case NC_TRAILDOTS:
		ascii_run(r, run, 1 + vfat_rng_below(r, 8), "abcdefXYZ");
		append(out, max, run);
		append(out, max, vfat_rng_below(r, 2) ? "." : "...");
		break;
	case NC_LONGCHARS:
		ascii_run(r, run, 1 + vfat_rng_below(r, 5), "abcDE");
		append(out, max, run);
		append(out, max, PICK(r, lc));
		if (vfat_rng_below(r, 2)) append(out, max, ".TXT");
		break;
	case NC_INVALID:
		ascii_run(r, run, 1 + vfat_rng_below(r, 5), "abc");
		append(out, max, run);
		append(out, max, PICK(r, invalid));
		break;
	case NC_RESERVED:
		append(out, max, PICK(r, reserved));
		break;
	case NC_E5:
		append(out, max, PICK(r, e5));
		ascii_run(r, run, vfat_rng_below(r, 10), "ABCdef");
		append(out, max, run);
		break;
	case NC_CP437:
	case NC_LOWBYTE:
	case NC_MARKS:
		for (n = 1 + vfat_rng_below(r, 6); n; n--) {
			if (c == NC_CP437)
				gen_cp437(r, out, max);
			else if (c == NC_LOWBYTE)
				gen_lowbyte(r, out, max);
			else
				gen_marks(r, out, max);
			if (!vfat_rng_below(r, 3))
				append(out, max, vfat_rng_below(r, 2) ? "a" : "B");
		}
		if (!vfat_rng_below(r, 4))
			append(out, max, ".txt");
		break;
	default: /* NC_CASE is produced from existing names by the script generator */
		ascii_run(r, run, 1 + vfat_rng_below(r, 12), "aBcD");
		append(out, max, run);
		break;
	}
	if (!out[0])
		append(out, max, "x");
}

/* What the generator believes exists (full paths); may be wrong. */
struct gtree {
	char **path;
	int *isdir;
	size_t n, cap;
};

static void gt_add(struct gtree *t, const char *p, int isdir)
{
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 32;
		char **np = realloc(t->path, nc * sizeof(*np));
		int *nd = realloc(t->isdir, nc * sizeof(*nd));
		if (np) t->path = np;
		if (nd) t->isdir = nd;
		if (!np || !nd) return;
		t->cap = nc;
	}
	t->path[t->n] = strdup(p);
	if (!t->path[t->n]) return;
	t->isdir[t->n++] = isdir;
}

static void gt_del(struct gtree *t, size_t i)
{
	free(t->path[i]);
	t->path[i] = t->path[t->n - 1];
	t->isdir[i] = t->isdir[t->n - 1];
	t->n--;
}

static long gt_pick(struct vfat_rng *r, struct gtree *t, int want_dir)
{
	size_t cand = 0;
	for (size_t i = 0; i < t->n; i++)
		if (want_dir < 0 || t->isdir[i] == want_dir)
			cand++;
	if (!cand)
		return -1;
	size_t k = vfat_rng_below(r, (uint32_t)cand);
	for (size_t i = 0; i < t->n; i++)
		if ((want_dir < 0 || t->isdir[i] == want_dir) && k-- == 0)
			return (long)i;
	return -1;
}

static int pick_class(struct vfat_rng *r, uint32_t mask)
{
	int cls[NC_COUNT], n = 0;
	for (int c = 0; c < NC_COUNT; c++)
		if (mask & (1u << c))
			cls[n++] = c;
	return n ? cls[vfat_rng_below(r, (uint32_t)n)] : NC_LONG;
}

/* A new path inside a random existing directory (or the root). */
static void new_path(struct vfat_rng *r, struct gtree *t, uint32_t mask, char *out, size_t max)
{
	char name[1100];
	long d = vfat_rng_below(r, 3) ? gt_pick(r, t, 1) : -1;
	int c = pick_class(r, mask);

	if (c == NC_CASE && t->n) {
		/* the same name with its ASCII case flipped */
		long i = gt_pick(r, t, -1);
		snprintf(out, max, "%s", t->path[i]);
		for (char *p = strrchr(out, '/') + 1; *p; p++)
			if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))
				*p ^= 0x20;
		return;
	}
	vfat_gen_name(r, c, name, sizeof(name));
	snprintf(out, max, "%s/%s", d >= 0 ? t->path[d] : "", name);
}

/* Spell an op's path another way now and then, as users and programs
 * do: a doubled slash, a "." component, a detour "name/..", a trailing
 * slash. The generator's beliefs keep the plain spelling; what Linux
 * makes of the others (a trailing slash on a file, ".." through a file)
 * is for the oracles to say. */
static void spell_path(struct vfat_rng *r, char *p, size_t max)
{
	size_t len = strlen(p), seps[64], n = 0, at, comp_end;
	char tmp[1400];

	if (vfat_rng_below(r, 6) || len + 1 >= sizeof(tmp) || len + 1 >= max)
		return;
	for (size_t i = 0; i < len && n < 64; i++)
		if (p[i] == '/')
			seps[n++] = i;
	if (!n)
		return;
	at = seps[vfat_rng_below(r, (uint32_t)n)];
	switch (vfat_rng_below(r, 4)) {
	case 0:         /* trailing slash */
		if (len + 2 <= max)
			memcpy(p + len, "/", 2);
		return;
	case 1:         /* "a//b" */
		snprintf(tmp, sizeof(tmp), "%.*s/%s", (int)at, p, p + at);
		break;
	case 2:         /* "a/./b" */
		snprintf(tmp, sizeof(tmp), "%.*s/.%s", (int)at, p, p + at);
		break;
	default:        /* "a/b/../b/c": a detour through the next component */
		comp_end = at + 1;
		while (comp_end < len && p[comp_end] != '/')
			comp_end++;
		snprintf(tmp, sizeof(tmp), "%.*s/..%s", (int)comp_end, p, p + at);
		break;
	}
	if (strlen(tmp) < max)
		memcpy(p, tmp, strlen(tmp) + 1);
}

static const uint32_t sizes[] = { 0, 1, 13, 511, 512, 513, 2048, 4096, 4097, 10000, 33000 };

/* Times at FAT's edges (before 1980 and its clamp, odd seconds, midnight
 * and the second before it, 2100, 2107's clamp and past it, 2^31, 2^32)
 * and the labels of fuzzinput.c's table. */
static const int64_t gen_times[] = {
	0, 315532799, 315532800, 315532801, 946684799, 951782400, 1246079973,
	2147483647, 2147483648, 4107542399, 4107542400, 4294967295, 4354819198,
	4354819199, 4354819200,
};
static const char *const gen_labels[] = {
	"VFATFUZZ", "", "lower", "NO NAME", "A B", "12345678901", "123456789012",
	" LEAD", "BAD*", "   ", "\xc3\x84", "DOT.", "X",
};

/* A path for an op on an inode: an entry of the tree, the root now and
 * then, or a name that does not exist. */
static void inode_path(struct vfat_rng *m, struct gtree *t, uint32_t mask, int want_dir,
		       char *a, size_t max)
{
	long i = vfat_rng_below(m, 10) ? gt_pick(m, t, want_dir) : -1;

	if (i >= 0)
		snprintf(a, max, "%s", t->path[i]);
	else if (vfat_rng_below(m, 2))
		snprintf(a, max, "/");
	else
		new_path(m, t, mask, a, max);
}

/* One op of the second grammar from stream m (truncate, chattr, touch,
 * label); the tree's names do not change. */
static void gen_meta(struct vfat_rng *m, struct gtree *t, uint32_t mask, struct vfat_op *op,
		     char *a, size_t max)
{
	op->kind = (enum vfat_opkind)(OP_TRUNCATE + vfat_rng_below(m, 4));
	switch (op->kind) {
	case OP_TRUNCATE:
		inode_path(m, t, mask, 0, a, max);
		op->n[0] = sizes[vfat_rng_below(m, sizeof(sizes) / sizeof(sizes[0]))];
		break;
	case OP_CHATTR: {
		static const uint8_t bits[4] = { 0x01, 0x02, 0x04, 0x20 };
		uint32_t set = vfat_rng_below(m, 16);
		inode_path(m, t, mask, -1, a, max);
		for (int k = 0; k < 4; k++)
			if (set & (1u << k))
				op->n[0] |= bits[k];
		break;
	}
	case OP_TOUCH:
		inode_path(m, t, mask, -1, a, max);
		for (int k = 0; k < 2; k++) {
			op->t[k].sec = vfat_rng_below(m, 2) ?
				gen_times[vfat_rng_below(m, sizeof(gen_times) / sizeof(gen_times[0]))] :
				(int64_t)vfat_rng32(m) * 2 + vfat_rng_below(m, 2);
			op->t[k].nsec = vfat_rng_below(m, 4) ? 0 : vfat_rng_below(m, 1000000000);
		}
		break;
	default:
		snprintf(a, max, "%s", gen_labels[vfat_rng_below(m, sizeof(gen_labels) / sizeof(gen_labels[0]))]);
		return;
	}
	spell_path(m, a, max);
}

int vfat_gen_script(uint64_t seed, int nops, uint32_t mask, struct vfat_script *s)
{
	return vfat_gen_script_meta(seed, nops, mask, 0, s);
}

/* With meta, a second stream (seed ^ GEN_META_SALT) decides before each
 * op whether it is one of the second grammar (1 in 4) and draws it; the
 * first stream is read exactly as without meta, so the script's other ops
 * are those of the same seed without meta, in order (the last ones cut
 * off by the count). */
#define GEN_META_SALT 0xBB67AE8584CAA73Bull
int vfat_gen_script_meta(uint64_t seed, int nops, uint32_t mask, int meta, struct vfat_script *s)
{
	struct vfat_rng r = { seed }, m = { seed ^ GEN_META_SALT };
	struct gtree t = { 0 };
	char a[1400], b[1400];
	int rc = 0;

	for (int k = 0; k < nops && rc == 0; k++) {
		struct vfat_op op;
		uint32_t what;
		long i;

		memset(&op, 0, sizeof(op));
		op.a = a;
		if (meta && vfat_rng_below(&m, 4) == 0) {
			gen_meta(&m, &t, mask, &op, a, sizeof(a));
			rc = vfat_script_add(s, &op);
			continue;
		}
		what = vfat_rng_below(&r, 100);
		if (what < 20 || t.n == 0) {
			op.kind = OP_MKDIR;
			new_path(&r, &t, mask, a, sizeof(a));
			gt_add(&t, a, 1);
		} else if (what < 55) {
			op.kind = OP_CREATE;
			new_path(&r, &t, mask, a, sizeof(a));
			op.n[0] = sizes[vfat_rng_below(&r, sizeof(sizes) / sizeof(sizes[0]))];
			op.n[1] = vfat_rng_below(&r, 256);
			gt_add(&t, a, 0);
		} else if (what < 63 && (i = gt_pick(&r, &t, 0)) >= 0) {
			op.kind = OP_WRITE;
			snprintf(a, sizeof(a), "%s", t.path[i]);
			op.n[0] = vfat_rng_below(&r, 9000);
			op.n[1] = sizes[vfat_rng_below(&r, sizeof(sizes) / sizeof(sizes[0]))];
			op.n[2] = vfat_rng_below(&r, 256);
		} else if (what < 83 && (i = gt_pick(&r, &t, -1)) >= 0) {
			op.kind = OP_RENAME;
			snprintf(a, sizeof(a), "%s", t.path[i]);
			long j = vfat_rng_below(&r, 4) == 0 ? gt_pick(&r, &t, t.isdir[i]) : -1;
			if (j >= 0)
				snprintf(b, sizeof(b), "%s", t.path[j]);
			else
				new_path(&r, &t, mask, b, sizeof(b));
			op.b = b;
			int isdir = t.isdir[i];
			gt_del(&t, (size_t)i);
			gt_add(&t, b, isdir);
		} else if (what < 92 && (i = gt_pick(&r, &t, 0)) >= 0) {
			op.kind = OP_UNLINK;
			snprintf(a, sizeof(a), "%s", t.path[i]);
			gt_del(&t, (size_t)i);
		} else if ((i = gt_pick(&r, &t, 1)) >= 0) {
			op.kind = OP_RMDIR;
			snprintf(a, sizeof(a), "%s", t.path[i]);
			gt_del(&t, (size_t)i);
		} else {
			op.kind = OP_MKDIR;
			new_path(&r, &t, mask, a, sizeof(a));
			gt_add(&t, a, 1);
		}
		spell_path(&r, a, sizeof(a));
		if (op.b)
			spell_path(&r, b, sizeof(b));
		rc = vfat_script_add(s, &op);
	}
	for (size_t i = 0; i < t.n; i++)
		free(t.path[i]);
	free(t.path);
	free(t.isdir);
	return rc;
}
