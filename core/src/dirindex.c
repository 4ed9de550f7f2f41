/* dirindex.c - hash index of the names in large directories.
 *
 * A kernel-faithful create scans the whole directory several times
 * (lookup, alias uniqueness for ~1..~9 and hex tails, free slots): O(n)
 * per create and O(n^2) per directory. The index turns the name and
 * short-name questions into hash probes. It is only an accelerator: every
 * hit is verified by re-parsing the slots, and builds with
 * VFAT_INDEX_PARANOID cross-check every answer against the linear scan.
 *
 * The index is kept in sync by dir_add_slots/dir_remove, the only places
 * that change names; a freed directory chain drops its index.
 */
#include <stdlib.h>
#include <string.h>
#include "fat.h"
#include "names.h"

/* Small directories are scanned; paranoid builds index every directory so
 * that the cross-check covers the index everywhere. */
#ifdef VFAT_INDEX_PARANOID
#define dir_is_small(n) ((void)(n), 0)
#else
#define dir_is_small(n) ((n) < 512)
#endif
#define NCACHE 4
/* First capacity of the hash tables (doubled at half load): a fixed
 * FAT12/16 root is indexed for its 512 slots even when it holds a few
 * names, and the index is rebuilt on every mount, so a small start keeps
 * a mount cheap (1024 cost fuzz_ops two 28 KB clears per input). */
#define IX_MIN_CAP 64
#define TOMB 0xFFFFFFFEu
#define EMPTY 0xFFFFFFFFu

struct nkey { uint32_t hash, start, pos; };     /* pos EMPTY/TOMB = free */
/* hidden: a v3 entry flagged FAT_NO_83NAME, which alias uniqueness does not
 * see (dir_scan_sees) but --unique dummies must not repeat (dir_bytes_exist) */
struct skey { uint8_t sn[11]; uint8_t used; uint8_t hidden; uint32_t count; };

struct dir_index {
	uint32_t first;
	int valid;
	uint64_t stamp;             /* LRU */
	struct nkey *nk;
	size_t ncap, nused;         /* nused counts live + tombstones */
	struct skey *sk;
	size_t scap, sused;
	size_t free_hint;
};

struct dix_cache {
	struct dir_index ix[NCACHE];
	uint64_t clock;
};

static uint32_t fold_hash(const uint16_t *u, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++) {
		uint16_t c = u[i];
		if (c >= 'A' && c <= 'Z')
			c = (uint16_t)(c + 32);
		h = (h ^ (c & 0xFF)) * 16777619u;
		h = (h ^ (c >> 8)) * 16777619u;
	}
	return h;
}

static uint32_t sn_hash(const uint8_t *sn)
{
	uint32_t h = 2166136261u;
	for (int i = 0; i < 11; i++)
		h = (h ^ sn[i]) * 16777619u;
	return h;
}

static void ix_clear(struct dir_index *x)
{
	free(x->nk);
	free(x->sk);
	memset(x, 0, sizeof(*x));
}

static int nk_insert(struct dir_index *x, uint32_t hash, uint32_t start, uint32_t pos);

static int nk_grow(struct dir_index *x)
{
	struct nkey *old = x->nk;
	size_t oc = x->ncap;

	x->ncap = oc ? oc * 2 : IX_MIN_CAP;
	x->nk = malloc(x->ncap * sizeof(*x->nk));
	if (!x->nk) {
		x->nk = old;
		x->ncap = oc;
		return -ENOMEM;
	}
	memset(x->nk, 0xFF, x->ncap * sizeof(*x->nk));
	x->nused = 0;
	for (size_t i = 0; i < oc; i++)
		if (old[i].pos < TOMB)
			nk_insert(x, old[i].hash, old[i].start, old[i].pos);
	free(old);
	return 0;
}

static int nk_insert(struct dir_index *x, uint32_t hash, uint32_t start, uint32_t pos)
{
	size_t i;

	if ((x->nused + 1) * 2 > x->ncap && nk_grow(x))
		return -ENOMEM;
	for (i = hash & (x->ncap - 1); x->nk[i].pos < TOMB; i = (i + 1) & (x->ncap - 1))
		;
	if (x->nk[i].pos == EMPTY)
		x->nused++;
	x->nk[i].hash = hash;
	x->nk[i].start = start;
	x->nk[i].pos = pos;
	return 0;
}

static void nk_remove(struct dir_index *x, uint32_t hash, uint32_t pos)
{
	for (size_t i = hash & (x->ncap - 1); x->nk[i].pos != EMPTY; i = (i + 1) & (x->ncap - 1)) {
#ifdef VFAT_FAULT_INDEX_OVERREAD
		/* planted: peeks at the next slot without wrapping, one nkey past
		 * the table when i is its last slot; the value is never used, so
		 * only ASan can see it (harnesses/FAULTS.md) */
		volatile uint32_t peek = x->nk[i + 1].pos;
		(void)peek;
#endif
		if (x->nk[i].pos == pos && x->nk[i].hash == hash) {
			x->nk[i].pos = TOMB;
			return;
		}
	}
}

