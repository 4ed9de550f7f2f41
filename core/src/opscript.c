/* opscript.c - parse and format op-scripts (docs/op-script.md "Op-script");
 * opapply.c applies them.
 *
 * The same text drives the core, mtools and the kernel agent, so this
 * parser accepts exactly what vfz/opscript.py accepts: JSON
 * strings for paths (escapes, surrogate pairs), decimal numbers, '#'
 * comments, and rejects everything else with the line number.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include "opscript.h"

struct pctx {
	const char *p, *end;
	int line;
	char *err;
	size_t errlen;
};

static int perr(struct pctx *c, const char *msg)
{
	if (c->err && c->errlen)
		snprintf(c->err, c->errlen, "line %d: %s", c->line, msg);
	return -EINVAL;
}

static void skip_ws(struct pctx *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r'))
		c->p++;
}

static int hex4(const char *p, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char h = p[i];
		v <<= 4;
		if (h >= '0' && h <= '9') v |= (unsigned)(h - '0');
		else if (h >= 'a' && h <= 'f') v |= (unsigned)(h - 'a' + 10);
		else if (h >= 'A' && h <= 'F') v |= (unsigned)(h - 'A' + 10);
		else return -1;
	}
	*out = v;
	return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) { o[0] = (char)cp; return 1; }
	if (cp < 0x800) { o[0] = (char)(0xC0 | cp >> 6); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
	if (cp < 0x10000) {
		o[0] = (char)(0xE0 | cp >> 12); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		o[2] = (char)(0x80 | (cp & 0x3F)); return 3;
	}
	o[0] = (char)(0xF0 | cp >> 18); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* Length of a valid UTF-8 sequence at p (no surrogates, no overlongs), 0 if invalid. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned c = p[0], cp, n;

	if (c < 0x80) return 1;
	if (c >= 0xC2 && c <= 0xDF) { n = 2; cp = c & 0x1F; }
	else if (c >= 0xE0 && c <= 0xEF) { n = 3; cp = c & 0x0F; }
	else if (c >= 0xF0 && c <= 0xF4) { n = 4; cp = c & 0x07; }
	else return 0;
	if ((size_t)(end - p) < n) return 0;
	for (unsigned i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80) return 0;
		cp = cp << 6 | (p[i] & 0x3F);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
		return 0;
	return n;
}

static int parse_string(struct pctx *c, char **out, int is_path)
{
	size_t cap = (size_t)(c->end - c->p) * 2 + 8, n = 0;
	char *s;

	if (c->p >= c->end || *c->p != '"')
		return perr(c, "expected a JSON string");
	s = malloc(cap);
	if (!s)
		return -ENOMEM;
	c->p++;
	while (c->p < c->end && *c->p != '"') {
		unsigned char ch = (unsigned char)*c->p;
		if (ch < 0x20) { free(s); return perr(c, "control character in JSON string"); }
		if (ch == '\\') {
			unsigned cp, lo;
			if (c->end - c->p < 2) { free(s); return perr(c, "bad JSON escape"); }
			switch (c->p[1]) {
			case '"': s[n++] = '"'; c->p += 2; continue;
			case '\\': s[n++] = '\\'; c->p += 2; continue;
			case '/': s[n++] = '/'; c->p += 2; continue;
			case 'b': s[n++] = '\b'; c->p += 2; continue;
			case 'f': s[n++] = '\f'; c->p += 2; continue;
			case 'n': s[n++] = '\n'; c->p += 2; continue;
			case 'r': s[n++] = '\r'; c->p += 2; continue;
			case 't': s[n++] = '\t'; c->p += 2; continue;
			case 'u': break;
			default: free(s); return perr(c, "bad JSON escape");
			}
			if (c->end - c->p < 6 || hex4(c->p + 2, &cp)) { free(s); return perr(c, "bad \\u escape"); }
			c->p += 6;
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u' ||
				    hex4(c->p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
					free(s);
					return perr(c, "path has an unpaired surrogate");
				}
				c->p += 6;
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
			} else if (cp >= 0xDC00 && cp <= 0xDFFF) {
				free(s);
				return perr(c, "path has an unpaired surrogate");
			}
			if (cp == 0) {
				free(s);
				return perr(c, is_path ? "path contains a NUL character"
						       : "label contains a NUL character");
			}
			n += put_utf8(s + n, cp);
			continue;
		}
		size_t l = utf8_len((const unsigned char *)c->p, (const unsigned char *)c->end);
		if (!l) { free(s); return perr(c, "op-script is not valid UTF-8"); }
		memcpy(s + n, c->p, l);
		n += l;
		c->p += l;
	}
	if (c->p >= c->end) { free(s); return perr(c, "unterminated JSON string"); }
	c->p++;
	s[n] = 0;
	if (is_path && s[0] != '/') { free(s); return perr(c, "path is not absolute"); }
	*out = s;
	return 0;
}

static int parse_number(struct pctx *c, uint32_t *out)
{
	uint64_t v = 0;
	const char *st = c->p;

	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		v = v * 10 + (uint64_t)(*c->p - '0');
		if (v > 0xFFFFFFFFull)
			return perr(c, "number out of range");
		c->p++;
	}
	if (c->p == st || (c->p < c->end && *c->p != ' ' && *c->p != '\t' && *c->p != '\r' && *c->p != '#'))
		return perr(c, "expected a decimal number");
	*out = (uint32_t)v;
	return 0;
}

/* End of a bare word (attributes, a time): a blank or '#'. */
static const char *word_end(struct pctx *c)
{
	const char *e = c->p;

	while (e < c->end && *e != ' ' && *e != '\t' && *e != '\r' && *e != '#')
		e++;
	return e;
}

