/* check.c - structural checker of a FAT image (vfat check).
 *
 * An independent reading of the image: it uses only the boot sector
 * parser (boot.c), the FAT entry accessors (fatent.c) and the pure name
 * functions (names.c), never the writer's directory code, so that a bug
 * in dir.c/namei.c cannot hide itself.
 *
 * Hostile input is the normal case here. Every cluster number is range
 * checked before it is used, every cluster is owned by at most one object
 * (the owner table doubles as the loop detector and the visited set of
 * directories), directories are walked with an explicit stack, and each
 * cluster is read at most once, so time and memory are linear in the
 * image size. Findings come out in walk order (depth first, entries in
 * on-disk order), one line each: "KIND: /path: detail".
 *
 * Kinds (stable; tests and scripts match on them):
 *   fat-media fat-eoc dirty boot-backup fat-copies fsinfo root-cluster
 *   cluster-range chain-loop cross-link chain-free chain-bad
 *   chain-long chain-short first-cluster-zero lost-clusters
 *   lfn-order lfn-checksum lfn-padding lfn-orphan lfn-toolong lfn-cluster
 *   longname-invalid longname-dup longname-shortname
 *   shortname-invalid shortname-dup
 *   dummy-malformed dummy-nolfn dummy-collision
 *   dot-missing dot-misplaced dot-target
 *   attr dir-size dir-too-large volume-label after-end
 * An unusable image (boot sector rejected) gets one line
 * "unusable: /: reason" and a negative return. Past MAX_LINES findings
 * the rest are only counted, and a last line "truncated: /: N further
 * findings not listed" says so (the return value counts them all).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fat.h"
#include "names.h"

#define ROOT_OBJ 1u
#define MAX_ORD 63                 /* ordinal field is 6 bits */
#define UBUF_UNITS (MAX_ORD * VFAT_LFN_CHARS)
#define PATH_DEPTH 64              /* components shown in a finding */
#define PATH_LEN 8192
#define NAME_LEN (UBUF_UNITS * 3 * 4 + 64)
#define MAX_DIR_ENTRIES 65536      /* kernel FAT_MAX_DIR_SIZE / 32 */
#define MAX_LINES 100000           /* findings passed to report; all are counted */

/* One named thing in the tree: the root, a directory or a file. */
struct obj {
	uint32_t parent;
	uint32_t first;      /* first cluster (0: none / fixed root) */
	uint32_t nclaimed;   /* clusters of its chain it owns */
	uint32_t name_len;
	size_t name_off;     /* escaped UTF-8 in ck.names */
};

#define D_LFN 1u
#define D_DUMMY 2u

/* One live short entry of the directory being walked. */
struct dent {
	uint8_t sn[11];
	uint8_t flags;
	uint32_t obj;
	size_t slot;         /* index of the short entry in the directory */
	size_t lfn_off;      /* long name units in ck.units (folded later) */
	size_t lfn_len;
	size_t sdisp_off;    /* short display name units */
	size_t sdisp_len;
};

struct skey {
	uint8_t sn[11];
	uint32_t di;
};

struct lkey {
	const uint16_t *u;
	size_t len;
	int tag;             /* 0 = long name, 1 = short name */
	uint32_t di;
};

struct ck {
	const uint8_t *buf;
	size_t size;
	struct fat_geom g;
	const struct fatent_ops *ops;
	const uint8_t *fat;
	uint32_t maxc;       /* highest valid cluster number */
	uint32_t eoc_min;
	uint32_t epc;        /* directory entries per cluster */

	uint32_t *owner;     /* [maxc + 1]: object owning each cluster */
	uint32_t *claims;    /* the clusters given an owner, to clear next time */
	size_t nclaims, capclaims;
	struct obj *objs;
	size_t nobj, capobj;
	char *names;
	size_t nnames, capnames;

	/* per directory */
	struct dent *dents;
	size_t ndents, capdents;
	uint16_t *units;
	size_t nunits, capunits;
	uint32_t *clist;
	size_t capclist;
	struct skey *skeys;
	size_t capskeys;
	struct lkey *lkeys;
	size_t caplkeys;

	uint32_t *stack;
	size_t nstack, capstack;
	uint32_t *kids;
	size_t nkids, capkids;

	vfat_report_fn report;
	void *rctx;
	long nfind;

	uint16_t ubuf[UBUF_UNITS];
	char path[PATH_LEN];
	char path2[PATH_LEN];
	char detail[PATH_LEN];
	char line[3 * PATH_LEN];
	char nbuf[NAME_LEN];
	char ebuf[NAME_LEN];
};

/* ---- small helpers ---------------------------------------------------- */

static int grow(void **p, size_t *cap, size_t need, size_t elsz)
{
	size_t ncap;
	void *np;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > ((size_t)-1) / 2 / elsz)
			return -ENOMEM;
		ncap *= 2;
	}
	np = realloc(*p, ncap * elsz);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

static uint32_t fatget(const struct ck *k, uint32_t c)
{
	return k->ops->get(k->fat, c) & k->ops->mask;
}

static const uint8_t *clus_data(const struct ck *k, uint32_t c)
{
	return k->buf + k->g.data_off + (uint64_t)(c - 2) * k->g.cluster_size;
}

static uint32_t de_first(const struct ck *k, const uint8_t *de)
{
	uint32_t c = get16(de + 26);

	if (k->g.fat_type == 32)
		c |= (uint32_t)get16(de + 20) << 16;
	return c;
}

static void hex11(const uint8_t sn[11], char out[23])
{
	static const char hx[] = "0123456789abcdef";

	for (int i = 0; i < 11; i++) {
		out[2 * i] = hx[sn[i] >> 4];
		out[2 * i + 1] = hx[sn[i] & 15];
	}
	out[22] = 0;
}

