/* names.c - name policy of the core (see names.h).
 *
 * Behaviour follows Linux 6.1 fs/fat (namei_vfat.c, dir.c, nls_base.c)
 * mounted with codepage=437, iocharset=ascii, utf8. The code is written
 * from a reading of that behaviour, not copied. CP437 is a single-byte
 * code page, so every character the kernel's to_shortname_char handles
 * turns into at most one byte; the code relies on that (see
 * build_base_ext).
 */
#include <errno.h>
#include <string.h>

#include "names.h"
#include "fat.h"
#include "cp437.h"

/* ------------------------------------------------------------------ */
/* UTF-8 <-> UTF-16                                                     */

/* One UTF-8 sequence at s (n bytes left): its length, or -1 when it is
 * malformed. The kernel's utf8_to_utf32 rejects the same inputs:
 * overlong forms, surrogates, code points above U+10FFFF, bad or missing
 * continuation bytes, 5- and 6-byte forms. */
static int utf8_decode(const uint8_t *s, size_t n, uint32_t *cp)
{
	uint8_t c = s[0];
	uint32_t v, min;
	size_t len;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if ((c & 0xE0) == 0xC0) {
		len = 2, v = c & 0x1F, min = 0x80;
	} else if ((c & 0xF0) == 0xE0) {
		len = 3, v = c & 0x0F, min = 0x800;
	} else if ((c & 0xF8) == 0xF0) {
		len = 4, v = c & 0x07, min = 0x10000;
	} else {
		return -1;
	}
	if (n < len)
		return -1;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return -1;
		v = v << 6 | (s[i] & 0x3F);
	}
	if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return -1;
	*cp = v;
	return (int)len;
}

int vfat_utf8_to_utf16(const char *s, size_t len, uint16_t *out, size_t max,
		       size_t *outlen)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t i = 0, n = 0;

	while (i < len) {
		uint32_t cp;
		/* Like utf8s_to_utf16s: a full buffer ends the scan before
		 * the next sequence is decoded, so "too long" wins over a
		 * bad byte that lies beyond the limit. */
		if (n >= max)
			return -ENAMETOOLONG;
		int k = utf8_decode(p + i, len - i, &cp);
		if (k < 0)
			return -EINVAL;
		i += (size_t)k;
		if (cp < 0x10000) {
			out[n++] = (uint16_t)cp;
			continue;
		}
		if (max - n < 2)
			return -ENAMETOOLONG;
		cp -= 0x10000;
		out[n++] = (uint16_t)(0xD800 | cp >> 10);
		out[n++] = (uint16_t)(0xDC00 | (cp & 0x3FF));
	}
	*outlen = n;
	return 0;
}

/* Next code point of u[0..n) starting at *i; an unpaired surrogate reads
 * as U+FFFD. */
static uint32_t utf16_next(const uint16_t *u, size_t n, size_t *i)
{
	uint32_t c = u[(*i)++];

	if (c < 0xD800 || c > 0xDFFF)
		return c;
	if (c >= 0xDC00 || *i >= n || u[*i] < 0xDC00 || u[*i] > 0xDFFF)
		return 0xFFFD;
	return 0x10000 + ((c - 0xD800) << 10) + (u[(*i)++] - 0xDC00);
}