/* A chattr set: '-' (none) or distinct letters of "rhsa" in any order. */
static int parse_attrs(struct pctx *c, uint32_t *out)
{
	static const char letters[] = "rhsa";
	static const uint8_t bits[] = { 0x01, 0x02, 0x04, 0x20 };
	const char *e = word_end(c);
	uint32_t v = 0;

	if (e - c->p == 1 && *c->p == '-') {
		c->p = e;
		*out = 0;
		return 0;
	}
	if (e == c->p)
		goto bad;
	for (const char *q = c->p; q < e; q++) {
		const char *l = memchr(letters, *q, 4);
		if (!l || (v & bits[l - letters]))
			goto bad;
		v |= bits[l - letters];
	}
	c->p = e;
	*out = v;
	return 0;
bad:
	return perr(c, "expected attributes: distinct letters of 'rhsa', or '-' for none");
}

/* A touch time: decimal seconds, then optionally '.' and 1-9 digits. */
static int parse_time(struct pctx *c, struct vfat_time *t)
{
	const char *e = word_end(c), *q = c->p;
	uint64_t sec = 0;
	uint32_t ns = 0;
	int nd = 0;

	if (q == e || *q < '0' || *q > '9')
		return perr(c, "expected a time (seconds[.fraction])");
	for (; q < e && *q >= '0' && *q <= '9'; q++) {
		if (sec > (VFAT_OP_MAX_SEC - (uint64_t)(*q - '0')) / 10)
			return perr(c, "time out of range");
		sec = sec * 10 + (uint64_t)(*q - '0');
	}
	if (q < e && *q == '.') {
		for (q++; q < e && *q >= '0' && *q <= '9' && nd < 9; q++, nd++)
			ns = ns * 10 + (uint32_t)(*q - '0');
		if (!nd)
			return perr(c, "expected a time (seconds[.fraction])");
		for (int i = nd; i < 9; i++)
			ns *= 10;
	}
	if (q != e)
		return perr(c, "expected a time (seconds[.fraction])");
	c->p = e;
	t->sec = (int64_t)sec;
	t->nsec = ns;
	return 0;
}

/* Argument kinds: s path, n number, a attributes, t time, l label text. */
static const struct { const char *name; enum vfat_opkind kind; const char *args; } optab[] = {
	{ "mkdir", OP_MKDIR, "s" }, { "create", OP_CREATE, "snn" },
	{ "write", OP_WRITE, "snnn" }, { "rename", OP_RENAME, "ss" },
	{ "unlink", OP_UNLINK, "s" }, { "rmdir", OP_RMDIR, "s" },
	{ "truncate", OP_TRUNCATE, "sn" }, { "chattr", OP_CHATTR, "sa" },
	{ "touch", OP_TOUCH, "stt" }, { "label", OP_LABEL, "l" },
};