/* Escape n bytes of UTF-8 for a one-line path component: control bytes,
 * DEL, '/' and '\\' become \xNN. */
static size_t escape(const char *in, size_t n, char *out, size_t max)
{
	static const char hx[] = "0123456789abcdef";
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char b = (unsigned char)in[i];
		if (b < 0x20 || b == 0x7F || b == '/' || b == '\\') {
			if (o + 4 >= max)
				break;
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hx[b >> 4];
			out[o++] = hx[b & 15];
		} else {
			if (o + 1 >= max)
				break;
			out[o++] = (char)b;
		}
	}
	out[o] = 0;
	return o;
}

/* UTF-16 name -> escaped UTF-8 in k->ebuf; returns its length. */
static size_t units_to_name(struct ck *k, const uint16_t *u, size_t n)
{
	int r = vfat_utf16_to_utf8(u, n, k->nbuf, sizeof(k->nbuf));

	if (r < 0)
		r = 0;
	return escape(k->nbuf, (size_t)r, k->ebuf, sizeof(k->ebuf));
}

/* Short entry -> its display name (escaped) in k->ebuf. */
static size_t short_to_name(struct ck *k, const uint8_t *sn, uint8_t nt)
{
	uint16_t u[16];
	int n = vfat_shortname_to_utf16(sn, nt, u);
	size_t len = 0;

	if (n > 0 && n <= 12)
		len = units_to_name(k, u, (size_t)n);
	if (len == 0) {           /* nothing printable: show the raw bytes */
		char hx[23];
		hex11(sn, hx);
		len = (size_t)snprintf(k->ebuf, sizeof(k->ebuf), "<%s>", hx);
	}
	return len;
}

static int add_obj(struct ck *k, uint32_t parent, uint32_t first,
		   const char *name, size_t nlen, uint32_t *id)
{
	if (k->nobj >= UINT32_MAX - 1)
		return -ENOMEM;
	if (grow((void **)&k->objs, &k->capobj, k->nobj + 1, sizeof(*k->objs)) ||
	    grow((void **)&k->names, &k->capnames, k->nnames + nlen + 1, 1))
		return -ENOMEM;
	struct obj *o = &k->objs[k->nobj];
	o->parent = parent;
	o->first = first;
	o->nclaimed = 0;
	o->name_off = k->nnames;
	o->name_len = (uint32_t)nlen;
	memcpy(k->names + k->nnames, name, nlen);
	k->nnames += nlen;
	k->names[k->nnames++] = 0;
	*id = (uint32_t)k->nobj++;
	return 0;
}

/* Path of object id (plus an optional extra component) into out. Deep
 * trees show their last PATH_DEPTH components after "/...". */
static void render_path(const struct ck *k, uint32_t id, const char *extra,
			char *out, size_t max)
{
	uint32_t comp[PATH_DEPTH];
	int n = 0, cut = 0;
	size_t o = 0;

	while (id != ROOT_OBJ && id != 0 && id < k->nobj) {
		if (n == PATH_DEPTH) {
			cut = 1;
			break;
		}
		comp[n++] = id;
		id = k->objs[id].parent;
	}
	out[0] = 0;
	if (cut)
		o += (size_t)snprintf(out + o, max - o, "/...");
	for (int i = n - 1; i >= 0 && o < max; i--) {
		const struct obj *ob = &k->objs[comp[i]];
		o += (size_t)snprintf(out + o, max - o, "/%s", k->names + ob->name_off);
	}
	if (extra && o < max)
		o += (size_t)snprintf(out + o, max - o, "/%s", extra);
	if (o == 0)
		snprintf(out, max, "/");
}

#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
static void finding(struct ck *k, const char *kind, uint32_t id,
		    const char *extra, const char *fmt, ...)
{
	va_list ap;

	k->nfind++;
	if (!k->report || k->nfind > MAX_LINES)
		return;
	render_path(k, id, extra, k->path, sizeof(k->path));
	va_start(ap, fmt);
	vsnprintf(k->detail, sizeof(k->detail), fmt, ap);
	va_end(ap);
	snprintf(k->line, sizeof(k->line), "%s: %s: %s", kind, k->path, k->detail);
	k->report(k->rctx, k->line);
}

/* ---- volume-level checks ---------------------------------------------- */

static void check_fat_head(struct ck *k)
{
	uint8_t media = k->buf[21];
	uint32_t mask = k->ops->mask;
	uint32_t f0 = fatget(k, 0), f1 = fatget(k, 1);
	uint32_t want0 = (mask & ~0xFFu) | media;
	uint32_t flags = k->g.fat_type == 16 ? 0xC000u :
			 k->g.fat_type == 32 ? 0x0C000000u : 0;
	uint32_t clean_bit = flags & ~(flags >> 1);  /* 0x8000 / 0x08000000 */

	if (media != 0xF0 && media < 0xF8)
		finding(k, "fat-media", ROOT_OBJ, NULL,
			"media byte 0x%02x in the boot sector is invalid", media);
	if (f0 != want0)
		finding(k, "fat-media", ROOT_OBJ, NULL,
			"FAT[0] is 0x%x, expected 0x%x for media 0x%02x",
			f0, want0, media);
	if ((f1 | flags) < k->eoc_min)
		finding(k, "fat-eoc", ROOT_OBJ, NULL,
			"FAT[1] is 0x%x, not an end-of-chain mark", f1);
	/* the clean-shutdown bit of FAT[1] (FAT16/32) and bit 0 of the boot
	 * sector's state byte, which Linux sets while mounted */
	else if (clean_bit && !(f1 & clean_bit))
		finding(k, "dirty", ROOT_OBJ, NULL,
			"FAT[1] is 0x%x: clean-shutdown bit clear", f1);
	if (k->buf[k->g.fat_type == 32 ? 65 : 37] & 1)
		finding(k, "dirty", ROOT_OBJ, NULL,
			"boot sector state byte 0x%02x has the dirty bit",
			k->buf[k->g.fat_type == 32 ? 65 : 37]);
}

