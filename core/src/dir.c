/* dir.c - directory slots: iterate, parse LFN sets, search, add, remove.
 *
 * Parsing follows the kernel's fat_parse_long/fat_search_long so that the
 * core sees a crafted directory the way a Linux reader does, except that
 * a dummy short entry never hides its long name (the seed's dir.c hunk).
 * In v3 the lookups follow the July 2009 reader patch (FAT_NO_83NAME): an
 * entry whose NT byte has 0x20 is found by its long name only, and alias
 * uniqueness (fat_scan) does not see it (dir_compared, dir_scan_sees).
 */
#include <stdlib.h>
#include <string.h>
#include "fat.h"
#include "names.h"

int dir_open(vfat_vol *v, uint32_t first, struct fat_dir *d)
{
	int r;

	memset(d, 0, sizeof(*d));
	d->v = v;
	d->first = first;
	if (first == 0 && v->g.fat_type != 32) {
		d->fixed = 1;
		d->nslots = v->g.root_bytes / DIRENT_SIZE;
		return 0;
	}
	r = fat_dir_chain(v, first ? first : v->g.root_cluster, d->inl, DIR_INLINE_CLUSTERS,
			  &d->clus, &d->nclus);
	if (r)
		return r;
	d->nslots = (size_t)d->nclus * (v->g.cluster_size / DIRENT_SIZE);
	if (d->nslots > FAT_MAX_DIR_SLOTS)
		d->nslots = FAT_MAX_DIR_SLOTS;   /* the kernel reads no further */
	return 0;
}

void dir_close(struct fat_dir *d)
{
	if (d->clus != d->inl)
		free(d->clus);
	d->clus = NULL;
}

uint8_t *dir_slot(const struct fat_dir *d, size_t i)
{
	const vfat_vol *v = d->v;
	size_t per = v->g.cluster_size / DIRENT_SIZE;

	if (d->fixed)
		return v->buf + v->g.root_off + i * DIRENT_SIZE;
	return cluster_ptr(v, d->clus[i / per]) + (i % per) * DIRENT_SIZE;
}

static int is_free(const uint8_t *de) { return de[0] == 0 || de[0] == DELETED_FLAG; }

/* Slot i is free: the end of its cluster (or of the fixed root) when
 * every slot from i on is all zero, else 0. All-zero slots are free
 * entries to every reader, and a directory's unused tail is mostly that,
 * so one memcmp replaces a load per slot. */
static size_t free_run_end(const struct fat_dir *d, size_t i)
{
	size_t per = d->fixed ? d->nslots : d->v->g.cluster_size / DIRENT_SIZE;
	size_t end = (i / per + 1) * per;

	if (end > d->nslots)
		end = d->nslots;
	return mem_all_zero(dir_slot(d, i), (end - i) * DIRENT_SIZE) ? end : 0;
}

static void lfn_chars(const uint8_t *ds, uint16_t *out)
{
	static const uint8_t off[13] = { 1, 3, 5, 7, 9, 14, 16, 18, 20, 22, 24, 28, 30 };
	for (int k = 0; k < 13; k++)
		out[k] = get16(ds + off[k]);
}

/* Parse an LFN set starting at slot *i (which has attr 0x0F), as
 * fat_parse_long: returns 1 with *i at the short entry and the name in e,
 * 0 when the set is invalid (*i at the slot to continue after), or 2 when
 * the slot at *i must be re-examined as a record (not an LFN slot). */
static int parse_long(struct fat_dir *d, size_t *i, struct fat_entry *e,
		      uint8_t *cksum)
{
	uint16_t buf[20 * 13 + 1];
	uint8_t *ds;
	int slots, slot;

restart:
	ds = dir_slot(d, *i);
	if (!(ds[0] & 0x40))
		return 0;
	slots = ds[0] & ~0x40;
	if (slots > 20 || slots == 0)
		return 0;
	*cksum = ds[13];
	e->start = *i;
	slot = slots;
	memset(buf, 0, sizeof(buf));
	for (;;) {
		slot--;
		lfn_chars(ds, buf + slot * 13);
		if (++*i >= d->nslots)
			return -1;
		if (slot == 0)
			break;
		ds = dir_slot(d, *i);
		if (ds[11] != ATTR_LFN)
			return 2;
		if ((ds[0] & ~0x40) != slot || ds[13] != *cksum)
			goto restart;
	}
	ds = dir_slot(d, *i);
	if (ds[0] == DELETED_FLAG)
		return 0;
	if (ds[11] == ATTR_LFN)
		goto restart;
	if (is_free(ds) || (ds[11] & ATTR_VOLUME))
		return 0;
	/* the name ends at the first 0x0000 */
	e->ulen = 0;
	while (e->ulen < (size_t)slots * 13 && e->ulen < VFAT_MAX_UNI && buf[e->ulen])
		e->ulen++;
	memcpy(e->uname, buf, e->ulen * sizeof(uint16_t));
	e->nlfn = vfat_lfn_checksum(ds) == *cksum ? slots : 0;
	return 1;
}