static int sk_add(struct dir_index *x, const uint8_t *sn, int hidden, int delta);

static int sk_grow(struct dir_index *x)
{
	struct skey *old = x->sk;
	size_t oc = x->scap;

	x->scap = oc ? oc * 2 : IX_MIN_CAP;
	x->sk = calloc(x->scap, sizeof(*x->sk));
	if (!x->sk) {
		x->sk = old;
		x->scap = oc;
		return -ENOMEM;
	}
	x->sused = 0;
	for (size_t i = 0; i < oc; i++)
		if (old[i].used && old[i].count)
			for (uint32_t k = 0; k < old[i].count; k++)
				sk_add(x, old[i].sn, old[i].hidden, 1);
	free(old);
	return 0;
}

static struct skey *sk_find(struct dir_index *x, const uint8_t *sn, int hidden)
{
	for (size_t i = sn_hash(sn) & (x->scap - 1); x->sk[i].used; i = (i + 1) & (x->scap - 1))
		if (!memcmp(x->sk[i].sn, sn, 11) && x->sk[i].hidden == hidden)
			return &x->sk[i];
	return NULL;
}

static int sk_add(struct dir_index *x, const uint8_t *sn, int hidden, int delta)
{
	struct skey *k;
	size_t i;

	if (x->scap && (k = sk_find(x, sn, hidden))) {
		if (delta < 0 && k->count == 0)
			return 0;
		k->count = (uint32_t)((int64_t)k->count + delta);
		return 0;
	}
	if (delta < 0)
		return 0;
	if ((x->sused + 1) * 2 > x->scap && sk_grow(x))
		return -ENOMEM;
	for (i = sn_hash(sn) & (x->scap - 1); x->sk[i].used; i = (i + 1) & (x->scap - 1))
		;
	memcpy(x->sk[i].sn, sn, 11);
	x->sk[i].used = 1;
	x->sk[i].hidden = (uint8_t)hidden;
	x->sk[i].count = (uint32_t)delta;
	x->sused++;
	return 0;
}

static int is_free_slot(const uint8_t *de) { return de[0] == 0 || de[0] == DELETED_FLAG; }

/* Hash keys of one entry: the names a lookup compares (dir_compared). */
static int entry_keys(const vfat_vol *v, const struct fat_entry *e, uint32_t keys[2])
{
	uint16_t sn[16];
	int n = 0, cmp = dir_compared(v, e);

	if (cmp & DIR_CMP_NAME)
		keys[n++] = fold_hash(e->uname, e->ulen);
	if (cmp & DIR_CMP_ALIAS) {
		int l = vfat_shortname_to_utf16(e->de, e->de[12], sn);
		keys[n++] = fold_hash(sn, (size_t)l);
	}
	return n;
}

static int ix_build(struct fat_dir *d, struct dir_index *x)
{
	struct fat_entry e;
	size_t cur = 0, i;
	uint32_t keys[2];

	x->free_hint = d->nslots;
	for (i = 0; i < d->nslots; i++) {
		const uint8_t *de = dir_slot(d, i);
		int kind = dir_short_kind(d->v, de);
		if (kind != DIR_SHORT_NONE && sk_add(x, de, kind == DIR_SHORT_HIDDEN, 1))
			return -ENOMEM;
		if (is_free_slot(de) && x->free_hint == d->nslots)
			x->free_hint = i;
	}
	while (dir_next(d, &cur, &e, 0) == 1) {
		int n = entry_keys(d->v, &e, keys);
		for (int k = 0; k < n; k++)
			if (nk_insert(x, keys[k], (uint32_t)e.start, (uint32_t)e.pos))
				return -ENOMEM;
	}
	if (!x->ncap && nk_grow(x))
		return -ENOMEM;
	if (!x->scap && sk_grow(x))
		return -ENOMEM;
	x->first = d->first;
	x->valid = 1;
	return 0;
}

static struct dir_index *ix_lookup(vfat_vol *v, uint32_t first)
{
	struct dix_cache *c = v->dix;

	if (!c)
		return NULL;
	for (int i = 0; i < NCACHE; i++)
		if (c->ix[i].valid && c->ix[i].first == first) {
			c->ix[i].stamp = ++c->clock;
			return &c->ix[i];
		}
	return NULL;
}

/* The index for d, built on demand for large directories; NULL = scan. */
static struct dir_index *ix_get(struct fat_dir *d)
{
	vfat_vol *v = d->v;
	struct dir_index *x = ix_lookup(v, d->first), *victim;