/* FAT32: the backup boot sector (as fsck.fat, the first 512 bytes). */
static void check_boot_backup(struct ck *k)
{
	uint32_t bk = get16(k->buf + 50), ndiff = 0, first = 0;
	const uint8_t *b;

	if (k->g.fat_type != 32 || bk == 0 || bk == 0xFFFF)
		return;
	if (bk >= k->g.reserved) {
		finding(k, "boot-backup", ROOT_OBJ, NULL,
			"backup boot sector %u outside the %u reserved sectors",
			bk, k->g.reserved);
		return;
	}
	b = k->buf + (uint64_t)bk * k->g.sector_size;
	for (uint32_t i = 0; i < 512; i++) {
		if (b[i] != k->buf[i]) {
			if (!ndiff)
				first = i;
			ndiff++;
		}
	}
	if (ndiff)
		finding(k, "boot-backup", ROOT_OBJ, NULL,
			"backup boot sector %u differs in %u bytes (first at offset %u)",
			bk, ndiff, first);
}

static void check_fat_copies(struct ck *k)
{
	for (uint32_t i = 1; i < k->g.nfats; i++) {
		const uint8_t *other = k->fat + (uint64_t)i * k->g.fat_bytes;
		uint32_t ndiff = 0, firstdiff = 0;

		if (memcmp(k->fat, other, (size_t)k->g.fat_bytes) == 0)
			continue;
		for (uint32_t c = 0; c <= k->maxc; c++) {
			if ((k->ops->get(k->fat, c) & k->ops->mask) !=
			    (k->ops->get(other, c) & k->ops->mask)) {
				if (!ndiff)
					firstdiff = c;
				ndiff++;
			}
		}
		if (ndiff)
			finding(k, "fat-copies", ROOT_OBJ, NULL,
				"FAT %u differs from FAT 1 in %u entries (first: cluster %u)",
				i + 1, ndiff, firstdiff);
	}
}

static void check_fsinfo(struct ck *k, uint32_t nfree)
{
	uint32_t raw = get16(k->buf + 48);
	const uint8_t *fi;
	uint32_t cnt, hint;

	if (k->g.fat_type != 32)
		return;
	if (raw == 0 || raw == 0xFFFF) {
		finding(k, "fsinfo", ROOT_OBJ, NULL, "no FSInfo sector");
		return;
	}
	if (raw >= k->g.reserved || !k->g.fsinfo_sector) {
		finding(k, "fsinfo", ROOT_OBJ, NULL,
			"FSInfo sector %u outside the %u reserved sectors",
			raw, k->g.reserved);
		return;
	}
	if ((uint64_t)(raw + 1) * k->g.sector_size > k->size)
		return;  /* cannot happen: reserved sectors lie in the image */
	fi = k->buf + (uint64_t)raw * k->g.sector_size;
	if (get32(fi) != 0x41615252 || get32(fi + 484) != 0x61417272 ||
	    get32(fi + 508) != 0xAA550000) {
		finding(k, "fsinfo", ROOT_OBJ, NULL,
			"bad FSInfo signatures 0x%08x 0x%08x 0x%08x",
			get32(fi), get32(fi + 484), get32(fi + 508));
		return;
	}
	cnt = get32(fi + 488);
	hint = get32(fi + 492);
	if (cnt != 0xFFFFFFFFu && cnt != nfree)
		finding(k, "fsinfo", ROOT_OBJ, NULL,
			"free cluster count %u, really %u", cnt, nfree);
	if (hint != 0xFFFFFFFFu && (hint < 2 || hint > k->maxc))
		finding(k, "fsinfo", ROOT_OBJ, NULL,
			"next-free hint %u outside 2..%u", hint, k->maxc);
}

/* ---- chains ------------------------------------------------------------ */

/* Claim the chain of object id for it. Returns 1 when the chain ended
 * cleanly with an end-of-chain mark, 0 when it was cut by an error
 * (already reported). */
static int claim_chain(struct ck *k, uint32_t id, int is_root)
{
	struct obj *o = &k->objs[id];
	uint32_t c = o->first, n = 0, v;
	int ok = 0;

	if (c < 2 || c > k->maxc) {
		finding(k, is_root ? "root-cluster" : "cluster-range", id, NULL,
			"first cluster %u outside 2..%u", c, k->maxc);
		o->nclaimed = 0;
		return 0;
	}
	for (;;) {
		if (k->owner[c] == id) {
			finding(k, "chain-loop", id, NULL,
				"chain loops back to cluster %u after %u clusters", c, n);
			break;
		}
		if (k->owner[c] != 0) {
			render_path(k, k->owner[c], NULL, k->path2, sizeof(k->path2));
			finding(k, "cross-link", id, NULL,
				"cluster %u (chain position %u) is also used by %s",
				c, n, k->path2);
			break;
		}
		k->owner[c] = id;      /* once per cluster: claims has room */
		k->claims[k->nclaims++] = c;
		n++;
		v = fatget(k, c);
		if (v >= k->eoc_min) {
			ok = 1;
			break;
		}
		if (v == 0) {
			finding(k, is_root && n == 1 ? "root-cluster" : "chain-free",
				id, NULL, "cluster %u in the chain is marked free", c);
			break;
		}
		if (v == k->ops->bad) {
			finding(k, is_root && n == 1 ? "root-cluster" : "chain-bad",
				id, NULL, "cluster %u in the chain is marked bad", c);
			break;
		}
		if (v < 2 || v > k->maxc) {
			finding(k, "cluster-range", id, NULL,
				"cluster %u points to 0x%x, outside 2..%u", c, v, k->maxc);
			break;
		}
		c = v;
	}
	/* re-read safely: claimed clusters are c0..c(n-1) along the FAT */
	k->objs[id].nclaimed = n;
	return ok;
}