static int is_dot(const uint8_t *de)
{
	return !memcmp(de, ".          ", 11) || !memcmp(de, "..         ", 11);
}

int dir_next(struct fat_dir *d, size_t *cursor, struct fat_entry *e,
	     int want_dots)
{
	size_t i = *cursor;
	uint8_t ck;
	int tried = 0;   /* free_run_end failed in this run of free slots */

	while (i < d->nslots) {
		uint8_t *de = dir_slot(d, i);
		int lfn = 0;

		e->nlfn = 0;
		if (de[0] == DELETED_FLAG || (de[11] != ATTR_LFN && (de[11] & ATTR_VOLUME)) ||
		    (de[11] != ATTR_LFN && is_free(de))) {
			if (de[0] == 0 && !tried) {
				size_t end = free_run_end(d, i);
				if (end) {
					i = end;
					continue;
				}
				tried = 1;
			}
			i++;
			continue;
		}
		tried = 0;
		if (de[11] == ATTR_LFN) {
			int st = parse_long(d, &i, e, &ck);
			if (st < 0)
				break;
			if (st == 0) {
				i++;
				continue;
			}
			if (st == 2)
				continue;   /* re-examine slot i as a record */
			lfn = e->nlfn;
			de = dir_slot(d, i);
		} else {
			e->start = i;
		}
		e->pos = i;
		e->de = de;
		i++;
		if (!want_dots && is_dot(de))
			continue;
		if (!lfn) {
			e->start = e->pos;
			e->ulen = (size_t)vfat_shortname_to_utf16(de, de[12], e->uname);
		}
		*cursor = i;
		return 1;
	}
	*cursor = d->nslots;
	return 0;
}

static int is_dummy(const uint8_t *de)
{
	return vfat_is_dummy_v1(de) || vfat_is_dummy_v3(de, de[12], de[11] & ATTR_DIR);
}

int dir_compared(const vfat_vol *v, const struct fat_entry *e)
{
	if (vol_no83name(v) && (e->de[12] & FAT_NO_83NAME))
		return e->nlfn ? DIR_CMP_NAME : 0;
	return DIR_CMP_NAME | (e->nlfn && !is_dummy(e->de) ? DIR_CMP_ALIAS : 0);
}

int dir_short_kind(const vfat_vol *v, const uint8_t *de)
{
	if (de[11] == ATTR_LFN || is_free(de) || (de[11] & ATTR_VOLUME))
		return DIR_SHORT_NONE;
	return vol_no83name(v) && (de[12] & FAT_NO_83NAME) ? DIR_SHORT_HIDDEN : DIR_SHORT_SEEN;
}

int dir_scan_sees(const vfat_vol *v, const uint8_t *de)
{
	return dir_short_kind(v, de) == DIR_SHORT_SEEN;
}

static int find_linear(struct fat_dir *d, const uint16_t *u, size_t ulen,
		       struct fat_entry *e)
{
	size_t cur = 0;
	uint16_t sn[16];

	while (dir_next(d, &cur, e, 0) == 1) {
		int cmp = dir_compared(d->v, e);

		if ((cmp & DIR_CMP_NAME) && vfat_name_eq(u, ulen, e->uname, e->ulen))
			return 0;
		/* an alias is a name too (fat_search_long compares both) */
		if (cmp & DIR_CMP_ALIAS) {
			int n = vfat_shortname_to_utf16(e->de, e->de[12], sn);
			if (vfat_name_eq(u, ulen, sn, (size_t)n))
				return 0;
		}
	}
	return -ENOENT;
}

int dir_find(struct fat_dir *d, const uint16_t *u, size_t ulen,
	     struct fat_entry *e)
{
	int r = dix_find(d, u, ulen, e);

#ifdef VFAT_INDEX_PARANOID
	if (r != 1) {
		struct fat_entry l;
		int rl = find_linear(d, u, ulen, &l);
		if (rl != r || (r == 0 && (l.pos != e->pos || l.start != e->start)))
			abort();   /* the index disagrees with the scan */
	}
#endif
	return r == 1 ? find_linear(d, u, ulen, e) : r;
}

static int short_exists_linear(struct fat_dir *d, const uint8_t sn[11], int hidden_too)
{
	for (size_t i = 0; i < d->nslots; i++) {
		const uint8_t *de = dir_slot(d, i);
		int kind = dir_short_kind(d->v, de);
		if ((kind == DIR_SHORT_SEEN || (hidden_too && kind == DIR_SHORT_HIDDEN)) &&
		    !memcmp(de, sn, 11))
			return 1;
	}
	return 0;
}

static int short_exists(struct fat_dir *d, const uint8_t sn[11], int hidden_too)
{
	int r = dix_short_exists(d, sn, hidden_too);

#ifdef VFAT_INDEX_PARANOID
	if (r >= 0 && r != short_exists_linear(d, sn, hidden_too))
		abort();
#endif
	return r >= 0 ? r : short_exists_linear(d, sn, hidden_too);
}

int dir_short_exists(struct fat_dir *d, const uint8_t sn[11])
{
	return short_exists(d, sn, 0);
}