const char *vfat_op_name(enum vfat_opkind k) { return optab[k].name; }

static int parse_line(struct pctx *c, struct vfat_op *op)
{
	const char *w = c->p;
	size_t wl, i;
	int r, ns = 0, nn = 0, nt = 0;

	while (c->p < c->end && *c->p != ' ' && *c->p != '\t' && *c->p != '\r')
		c->p++;
	wl = (size_t)(c->p - w);
	for (i = 0; i < sizeof(optab) / sizeof(optab[0]); i++)
		if (strlen(optab[i].name) == wl && !memcmp(optab[i].name, w, wl))
			break;
	if (i == sizeof(optab) / sizeof(optab[0]))
		return perr(c, "unknown operation");
	memset(op, 0, sizeof(*op));
	op->kind = optab[i].kind;
	op->line = c->line;
	for (const char *a = optab[i].args; *a; a++) {
		skip_ws(c);
		if (c->p >= c->end || *c->p == '#')
			return perr(c, "missing argument");
		if (*a == 's' || *a == 'l')
			r = parse_string(c, ns++ ? &op->b : &op->a, *a == 's');
		else if (*a == 'a')
			r = parse_attrs(c, &op->n[nn++]);
		else if (*a == 't')
			r = parse_time(c, &op->t[nt++]);
		else
			r = parse_number(c, &op->n[nn++]);
		if (r)
			return r;
	}
	skip_ws(c);
	if (c->p < c->end && *c->p != '#')
		return perr(c, "unexpected text after the arguments");
	if (op->kind == OP_CREATE && op->n[0] > VFAT_OP_MAX_SIZE)
		return perr(c, "create size too large");
	if (op->kind == OP_TRUNCATE && op->n[0] > VFAT_OP_MAX_SIZE)
		return perr(c, "truncate size too large");
	if (op->kind == OP_WRITE &&
	    (op->n[1] > VFAT_OP_MAX_SIZE || (uint64_t)op->n[0] + op->n[1] > 0xFFFFFFFFull))
		return perr(c, "write range too large");
	return 0;
}

static void free_op(struct vfat_op *op)
{
	free(op->a);
	free(op->b);
	op->a = op->b = NULL;
}

int vfat_script_add(struct vfat_script *s, const struct vfat_op *op)
{
	struct vfat_op cp = *op;

	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 16;
		struct vfat_op *no = realloc(s->ops, nc * sizeof(*no));
		if (!no)
			return -ENOMEM;
		s->ops = no;
		s->cap = nc;
	}
	cp.a = op->a ? strdup(op->a) : NULL;
	cp.b = op->b ? strdup(op->b) : NULL;
	if ((op->a && !cp.a) || (op->b && !cp.b)) {
		free_op(&cp);
		return -ENOMEM;
	}
	s->ops[s->n++] = cp;
	return 0;
}

int vfat_script_parse(const char *text, size_t len, struct vfat_script *s,
		      char *err, size_t errlen)
{
	struct pctx c = { text, text + len, 0, err, errlen };

	memset(s, 0, sizeof(*s));
	while (c.p < c.end || c.line == 0) {
		const char *nl = memchr(c.p, '\n', (size_t)(c.end - c.p));
		const char *lend = nl ? nl : c.end;
		struct pctx lc = { c.p, lend, ++c.line, err, errlen };
		struct vfat_op op;
		int r;

		skip_ws(&lc);
		if (lc.p < lc.end && *lc.p != '#') {
			r = parse_line(&lc, &op);
			if (r == 0) {
				r = vfat_script_add(s, &op);
			}
			free_op(&op);
			if (r) {
				vfat_script_free(s);
				return r;
			}
		}
		if (!nl)
			break;
		c.p = nl + 1;
	}
	return 0;
}

