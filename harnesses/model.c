/* model.c - the in-process tree model of fuzz_ops. model.h says what it
 * covers and why there is a second model, in Python (vfz/model/). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "model.h"
#include "names.h"
#include "fat.h"

#define MAX_DEPTH 256

struct mtable;
static struct mtable *tab_new(uint32_t n, uint32_t per);

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n, sz);
	if (!p)
		abort();
	return p;
}

/* ---- names ------------------------------------------------------------ */

static uint16_t fold(uint16_t c) { return (c >= 'A' && c <= 'Z') ? (uint16_t)(c + 32) : c; }

int model_name_eq(const uint16_t *a, size_t alen, const uint16_t *b, size_t blen)
{
	if (alen != blen)
		return 0;
	for (size_t i = 0; i < alen; i++)
		if (fold(a[i]) != fold(b[i]))
			return 0;
	return 1;
}

/* Strict UTF-8 (no overlongs, surrogates or > U+10FFFF) -> UTF-16, as the
 * kernel's utf8s_to_utf16s with room for max units: a full buffer stops
 * the scan before the next sequence ("too long" beats a later bad byte). */
static int dec_utf8(const char *s, size_t len, uint16_t *out, size_t max, size_t *on)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t i = 0, n = 0;

	while (i < len) {
		uint32_t c = p[i], cp, need, min;
		if (n >= max)
			return -ENAMETOOLONG;
		if (c < 0x80) { cp = c; need = 0; min = 0; }
		else if ((c & 0xE0) == 0xC0) { cp = c & 0x1F; need = 1; min = 0x80; }
		else if ((c & 0xF0) == 0xE0) { cp = c & 0x0F; need = 2; min = 0x800; }
		else if ((c & 0xF8) == 0xF0) { cp = c & 0x07; need = 3; min = 0x10000; }
		else return -EINVAL;
		if (len - i - 1 < need)
			return -EINVAL;
		for (uint32_t k = 1; k <= need; k++) {
			if ((p[i + k] & 0xC0) != 0x80)
				return -EINVAL;
			cp = cp << 6 | (p[i + k] & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return -EINVAL;
		i += need + 1;
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
	*on = n;
	return 0;
}

static int bad_char(uint16_t w)
{
	return w < 0x20 || w == '*' || w == '?' || w == '<' || w == '>' || w == '|' ||
	       w == '"' || w == ':' || w == '/' || w == '\\';
}

static size_t strip_dots(const char *s, size_t len)
{
	while (len && s[len - 1] == '.')
		len--;
	return len;
}

/* ---- tree -------------------------------------------------------------- */

static struct mnode *node_new(const char *name, size_t len, const uint16_t *u, size_t ulen, int is_dir)
{
	struct mnode *n = xcalloc(1, sizeof(*n));
	n->name = xcalloc(1, len + 1);
	memcpy(n->name, name, len);
	if (ulen)
		memcpy(n->u, u, ulen * sizeof(*u));
	n->ulen = ulen;
	n->is_dir = is_dir;
	n->attr = is_dir ? 0x10 : 0x20;   /* vfat_build_slots: ATTR_DIR or ATTR_ARCH */
	return n;
}

static void node_free(struct mnode *n)
{
	for (size_t i = 0; i < n->nkids; i++)
		node_free(n->kids[i]);
	free(n->kids);
	free(n->data);
	free(n->name);
	if (n->tab)
		free(n->tab->used);
	free(n->tab);
	free(n);
}

static void kid_add(struct mnode *d, struct mnode *k)
{
	if (d->nkids == d->capkids) {
		d->capkids = d->capkids ? 2 * d->capkids : 8;
		d->kids = realloc(d->kids, d->capkids * sizeof(*d->kids));
		if (!d->kids)
			abort();
	}
	d->kids[d->nkids++] = k;
	k->parent = d;
}

static void kid_del(struct mnode *d, struct mnode *k)
{
	for (size_t i = 0; i < d->nkids; i++) {
		if (d->kids[i] == k) {
			memmove(d->kids + i, d->kids + i + 1, (d->nkids - i - 1) * sizeof(*d->kids));
			d->nkids--;
			return;
		}
	}
	abort();
}

void model_init(struct model *m, const struct vfat_opts *o, const struct model_space *sp)
{
	memset(m, 0, sizeof(*m));
	m->opts = *o;
	m->rule = o->shortname;
	if (o->names == VFAT_NAMES_NODUAL && o->dummy == VFAT_DUMMY_V3)
		m->rule = VFAT_SN_WINNT;
	m->root = node_new("", 0, NULL, 0, 1);
	m->label_slot = -1;
	if (!sp)
		return;
	m->bounded = 1;
	m->free = sp->free;
	m->cs = sp->cs;
	m->bs = sp->bs ? sp->bs : 512;
	m->label_slot = sp->label_slot;
	m->root->tab = tab_new(sp->root_n, sp->root_per);
	memcpy(m->root->tab->used, sp->root_used, sp->root_n);
}

void model_free(struct model *m)
{
	if (m->root)
		node_free(m->root);
	m->root = NULL;
}

static int is_dummy(const struct mnode *k)
{
	return vfat_is_dummy_v1(k->sn) || vfat_is_dummy_v3(k->sn, k->ntcase, k->is_dir);
}

/* The core's lookup: long name, or the short display name of a bare
 * entry, or the alias of a long-named entry (not a dummy). */
static struct mnode *lookup(struct mnode *dir, const char *c, size_t len)
{
	uint16_t u[VFAT_MAX_UNI + 2], sd[16];
	size_t ulen;

	len = strip_dots(c, len);
	if (!len || dec_utf8(c, len, u, VFAT_MAX_UNI, &ulen))
		return NULL;
	for (size_t i = 0; i < dir->nkids; i++) {
		struct mnode *k = dir->kids[i];
		if (model_name_eq(u, ulen, k->u, k->ulen))
			return k;
		if (k->seen && k->nlfn && !is_dummy(k)) {
			int n = vfat_shortname_to_utf16(k->sn, k->ntcase, sd);
			if (model_name_eq(u, ulen, sd, (size_t)n))
				return k;
		}
	}
	return NULL;
}

struct mwalk {
	struct mnode *stack[MAX_DEPTH + 1];
	int depth;
	const char *last;
	size_t lastlen;
	int last_kind;   /* 0 normal, 1 ".", 2 "..", 3 root */
	int trailing;    /* "name/": Linux wants a directory there */
	struct mnode *found;
};

static int next_comp(const char **p, const char **c, size_t *len)
{
	const char *s = *p;
	while (*s == '/')
		s++;
	if (!*s)
		return 0;
	*c = s;
	while (*s && *s != '/')
		s++;
	*len = (size_t)(s - *c);
	*p = s;
	return 1;
}

static int comp_kind(const char *c, size_t len)
{
	if (len == 1 && c[0] == '.')
		return 1;
	if (len == 2 && c[0] == '.' && c[1] == '.')
		return 2;
	return 0;
}

static int walk(struct model *m, const char *path, struct mwalk *w)
{
	const char *p = path, *c, *nc;
	size_t len, nlen;

	memset(w, 0, sizeof(*w));
	w->stack[0] = m->root;
	if (!path || path[0] != '/')
		return -ENOENT;
	w->last_kind = 3;
	if (!next_comp(&p, &c, &len))
		return 0;
	for (;;) {
		int kind = comp_kind(c, len);
		if (!next_comp(&p, &nc, &nlen)) {
			w->last = c;
			w->lastlen = len;
			w->last_kind = kind;
			w->trailing = *p == '/';
			if (!kind)
				w->found = lookup(w->stack[w->depth], c, len);
			return 0;
		}
		if (kind == 2) {
			if (w->depth > 0)
				w->depth--;
		} else if (kind == 0) {
			struct mnode *e = lookup(w->stack[w->depth], c, len);
			if (!e)
				return -ENOENT;
			if (!e->is_dir)
				return -ENOTDIR;
			if (w->depth >= MAX_DEPTH)
				return -ELOOP;
			w->stack[++w->depth] = e;
		}
		c = nc;
		len = nlen;
	}
}

struct exists_ctx { struct mnode *dir; };

static int sib_exists(void *ctx, const uint8_t sn[11])
{
	struct mnode *d = ((struct exists_ctx *)ctx)->dir;
	for (size_t i = 0; i < d->nkids; i++)
		if (d->kids[i]->seen && !memcmp(d->kids[i]->sn, sn, 11))
			return 1;
	return 0;
}

static uint32_t zero_rand(void *ctx) { (void)ctx; return 0; }

struct newname {
	uint16_t u[VFAT_MAX_UNI + 2];
	size_t ulen, len;
	int is_short;
	uint8_t sn[11], lcase;
};

/* ---- capacity ------------------------------------------------------------ */

#define VFS_PAGE 4096u
#define MAX_DIR_SLOTS 65536u      /* FAT_MAX_DIR_SIZE / 32 */

static uint32_t nclus(const struct model *m, uint64_t bytes)
{
	return (uint32_t)((bytes + m->cs - 1) / m->cs);
}

static struct mtable *tab_new(uint32_t n, uint32_t per)
{
	struct mtable *t = xcalloc(1, sizeof(*t));

	t->used = xcalloc(n ? n : 1, 1);
	t->n = n;
	t->per = per;
	return t;
}

/* fat_add_entries: the first run of n free slots; else (a directory that
 * grows) the free slots at its end and as many new clusters as the rest
 * needs, all or none. -> the first slot, or -1 (ENOSPC, nothing taken). */
static long tab_alloc(struct model *m, struct mtable *t, uint32_t n)
{
	uint32_t run = 0, i, k, first;

	for (i = 0; i < t->n; i++) {
		run = t->used[i] ? 0 : run + 1;
		if (run == n) {
			first = i + 1 - n;
			memset(t->used + first, 1, n);
			return first;
		}
	}
	if (!t->per)
		return -1;
	k = (n - run + t->per - 1) / t->per;
	if ((uint64_t)t->n + (uint64_t)k * t->per > MAX_DIR_SLOTS || m->free < k)
		return -1;
	m->free -= k;
	t->used = realloc(t->used, t->n + k * t->per);
	if (!t->used)
		abort();
	memset(t->used + t->n, 0, k * t->per);
	first = t->n - run;
	t->n += k * t->per;
	memset(t->used + first, 1, n);
	return first;
}

static struct mtable *table_of(struct mnode *d)
{
	return d->tab;
}

/* Room for an entry named nn in directory d: -> its slots (first, *n;
 * *n = 0 in an unbounded model), or -ENOSPC with nothing taken. */
static long take_slots(struct model *m, struct mnode *d, const struct newname *nn, uint32_t *n)
{
	long first;

	*n = 0;
	if (!m->bounded)
		return 0;
	*n = nn->is_short ? 1 : (uint32_t)(nn->ulen + 12) / 13 + 1;
	first = tab_alloc(m, table_of(d), *n);
	return first < 0 ? -ENOSPC : first;
}

static void drop_slots(struct model *m, struct mnode *d, struct mnode *k)
{
	if (m->bounded && k->nslot)
		memset(table_of(d)->used + k->slot0, 0, k->nslot);
	k->nslot = 0;
}

/* The clusters what goes holds: a file's data, a directory's table. */
static uint32_t held(const struct model *m, const struct mnode *k)
{
	return k->is_dir ? (k->tab ? k->tab->n / k->tab->per : 1) : nclus(m, k->size);
}

static void release(struct model *m, const struct mnode *k)
{
	if (m->bounded)
		m->free += held(m, k);
}

/* short_write_end: what a file of size bytes keeps when a write (data_at_off)
 * or a truncate growth to end finds room for room bytes only. */
static uint32_t kept_size(uint32_t size, uint32_t off, uint64_t room, int data_at_off, uint32_t mapped)
{
	uint64_t k = room / VFS_PAGE * VFS_PAGE;
	uint64_t first = mapped / VFS_PAGE;   /* mapped: the file's mmu_private */

	/* a page end is reached by the write_end of a page zero-filled past
	 * mmu_private or written from the offset's page on, no other */
	if (data_at_off && off / VFS_PAGE < first)
		first = off / VFS_PAGE;
	if (k < (first + 1) * VFS_PAGE || k < size)
		k = size;
	/* the gap is zero-filled (and kept) only past the blocks mapped */
	if (data_at_off && off > k && off > mapped && off <= room)
		k = off;
	return (uint32_t)k;
}

int model_space_read(struct model_space *sp, const uint8_t *img, size_t size)
{
	struct fat_geom g;
	const struct fatent_ops *ops;
	char err[200];

	memset(sp, 0, sizeof(*sp));
	sp->label_slot = -1;
	if (fat_parse_boot(img, size, &g, err, sizeof(err)))
		return -EINVAL;
	ops = fatent_ops_for(g.fat_type);
	sp->cs = g.cluster_size;
	sp->bs = g.sector_size;
	for (uint32_t c = 2; c < g.nclusters + 2; c++)
		sp->free += ops->get(img + g.fat_off, c) == 0;
	if (g.fat_type != 32) {
		sp->root_n = g.root_entries;
		sp->root_used = xcalloc(sp->root_n ? sp->root_n : 1, 1);
		for (uint32_t i = 0; i < sp->root_n; i++) {
			const uint8_t *de = img + g.root_off + (size_t)i * 32;
			sp->root_used[i] = de[0] && de[0] != 0xE5;
			if (sp->root_used[i] && sp->label_slot < 0 && de[11] != 0x0F && (de[11] & 0x08))
				sp->label_slot = i;
		}
		return 0;
	}
	sp->root_per = g.cluster_size / 32;
	for (uint32_t c = g.root_cluster, hops = 0; c >= 2 && c < g.nclusters + 2 && hops < g.nclusters;
	     c = ops->get(img + g.fat_off, c) & ops->mask, hops++) {
		const uint8_t *clus = img + g.data_off + (size_t)(c - 2) * g.cluster_size;
		sp->root_used = realloc(sp->root_used, sp->root_n + sp->root_per);
		if (!sp->root_used)
			abort();
		for (uint32_t i = 0; i < sp->root_per; i++) {
			const uint8_t *de = clus + (size_t)i * 32;
			uint8_t u = de[0] && de[0] != 0xE5;
			sp->root_used[sp->root_n + i] = u;
			if (u && sp->label_slot < 0 && de[11] != 0x0F && (de[11] & 0x08))
				sp->label_slot = sp->root_n + i;
		}
		sp->root_n += sp->root_per;
	}
	return 0;
}

void model_space_free(struct model_space *sp)
{
	free(sp->root_used);
	sp->root_used = NULL;
}

/* Everything that can refuse a new entry's name in directory dir. */
static int new_name(struct model *m, struct mnode *dir, const char *c, size_t len, struct newname *nn)
{
	struct exists_ctx ec = { dir };
	struct vfat_alias_env env = { sib_exists, &ec, zero_rand, NULL };
	int r;

	len = strip_dots(c, len);
	if (!len)
		return -ENOENT;
	r = dec_utf8(c, len, nn->u, VFAT_MAX_UNI + 2, &nn->ulen);
	if (r)
		return r;
	if (nn->ulen > VFAT_MAX_UNI)
		return -ENAMETOOLONG;
	for (size_t i = 0; i < nn->ulen; i++)
		if (bad_char(nn->u[i]))
			return -EINVAL;
	if (nn->u[nn->ulen - 1] == ' ')
		return -EINVAL;
	nn->len = len;
	r = vfat_create_shortname(nn->u, nn->ulen, m->rule, &env, nn->sn, &nn->lcase);
	if (r < 0)
		return r;
	nn->is_short = r;
	return 0;
}

static struct mnode *add_new(struct mnode *dir, const char *c, const struct newname *nn, int is_dir)
{
	struct mnode *k = node_new(c, nn->len, nn->u, nn->ulen, is_dir);
	k->pred_pending = 1;
	k->pred_short = nn->is_short;
	memcpy(k->pred_sn, nn->sn, 11);
	k->pred_lcase = nn->lcase;
	kid_add(dir, k);
	return k;
}

static void write_data(struct mnode *f, uint32_t off, uint32_t size, uint32_t seed)
{
	uint64_t end = (uint64_t)off + size;

	if (!size)
		return;
	if (end > f->cap) {
		f->cap = (uint32_t)end;
		f->data = realloc(f->data, f->cap);
		if (!f->data)
			abort();
	}
	if (off > f->size)
		memset(f->data + f->size, 0, off - f->size);
	vfat_content(seed, f->data + off, size);
	if (end > f->size)
		f->size = (uint32_t)end;
	f->touched = 1;
	f->attr |= 0x20;          /* fat_write_end */
	f->times_known = 0;       /* file_update_time: the writer's clock */
}

static void mark_changed(struct model *m, struct mnode *d);

/* A write (data_at_off: pwrite of size bytes of seed at off) or a
 * truncate growth (seed unused: zeros) to off + size under the model's
 * capacity: 0, or -ENOSPC with what Linux keeps (model.h, Capacity). */
static int fill(struct model *m, struct mnode *dir, struct mnode *f, uint32_t off, uint32_t size,
		uint32_t seed, int data_at_off)
{
	uint32_t s = f->size, k, w;
	uint64_t end = (uint64_t)off + size, room, page;

	if (!m->bounded || end <= (room = (uint64_t)(nclus(m, s) + m->free) * m->cs)) {
		if (m->bounded && end > s)
			m->free -= nclus(m, end) - nclus(m, s);
		/* the blocks up to the end are mapped */
		if (m->bounded && end > f->mmu)
			f->mmu = (uint32_t)((end + m->bs - 1) / m->bs * m->bs);
		if (data_at_off) {
			write_data(f, off, size, seed);
		} else {
			write_data(f, s, (uint32_t)(end - s), 0);
			memset(f->data + s, 0, end - s);
		}
		return 0;
	}
	/* the failed write_begin ends in fat_free, which sets ATTR_ARCH on
	 * a file with a first cluster: one it had or one it got first */
	if (s || m->free)
		f->attr |= 0x20;
	k = kept_size(s, off, room, data_at_off, f->mmu);
	f->mmu = k;                 /* fat_write_failed: truncated to the size kept */
	/* the data reaches the pages before the first that gets no cluster
	 * (generic_perform_write copies page by page), inside the old size
	 * too; none when that page is at or before off */
	page = room / VFS_PAGE * VFS_PAGE;
	w = data_at_off && page > off ? (uint32_t)(end < page ? end : page) : off;
	if (k > s) {
		m->free -= nclus(m, k) - nclus(m, s);
		write_data(f, s, k - s, 0);
		memset(f->data + s, 0, k - s);          /* the gap: zeros */
	}
	if (w > off) {
		vfat_content(seed, f->data + off, w - off);
		f->touched = 1;
		f->attr |= 0x20;        /* fat_write_end */
	}
	f->times_known = 0;         /* file_update_time ran either way */
	m->fail_changed = 1;
	m->fail_node = f;
	mark_changed(m, dir);
	return -ENOSPC;
}

static void mark_changed(struct model *m, struct mnode *d)
{
	for (int i = 0; i < m->nchanged; i++)
		if (m->changed[i] == d)
			return;
	if (m->nchanged < (int)(sizeof(m->changed) / sizeof(m->changed[0])))
		m->changed[m->nchanged++] = d;
}

static int on_stack(const struct mwalk *w, const struct mnode *n)
{
	for (int i = 1; i <= w->depth; i++)
		if (w->stack[i] == n)
			return 1;
	return 0;
}

static int op_mkdir_create(struct model *m, const struct vfat_op *op, int is_dir)
{
	struct mwalk w;
	struct newname nn;
	struct mnode *k;
	uint32_t nslot;
	long first;
	int r = walk(m, op->a, &w);

	if (r)
		return r;
	if (w.last_kind)
		return -EEXIST;
	if (!is_dir && w.trailing)
		return -EISDIR;     /* open(O_CREAT) of "name/" */
	if (w.found)
		return -EEXIST;
	/* vfat_mkdir: fat_alloc_new_dir before vfat_add_entry checks the name */
	if (is_dir && m->bounded && m->free < 1)
		return -ENOSPC;
	r = new_name(m, w.stack[w.depth], w.last, w.lastlen, &nn);
	if (r)
		return r;
	if (is_dir && m->bounded)
		m->free--;
	first = take_slots(m, w.stack[w.depth], &nn, &nslot);
	if (first < 0) {
		if (is_dir && m->bounded)
			m->free++;      /* the new directory's cluster is given back */
		return -ENOSPC;
	}
	k = add_new(w.stack[w.depth], w.last, &nn, is_dir);
	k->slot0 = (uint32_t)first;
	k->nslot = nslot;
	if (is_dir && m->bounded) {
		k->tab = tab_new(m->cs / 32, m->cs / 32);
		k->tab->used[0] = k->tab->used[1] = 1;   /* "." and ".." */
	}
	k->touched = 1;
	mark_changed(m, w.stack[w.depth]);
	if (is_dir)
		mark_changed(m, k);
	/* creat(), then the write: a write that runs out keeps the entry */
	if (!is_dir && op->kind == OP_CREATE && op->n[0])
		return fill(m, w.stack[w.depth], k, 0, op->n[0], op->n[1], 1);
	return 0;
}

static int op_write(struct model *m, const struct vfat_op *op)
{
	struct mwalk w;
	int r = walk(m, op->a, &w);

	if (r)
		return r;
	if (w.last_kind)
		return -EISDIR;
	if (!w.found)
		return -ENOENT;
	if (w.found->is_dir)
		return -EISDIR;
	if (w.trailing)
		return -ENOTDIR;
	if ((uint64_t)op->n[0] + op->n[1] > 0xFFFFFFFFull && op->n[1])
		return -EFBIG;
	if (!op->n[1])
		return 0;           /* a write of 0 bytes changes nothing */
	r = fill(m, w.stack[w.depth], w.found, op->n[0], op->n[1], op->n[2], 1);
	if (!r)
		mark_changed(m, w.stack[w.depth]);
	return r;
}

static int op_unlink(struct model *m, const struct vfat_op *op)
{
	struct mwalk w;
	int r = walk(m, op->a, &w);

	if (r)
		return r;
	if (w.last_kind)
		return -EISDIR;
	if (!w.found)
		return -ENOENT;
	if (w.found->is_dir)
		return -EISDIR;
	if (w.trailing)
		return -ENOTDIR;
	drop_slots(m, w.stack[w.depth], w.found);
	release(m, w.found);
	kid_del(w.stack[w.depth], w.found);
	node_free(w.found);
	mark_changed(m, w.stack[w.depth]);
	return 0;
}

static int op_rmdir(struct model *m, const struct vfat_op *op)
{
	struct mwalk w;
	int r = walk(m, op->a, &w);

	if (r)
		return r;
	if (w.last_kind == 3)
		return -EBUSY;
	if (w.last_kind == 1)
		return -EINVAL;
	if (w.last_kind == 2)
		return -ENOTEMPTY;
	if (!w.found)
		return -ENOENT;
	if (!w.found->is_dir)
		return -ENOTDIR;
	if (w.found->nkids)
		return -ENOTEMPTY;
	drop_slots(m, w.stack[w.depth], w.found);
	release(m, w.found);
	kid_del(w.stack[w.depth], w.found);
	node_free(w.found);
	mark_changed(m, w.stack[w.depth]);
	return 0;
}

/* Move what src holds (content or children) into dst. */
static void take_body(struct mnode *dst, struct mnode *src)
{
	dst->is_dir = src->is_dir;
	dst->attr = src->attr;
	dst->times_known = src->times_known;
	dst->mtime = src->mtime;
	dst->atime = src->atime;
	dst->mmu = src->mmu;          /* the inode moves: its mmu_private with it */
	free(dst->data);
	dst->data = src->data;
	dst->size = src->size;
	dst->cap = src->cap;
	src->data = NULL;
	src->size = src->cap = 0;
	for (size_t i = 0; i < dst->nkids; i++)
		node_free(dst->kids[i]);
	free(dst->kids);
	dst->kids = src->kids;
	dst->nkids = src->nkids;
	dst->capkids = src->capkids;
	src->kids = NULL;
	src->nkids = src->capkids = 0;
	if (dst->tab)
		free(dst->tab->used);
	free(dst->tab);
	dst->tab = src->tab;
	src->tab = NULL;
	for (size_t i = 0; i < dst->nkids; i++)
		dst->kids[i]->parent = dst;
	dst->touched = 1;
}

static void mark_renamed(struct model *m, struct mnode *sdir, struct mnode *tdir,
			 struct mnode *tgt)
{
	mark_changed(m, sdir);
	mark_changed(m, tdir);
	if (tgt->is_dir)
		mark_changed(m, tgt);   /* its children moved with it */
}

static int op_rename(struct model *m, const struct vfat_op *op)
{
	struct mwalk ws, wt;
	struct mnode *src, *tgt, *sdir, *tdir;
	struct newname nn;
	uint32_t nslot;
	long first;
	int r = walk(m, op->a, &ws);

	/* do_renameat2: both parents first, then EBUSY for '.', '..' or the
	 * root as last component, then a missing source */
	if (r)
		return r;
	r = walk(m, op->b, &wt);
	if (r)
		return r;
	if (ws.last_kind || wt.last_kind)
		return -EBUSY;
	if (!ws.found)
		return -ENOENT;
	src = ws.found;
	tgt = wt.found;
	sdir = ws.stack[ws.depth];
	tdir = wt.stack[wt.depth];
	if (!src->is_dir && (ws.trailing || wt.trailing))
		return -ENOTDIR;
	if (src->is_dir && on_stack(&wt, src))
		return -EINVAL;
	if (tgt && tgt->is_dir && on_stack(&ws, tgt))
		return -ENOTEMPTY;
	if (tgt == src)
		return 0;               /* the same entry: case-only rename */
	if (tgt) {
		if (src->is_dir && !tgt->is_dir)
			return -ENOTDIR;
		if (!src->is_dir && tgt->is_dir)
			return -EISDIR;
		if (tgt->is_dir && tgt->nkids)
			return -ENOTEMPTY;
		/* the target entry keeps its name, short entry and slots;
		 * what it held is freed */
		release(m, tgt);
		take_body(tgt, src);
		drop_slots(m, sdir, src);
		kid_del(sdir, src);
		node_free(src);
		mark_renamed(m, sdir, tdir, tgt);
		return 0;
	}
	r = new_name(m, tdir, wt.last, wt.lastlen, &nn);
	if (r)
		return r;
	/* vfat_rename adds the new entry before the old one goes */
	first = take_slots(m, tdir, &nn, &nslot);
	if (first < 0)
		return -ENOSPC;
	tgt = add_new(tdir, wt.last, &nn, src->is_dir);
	tgt->slot0 = (uint32_t)first;
	tgt->nslot = nslot;
	take_body(tgt, src);
	drop_slots(m, sdir, src);
	kid_del(sdir, src);
	node_free(src);
	mark_renamed(m, sdir, tdir, tgt);
	return 0;
}

/* ---- the ops on an inode (fs/fat/file.c) ------------------------------ */

#define FAT_MIN_SEC 315532800LL     /* 1980-01-01 00:00:00 */
#define FAT_MAX_SEC 4354819198LL    /* 2107-12-31 23:59:58 */

static int64_t clamp_time(int64_t s)
{
	return s < FAT_MIN_SEC ? FAT_MIN_SEC : s > FAT_MAX_SEC ? FAT_MAX_SEC : s;
}

int64_t model_mtime(int64_t sec) { return clamp_time(sec) & ~(int64_t)1; }
int64_t model_atime(int64_t sec) { return clamp_time(sec) / 86400 * 86400; }

/* The node a path names, as open(2) finds it: "." and ".." name
 * directories of the walk, "/" the root; "file/" is ENOTDIR. */
static int resolve(struct model *m, const char *path, struct mnode **out)
{
	struct mwalk w;
	int r = walk(m, path, &w);

	if (r)
		return r;
	switch (w.last_kind) {
	case 0:
		if (!w.found)
			return -ENOENT;
		if (w.trailing && !w.found->is_dir)
			return -ENOTDIR;
		*out = w.found;
		return 0;
	case 1:
		*out = w.stack[w.depth];
		return 0;
	case 2:
		*out = w.stack[w.depth > 0 ? w.depth - 1 : 0];
		return 0;
	default:
		*out = m->root;
		return 0;
	}
}

static void mark_entry(struct model *m, struct mnode *n)
{
	if (n != m->root)
		mark_changed(m, n->parent);
}

/* truncate(2): fat_cont_expand zero-fills a larger size; fat_free sets
 * ATTR_ARCH when the file had clusters (a non-empty file); the modify
 * time is the writer's clock either way. */
static int op_truncate(struct model *m, const struct vfat_op *op)
{
	struct mwalk w;
	struct mnode *f;
	int r = walk(m, op->a, &w);

	if (r)
		return r;
	if (w.last_kind)
		return -EISDIR;
	if (!w.found)
		return -ENOENT;
	f = w.found;
	if (f->is_dir)
		return -EISDIR;
	if (w.trailing)
		return -ENOTDIR;
	if (op->n[0] > f->size) {
		/* fat_cont_expand: whole pages; a short growth keeps them and
		 * fat_setattr still answers ENOSPC */
		r = fill(m, w.stack[w.depth], f, 0, op->n[0], 0, 0);
		if (r)
			return r;
	} else {
		if (f->size)
			f->attr |= 0x20;
		if (m->bounded)
			m->free += nclus(m, f->size) - nclus(m, op->n[0]);
		f->size = op->n[0];
		if (f->mmu > f->size)
			f->mmu = f->size;   /* fat_truncate_blocks: exact */
	}
	f->touched = 1;
	f->times_known = 0;
	mark_entry(m, f);
	return 0;
}

/* FAT_IOCTL_SET_ATTRIBUTES: the root takes only the empty set; any other
 * entry gets exactly the letters, a directory keeps ATTR_DIR (and may be
 * read-only: without rodir its mode stays writable). */
static int op_chattr(struct model *m, const struct vfat_op *op)
{
	struct mnode *n;
	int r = resolve(m, op->a, &n);

	if (r)
		return r;
	if (n == m->root)
		return op->n[0] ? -EINVAL : 0;
	n->attr = (uint8_t)((op->n[0] & 0x27) | (n->is_dir ? 0x10 : 0));
	mark_entry(m, n);
	return 0;
}

/* utimensat: the root's times never change (it has no entry). */
static int op_touch(struct model *m, const struct vfat_op *op)
{
	struct mnode *n;
	int r = resolve(m, op->a, &n);

	if (r || n == m->root)
		return r;
	n->mtime = model_mtime(op->t[0].sec);
	n->atime = model_atime(op->t[1].sec);
	n->times_known = 1;
	mark_entry(m, n);
	return 0;
}

/* fatlabel's rules (docs/op-script.md "label"): "" removes the label;
 * else 1-11 printable ASCII characters, none of "*+,./:;<=>?[\]|, not
 * starting with a space. */
static int label_valid(const char *a)
{
	size_t n = strlen(a);

	if (n > 11 || a[0] == ' ')
		return n ? -EINVAL : 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)a[i];
		if (c < 0x20 || c >= 0x7F || strchr("\"*+,./:;<=>?[\\]|", c))
			return -EINVAL;
	}
	return 0;
}