int dir_bytes_exist(struct fat_dir *d, const uint8_t sn[11])
{
	return short_exists(d, sn, 1);
}

/* Grow a directory by one zeroed cluster (the root of FAT12/16 cannot). */
static int dir_grow(struct fat_dir *d)
{
	vfat_vol *v = d->v;
	uint32_t c, *nc;
	int r;

	if (d->fixed || d->nclus == 0)
		return -ENOSPC;
	r = fat_alloc_cluster(v, d->clus[d->nclus - 1], &c);
	if (r)
		return r;
	if (d->clus != d->inl) {
		nc = realloc(d->clus, (d->nclus + 1) * sizeof(*nc));
		if (!nc)
			return -ENOMEM;
	} else if (d->nclus < DIR_INLINE_CLUSTERS) {
		nc = d->inl;
	} else {                      /* outgrows the handle */
		nc = malloc((d->nclus + 1) * sizeof(*nc));
		if (!nc)
			return -ENOMEM;
		memcpy(nc, d->inl, d->nclus * sizeof(*nc));
	}
	d->clus = nc;
	d->clus[d->nclus++] = c;
	d->nslots = (size_t)d->nclus * (v->g.cluster_size / DIRENT_SIZE);
	return 0;
}

/* Undo a growth that could not finish: the clusters added since the
 * directory had `nclus` are freed (fat_alloc_clusters frees what it took
 * when it cannot take them all). */
static void dir_ungrow(struct fat_dir *d, uint32_t nclus)
{
	if (d->nclus <= nclus)
		return;
	fat_set(d->v, d->clus[nclus - 1], d->v->ops->eoc);
	fat_free_chain(d->v, d->clus[nclus]);
	d->nclus = nclus;
	d->nslots = (size_t)nclus * (d->v->g.cluster_size / DIRENT_SIZE);
}

/* Grow the directory to `want` slots or not at all (-ENOSPC). Linux
 * first writes the new entry's slots that fit in the free tail, then
 * allocates the clusters for the rest (fat_add_new_entries); when it
 * cannot, error_remove marks those written slots deleted: their bytes
 * stay, with 0xE5 first. The FAT12/16 root never gets that far. */
static int dir_grow_to(struct fat_dir *d, size_t want, const uint8_t *slots, size_t tail)
{
	uint32_t nclus = d->nclus, per = d->v->g.cluster_size / DIRENT_SIZE;
	uint32_t need = (uint32_t)((want - d->nslots + per - 1) / per);
	int r = 0;

	if (d->fixed || d->nclus == 0)
		return -ENOSPC;
	if (d->v->free_count != 0xFFFFFFFF && d->v->free_count < need)
		r = -ENOSPC;            /* fat_alloc_clusters' check: nothing taken */
	while (!r && d->nslots < want)
		r = dir_grow(d);
	if (!r)
		return 0;
	dir_ungrow(d, nclus);
	for (size_t k = 0; k < tail; k++) {
		uint8_t *e = dir_slot(d, d->nslots - tail + k);

		memcpy(e, slots + k * DIRENT_SIZE, DIRENT_SIZE);
		e[0] = DELETED_FLAG;
	}
	return r;
}

int dir_add_slots(struct fat_dir *d, const uint8_t *slots, int n, size_t *pos)
{
	size_t i, run = 0, start;
	int r;

	/* slots below the index's hint are all in use */
	for (i = dix_free_hint(d); i < d->nslots; i++) {
		if (is_free(dir_slot(d, i))) {
			if (++run == (size_t)n)
				break;
		} else {
			run = 0;
		}
	}
	if (run < (size_t)n) {
		/* use the free tail and continue into new clusters: all of them
		 * or none, as fat_add_new_entries asks fat_alloc_clusters for
		 * the whole count and frees what it got when one is missing
		 * (dir_grow_to) */
		start = d->nslots - run;
		if (d->nslots >= FAT_MAX_DIR_SLOTS)
			return -ENOSPC;
		r = dir_grow_to(d, start + (size_t)n, slots, run);
		if (r)
			return r;
	} else {
		start = i + 1 - (size_t)n;
	}
	if (start + (size_t)n > FAT_MAX_DIR_SLOTS)
		return -ENOSPC;
	for (int k = 0; k < n; k++)
		memcpy(dir_slot(d, start + (size_t)k), slots + k * DIRENT_SIZE, DIRENT_SIZE);
	*pos = start + (size_t)n - 1;
	/* what vfat_add_entry writes is on disk at once (inode.c) */
	inode_written(d->v, dir_slot(d, *pos), slots + (n - 1) * DIRENT_SIZE);
	dix_added(d, start, *pos);
	return 0;
}

void dir_remove(struct fat_dir *d, size_t start, size_t pos)
{
	dix_removing(d, start, pos);
	for (size_t i = start; i < pos; i++)
		dir_slot(d, i)[0] = DELETED_FLAG;
	inode_remove(d->v, dir_slot(d, pos));
}

int dir_is_empty(struct fat_dir *d)
{
	size_t cur = 0;
	struct fat_entry e;

	return dir_next(d, &cur, &e, 0) == 0;
}