	if (x || dir_is_small(d->nslots))
		return x;
	if (!v->dix && !(v->dix = calloc(1, sizeof(struct dix_cache))))
		return NULL;
	victim = &v->dix->ix[0];
	for (int i = 1; i < NCACHE; i++)
		if (!v->dix->ix[i].valid || v->dix->ix[i].stamp < victim->stamp)
			victim = &v->dix->ix[i];
	ix_clear(victim);
	if (ix_build(d, victim)) {
		ix_clear(victim);
		return NULL;
	}
	victim->stamp = ++v->dix->clock;
	return victim;
}

void dix_free(vfat_vol *v)
{
	if (!v->dix)
		return;
	for (int i = 0; i < NCACHE; i++)
		ix_clear(&v->dix->ix[i]);
	free(v->dix);
	v->dix = NULL;
}

void dix_invalidate(vfat_vol *v, uint32_t first)
{
	struct dir_index *x = ix_lookup(v, first);
	if (x)
		ix_clear(x);
}

/* The first match in directory order wins, as in a linear scan: only a
 * damaged directory can hold two entries answering to one name. */
int dix_find(struct fat_dir *d, const uint16_t *u, size_t ulen, struct fat_entry *e)
{
	struct dir_index *x = ix_get(d);
	uint32_t h, best = EMPTY;

	if (!x)
		return 1;
	h = fold_hash(u, ulen);
	for (size_t i = h & (x->ncap - 1); x->nk[i].pos != EMPTY; i = (i + 1) & (x->ncap - 1)) {
		size_t cur;
		uint16_t sn[16];
		int hit, cmp;

		if (x->nk[i].pos == TOMB || x->nk[i].hash != h || x->nk[i].pos >= best)
			continue;
		cur = x->nk[i].start;
		if (dir_next(d, &cur, e, 0) != 1 || e->pos != x->nk[i].pos)
			continue;
		cmp = dir_compared(d->v, e);
		hit = (cmp & DIR_CMP_NAME) && vfat_name_eq(u, ulen, e->uname, e->ulen);
		if (!hit && (cmp & DIR_CMP_ALIAS)) {
			int l = vfat_shortname_to_utf16(e->de, e->de[12], sn);
			hit = vfat_name_eq(u, ulen, sn, (size_t)l);
		}
		if (hit)
			best = x->nk[i].pos;
	}
	if (best == EMPTY)
		return -ENOENT;
	for (size_t i = h & (x->ncap - 1);; i = (i + 1) & (x->ncap - 1))
		if (x->nk[i].pos == best) {
			size_t cur = x->nk[i].start;
			dir_next(d, &cur, e, 0);
			return 0;
		}
}

int dix_short_exists(struct fat_dir *d, const uint8_t sn[11], int hidden_too)
{
	struct dir_index *x = ix_get(d);
	struct skey *k;

	if (!x)
		return -1;
	k = sk_find(x, sn, 0);
	if (k && k->count > 0)
		return 1;
	k = hidden_too ? sk_find(x, sn, 1) : NULL;
	return k && k->count > 0;
}

size_t dix_free_hint(struct fat_dir *d)
{
	struct dir_index *x = ix_lookup(d->v, d->first);
	return x ? x->free_hint : 0;
}

void dix_added(struct fat_dir *d, size_t start, size_t pos)
{
	struct dir_index *x = ix_lookup(d->v, d->first);
	struct fat_entry e;
	size_t cur = start;
	uint32_t keys[2];

	if (!x)
		return;
	if (start <= x->free_hint)
		x->free_hint = start == x->free_hint ? pos + 1 : x->free_hint;
	int kind = dir_short_kind(d->v, dir_slot(d, pos));
	if ((kind != DIR_SHORT_NONE && sk_add(x, dir_slot(d, pos), kind == DIR_SHORT_HIDDEN, 1)) ||
	    dir_next(d, &cur, &e, 0) != 1 || e.pos != pos) {
		ix_clear(x);
		return;
	}
	int n = entry_keys(d->v, &e, keys);
	for (int k = 0; k < n; k++)
		if (nk_insert(x, keys[k], (uint32_t)e.start, (uint32_t)e.pos)) {
			ix_clear(x);
			return;
		}
}

void dix_removing(struct fat_dir *d, size_t start, size_t pos)
{
	struct dir_index *x = ix_lookup(d->v, d->first);
	struct fat_entry e;
	size_t cur = start;
	uint32_t keys[2];

	if (!x)
		return;
	if (start < x->free_hint)
		x->free_hint = start;
	int kind = dir_short_kind(d->v, dir_slot(d, pos));
	if (kind != DIR_SHORT_NONE)
		sk_add(x, dir_slot(d, pos), kind == DIR_SHORT_HIDDEN, -1);
	if (dir_next(d, &cur, &e, 0) != 1 || e.pos != pos) {
		ix_clear(x);
		return;
	}
	int n = entry_keys(d->v, &e, keys);
	for (int k = 0; k < n; k++)
		nk_remove(x, keys[k], (uint32_t)pos);
}