static void check_file_chain(struct ck *k, uint32_t id, uint32_t size)
{
	uint64_t need = ((uint64_t)size + k->g.cluster_size - 1) / k->g.cluster_size;
	uint32_t n;

	if (!claim_chain(k, id, 0))
		return;
	n = k->objs[id].nclaimed;
	if (n > need)
		finding(k, "chain-long", id, NULL,
			"%u clusters for %u bytes (needs %llu)", n, size,
			(unsigned long long)need);
	else if (n < need)
		finding(k, "chain-short", id, NULL,
			"size %u bytes exceeds its %u clusters (%llu bytes)", size, n,
			(unsigned long long)n * k->g.cluster_size);
}

/* ---- directories ------------------------------------------------------- */

/* fsck.fat's rule (vfat_shortname_valid), except that 0x7F is accepted:
 * the Microsoft specification allows it and Linux writes it in aliases
 * ("a<DEL>" -> "A<DEL>"); fsck.fat 4.2 alone rejects it, which the
 * dosfsck oracle reports, not this checker. */
static int short_valid(const uint8_t *sn)
{
	uint8_t w[11];

	memcpy(w, sn, 11);
	for (int i = 0; i < 11; i++)
		if (w[i] == 0x7F)
			w[i] = 'A';
	return vfat_shortname_valid(w);
}