void vfat_script_free(struct vfat_script *s)
{
	for (size_t i = 0; i < s->n; i++)
		free_op(&s->ops[i]);
	free(s->ops);
	memset(s, 0, sizeof(*s));
}

/* U+0085, U+2028 and U+2029 (UTF-8 C2 85, E2 80 A8, E2 80 A9) end a line
 * for some readers of a script (Python's str.splitlines(), editors), so
 * they are written as escapes like the control characters. Returns the
 * code point and its UTF-8 length in *len, or 0. */
static unsigned separator_at(const unsigned char *s, size_t *len)
{
	if (s[0] == 0xC2 && s[1] == 0x85) {
		*len = 2;
		return 0x85;
	}
	if (s[0] == 0xE2 && s[1] == 0x80 && (s[2] == 0xA8 || s[2] == 0xA9)) {
		*len = 3;
		return s[2] == 0xA8 ? 0x2028 : 0x2029;
	}
	return 0;
}

static size_t json_str(const char *s, char *out, size_t max)
{
	size_t n = 0, len;
	unsigned cp;

	if (n + 1 < max) out[n++] = '"';
	for (; *s && n + 8 < max; s++) {
		unsigned char ch = (unsigned char)*s;
		if ((cp = separator_at((const unsigned char *)s, &len)) != 0) {
			n += (size_t)snprintf(out + n, max - n, "\\u%04x", cp);
			s += len - 1;
		} else if (ch == '"' || ch == '\\') {
			out[n++] = '\\';
			out[n++] = (char)ch;
		} else if (ch < 0x20) {
			n += (size_t)snprintf(out + n, max - n, "\\u%04x", ch);
		} else {
			out[n++] = (char)ch;
		}
	}
	if (n + 1 < max) out[n++] = '"';
	out[n < max ? n : max - 1] = 0;
	return n;
}

/* A touch time as parse_time reads it: the fraction without trailing
 * zeros, none when 0. */
static size_t fmt_time(const struct vfat_time *t, char *out, size_t max)
{
	char frac[16];
	int l;

	if (!t->nsec)
		return (size_t)snprintf(out, max, " %lld", (long long)t->sec);
	l = snprintf(frac, sizeof(frac), "%09u", t->nsec);
	while (l > 1 && frac[l - 1] == '0')
		frac[--l] = 0;
	return (size_t)snprintf(out, max, " %lld.%s", (long long)t->sec, frac);
}

static size_t fmt_attrs(uint32_t a, char *out, size_t max)
{
	char s[8];
	int n = 0;

	if (a & 0x01) s[n++] = 'r';
	if (a & 0x02) s[n++] = 'h';
	if (a & 0x04) s[n++] = 's';
	if (a & 0x20) s[n++] = 'a';
	if (!n) s[n++] = '-';
	s[n] = 0;
	return (size_t)snprintf(out, max, " %s", s);
}

int vfat_op_format(const struct vfat_op *op, char *out, size_t max)
{
	size_t n = (size_t)snprintf(out, max, "%s ", vfat_op_name(op->kind));

	if (n >= max)
		return -ENAMETOOLONG;
	n += json_str(op->a, out + n, max - n);
	if (n >= max)
		return -ENAMETOOLONG;
	switch (op->kind) {
	case OP_TRUNCATE:
		n += (size_t)snprintf(out + n, max - n, " %u", op->n[0]);
		break;
	case OP_CHATTR:
		n += fmt_attrs(op->n[0], out + n, max - n);
		break;
	case OP_TOUCH:
		n += fmt_time(&op->t[0], out + n, max - n);
		if (n < max)
			n += fmt_time(&op->t[1], out + n, max - n);
		break;
	case OP_RENAME:
		if (n + 2 < max) { out[n++] = ' '; n += json_str(op->b, out + n, max - n); }
		break;
	case OP_CREATE:
		n += (size_t)snprintf(out + n, max - n, " %u %u", op->n[0], op->n[1]);
		break;
	case OP_WRITE:
		n += (size_t)snprintf(out + n, max - n, " %u %u %u", op->n[0], op->n[1], op->n[2]);
		break;
	default:
		break;
	}
	return n < max ? 0 : -ENAMETOOLONG;
}