/* A new label entry takes a root slot (a FAT32 root may grow for it);
 * "" deletes the entry. */
static int op_label(struct model *m, const struct vfat_op *op)
{
	int r = label_valid(op->a);

	if (r || !m->bounded)
		return r;
	if (!op->a[0]) {
		if (m->label_slot >= 0)
			m->root->tab->used[m->label_slot] = 0;
		m->label_slot = -1;
	} else if (m->label_slot < 0) {
		m->label_slot = tab_alloc(m, m->root->tab, 1);
		if (m->label_slot < 0)
			return -ENOSPC;
	}
	return 0;
}

int model_apply(struct model *m, const struct vfat_op *op)
{
	m->nchanged = 0;
	m->fail_changed = 0;
	m->fail_node = NULL;
	switch (op->kind) {
	case OP_MKDIR: return op_mkdir_create(m, op, 1);
	case OP_CREATE: return op_mkdir_create(m, op, 0);
	case OP_WRITE: return op_write(m, op);
	case OP_RENAME: return op_rename(m, op);
	case OP_UNLINK: return op_unlink(m, op);
	case OP_RMDIR: return op_rmdir(m, op);
	case OP_TRUNCATE: return op_truncate(m, op);
	case OP_CHATTR: return op_chattr(m, op);
	case OP_TOUCH: return op_touch(m, op);
	case OP_LABEL: return op_label(m, op);
	}
	return -EINVAL;
}
