/* check.c - structural checker of a FAT image (vfat check).
 *
 * An independent reading of the image: it uses only the boot sector
 * parser (boot.c), the FAT entry accessors (fatent.c) and the pure name
 * functions (names.c), never the writer's directory code, so that a bug
 * in dir.c/namei.c cannot hide itself. This file walks the directories
 * (one function per slot kind) and compares the names in each; the FAT
 * checks are in check_fat.c, the long name sets in check_lfn.c, their
 * shared state in check.h.
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
 *   attr dir-size dir-too-large volume-label label after-end
 * An unusable image (boot sector rejected) gets one line
 * "unusable: /: reason" and a negative return. Past MAX_LINES findings
 * the rest are only counted, and a last line "truncated: /: N further
 * findings not listed" says so (the return value counts them all).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

/* ---- small helpers ---------------------------------------------------- */

int ck_grow(void **p, size_t *cap, size_t need, size_t elsz)
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

static uint32_t de_first(const struct ck *k, const uint8_t *de)
{
	uint32_t c = get16(de + 26);

	if (k->g.fat_type == 32)
		c |= (uint32_t)get16(de + 20) << 16;
	return c;
}

void ck_hex11(const uint8_t sn[11], char out[23])
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

/* UTF-16 name -> escaped UTF-8 in out (tmp: scratch); returns its length. */
static size_t units_to_name(const uint16_t *u, size_t n, char *tmp, char *out)
{
	int r = vfat_utf16_to_utf8(u, n, tmp, NAME_LEN);

	if (r < 0)
		r = 0;
	return escape(tmp, (size_t)r, out, NAME_LEN);
}

/* UTF-16 name -> escaped UTF-8 in k->ebuf; returns its length. */
size_t ck_units_to_name(struct ck *k, const uint16_t *u, size_t n)
{
	return units_to_name(u, n, k->nbuf, k->ebuf);
}

/* Short entry -> its display name (escaped) in out. */
static size_t short_to_name(const uint8_t *sn, uint8_t nt, char *tmp, char *out)
{
	uint16_t u[16];
	int n = vfat_shortname_to_utf16(sn, nt, u);
	size_t len = 0;

	if (n > 0 && n <= 12)
		len = units_to_name(u, (size_t)n, tmp, out);
	if (len == 0) {           /* nothing printable: show the raw bytes */
		char hx[23];
		ck_hex11(sn, hx);
		len = (size_t)snprintf(out, NAME_LEN, "<%s>", hx);
	}
	return len;
}

/* A new object. Its name is kept as found (lfn: n units of the long
 * name, else the short entry sde) and rendered only for a finding. */
static int add_obj(struct ck *k, uint32_t parent, uint32_t first,
		   const uint16_t *lfn, size_t n, const uint8_t *sde, uint32_t *id)
{
	if (k->nobj >= UINT32_MAX - 1)
		return -ENOMEM;
	if (ck_grow((void **)&k->objs, &k->capobj, k->nobj + 1, sizeof(*k->objs)) ||
	    ck_grow((void **)&k->names, &k->capnames, k->nnames + n, sizeof(*k->names)))
		return -ENOMEM;
	struct obj *o = &k->objs[k->nobj];
	o->parent = parent;
	o->first = first;
	o->nclaimed = 0;
	o->name_off = k->nnames;
	o->name_len = (uint32_t)n;
	o->sde = sde;
	if (n)
		memcpy(k->names + k->nnames, lfn, n * sizeof(*lfn));
	k->nnames += n;
	*id = (uint32_t)k->nobj++;
	return 0;
}

/* The escaped display name of an object, in k->pebuf. */
static const char *obj_name(struct ck *k, const struct obj *ob)
{
	if (ob->name_len)
		units_to_name(k->names + ob->name_off, ob->name_len, k->pnbuf, k->pebuf);
	else if (ob->sde)
		short_to_name(ob->sde, ob->sde[12], k->pnbuf, k->pebuf);
	else
		k->pebuf[0] = 0;
	return k->pebuf;
}

/* Path of object id (plus an optional extra component) into out. Deep
 * trees show their last PATH_DEPTH components after "/...". */