static const uint8_t dot_name[11] = { '.', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ' };
static const uint8_t dotdot_name[11] = { '.', '.', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ' };

static void slot_units(const uint8_t *de, uint16_t *u)
{
	static const uint8_t off[13] = { 1, 3, 5, 7, 9, 14, 16, 18, 20, 22, 24, 28, 30 };

	for (int i = 0; i < 13; i++)
		u[i] = get16(de + off[i]);
}

static int lfn_char_invalid(uint16_t c)
{
	return c < 0x20 || c == '*' || c == '?' || c == '<' || c == '>' ||
	       c == '|' || c == '"' || c == ':' || c == '/' || c == '\\';
}

static uint16_t fold(uint16_t c)
{
	return (c >= 'a' && c <= 'z') ? (uint16_t)(c - 32) : c;
}

static int skey_cmp(const void *a, const void *b)
{
	const struct skey *x = a, *y = b;
	int r = memcmp(x->sn, y->sn, 11);

	if (r)
		return r;
	return x->di < y->di ? -1 : x->di > y->di;
}

/* Equality as the kernel's lookup sees it (A-Z folding only); the sort
 * order above folds the same way, so equal names are adjacent. */
static int lkey_eq(const struct lkey *x, const struct lkey *y)
{
	return vfat_name_eq(x->u, x->len, y->u, y->len);
}

static int lkey_cmp(const void *a, const void *b)
{
	const struct lkey *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;

	for (size_t i = 0; i < n; i++) {
		uint16_t p = fold(x->u[i]), q = fold(y->u[i]);
		if (p != q)
			return p < q ? -1 : 1;
	}
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	if (x->tag != y->tag)
		return x->tag < y->tag ? -1 : 1;
	return x->di < y->di ? -1 : x->di > y->di;
}

static int check_unique(struct ck *k, uint32_t dir)
{
	size_t nd = k->ndents, nl = 0;

	if (nd < 2)
		return 0;
	/* short entries, bytewise as fsck.fat compares them */
	if (grow((void **)&k->skeys, &k->capskeys, nd, sizeof(*k->skeys)))
		return -ENOMEM;
	for (size_t i = 0; i < nd; i++) {
		memcpy(k->skeys[i].sn, k->dents[i].sn, 11);
		k->skeys[i].di = (uint32_t)i;
	}
	qsort(k->skeys, nd, sizeof(*k->skeys), skey_cmp);
	for (size_t i = 0, g = 0; i < nd; i++) {
		if (i > 0 && memcmp(k->skeys[i].sn, k->skeys[g].sn, 11) == 0) {
			const struct dent *a = &k->dents[k->skeys[g].di];
			const struct dent *b = &k->dents[k->skeys[i].di];
			char hx[23];
			int dum = (a->flags & D_DUMMY) && (b->flags & D_DUMMY);
			hex11(b->sn, hx);
			render_path(k, a->obj, NULL, k->path2, sizeof(k->path2));
			finding(k, dum ? "dummy-collision" : "shortname-dup", b->obj, NULL,
				"short entry %s (slot %zu) also used by %s (slot %zu)",
				hx, b->slot, k->path2, a->slot);
		} else {
			g = i;
		}
	}

	/* long names case-insensitively, and long vs other short names */
	if (grow((void **)&k->lkeys, &k->caplkeys, 2 * nd, sizeof(*k->lkeys)))
		return -ENOMEM;
	for (size_t i = 0; i < nd; i++) {
		const struct dent *d = &k->dents[i];
		if (d->flags & D_LFN)
			k->lkeys[nl++] = (struct lkey){ k->units + d->lfn_off, d->lfn_len, 0, (uint32_t)i };
		if (!(d->flags & D_DUMMY) && d->sdisp_len)
			k->lkeys[nl++] = (struct lkey){ k->units + d->sdisp_off, d->sdisp_len, 1, (uint32_t)i };
	}
	qsort(k->lkeys, nl, sizeof(*k->lkeys), lkey_cmp);
	for (size_t g = 0; g < nl;) {
		size_t e = g + 1, s1 = nl, s2 = nl;
		while (e < nl && lkey_eq(&k->lkeys[g], &k->lkeys[e]))
			e++;
		/* long keys sort before short keys inside a group */
		for (size_t i = g; i < e; i++) {
			if (k->lkeys[i].tag == 1) {
				if (s1 == nl)
					s1 = i;
				else if (s2 == nl)
					s2 = i;
			}
		}
		for (size_t i = g; i < e && k->lkeys[i].tag == 0; i++) {
			const struct dent *b = &k->dents[k->lkeys[i].di];
			if (i > g) {
				const struct dent *a = &k->dents[k->lkeys[g].di];
				render_path(k, a->obj, NULL, k->path2, sizeof(k->path2));
				finding(k, "longname-dup", b->obj, NULL,
					"long name (slot %zu) equals that of %s (slot %zu)",
					b->slot, k->path2, a->slot);
			}
			size_t s = s1;
			if (s < nl && k->lkeys[s].di == k->lkeys[i].di)
				s = s2;
			if (s < nl) {
				const struct dent *a = &k->dents[k->lkeys[s].di];
				char hx[23];
				hex11(a->sn, hx);
				finding(k, "longname-shortname", b->obj, NULL,
					"long name (slot %zu) equals the short name %s of slot %zu",
					b->slot, hx, a->slot);
			}
		}
		g = e;
	}
	return 0;
}

static int push_units(struct ck *k, const uint16_t *u, size_t n, size_t *off)
{
	if (grow((void **)&k->units, &k->capunits, k->nunits + n + 1, sizeof(*k->units)))
		return -ENOMEM;
	*off = k->nunits;
	memcpy(k->units + k->nunits, u, n * sizeof(*u));
	k->nunits += n;
	return 0;
}

enum lfn_state { LFN_NONE, LFN_OPEN, LFN_BROKEN };

struct lfn_set {
	enum lfn_state st;
	int nslots;          /* ordinal of the first slot */
	int expect;          /* next ordinal wanted */
	uint8_t csum;
	size_t start;        /* slot index of the first slot */
};

static void lfn_interrupt(struct ck *k, uint32_t dir, struct lfn_set *s,
			  size_t at, const char *why)
{
	if (s->st == LFN_OPEN)
		finding(k, "lfn-orphan", dir, NULL,
			"long name slots at %zu..%zu %s", s->start, at - 1, why);
	s->st = LFN_NONE;
}

static void lfn_slot(struct ck *k, uint32_t dir, struct lfn_set *s,
		     const uint8_t *de, size_t i)
{
	uint8_t b0 = de[0];
	int ord = b0 & 0x3F;

	if (get16(de + 26) != 0)
		finding(k, "lfn-cluster", dir, NULL,
			"long name slot %zu has cluster field 0x%04x", i, get16(de + 26));
	if (b0 & 0x80) {
		if (s->st == LFN_OPEN)
			lfn_interrupt(k, dir, s, i, "interrupted by a bad slot");
		finding(k, "lfn-order", dir, NULL,
			"long name slot %zu has ordinal byte 0x%02x", i, b0);
		s->st = LFN_BROKEN;
		return;
	}
	if (b0 & 0x40) {
		if (s->st == LFN_OPEN)
			lfn_interrupt(k, dir, s, i, "interrupted by a new set");
		if (ord == 0) {
			finding(k, "lfn-order", dir, NULL,
				"long name slot %zu is a first slot with ordinal 0", i);
			s->st = LFN_BROKEN;
			return;
		}
		s->st = LFN_OPEN;
		s->nslots = ord;
		s->expect = ord - 1;
		s->csum = de[13];
		s->start = i;
		slot_units(de, k->ubuf + (size_t)(ord - 1) * 13);
		return;
	}
	if (s->st == LFN_BROKEN)
		return;
	if (s->st == LFN_NONE) {
		finding(k, "lfn-order", dir, NULL,
			"long name slot %zu (ordinal %d) without a first slot (0x40)", i, ord);
		s->st = LFN_BROKEN;
		return;
	}
	if (s->expect == 0) {
		finding(k, "lfn-order", dir, NULL,
			"long name slot %zu (ordinal %d) follows the set's last slot", i, ord);
		s->st = LFN_BROKEN;
		return;
	}
	if (ord != s->expect) {
		finding(k, "lfn-order", dir, NULL,
			"long name slot %zu has ordinal %d, expected %d", i, ord, s->expect);
		s->st = LFN_BROKEN;
		return;
	}
	if (de[13] != s->csum) {
		finding(k, "lfn-checksum", dir, NULL,
			"long name slot %zu has checksum 0x%02x, its set 0x%02x",
			i, de[13], s->csum);
		s->st = LFN_BROKEN;
		return;
	}
	slot_units(de, k->ubuf + (size_t)(ord - 1) * 13);
	s->expect--;
}

/* Padding, length and characters of a complete set; returns its length
 * in units. */
static size_t lfn_finish(struct ck *k, uint32_t id, const struct lfn_set *s)
{
	size_t total = (size_t)s->nslots * 13, len = total;
	int badpad = 0, badchar = 0;

	for (size_t i = 0; i < total; i++) {
		if (k->ubuf[i] == 0) {
			len = i;
			break;
		}
	}
	if (len == total) {
		/* no terminator: then there must be no padding either */
		for (size_t i = 0; i < total; i++) {
			if (k->ubuf[i] == 0xFFFF) {
				finding(k, "lfn-padding", id, NULL,
					"padding 0xFFFF at unit %zu without a 0x0000 terminator", i);
				break;
			}
		}
	}
	for (size_t i = len + 1; i < total; i++)
		if (k->ubuf[i] != 0xFFFF)
			badpad = 1;
	for (size_t i = 0; i < len; i++)
		if (lfn_char_invalid(k->ubuf[i]))
			badchar = 1;
	if (len == 0)
		finding(k, "lfn-padding", id, NULL, "empty long name");
	else if (len <= total - 13)
		finding(k, "lfn-padding", id, NULL,
			"%d slots for a name of %zu units", s->nslots, len);
	if (badpad)
		finding(k, "lfn-padding", id, NULL,
			"padding after the terminator is not 0xFFFF");
	if (s->nslots > VFAT_MAX_SLOTS || len > VFAT_MAX_UNI)
		finding(k, "lfn-toolong", id, NULL,
			"%d slots, %zu units (at most %d slots, %d units)",
			s->nslots, len, VFAT_MAX_SLOTS, VFAT_MAX_UNI);
	if (badchar)
		finding(k, "longname-invalid", id, NULL,
			"long name holds a character invalid in long names");
	else if (len > 0 && len <= total && k->ubuf[len - 1] == '.')
		finding(k, "longname-invalid", id, NULL,
			"long name ends with '.', which Linux strips before every lookup");
	return len;
}

static int walk_dir(struct ck *k, uint32_t dir)
{
	const uint8_t *base = NULL;
	size_t nslots, labels = 0, end_at = 0;
	int fixed = dir == ROOT_OBJ && k->g.fat_type != 32;
	int is_sub = dir != ROOT_OBJ, saw_end = 0, after_end = 0, zero_tried = 0;
	long dot_at = -1, dotdot_at = -1;
	struct lfn_set s = { LFN_NONE, 0, 0, 0, 0 };
	uint32_t nclus = 0;

	k->ndents = 0;
	k->nunits = 0;
	k->nkids = 0;
	if (fixed) {
		base = k->buf + k->g.root_off;
		nslots = k->g.root_bytes / DIRENT_SIZE;
	} else {
		uint32_t c = k->objs[dir].first;
		nclus = k->objs[dir].nclaimed;
		if (grow((void **)&k->clist, &k->capclist, (size_t)nclus + 1, sizeof(*k->clist)))
			return -ENOMEM;
		for (uint32_t i = 0; i < nclus; i++) {
			k->clist[i] = c;
			if (i + 1 < nclus)
				c = fatget(k, c);   /* claimed, so in range */
		}
		nslots = (size_t)nclus * k->epc;
	}
	if (nslots > MAX_DIR_ENTRIES)
		finding(k, "dir-too-large", dir, NULL,
			"%zu entries (the kernel allows %d)", nslots, MAX_DIR_ENTRIES);

	for (size_t i = 0; i < nslots; i++) {
		const uint8_t *de = fixed ? base + i * DIRENT_SIZE :
			clus_data(k, k->clist[i / k->epc]) + (i % k->epc) * DIRENT_SIZE;
		uint8_t b0 = de[0], attr = de[11];

		if (b0 == 0) {
			lfn_interrupt(k, dir, &s, i, "interrupted by a free entry");
			if (!saw_end) {
				saw_end = 1;
				end_at = i;
			}
			/* more free slots change nothing: skip an all-zero rest
			 * of this cluster (or of the fixed root) in one compare */
			if (!zero_tried) {
				size_t end = fixed ? nslots : (i / k->epc + 1) * k->epc;
				if (end > nslots)
					end = nslots;
				if (mem_all_zero(de + DIRENT_SIZE, (end - i - 1) * DIRENT_SIZE))
					i = end - 1;
				else
					zero_tried = 1;
			}
			continue;
		}
		zero_tried = 0;
		if (saw_end && !after_end && b0 != DELETED_FLAG) {
			finding(k, "after-end", dir, NULL,
				"entry %zu follows the end-of-directory mark at %zu", i, end_at);
			after_end = 1;
		}
		if (b0 == DELETED_FLAG) {
			lfn_interrupt(k, dir, &s, i, "interrupted by a deleted entry");
			continue;
		}
		if (attr == ATTR_LFN) {
			lfn_slot(k, dir, &s, de, i);
			continue;
		}
		if (attr & ATTR_VOLUME) {
			lfn_interrupt(k, dir, &s, i, "followed by a volume label");
			s.st = LFN_NONE;
			if (is_sub)
				finding(k, "volume-label", dir, NULL,
					"volume label entry %zu outside the root directory", i);
			else if (labels++)
				finding(k, "volume-label", dir, NULL,
					"second volume label at entry %zu", i);
			if (attr & ATTR_DIR)
				finding(k, "attr", dir, NULL,
					"entry %zu is both a volume label and a directory", i);
			continue;
		}
		if (!memcmp(de, dot_name, 11) || !memcmp(de, dotdot_name, 11)) {
			int two = de[1] == '.';
			uint32_t fc = de_first(k, de), want;
			lfn_interrupt(k, dir, &s, i, "followed by a dot entry");
			s.st = LFN_NONE;
			if (!is_sub) {
				finding(k, "dot-misplaced", dir, NULL,
					"'%s' entry %zu in the root directory", two ? ".." : ".", i);
				continue;
			}
			if ((two ? dotdot_at : dot_at) >= 0 || i != (size_t)two) {
				finding(k, "dot-misplaced", dir, NULL,
					"'%s' at entry %zu, expected only at %d",
					two ? ".." : ".", i, two);
				continue;
			}
			if (two)
				dotdot_at = (long)i;
			else
				dot_at = (long)i;
			if (!(attr & ATTR_DIR))
				finding(k, "attr", dir, NULL, "'%s' is not a directory",
					two ? ".." : ".");
			if (two) {
				uint32_t p = k->objs[dir].parent;
				want = p == ROOT_OBJ ? 0 : k->objs[p].first;
			} else {
				want = k->objs[dir].first;
			}
			if (fc != want)
				finding(k, "dot-target", dir, NULL,
					"'%s' points to cluster %u, expected %u",
					two ? ".." : ".", fc, want);
			continue;
		}

		/* a short entry naming a file or directory */
		const uint8_t *sn = de;
		uint8_t nt = de[12];
		int is_dir = (attr & ATTR_DIR) != 0;
		int has_lfn = 0, had_slots = s.st != LFN_NONE;
		size_t ulen = 0, nlen;
		uint32_t id, fc = de_first(k, de), size = get32(de + 28);
		struct dent d;
		uint8_t want;
		/* names are compared among the first MAX_DIR_ENTRIES only, which
		 * bounds the per-directory tables (a bigger directory is a
		 * finding of its own) */
		int track = i < MAX_DIR_ENTRIES;

		memset(&d, 0, sizeof(d));
		if (s.st == LFN_OPEN) {
			if (s.expect != 0) {
				finding(k, "lfn-order", dir, NULL,
					"long name set at %zu ends at ordinal %d, slots below missing before entry %zu",
					s.start, s.expect + 1, i);
			} else if (s.csum != (want = vfat_lfn_checksum(sn))) {
				size_t l = 0;
				while (l < (size_t)s.nslots * 13 && k->ubuf[l])
					l++;
				units_to_name(k, k->ubuf, l);
				finding(k, "lfn-checksum", dir, k->ebuf,
					"slot checksum 0x%02x != 0x%02x of the short entry %zu",
					s.csum, want, i);
			} else {
				has_lfn = 1;
			}
		}

		if (has_lfn) {
			for (ulen = 0; ulen < (size_t)s.nslots * 13 && k->ubuf[ulen]; ulen++)
				;
			nlen = units_to_name(k, k->ubuf, ulen);
			if (ulen == 0)
				nlen = short_to_name(k, sn, nt);
		} else {
			nlen = short_to_name(k, sn, nt);
		}
		if (add_obj(k, dir, fc, k->ebuf, nlen, &id))
			return -ENOMEM;
		if (has_lfn) {
			lfn_finish(k, id, &s);
			if (track && push_units(k, k->ubuf, ulen, &d.lfn_off))
				return -ENOMEM;
			d.lfn_len = ulen;
			d.flags |= D_LFN;
		}
		s.st = LFN_NONE;

		if (attr & 0xC0)
			finding(k, "attr", id, NULL, "reserved attribute bits 0x%02x set", attr & 0xC0);

		/* short name: valid, a well-formed dummy, or neither */
		if (!short_valid(sn)) {
			char hx[23];
			hex11(sn, hx);
			if (vfat_is_dummy_v1(sn) || vfat_is_dummy_v3(sn, nt, is_dir)) {
				d.flags |= D_DUMMY;
			} else if ((sn[0] == 0x20 && sn[1] == 0x00) || (nt & FAT_NO_83NAME)) {
				d.flags |= D_DUMMY;
				finding(k, "dummy-malformed", id, NULL,
					"short entry %s (NT 0x%02x) is not a well-formed dummy", hx, nt);
			} else {
				finding(k, "shortname-invalid", id, NULL,
					"bad short name %s", hx);
			}
			if ((d.flags & D_DUMMY) && !has_lfn)
				finding(k, "dummy-nolfn", id, NULL,
					"dummy short entry %s without %s", hx,
					had_slots ? "a valid long name" : "long name slots");
		}
		if (track && !(d.flags & D_DUMMY)) {
			uint16_t u[16];
			int n = vfat_shortname_to_utf16(sn, nt, u);
			if (n > 0 && n <= 12) {
				if (push_units(k, u, (size_t)n, &d.sdisp_off))
					return -ENOMEM;
				d.sdisp_len = (size_t)n;
			}
		}

		/* clusters */
		if (is_dir) {
			if (size != 0)
				finding(k, "dir-size", id, NULL, "directory has size %u", size);
			if (fc == 0) {
				finding(k, "first-cluster-zero", id, NULL,
					"directory with first cluster 0");
			} else {
				claim_chain(k, id, 0);
				if (k->objs[id].nclaimed > 0) {
					if (grow((void **)&k->kids, &k->capkids, k->nkids + 1, sizeof(*k->kids)))
						return -ENOMEM;
					k->kids[k->nkids++] = id;
				}
			}
		} else if (fc == 0) {
			if (size != 0)
				finding(k, "first-cluster-zero", id, NULL,
					"size %u with first cluster 0", size);
		} else {
			check_file_chain(k, id, size);
		}

		if (!track)
			continue;
		memcpy(d.sn, sn, 11);
		d.obj = id;
		d.slot = i;
		if (grow((void **)&k->dents, &k->capdents, k->ndents + 1, sizeof(*k->dents)))
			return -ENOMEM;
		k->dents[k->ndents++] = d;
	}
	lfn_interrupt(k, dir, &s, nslots, "not followed by a short entry");

	if (is_sub) {
		if (dot_at < 0)
			finding(k, "dot-missing", dir, NULL, "no '.' entry first");
		if (dotdot_at < 0)
			finding(k, "dot-missing", dir, NULL, "no '..' entry second");
	}
	if (check_unique(k, dir))
		return -ENOMEM;

	/* children go on the stack in reverse so that they pop in order */
	for (size_t i = k->nkids; i > 0; i--) {
		if (grow((void **)&k->stack, &k->capstack, k->nstack + 1, sizeof(*k->stack)))
			return -ENOMEM;
		k->stack[k->nstack++] = k->kids[i - 1];
	}
	return 0;
}

/* ---- entry point ------------------------------------------------------- */

struct vfat_checker {
	struct ck k;
	size_t capowner;
	size_t clean;        /* owner[0..clean) is zero but for k.claims */
};

int vfat_checker_new(vfat_checker **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void vfat_checker_free(vfat_checker *c)
{
	struct ck *k;

	if (!c)
		return;
	k = &c->k;
	free(k->owner);
	free(k->claims);
	free(k->objs);
	free(k->names);
	free(k->dents);
	free(k->units);
	free(k->clist);
	free(k->skeys);
	free(k->lkeys);
	free(k->stack);
	free(k->kids);
	free(c);
}

/* Free clusters are counted, and allocated clusters nobody claimed are
 * lost. A zero FAT run is a run of free clusters: 256 clusters (then 8)
 * at a time when their entries are all zero bytes, so that a mostly
 * empty volume costs one compare per run, not a decode per cluster. */
static void count_free_lost(const struct ck *k, uint32_t *nfree, uint32_t *nlost,
			    uint32_t *firstlost)
{
	uint32_t bad = k->ops->bad, gbytes = k->g.fat_type == 12 ? 12 : k->g.fat_type == 16 ? 16 : 32;

	for (uint32_t c = 2; c <= k->maxc; c++) {
		uint32_t v, run = !(c & 255) ? 256 : !(c & 7) ? 8 : 0;
		if (run && c + run - 1 <= k->maxc &&
		    mem_all_zero(k->fat + (size_t)c / 8 * gbytes, (size_t)run / 8 * gbytes)) {
			*nfree += run;
			c += run - 1;
			continue;
		}
		v = fatget(k, c);
		if (v == 0) {
			(*nfree)++;
		} else if (v != bad && !k->owner[c]) {
			if (!*nlost)
				*firstlost = c;
			(*nlost)++;
		}
	}
}

int vfat_check_with(vfat_checker *c, const uint8_t *buf, size_t size,
		    vfat_report_fn report, void *ctx)
{
	struct ck *k = &c->k;
	char err[200];
	uint32_t root, nfree = 0, nlost = 0, firstlost = 0;
	int r;

	/* keep the tables, forget the last image */
	k->nobj = k->nnames = k->ndents = k->nunits = 0;
	k->nstack = k->nkids = 0;
	k->nfind = 0;
	k->buf = buf;
	k->size = size;
	k->report = report;
	k->rctx = ctx;
	err[0] = 0;
	r = fat_parse_boot(buf, size, &k->g, err, sizeof(err));
	if (r < 0) {
		if (report) {
			snprintf(k->line, sizeof(k->line), "unusable: /: %s",
				 err[0] ? err : "not a FAT image");
			report(ctx, k->line);
		}
		return r;
	}
	k->ops = fatent_ops_for(k->g.fat_type);
	k->fat = buf + k->g.fat_off;
	k->maxc = k->g.nclusters + 1;
	k->eoc_min = k->ops->bad + 1;
	k->epc = k->g.cluster_size / DIRENT_SIZE;

	if (grow((void **)&k->owner, &c->capowner, (size_t)k->maxc + 1, sizeof(*k->owner)) ||
	    grow((void **)&k->claims, &k->capclaims, (size_t)k->maxc + 1, sizeof(*k->claims)))
		return -ENOMEM;
	/* a reused checker clears only what the last image claimed */
	if ((size_t)k->maxc + 1 > c->clean) {
		memset(k->owner, 0, ((size_t)k->maxc + 1) * sizeof(*k->owner));
		c->clean = (size_t)k->maxc + 1;
	} else {
		for (size_t i = 0; i < k->nclaims; i++)
			k->owner[k->claims[i]] = 0;
	}
	k->nclaims = 0;
	/* objs[0] is a sentinel so that owner 0 means "nobody" */
	if (add_obj(k, 0, 0, "", 0, &root) || add_obj(k, 0, 0, "", 0, &root))
		return -ENOMEM;

	check_fat_head(k);
	check_boot_backup(k);
	check_fat_copies(k);

	if (k->g.fat_type == 32) {
		k->objs[ROOT_OBJ].first = k->g.root_cluster;
		claim_chain(k, ROOT_OBJ, 1);
	}
	if (grow((void **)&k->stack, &k->capstack, 1, sizeof(*k->stack)))
		return -ENOMEM;
	if (k->g.fat_type != 32 || k->objs[ROOT_OBJ].nclaimed > 0)
		k->stack[k->nstack++] = ROOT_OBJ;
	while (k->nstack) {
		uint32_t d = k->stack[--k->nstack];
		if (walk_dir(k, d))
			return -ENOMEM;
	}

	count_free_lost(k, &nfree, &nlost, &firstlost);
	if (nlost)
		finding(k, "lost-clusters", ROOT_OBJ, NULL,
			"%u clusters allocated but not reachable (first %u)",
			nlost, firstlost);
	check_fsinfo(k, nfree);
	if (k->nfind > MAX_LINES && report) {
		snprintf(k->line, sizeof(k->line),
			 "truncated: /: %ld further findings not listed", k->nfind - MAX_LINES);
		report(ctx, k->line);
	}
	return k->nfind > 0x7FFFFFFFL ? 0x7FFFFFFF : (int)k->nfind;
}

int vfat_check(const uint8_t *buf, size_t size, vfat_report_fn report,
	       void *ctx)
{
	vfat_checker *c;
	int r = vfat_checker_new(&c);

	if (r)
		return r;
	r = vfat_check_with(c, buf, size, report, ctx);
	vfat_checker_free(c);
	return r;
}