static size_t utf8_encode(uint32_t cp, uint8_t b[4])
{
	if (cp < 0x80) {
		b[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {
		b[0] = (uint8_t)(0xC0 | cp >> 6);
		b[1] = (uint8_t)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		b[0] = (uint8_t)(0xE0 | cp >> 12);
		b[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
		b[2] = (uint8_t)(0x80 | (cp & 0x3F));
		return 3;
	}
	b[0] = (uint8_t)(0xF0 | cp >> 18);
	b[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
	b[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
	b[3] = (uint8_t)(0x80 | (cp & 0x3F));
	return 4;
}

int vfat_utf16_to_utf8(const uint16_t *u, size_t n, char *out, size_t max)
{
	size_t i = 0, w = 0;

	if (max == 0)
		return -ENAMETOOLONG;
	/* A 0x0000 unit ends the name, as in the kernel's utf16s_to_utf8s
	 * (LFN slots pad with it). */
	while (i < n && u[i] != 0) {
		uint8_t b[4];
		size_t k = utf8_encode(utf16_next(u, n, &i), b);
		if (w + k + 1 > max)
			return -ENAMETOOLONG;
		memcpy(out + w, b, k);
		w += k;
	}
	out[w] = '\0';
	return (int)w;
}

/* ------------------------------------------------------------------ */
/* Long names                                                          */

/* vfat_striptail_len: a name cannot end in '.', the kernel drops them. */
static size_t strip_trailing_dots(const char *name, size_t len)
{
	while (len && name[len - 1] == '.')
		len--;
	return len;
}

/* vfat_bad_char: characters refused anywhere in a long name. */
static int is_bad_char(uint16_t w)
{
	return w < 0x20 || w == '*' || w == '?' || w == '<' || w == '>' ||
	       w == '|' || w == '"' || w == ':' || w == '/' || w == '\\';
}

/* vfat_is_used_badchars: n > 0 here. */
static int uses_bad_chars(const uint16_t *u, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (is_bad_char(u[i]))
			return 1;
	return u[n - 1] == ' ';	/* a trailing space is refused too */
}

/* Order of the checks is the kernel's: vfat_add_entry strips the dots
 * and answers -ENOENT for nothing left ("", ".", "..", "..."), then
 * xlate_to_uni converts (-EINVAL bad UTF-8, -ENAMETOOLONG past 255 units;
 * it converts into 257 units, hence the two spare), then the bad-character
 * test. Linux 6.1 has no vfat_valid_longname any more, so reserved DOS
 * device names (CON, NUL, ...) are accepted. A NUL byte can never reach
 * the kernel (paths are C strings); it is refused with -EINVAL. */
int vfat_prepare_longname(const char *name, size_t len, uint16_t *uname,
			  size_t *ulen)
{
	uint16_t buf[VFAT_MAX_UNI + 2];
	size_t n;

	len = strip_trailing_dots(name, len);
	if (len == 0)
		return -ENOENT;
	if (memchr(name, 0, len))
		return -EINVAL;
	int err = vfat_utf8_to_utf16(name, len, buf, VFAT_MAX_UNI + 2, &n);
	if (err)
		return err;
	if (n > VFAT_MAX_UNI)
		return -ENAMETOOLONG;
	if (uses_bad_chars(buf, n))
		return -EINVAL;
	memcpy(uname, buf, n * sizeof(buf[0]));
	*ulen = n;
	return 0;
}

static uint16_t ascii_lower(uint16_t c)
{
	return (c >= 'A' && c <= 'Z') ? (uint16_t)(c + 32) : c;
}

/* nls_ascii folds only A-Z, and the kernel compares the UTF-8 bytes; on
 * well-formed text that is the same as folding A-Z per UTF-16 unit. */
int vfat_name_eq(const uint16_t *a, size_t alen, const uint16_t *b,
		 size_t blen)
{
	if (alen != blen)
		return 0;
	for (size_t i = 0; i < alen; i++)
#ifdef VFAT_FAULT_CASE_CLASH
		/* planted fault: names compared exactly */
		if (a[i] != b[i] || ascii_lower(a[i]) != ascii_lower(b[i]))
#else
		if (ascii_lower(a[i]) != ascii_lower(b[i]))
#endif
			return 0;
	return 1;
}

uint8_t vfat_lfn_checksum(const uint8_t sn[11])
{
	uint8_t s = 0;

	for (int i = 0; i < 11; i++)
		s = (uint8_t)(((s & 1) << 7) + (s >> 1) + sn[i]);
	return s;
}

/* ------------------------------------------------------------------ */
/* Short name creation (vfat_create_shortname)                         */

/* The kernel's struct shortname_info: a bit stays set while every
 * character seen so far allows it. */
struct sn_info {
	int lower, upper, valid;
};

/* vfat_skip_char: dropped from the short name, which then is not the
 * name itself. */
static int is_skip_char(uint16_t w)
{
	return w == '.' || w == ' ';
}

/* vfat_replace_char: valid in long names only, '_' in the short one. */
static int is_replace_char(uint16_t w)
{
	return w == '[' || w == ']' || w == ';' || w == ',' || w == '+' ||
	       w == '=';
}

static int is_ascii_alpha(uint8_t c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

/* to_shortname_char with nls_cp437: 0 when the unit is skipped, else 1
 * and the (upper-cased) byte. Units CP437 lacks (CJK, each half of a
 * surrogate pair, ...) become '_' and make the name invalid. Bytes
 * >= 0x7F clear both case bits; for them the kernel's isalpha test can
 * only clear bits already clear, so ASCII letters are all that matter. */
static int to_shortname_byte(uint16_t w, uint8_t *out, struct sn_info *info)
{
	if (is_skip_char(w)) {
		info->valid = 0;
		return 0;
	}
	int b = cp437_from_uni(w);
	if (is_replace_char(w) || b < 0) {
		info->valid = 0;
		*out = '_';
		return 1;
	}
	if (b >= 0x7F)
		info->lower = info->upper = 0;
	uint8_t up = cp437_upper[b];
	if (is_ascii_alpha(up)) {
		if (up == b)
			info->lower = 0;
		else
			info->upper = 0;
	}
	*out = up;
	return 1;
}

/* Where the base ends and the extension starts: the extension follows
 * the last dot, unless that dot ends the name or only dots and spaces
 * precede it ("...test" has base TEST and no extension, as Win95 does).
 * Returns the number of units that feed the base; *ext gets the index of
 * the first extension unit, or ulen when there is none. */
static size_t split_base_ext(const uint16_t *u, size_t ulen, size_t *ext)
{
	size_t dot = ulen;

	*ext = ulen;
	for (size_t k = ulen; k-- > 0;) {
		if (u[k] == '.') {
			dot = k;
			break;
		}
	}
	if (dot == ulen || dot == ulen - 1)
		return ulen;
	size_t p = 0;
	while (p < dot && is_skip_char(u[p]))
		p++;
	if (p == dot)
		return ulen;
	*ext = dot + 1;
	return dot;
}

struct sn_parts {
	uint8_t base[8], ext[3];
	int baselen, extlen;
	int is_shortname; /* nothing was cut off */
	struct sn_info bi, ei;
};

/* The base (at most 8 bytes) and extension (at most 3) of the alias.
 * With a multi-byte code page the kernel also tracks where a character
 * straddles byte 2 or 6 (numtail2_baselen / numtail_baselen); with CP437
 * no character does, so those stay 2 and 6. */
static void build_base_ext(const uint16_t *u, size_t ulen,
			   struct sn_parts *sp)
{
	size_t ext, sz = split_base_ext(u, ulen, &ext);
	uint8_t c;

	memset(sp, 0, sizeof(*sp));
	sp->is_shortname = 1;
	sp->bi = sp->ei = (struct sn_info){ 1, 1, 1 };
	for (size_t i = 0; i < sz; i++) {
		if (!to_shortname_byte(u[i], &c, &sp->bi))
			continue;
		sp->base[sp->baselen++] = c;
		if (sp->baselen == 8) {
			if (i + 1 < sz)
				sp->is_shortname = 0;
			break;
		}
	}
	for (size_t i = ext; i < ulen; i++) {
		if (!to_shortname_byte(u[i], &c, &sp->ei))
			continue;
		sp->ext[sp->extlen++] = c;
		if (sp->extlen == 3) {
			if (i + 1 != ulen)
				sp->is_shortname = 0;
			break;
		}
	}
}

static int sn_exists(const struct vfat_alias_env *env, const uint8_t sn[11])
{
	return env->exists && env->exists(env->ctx, sn);
}

/* Every read of jiffies in the kernel is one rand32() call. */
static uint32_t fake_jiffies(const struct vfat_alias_env *env)
{
	return env->rand32 ? env->rand32(env->rctx) : 0;
}

/* Last resort: BA####~D with 4 hex digits from jiffies, stepping down by
 * 11 until free. The kernel reads jiffies twice: first for the number,
 * then for the digit D = '1' + ((jiffies >> 16) & 7); so rand32() is
 * called exactly twice, in that order. The kernel would loop forever on
 * a directory holding all 65536 candidates; we give up with -ENOSPC. */
static int add_hex_tail(uint8_t sn[11], int baselen,
			const struct vfat_alias_env *env)
{
	static const char hex[] = "0123456789ABCDEF";
	uint32_t num = fake_jiffies(env);
	uint32_t digit = (fake_jiffies(env) >> 16) & 7;

	if (baselen > 2) {
		baselen = 2;
		sn[7] = ' ';
	}
	sn[baselen + 4] = '~';
	sn[baselen + 5] = (uint8_t)('1' + digit);
	for (uint32_t tries = 0; tries < 0x10000; tries++, num -= 11) {
		for (int k = 0; k < 4; k++)
			sn[baselen + k] = (uint8_t)hex[num >> (12 - 4 * k) & 0xF];
		if (!sn_exists(env, sn))
			return 0;
	}
	return -ENOSPC;
}

/* BASE~1 .. BASE~9 with the base cut to 6 bytes, then the hex tail. */
static int add_numeric_tail(uint8_t sn[11], int baselen,
			    const struct vfat_alias_env *env)
{
	if (baselen > 6) {
		baselen = 6;
		sn[7] = ' ';
	}
	sn[baselen] = '~';
	for (int i = 1; i <= 9; i++) {
		sn[baselen + 1] = (uint8_t)('0' + i);
		if (!sn_exists(env, sn))
			return 0;
	}
	return add_hex_tail(sn, baselen, env);
}

/* A name that is its own 8.3 form: under the win95 creation rule it is
 * stored bare only when upper case; under winnt when each part is of one
 * case, the lower-case parts being flagged in the NT byte. Otherwise the
 * alias is the 8.3 form itself, without a tail (the kernel's case 2). */
static int bare_name_result(const struct sn_parts *sp,
			    enum vfat_shortname rule, uint8_t *lcase)
{
	if (rule != VFAT_SN_WINNT)
		return sp->bi.upper && sp->ei.upper;
	if (!(sp->bi.upper || sp->bi.lower) || !(sp->ei.upper || sp->ei.lower))
		return 0;
	if (!sp->bi.upper)
		*lcase |= CASE_LOWER_BASE;
	if (!sp->ei.upper)
		*lcase |= CASE_LOWER_EXT;
	return 1;
}

int vfat_create_shortname(const uint16_t *uname, size_t ulen,
			  enum vfat_shortname rule,
			  const struct vfat_alias_env *env, uint8_t out[11],
			  uint8_t *lcase)
{
	struct sn_parts sp;

	if (rule < VFAT_SN_LOWER || rule > VFAT_SN_MIXED || ulen == 0)
		return -EINVAL;
	build_base_ext(uname, ulen, &sp);
	if (sp.baselen == 0)
		return -EINVAL;
	/* 0xE5 marks a deleted entry; the kernel stores 0x05 instead. With
	 * CP437 no upper-cased character is 0xE5 (sigma becomes 0xE4), so
	 * this only guards the rule. */
	if (sp.base[0] == DELETED_FLAG)
		sp.base[0] = 0x05;
	memset(out, ' ', 11);
	memcpy(out, sp.base, (size_t)sp.baselen);
	memcpy(out + 8, sp.ext, (size_t)sp.extlen);
	*lcase = 0;
	if (sp.is_shortname && sp.bi.valid && sp.ei.valid) {
		if (sn_exists(env, out))
			return -EEXIST;
		return bare_name_result(&sp, rule, lcase);
	}
	/* nonumtail is off in the kernel's defaults: always add a tail. */
	return add_numeric_tail(out, sp.baselen, env);
}

/* ------------------------------------------------------------------ */
/* Dummy short entries of the no-dual-names patch                      */

/* The 35 bytes invalid in 8.3 names the July 2009 revision draws from,
 * in the order docs/write-paths.md lists them. */
static const uint8_t v3_invalid[35] = {
	0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x0B, 0x0C, 0x0E, 0x0F, 0x10, 0x11,
	0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x1B, 0x1C, 0x1D,
	0x1E, 0x1F, 0x22, 0x2A, 0x3A, 0x3C, 0x3E, 0x3F, 0x5B, 0x5D, 0x7C,
};

static int is_v3_invalid(uint8_t c)
{
	return memchr(v3_invalid, c, sizeof(v3_invalid)) != NULL;
}

void vfat_dummy_v1(uint32_t r, uint8_t out[11])
{
	r &= 0x3FFFFFFF;
	if (r == 0)	/* all-zero chunks would leave only NUL and space */
		r = 1;
	out[0] = ' ';
	out[1] = 0;
	for (int i = 2; i < 8; i++) {
		out[i] = (uint8_t)(r & 0x1F);
		r >>= 5;
	}
	out[8] = '/';
	out[9] = 0;
	out[10] = 0;
}

void vfat_dummy_v3(uint32_t (*rand32)(void *), void *rctx, int is_dir,
		   uint8_t out[11])
{
	uint32_t r = rand32(rctx);
	int tilde = (int)(r % 8), slash = -1;

	r >>= 3;
	if (!is_dir) {
		slash = (tilde + 1 + (int)(r % 7)) % 8;
		r >>= 3;
	}
	for (int i = 0; i < 8; i++) {
		if (i == tilde) {
			out[i] = '~';
		} else if (i == slash) {
			out[i] = '/';
		} else {
			out[i] = v3_invalid[r % 35];
			r /= 35;
			if (r < 35)	/* too few choices left: redraw */
				r = rand32(rctx);
		}
	}
}

int vfat_is_dummy_v1(const uint8_t sn[11])
{
	int any = 0;

	if (sn[0] != ' ' || sn[1] != 0 || sn[8] != '/' || sn[9] != 0 ||
	    sn[10] != 0)
		return 0;
	for (int i = 2; i < 8; i++) {
		if (sn[i] > 0x1F)
			return 0;
		any |= sn[i];
	}
	return any != 0;	/* r is never 0 */
}

/* The NT byte's 0x20 bit is what fsck.fat looks at; the base must hold
 * one '~', one '/' for files and none for directories, and otherwise
 * only the 35 invalid bytes. The extension is the alias's and free. */
int vfat_is_dummy_v3(const uint8_t sn[11], uint8_t ntcase, int is_dir)
{
	int tildes = 0, slashes = 0;

	if (!(ntcase & FAT_NO_83NAME))
		return 0;
	for (int i = 0; i < 8; i++) {
		if (sn[i] == '~')
			tildes++;
		else if (sn[i] == '/')
			slashes++;
		else if (!is_v3_invalid(sn[i]))
			return 0;
	}
	return tildes == 1 && slashes == (is_dir ? 0 : 1);
}

/* fsck.fat 4.2's bad_name() with its defaults (no -S, not Atari): every
 * byte >= 0x20 except 0x7F and * ? < > | " \ / : . (0x05 allowed at
 * byte 0, where it stands for 0xE5), and no leading space. Inner spaces,
 * lower case and + , ; = [ ] pass. Its exemption for entries whose NT
 * byte has 0x20 set is the caller's business (vfat_is_dummy_v3). The
 * "." and ".." entries are checked apart by fsck.fat; here they fail. */
int vfat_shortname_valid(const uint8_t sn[11])
{
	static const char bad[] = "*?<>|\"\\/:.";

	for (int i = 0; i < 11; i++) {
		uint8_t c = sn[i];
		if (c < 0x20 && !(i == 0 && c == 0x05))
			return 0;
		if (c == 0x7F || memchr(bad, c, sizeof(bad) - 1))
			return 0;
	}
	return sn[0] != ' ';
}

/* ------------------------------------------------------------------ */
/* LFN slots                                                           */

/* Byte offsets of the 13 UTF-16 units inside a 32-byte slot. */
static const uint8_t lfn_unit_off[VFAT_LFN_CHARS] = {
	1, 3, 5, 7, 9, 14, 16, 18, 20, 22, 24, 28, 30,
};

/* Unit k of the padded name: the name, one 0x0000, then 0xFFFF. */
static uint16_t padded_unit(const uint16_t *u, size_t ulen, size_t k)
{
	if (k < ulen)
		return u[k];
	return k == ulen ? 0x0000 : 0xFFFF;
}

int vfat_build_lfn_slots(const uint16_t *uname, size_t ulen, uint8_t cksum,
			 uint8_t *slots)
{
	if (ulen == 0)
		return -EINVAL;
	if (ulen > VFAT_MAX_UNI)
		return -ENAMETOOLONG;
#ifdef VFAT_FAULT_LFN_SLOT_COUNT
	/* planted fault: one slot too many when ulen is a multiple of 13 */
	int n = (int)((ulen + VFAT_LFN_CHARS) / VFAT_LFN_CHARS);
#else
	int n = (int)((ulen + VFAT_LFN_CHARS - 1) / VFAT_LFN_CHARS);
#endif
	for (int s = 0; s < n; s++) {
		uint8_t *p = slots + (size_t)s * DIRENT_SIZE;
		int ord = n - s;
		memset(p, 0, DIRENT_SIZE);
		p[0] = (uint8_t)(ord | (s == 0 ? 0x40 : 0));
		p[11] = ATTR_LFN;
		p[13] = cksum;
		for (int j = 0; j < VFAT_LFN_CHARS; j++) {
			size_t k = (size_t)(ord - 1) * VFAT_LFN_CHARS + (size_t)j;
			put16(p + lfn_unit_off[j], padded_unit(uname, ulen, k));
		}
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* Showing a short name (fat_parse_short)                              */

/* One byte as the kernel shows it; lower: through charset2lower. */
static uint16_t shown_char(uint8_t c, int lower)
{
	return cp437_to_uni[lower ? cp437_lower[c] : c];
}

/* Whether a part is shown in lower case under the display rule. */
static int display_lower(enum vfat_shortname rule, uint8_t ntcase,
			 uint8_t bit)
{
	if (rule == VFAT_SN_LOWER)
		return 1;
	if (rule == VFAT_SN_WIN95)
		return 0;
	return (ntcase & bit) != 0;	/* winnt and mixed display winnt */
}

/* A NUL byte ends a part; trailing spaces of each part are dropped but
 * inner (and leading) ones stay; the dot appears only before a non-empty
 * extension. No non-space byte at all gives 0 (the kernel skips it). */
int vfat_shortname_to_utf16_rule(const uint8_t sn[11], uint8_t ntcase,
				 enum vfat_shortname rule, uint16_t *out)
{
	int lb = display_lower(rule, ntcase, CASE_LOWER_BASE);
	int le = display_lower(rule, ntcase, CASE_LOWER_EXT);
	uint8_t w[11];
	int j = 0, keep = 0, any = 0;

	memcpy(w, sn, sizeof(w));
	if (w[0] == 0x05)	/* stored form of a leading 0xE5 */
		w[0] = DELETED_FLAG;
	for (int i = 0; i < 8 && w[i]; i++) {
		out[j++] = shown_char(w[i], lb);
		if (w[i] != ' ')
			keep = j, any = 1;
	}
	j = keep;
	out[j++] = '.';
	for (int i = 8; i < 11 && w[i]; i++) {
		out[j++] = shown_char(w[i], le);
		if (w[i] != ' ')
			keep = j, any = 1;
	}
	return any ? keep : 0;
}

int vfat_shortname_to_utf16(const uint8_t sn[11], uint8_t ntcase,
			    uint16_t *out)
{
	return vfat_shortname_to_utf16_rule(sn, ntcase, VFAT_SN_MIXED, out);
}