void ck_render_path(struct ck *k, uint32_t id, const char *extra,
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
		o += (size_t)snprintf(out + o, max - o, "/%s", obj_name(k, &k->objs[comp[i]]));
	}
	if (extra && o < max)
		o += (size_t)snprintf(out + o, max - o, "/%s", extra);
	if (o == 0)
		snprintf(out, max, "/");
}

void ck_finding(struct ck *k, const char *kind, uint32_t id,
		const char *extra, const char *fmt, ...)
{
	va_list ap;

	k->nfind++;
	if (!k->report || k->nfind > MAX_LINES)
		return;
	ck_render_path(k, id, extra, k->path, sizeof(k->path));
	va_start(ap, fmt);
	vsnprintf(k->detail, sizeof(k->detail), fmt, ap);
	va_end(ap);
	snprintf(k->line, sizeof(k->line), "%s: %s: %s", kind, k->path, k->detail);
	k->report(k->rctx, k->line);
}

/* ---- names in one directory ------------------------------------------- */

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
	if (ck_grow((void **)&k->skeys, &k->capskeys, nd, sizeof(*k->skeys)))
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
			ck_hex11(b->sn, hx);
			ck_render_path(k, a->obj, NULL, k->path2, sizeof(k->path2));
			ck_finding(k, dum ? "dummy-collision" : "shortname-dup", b->obj, NULL,
				   "short entry %s (slot %zu) also used by %s (slot %zu)",
				   hx, b->slot, k->path2, a->slot);
		} else {
			g = i;
		}
	}

	/* long names case-insensitively, and long vs other short names */
	if (ck_grow((void **)&k->lkeys, &k->caplkeys, 2 * nd, sizeof(*k->lkeys)))
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
				ck_render_path(k, a->obj, NULL, k->path2, sizeof(k->path2));
				ck_finding(k, "longname-dup", b->obj, NULL,
					   "long name (slot %zu) equals that of %s (slot %zu)",
					   b->slot, k->path2, a->slot);
			}
			size_t s = s1;
			if (s < nl && k->lkeys[s].di == k->lkeys[i].di)
				s = s2;
			if (s < nl) {
				const struct dent *a = &k->dents[k->lkeys[s].di];
				char hx[23];
				ck_hex11(a->sn, hx);
				ck_finding(k, "longname-shortname", b->obj, NULL,
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
	if (ck_grow((void **)&k->units, &k->capunits, k->nunits + n + 1, sizeof(*k->units)))
		return -ENOMEM;
	*off = k->nunits;
	memcpy(k->units + k->nunits, u, n * sizeof(*u));
	k->nunits += n;
	return 0;
}

/* ---- the walk: one function per kind of directory slot ---------------- */

/* The directory being walked. */
struct walk {
	uint32_t dir;
	int fixed;           /* the FAT12/16 root: slots in one area */
	int is_sub;
	const uint8_t *base; /* the fixed root's slots */
	size_t nslots;
	struct lfn_set s;    /* the long name set being read */
	int saw_end, after_end, zero_tried;
	size_t end_at;       /* first free slot (end-of-directory mark) */
	size_t labels;
	long dot_at, dotdot_at;
};

/* Where the slots are: the fixed root, or the claimed clusters of the
 * directory's chain (k->clist). */
static int walk_start(struct ck *k, struct walk *w)
{
	uint32_t c, nclus;

	if (w->fixed) {
		w->base = k->buf + k->g.root_off;
		w->nslots = k->g.root_bytes / DIRENT_SIZE;
		return 0;
	}
	c = k->objs[w->dir].first;
	nclus = k->objs[w->dir].nclaimed;
	if (ck_grow((void **)&k->clist, &k->capclist, (size_t)nclus + 1, sizeof(*k->clist)))
		return -ENOMEM;
	for (uint32_t i = 0; i < nclus; i++) {
		k->clist[i] = c;
		if (i + 1 < nclus)
			c = fatget(k, c);   /* claimed, so in range */
	}
	w->nslots = (size_t)nclus * k->epc;
	return 0;
}

static const uint8_t *walk_slot(const struct ck *k, const struct walk *w, size_t i)
{
	if (w->fixed)
		return w->base + i * DIRENT_SIZE;
	return clus_data(k, k->clist[i / k->epc]) + (i % k->epc) * DIRENT_SIZE;
}

/* A free slot (first byte 0x00) marks the end of the directory. Returns
 * the last slot it accounts for: more free slots change nothing, so an
 * all-zero rest of this cluster (or of the fixed root) is skipped in one
 * compare. */
static size_t walk_free(struct ck *k, struct walk *w, const uint8_t *de, size_t i)
{
	ck_lfn_interrupt(k, w->dir, &w->s, i, "interrupted by a free entry");
	if (!w->saw_end) {
		w->saw_end = 1;
		w->end_at = i;
	}
	if (!w->zero_tried) {
		size_t end = w->fixed ? w->nslots : (i / k->epc + 1) * k->epc;
		if (end > w->nslots)
			end = w->nslots;
		if (mem_all_zero(de + DIRENT_SIZE, (end - i - 1) * DIRENT_SIZE))
			return end - 1;
		w->zero_tried = 1;
	}
	return i;
}

/* A deleted slot (first byte 0xE5). */
static void walk_deleted(struct ck *k, struct walk *w, size_t i)
{
	ck_lfn_interrupt(k, w->dir, &w->s, i, "interrupted by a deleted entry");
}

/* A volume label: once, in the root only, never a directory. */
static void walk_label(struct ck *k, struct walk *w, uint8_t attr, size_t i)
{
	ck_lfn_interrupt(k, w->dir, &w->s, i, "followed by a volume label");
	if (w->is_sub)
		ck_finding(k, "volume-label", w->dir, NULL,
			   "volume label entry %zu outside the root directory", i);
	else if (w->labels++)
		ck_finding(k, "volume-label", w->dir, NULL,
			   "second volume label at entry %zu", i);
	else if (!w->saw_end) {
		k->has_root_label = 1;   /* the one fsck.fat's find_volume_de finds */
		memcpy(k->root_label, walk_slot(k, w, i), 11);
	}
	if (attr & ATTR_DIR)
		ck_finding(k, "attr", w->dir, NULL,
			   "entry %zu is both a volume label and a directory", i);
}

/* A '.' or '..' entry: slot 0 or 1 of a subdirectory, a directory,
 * pointing to the directory itself or to its parent (0 for the root). */
static void walk_dot(struct ck *k, struct walk *w, const uint8_t *de, size_t i)
{
	int two = de[1] == '.';
	const char *nm = two ? ".." : ".";
	long *at = two ? &w->dotdot_at : &w->dot_at;
	uint32_t dir = w->dir, fc = de_first(k, de), want;

	ck_lfn_interrupt(k, dir, &w->s, i, "followed by a dot entry");
	if (!w->is_sub) {
		ck_finding(k, "dot-misplaced", dir, NULL,
			   "'%s' entry %zu in the root directory", nm, i);
		return;
	}
	if (*at >= 0 || i != (size_t)two) {
		ck_finding(k, "dot-misplaced", dir, NULL,
			   "'%s' at entry %zu, expected only at %d", nm, i, two);
		return;
	}
	*at = (long)i;
	if (!(de[11] & ATTR_DIR))
		ck_finding(k, "attr", dir, NULL, "'%s' is not a directory", nm);
	if (two) {
		uint32_t p = k->objs[dir].parent;
		want = p == ROOT_OBJ ? 0 : k->objs[p].first;
	} else {
		want = k->objs[dir].first;
	}
	if (fc != want)
		ck_finding(k, "dot-target", dir, NULL,
			   "'%s' points to cluster %u, expected %u", nm, fc, want);
}

/* The 8.3 field of entry id: a valid short name, a well-formed dummy
 * (returns D_DUMMY), or neither. */
static uint8_t short_name_kind(struct ck *k, uint32_t id, const uint8_t *sn,
			       uint8_t nt, int is_dir, int has_lfn, int had_slots)
{
	uint8_t flags = 0;
	char hx[23];

	if (short_valid(sn))
		return 0;
	ck_hex11(sn, hx);
	if (vfat_is_dummy_v1(sn) || vfat_is_dummy_v3(sn, nt, is_dir)) {
		flags = D_DUMMY;
	} else if ((sn[0] == 0x20 && sn[1] == 0x00) || (nt & FAT_NO_83NAME)) {
		flags = D_DUMMY;
		ck_finding(k, "dummy-malformed", id, NULL,
			   "short entry %s (NT 0x%02x) is not a well-formed dummy", hx, nt);
	} else {
		ck_finding(k, "shortname-invalid", id, NULL,
			   "bad short name %s", hx);
	}
	if (flags && !has_lfn)
		ck_finding(k, "dummy-nolfn", id, NULL,
			   "dummy short entry %s without %s", hx,
			   had_slots ? "a valid long name" : "long name slots");
	return flags;
}

/* The clusters of entry id: a directory's chain is claimed now and the
 * directory walked later (k->kids), a file's chain checked against its
 * size. */
static int entry_clusters(struct ck *k, uint32_t id, int is_dir, uint32_t fc,
			  uint32_t size)
{
	if (is_dir) {
		if (size != 0)
			ck_finding(k, "dir-size", id, NULL, "directory has size %u", size);
		if (fc == 0) {
			ck_finding(k, "first-cluster-zero", id, NULL,
				   "directory with first cluster 0");
		} else {
			ck_claim_chain(k, id, 0);
			if (k->objs[id].nclaimed > 0) {
				if (ck_grow((void **)&k->kids, &k->capkids, k->nkids + 1, sizeof(*k->kids)))
					return -ENOMEM;
				k->kids[k->nkids++] = id;
			}
		}
	} else if (fc == 0) {
		if (size != 0)
			ck_finding(k, "first-cluster-zero", id, NULL,
				   "size %u with first cluster 0", size);
	} else {
		ck_file_chain(k, id, size);
	}
	return 0;
}

/* A short entry naming a file or directory, with the long name set that
 * precedes it if the set belongs to it. */
static int walk_short(struct ck *k, struct walk *w, const uint8_t *de, size_t i)
{
	const uint8_t *sn = de;
	uint8_t nt = de[12], attr = de[11];
	int is_dir = (attr & ATTR_DIR) != 0;
	int has_lfn = 0, had_slots = w->s.st != LFN_NONE;
	size_t ulen = 0;
	uint32_t id, fc = de_first(k, de), size = get32(de + 28);
	struct dent d;
	/* names are compared among the first MAX_DIR_ENTRIES only, which
	 * bounds the per-directory tables (a bigger directory is a
	 * finding of its own) */
	int track = i < MAX_DIR_ENTRIES;

	memset(&d, 0, sizeof(d));
	if (w->s.st == LFN_OPEN)
		has_lfn = ck_lfn_attach(k, w->dir, &w->s, sn, i);
	if (has_lfn)
		ulen = ck_lfn_len(k, &w->s);
	if (add_obj(k, w->dir, fc, k->ubuf, ulen, de, &id))
		return -ENOMEM;
	if (has_lfn) {
		ck_lfn_finish(k, id, &w->s);
		if (track && push_units(k, k->ubuf, ulen, &d.lfn_off))
			return -ENOMEM;
		d.lfn_len = ulen;
		d.flags |= D_LFN;
	}
	w->s.st = LFN_NONE;

	if (attr & 0xC0)
		ck_finding(k, "attr", id, NULL, "reserved attribute bits 0x%02x set", attr & 0xC0);
	d.flags |= short_name_kind(k, id, sn, nt, is_dir, has_lfn, had_slots);
	if (track && !(d.flags & D_DUMMY)) {
		uint16_t u[16];
		int n = vfat_shortname_to_utf16(sn, nt, u);
		if (n > 0 && n <= 12) {
			if (push_units(k, u, (size_t)n, &d.sdisp_off))
				return -ENOMEM;
			d.sdisp_len = (size_t)n;
		}
	}
	if (entry_clusters(k, id, is_dir, fc, size))
		return -ENOMEM;

	if (!track)
		return 0;
	memcpy(d.sn, sn, 11);
	d.obj = id;
	d.slot = i;
	if (ck_grow((void **)&k->dents, &k->capdents, k->ndents + 1, sizeof(*k->dents)))
		return -ENOMEM;
	k->dents[k->ndents++] = d;
	return 0;
}

/* After the last slot: a set left open, the dot entries, the names, and
 * the subdirectories onto the stack. */
static int walk_end(struct ck *k, struct walk *w)
{
	ck_lfn_interrupt(k, w->dir, &w->s, w->nslots, "not followed by a short entry");
	if (w->is_sub) {
		if (w->dot_at < 0)
			ck_finding(k, "dot-missing", w->dir, NULL, "no '.' entry first");
		if (w->dotdot_at < 0)
			ck_finding(k, "dot-missing", w->dir, NULL, "no '..' entry second");
	}
	if (check_unique(k, w->dir))
		return -ENOMEM;

	/* children go on the stack in reverse so that they pop in order */
	for (size_t i = k->nkids; i > 0; i--) {
		if (ck_grow((void **)&k->stack, &k->capstack, k->nstack + 1, sizeof(*k->stack)))
			return -ENOMEM;
		k->stack[k->nstack++] = k->kids[i - 1];
	}
	return 0;
}

static int walk_dir(struct ck *k, uint32_t dir)
{
	struct walk w = { .dir = dir, .dot_at = -1, .dotdot_at = -1 };

	w.fixed = dir == ROOT_OBJ && k->g.fat_type != 32;
	w.is_sub = dir != ROOT_OBJ;
	k->ndents = 0;
	k->nunits = 0;
	k->nkids = 0;
	if (walk_start(k, &w))
		return -ENOMEM;
	if (w.nslots > MAX_DIR_ENTRIES)
		ck_finding(k, "dir-too-large", dir, NULL,
			   "%zu entries (the kernel allows %d)", w.nslots, MAX_DIR_ENTRIES);

	for (size_t i = 0; i < w.nslots; i++) {
		const uint8_t *de = walk_slot(k, &w, i);
		uint8_t b0 = de[0], attr = de[11];

		if (b0 == 0) {
			i = walk_free(k, &w, de, i);
			continue;
		}
		w.zero_tried = 0;
		if (w.saw_end && !w.after_end && b0 != DELETED_FLAG) {
			ck_finding(k, "after-end", dir, NULL,
				   "entry %zu follows the end-of-directory mark at %zu", i, w.end_at);
			w.after_end = 1;
		}
		if (b0 == DELETED_FLAG)
			walk_deleted(k, &w, i);
		else if (attr == ATTR_LFN)
			ck_lfn_slot(k, dir, &w.s, de, i);
		else if (attr & ATTR_VOLUME)
			walk_label(k, &w, attr, i);
		else if (!memcmp(de, dot_name, 11) || !memcmp(de, dotdot_name, 11))
			walk_dot(k, &w, de, i);
		else if (walk_short(k, &w, de, i))
			return -ENOMEM;
	}
	return walk_end(k, &w);
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

int vfat_check_with(vfat_checker *c, const uint8_t *buf, size_t size,
		    vfat_report_fn report, void *ctx)
{
	struct ck *k = &c->k;
	char err[200];
	uint32_t root;
	int r;

	/* keep the tables, forget the last image */
	k->nobj = k->nnames = k->ndents = k->nunits = 0;
	k->nstack = k->nkids = 0;
	k->nfind = 0;
	k->has_root_label = 0;
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

	if (ck_grow((void **)&k->owner, &c->capowner, (size_t)k->maxc + 1, sizeof(*k->owner)) ||
	    ck_grow((void **)&k->claims, &k->capclaims, (size_t)k->maxc + 1, sizeof(*k->claims)))
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
	if (add_obj(k, 0, 0, NULL, 0, NULL, &root) || add_obj(k, 0, 0, NULL, 0, NULL, &root))
		return -ENOMEM;

	ck_fat_before_walk(k);

	if (k->g.fat_type == 32) {
		k->objs[ROOT_OBJ].first = k->g.root_cluster;
		ck_claim_chain(k, ROOT_OBJ, 1);
	}
	if (ck_grow((void **)&k->stack, &k->capstack, 1, sizeof(*k->stack)))
		return -ENOMEM;
	if (k->g.fat_type != 32 || k->objs[ROOT_OBJ].nclaimed > 0)
		k->stack[k->nstack++] = ROOT_OBJ;
	while (k->nstack) {
		uint32_t d = k->stack[--k->nstack];
		if (walk_dir(k, d))
			return -ENOMEM;
	}

	ck_fat_after_walk(k);
	ck_label(k);
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
