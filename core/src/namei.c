/* namei.c - path walk and operations over the directory layer.
 *
 * The name policy (dual alias, nodual v1/v3 dummy, optional unique
 * redraw) is decided in build_entry; everything else is shared. The order
 * of checks and of cluster allocations follows Linux 6.1 (VFS +
 * namei_vfat.c) so that errno values and cluster numbers match a kernel
 * writer applying the same op-script.
 */
#include <stdlib.h>
#include <string.h>
#include "fat.h"
#include "names.h"

#define MAX_DEPTH 256

/* Fixed timestamps keep images reproducible: 2009-06-27 05:19:32. */
#define FIXED_DATE ((uint16_t)(((2009 - 1980) << 9) | (6 << 5) | 27))
#define FIXED_TIME ((uint16_t)((5 << 11) | (19 << 5) | (32 / 2)))

/* Where a path leads: the directory holding the last component, the
 * directories walked through (for the rename ancestry checks), and the
 * entry when it exists. */
struct walk {
	uint32_t stack[MAX_DEPTH + 1];  /* stack[0] = root (0) */
	int depth;                      /* stack[depth] = parent dir */
	const char *last;
	size_t lastlen;
	int last_kind;                  /* 0 normal, 1 ".", 2 "..", 3 root */
	int trailing;                   /* '/' after the last component */
	int found;
	struct fat_entry e;
};

static int is_dir_entry(const uint8_t *de) { return (de[11] & ATTR_DIR) != 0; }

static size_t strip_dots(const char *s, size_t len)
{
	while (len && s[len - 1] == '.')
		len--;
	return len;
}

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

/* Look a component up in directory dir (lookup does no validity test,
 * as vfat_lookup: an invalid name simply is not there). */
static int lookup(vfat_vol *v, uint32_t dir, const char *c, size_t len,
		  struct fat_entry *e)
{
	uint16_t u[VFAT_MAX_UNI + 2];
	size_t ulen;
	struct fat_dir d;
	int r;

	len = strip_dots(c, len);
	if (len == 0)
		return -ENOENT;
	if (vfat_utf8_to_utf16(c, len, u, VFAT_MAX_UNI, &ulen))
		return -ENOENT;
	r = dir_open(v, dir, &d);
	if (r)
		return r;
	r = dir_find(&d, u, ulen, e);
	dir_close(&d);
	return r;
}

static int walk_path(vfat_vol *v, const char *path, struct walk *w)
{
	const char *p = path, *c, *nc;
	size_t len, nlen;
	int r;

	memset(w, 0, sizeof(*w));
	if (!path || path[0] != '/')
		return -ENOENT;
	w->last_kind = 3;
	if (!next_comp(&p, &c, &len))
		return 0;                       /* the root itself */
	for (;;) {
		int kind = comp_kind(c, len);

		if (!next_comp(&p, &nc, &nlen)) {
			w->last = c;
			w->lastlen = len;
			w->last_kind = kind;
			w->trailing = *p == '/';
			if (kind)
				return 0;
			r = lookup(v, w->stack[w->depth], c, len, &w->e);
			if (r == 0)
				w->found = 1;
			return r == -ENOENT ? 0 : r;
		}
		if (kind == 2) {
			if (w->depth > 0)
				w->depth--;
		} else if (kind == 0) {
			struct fat_entry e;
			r = lookup(v, w->stack[w->depth], c, len, &e);
			if (r)
				return r;
			if (!is_dir_entry(e.de))
				return -ENOTDIR;
			if (w->depth >= MAX_DEPTH)
				return -ELOOP;
			w->stack[++w->depth] = de_start(v, e.de);
		}
		c = nc;
		len = nlen;
	}
}

struct alias_ctx { struct fat_dir *d; };

static int short_exists_cb(void *ctx, const uint8_t sn[11])
{
#ifdef VFAT_FAULT_ALIAS_COLLISION
	(void)ctx;
	(void)sn;
	return 0;   /* planted fault: alias uniqueness is not checked */
#else
	return dir_short_exists(((struct alias_ctx *)ctx)->d, sn);
#endif
}

/* The nodual policies: replace the alias with a dummy. */
static void make_dummy(vfat_vol *v, struct fat_dir *d, int is_dir,
		       uint8_t sn[11], uint8_t *lcase)
{
	uint8_t ext[3];
	int tries = 0;

	memcpy(ext, sn + 8, 3);
	do {
		if (v->opts.dummy == VFAT_DUMMY_V3) {
			memcpy(sn + 8, ext, 3);
			vfat_dummy_v3(vol_rand32, v, is_dir, sn);
			*lcase = FAT_NO_83NAME;
		} else {
			vfat_dummy_v1(vol_rand32(v) & 0x3FFFFFFF, sn);
#ifdef VFAT_FAULT_DUMMY_SPACE
			sn[8] = ' ';  /* planted fault: a space where '/' belongs */
#endif
			*lcase = 0;
		}
	} while (v->opts.unique && dir_bytes_exist(d, sn) && ++tries < 1000000);
}

/* vfat_build_slots: LFN slots (if the name needs them) + short entry. */
static int build_entry(vfat_vol *v, struct fat_dir *d, const char *name,
		       size_t len, int is_dir, uint32_t cluster,
		       uint8_t *slots, int *n)
{
	uint16_t u[VFAT_MAX_UNI + 2];
	size_t ulen;
	uint8_t sn[11], lcase = 0, *de;
	struct alias_ctx ac = { d };
	struct vfat_alias_env env = { short_exists_cb, &ac, vol_jiffies32, v };
	enum vfat_shortname rule = v->opts.shortname;
	int r, nl = 0;

	r = vfat_prepare_longname(name, len, u, &ulen);
	if (r)
		return r;
	if (v->opts.names == VFAT_NAMES_NODUAL && v->opts.dummy == VFAT_DUMMY_V3)
		rule = VFAT_SN_WINNT;   /* the July revision forces winnt */
	r = vfat_create_shortname(u, ulen, rule, &env, sn, &lcase);
	if (r < 0)
		return r;
	if (r == 0) {
		if (v->opts.names == VFAT_NAMES_NODUAL)
			make_dummy(v, d, is_dir, sn, &lcase);
#ifdef VFAT_FAULT_CHECKSUM
		nl = vfat_build_lfn_slots(u, ulen, (uint8_t)(vfat_lfn_checksum(sn) ^ 1), slots);
#else
		nl = vfat_build_lfn_slots(u, ulen, vfat_lfn_checksum(sn), slots);
#endif
	}
	de = slots + nl * DIRENT_SIZE;
	memset(de, 0, DIRENT_SIZE);
	memcpy(de, sn, 11);
	de[11] = is_dir ? ATTR_DIR : ATTR_ARCH;
	de[12] = lcase;
	put16(de + 14, FIXED_TIME);
	put16(de + 16, FIXED_DATE);
	put16(de + 18, FIXED_DATE);
	put16(de + 22, FIXED_TIME);
	put16(de + 24, FIXED_DATE);
	de_set_start(de, cluster);
	*n = nl + 1;
	return 0;
}

/* vfat_add_entry: build and place a new entry in directory dir. */
static int add_entry(vfat_vol *v, uint32_t dir, const char *name, size_t len,
		     int is_dir, uint32_t cluster, struct fat_dir *d,
		     size_t *pos)
{
	uint8_t slots[(VFAT_MAX_SLOTS + 1) * DIRENT_SIZE];
	int n, r;

	len = strip_dots(name, len);
	if (len == 0)
		return -ENOENT;
	r = dir_open(v, dir, d);
	if (r)
		return r;
	r = build_entry(v, d, name, len, is_dir, cluster, slots, &n);
	if (r == 0)
		r = dir_add_slots(d, slots, n, pos);
	if (r)
		dir_close(d);
	return r;
}

static void init_new_dir(vfat_vol *v, uint32_t c, uint32_t parent)
{
	uint8_t *de = cluster_ptr(v, c);

	memset(de, 0, 2 * DIRENT_SIZE);
	memcpy(de, ".          ", 11);
	memcpy(de + DIRENT_SIZE, "..         ", 11);
	for (int i = 0; i < 2; i++) {
		uint8_t *x = de + i * DIRENT_SIZE;
		x[11] = ATTR_DIR;
		put16(x + 14, FIXED_TIME);
		put16(x + 16, FIXED_DATE);
		put16(x + 18, FIXED_DATE);
		put16(x + 22, FIXED_TIME);
		put16(x + 24, FIXED_DATE);
	}
	de_set_start(de, c);
	de_set_start(de + DIRENT_SIZE, parent);
}

int vfat_mkdir(vfat_vol *v, const char *path)
{
	struct walk w;
	struct fat_dir d;
	uint32_t c, parent;
	size_t pos;
	int r = walk_path(v, path, &w);

	if (r)
		return r;
	if (w.last_kind || w.found)
		return -EEXIST;
	parent = w.stack[w.depth];
	/* the kernel allocates the new directory's cluster first */
	r = fat_alloc_cluster(v, 0, &c);
	if (r)
		return r;
	init_new_dir(v, c, parent);
	r = add_entry(v, parent, w.last, w.lastlen, 1, c, &d, &pos);
	if (r) {
		fat_free_chain(v, c);
		return r;
	}
	dir_close(&d);
	return 0;
}

int vfat_create(vfat_vol *v, const char *path)
{
	struct walk w;
	struct fat_dir d;
	size_t pos;
	int r = walk_path(v, path, &w);

	if (r)
		return r;
	if (w.last_kind)
		return -EEXIST;
	/* open(O_CREAT) refuses a trailing slash before it looks (EISDIR) */
	if (w.trailing)
		return -EISDIR;
	if (w.found)
		return -EEXIST;
	r = add_entry(v, w.stack[w.depth], w.last, w.lastlen, 0, 0, &d, &pos);
	if (r)
		return r;
	dir_close(&d);
	return 0;
}

/* Find an existing regular file for data access. */
static int open_file(vfat_vol *v, const char *path, struct walk *w)
{
	int r = walk_path(v, path, w);

	if (r)
		return r;
	if (w->last_kind)
		return -EISDIR;
	if (!w->found)
		return -ENOENT;
	if (is_dir_entry(w->e.de))
		return -EISDIR;
	if (w->trailing)
		return -ENOTDIR;     /* "file/" asks for a directory */
	return 0;
}

/* Make the chain of a file at least `need` clusters long. On -ENOSPC the
 * clusters taken so far stay in the chain (every free cluster is then
 * in it, as in the kernel's failed page) and *chain_n counts them; the
 * caller cuts the chain back to what the kept size needs. */
static int extend_chain(vfat_vol *v, uint8_t *de, uint32_t *chain_n,
			uint32_t last, uint32_t need)
{
	uint32_t c, prev = last;
	int r;

	while (*chain_n < need) {
		r = fat_alloc_cluster(v, prev, &c);
		if (r)
			return r;
		if (!prev)
			de_set_start(de, c);
		prev = c;
		(*chain_n)++;
	}
	return 0;
}

/* Linux writes page by page (generic_perform_write, cont_expand_zero for
 * the gap from the old size): each page's blocks get their clusters in
 * write_begin, and i_size grows after each page. The first page that
 * cannot get a cluster fails; fat_write_failed truncates the file back
 * to i_size. So a write that runs out of space at `room` bytes (the
 * clusters it had plus every free one) keeps the largest page boundary
 * not beyond `room` (or `off`, where the zero gap ends and the data
 * starts, when `data_at_off`), never less than the old size. The data
 * of the pages before that boundary is written even where the size does
 * not grow (a write from inside the file). */
#define VFS_PAGE 4096u

static uint64_t short_write_end(uint64_t size, uint64_t off, uint64_t room,
				int data_at_off, uint64_t mapped)
{
	uint64_t kept = size, page = room / VFS_PAGE * VFS_PAGE;
	/* mapped: mmu_private (inode.c), where cont_expand_zero starts */
	uint64_t first = mapped / VFS_PAGE;

	/* i_size moves to a page's end only at that page's write_end: one
	 * cont_expand_zero zero-fills (those from mmu_private's page on) or
	 * one the write copies into (from the offset's page on) */
	if (data_at_off && off / VFS_PAGE < first)
		first = off / VFS_PAGE;
	if (page >= (first + 1) * VFS_PAGE && page > kept)
		kept = page;
	/* cont_expand_zero zero-fills a gap only past mmu_private: a write
	 * whose offset lies inside the file's last block expands nothing */
	if (data_at_off && off > kept && off > mapped && off <= room)
		kept = off;
	return kept;
}

/* Cut a file's chain to the clusters `size` bytes need; the rest is
 * freed in chain order (fat_truncate_blocks). */
static void cut_chain(vfat_vol *v, uint8_t *de, const uint32_t *chain,
		      uint32_t n, uint64_t size)
{
	uint32_t keep = (uint32_t)((size + v->g.cluster_size - 1) / v->g.cluster_size);

	if (keep >= n)
		return;
	if (keep)
		fat_set(v, chain[keep - 1], v->ops->eoc);
	else
		de_set_start(de, 0);
	fat_free_chain(v, chain[keep]);
}

#define FILE_INLINE_CLUSTERS 64

static void chain_free(uint32_t *chain, const uint32_t *inl)
{
	if (chain != inl)
		free(chain);
}

static int file_io(vfat_vol *v, uint8_t *de, uint64_t off, uint8_t *rbuf,
		   const uint8_t *wdata, size_t len, size_t *got, int trunc)
{
	int nospc = 0;
	uint32_t size = get32(de + 28), cs = v->g.cluster_size, n = 0, *chain = NULL;
	uint32_t inl[FILE_INLINE_CLUSTERS];   /* most files: no malloc per read/write */
	uint32_t bs = v->g.sector_size;
	uint64_t end = off + len, lim, pos, mmu = inode_mmu(v, de);
	int r;

	r = fat_chain_buf(v, de_start(v, de), inl, FILE_INLINE_CLUSTERS, &chain, &n);
	if (r)
		return r;
	if ((uint64_t)n * cs < size) {
		chain_free(chain, inl);
		return -EIO;                /* chain shorter than the size */
	}
	if (rbuf) {
		lim = end < size ? end : size;
	} else {
		uint32_t need = (uint32_t)((end + cs - 1) / cs);
		if (end > 0xFFFFFFFFull) {
			chain_free(chain, inl);
			return -EFBIG;
		}
		inode_dirty(v, de);           /* start, size, attr, mtime: in memory */
		r = extend_chain(v, de, &n, n ? chain[n - 1] : 0, need);
		chain_free(chain, inl);
		if (r != 0 && r != -ENOSPC)
			return r;
		nospc = r;
		r = fat_chain_buf(v, de_start(v, de), inl, FILE_INLINE_CLUSTERS, &chain, &n);
		if (r)
			return r;
		lim = end;
		if (nospc) {
			uint64_t page = (uint64_t)n * cs / VFS_PAGE * VFS_PAGE;

			/* the failed write_begin ends in fat_write_failed ->
			 * fat_truncate_blocks -> fat_free, which sets ATTR_ARCH
			 * on any file with a first cluster: one it had, or one
			 * it got before the volume ran out */
			if (de_start(v, de))
				de[11] |= ATTR_ARCH;
			lim = short_write_end(size, off, (uint64_t)n * cs, !trunc, mmu);
			cut_chain(v, de, chain, n, lim);
			/* fat_write_failed: fat_truncate_blocks to the size kept */
			inode_set_mmu(v, de, lim);
			/* the pages before the one that got no cluster were
			 * copied, inside the old size too (an overwrite that
			 * then grows): their data stays, the size does not move */
			if (lim <= size && !trunc && page > off)
				lim = page;
			if (lim <= size && (trunc || page <= off)) {
				/* no page was written: only file_update_time ran
				 * (and fat_free's ATTR_ARCH, above) */
				fat_stamp_mtime(de);
				chain_free(chain, inl);
				return nospc;
			}
			end = lim;
		}
	}
	/* a write past the end zero-fills the gap, as cont_write_begin */
	for (pos = wdata && off > size ? size : off; pos < lim;) {
		uint32_t ci = (uint32_t)(pos / cs), co = (uint32_t)(pos % cs);
		size_t chunk = cs - co;
		uint8_t *p = cluster_ptr(v, chain[ci]) + co;

		if (chunk > lim - pos)
			chunk = (size_t)(lim - pos);
		if (pos < off) {
			if (chunk > off - pos)
				chunk = (size_t)(off - pos);
			memset(p, 0, chunk);
		} else if (rbuf) {
			memcpy(rbuf + (pos - off), p, chunk);
		} else {
			memcpy(p, wdata + (pos - off), chunk);
		}
		pos += chunk;
	}
	if (got)
		*got = rbuf ? (size_t)(lim > off ? lim - off : 0) : len;
	if (wdata && end > size)
		put32(de + 28, (uint32_t)end);
	/* the blocks up to the end are mapped (a failed write set it above) */
	if (wdata && !nospc && end > mmu)
		inode_set_mmu(v, de, (end + bs - 1) / bs * bs);
	if (wdata) {
		/* fat_write_end sets ATTR_ARCH; file_update_time the mtime */
		de[11] |= ATTR_ARCH;
		fat_stamp_mtime(de);
	}
	chain_free(chain, inl);
	return nospc;
}

int vfat_write(vfat_vol *v, const char *path, uint64_t off,
	       const uint8_t *data, size_t len)
{
	struct walk w;
	int r = open_file(v, path, &w);

	if (r)
		return r;
	if (len == 0)
		return 0;
	return file_io(v, w.e.de, off, NULL, data, len, NULL, 0);
}

int vfat_read(vfat_vol *v, const char *path, uint64_t off, uint8_t *out,
	      size_t len, size_t *got)
{
	struct walk w;
	int r = open_file(v, path, &w);

	*got = 0;
	if (r)
		return r;
	if (len == 0 || off >= get32(w.e.de + 28))
		return 0;
	return file_io(v, w.e.de, off, out, NULL, len, got, 0);
}

/* The kernel's clock stands still in the core: an op that stamps "now"
 * on an entry's modify time (a write, truncate) writes FIXED_TIME. */
void fat_stamp_mtime(uint8_t *de)
{
	put16(de + 22, FIXED_TIME);
	put16(de + 24, FIXED_DATE);
}

/* fat_setattr(ATTR_SIZE) after do_truncate: a larger size is
 * fat_cont_expand (zero-filled, ATTR_ARCH through fat_write_end); a
 * smaller or equal one zeroes the rest of the block holding the new end
 * (fat_block_truncate_page), then fat_free cuts the chain after the
 * clusters the size needs, sets ATTR_ARCH when the file had clusters, and
 * frees the rest in chain order. The modify time is "now" either way. */
int vfat_truncate(vfat_vol *v, const char *path, uint64_t size)
{
	struct walk w;
	uint32_t *chain = NULL, n = 0, keep, cs = v->g.cluster_size;
	uint32_t old, bs = v->g.sector_size;
	uint8_t *de;
	int r = open_file(v, path, &w);

	if (r)
		return r;
	de = w.e.de;
	old = get32(de + 28);
	if (size > 0xFFFFFFFFull)
		return -EFBIG;
	inode_dirty(v, de);
	if (size > old) {
		static const uint8_t zero[1];
		/* extend by writing one zero byte at the end; the gap is zeroed */
		r = file_io(v, de, size - 1, NULL, zero, 1, NULL, 1);
		/* a short growth keeps its size and still fails (fat_setattr) */
		fat_stamp_mtime(de);
		return r;
	}
	r = fat_chain(v, de_start(v, de), &chain, &n);
	if (r)
		return r;
	keep = (uint32_t)((size + cs - 1) / cs);
	if (size % bs && keep && keep <= n) {
		uint32_t co = (uint32_t)(size % cs);
		uint32_t zl = bs - (uint32_t)(size % bs);
		memset(cluster_ptr(v, chain[keep - 1]) + co, 0, zl);
	}
	if (n)
		de[11] |= ATTR_ARCH;
	/* fat_truncate_blocks: mmu_private no further than the size, exact
	 * (a truncate to the same size too) */
	if (inode_mmu(v, de) > size)
		inode_set_mmu(v, de, size);
	if (keep < n) {
		if (keep)
			fat_set(v, chain[keep - 1], v->ops->eoc);
		else
			de_set_start(de, 0);
		fat_free_chain(v, chain[keep]);
	}
	put32(de + 28, (uint32_t)size);
	fat_stamp_mtime(de);
	free(chain);
	return 0;
}

/* The entry of the directory that stack[i] of w names, found in its
 * parent stack[i - 1] by its first cluster (a path ending in '.' or '..'
 * names a directory the walk went through, not an entry it looked up). */
static int dir_entry_of(vfat_vol *v, const struct walk *w, int i, uint8_t **out)
{
	struct fat_dir d;
	struct fat_entry e;
	size_t cur = 0;
	int r = dir_open(v, w->stack[i - 1], &d);

	if (r)
		return r;
	r = -EIO;
	while (dir_next(&d, &cur, &e, 0) == 1) {
		if (is_dir_entry(e.de) && de_start(v, e.de) == w->stack[i]) {
			*out = e.de;
			r = 0;
			break;
		}
	}
	dir_close(&d);
	return r;
}

int namei_resolve(vfat_vol *v, const char *path, uint8_t **de)
{
	struct walk w;
	int r = walk_path(v, path, &w), i;

	*de = NULL;
	if (r)
		return r;
	if (w.last_kind == 0) {
		if (!w.found)
			return -ENOENT;
		if (w.trailing && !is_dir_entry(w.e.de))
			return -ENOTDIR;
		*de = w.e.de;
		return 0;
	}
	i = w.last_kind == 2 ? w.depth - 1 : w.depth;
	if (w.last_kind == 3 || i <= 0)
		return 0;                       /* the root: no entry */
	return dir_entry_of(v, &w, i, de);
}

/* Remove an entry and release its clusters (vfat_unlink/vfat_rmdir). */
static int remove_entry(vfat_vol *v, struct walk *w)
{
	struct fat_dir d;
	uint32_t c = de_start(v, w->e.de);
	int r = dir_open(v, w->stack[w->depth], &d);

	if (r)
		return r;
	dir_remove(&d, w->e.start, w->e.pos);
	dir_close(&d);
#ifndef VFAT_FAULT_CLUSTER_LEAK
	fat_free_chain(v, c);
#else
	(void)c;  /* planted fault: clusters of removed entries leak */
#endif
	return 0;
}

int vfat_unlink(vfat_vol *v, const char *path)
{
	struct walk w;
	int r = walk_path(v, path, &w);

	if (r)
		return r;
	if (w.last_kind)
		return -EISDIR;
	if (!w.found)
		return -ENOENT;
	if (is_dir_entry(w.e.de))
		return -EISDIR;
	if (w.trailing)
		return -ENOTDIR;     /* do_unlinkat: "file/" */
	return remove_entry(v, &w);
}

static int dir_empty_at(vfat_vol *v, uint32_t c)
{
	struct fat_dir d;
	int r = dir_open(v, c, &d), empty;

	if (r)
		return r;
	empty = dir_is_empty(&d);
	dir_close(&d);
	return empty;
}

int vfat_rmdir(vfat_vol *v, const char *path)
{
	struct walk w;
	int r = walk_path(v, path, &w);

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
	if (!is_dir_entry(w.e.de))
		return -ENOTDIR;
	r = dir_empty_at(v, de_start(v, w.e.de));
	if (r < 0)
		return r;
	if (!r)
		return -ENOTEMPTY;
	return remove_entry(v, &w);
}

static int on_stack(const struct walk *w, uint32_t c)
{
	for (int i = 1; i <= w->depth; i++)
		if (w->stack[i] == c)
			return 1;
	return 0;
}

/* Point the '..' of a moved directory at its new parent. */
static int set_dotdot(vfat_vol *v, uint32_t dirc, uint32_t parent)
{
	struct fat_dir d;
	struct fat_entry e;
	size_t cur = 0;
	int r = dir_open(v, dirc, &d);

	if (r)
		return r;
	while (dir_next(&d, &cur, &e, 1) == 1) {
		if (!memcmp(e.de, "..         ", 11)) {
#ifndef VFAT_FAULT_DOTDOT
			de_set_start(e.de, parent);
#endif
			break;
		}
	}
	dir_close(&d);
	return 0;
}

/* Copy what fat_write_inode writes: attributes, start, size (and times);
 * the name bytes and NT case byte of the target entry stay. */
static void attach_inode(uint8_t *dst, const uint8_t *src)
{
	dst[11] = src[11];
	memcpy(dst + 13, src + 13, 32 - 13);
}

int vfat_rename(vfat_vol *v, const char *from, const char *to)
{
	struct walk ws, wt;
	struct fat_dir d;
	uint8_t src[DIRENT_SIZE];
	size_t pos;
	uint32_t sdir, tdir, sc, old_target = 0;
	int r, is_dir;

	/* errno precedence of do_renameat2: both parents are resolved
	 * (ENOENT, ENOTDIR) before '.', '..' or the root as a last component
	 * (EBUSY), and only then is the source looked up (ENOENT) */
	r = walk_path(v, from, &ws);
	if (r)
		return r;
	r = walk_path(v, to, &wt);
	if (r)
		return r;
	if (ws.last_kind || wt.last_kind)
		return -EBUSY;
	if (!ws.found)
		return -ENOENT;
	is_dir = is_dir_entry(ws.e.de);
	/* unless the source is a directory, trailing slashes give ENOTDIR */
	if (!is_dir && (ws.trailing || wt.trailing))
		return -ENOTDIR;
	sdir = ws.stack[ws.depth];
	tdir = wt.stack[wt.depth];
	sc = de_start(v, ws.e.de);
	/* the source must not be an ancestor of the target, nor the
	 * target an ancestor of the source (do_renameat2) */
	if (is_dir && sc && on_stack(&wt, sc))
		return -EINVAL;
	if (wt.found && is_dir_entry(wt.e.de) && on_stack(&ws, de_start(v, wt.e.de)))
		return -ENOTEMPTY;
	if (wt.found && sdir == tdir && wt.e.pos == ws.e.pos)
		return 0;                       /* same file: case-only rename */
	if (wt.found) {
		int tdir_is = is_dir_entry(wt.e.de);
		if (is_dir && !tdir_is)
			return -ENOTDIR;
		if (!is_dir && tdir_is)
			return -EISDIR;
		if (tdir_is) {
			r = dir_empty_at(v, de_start(v, wt.e.de));
			if (r < 0)
				return r;
			if (!r)
				return -ENOTEMPTY;
		}
	}
	memcpy(src, ws.e.de, DIRENT_SIZE);
	if (wt.found) {
		/* the moved inode takes over the target's existing entry; its
		 * disk keeps the target's bytes until the write-back */
		old_target = de_start(v, wt.e.de);
		inode_dirty(v, wt.e.de);
		attach_inode(wt.e.de, src);
	} else {
		uint8_t disk[DIRENT_SIZE], *de;

		r = add_entry(v, tdir, wt.last, wt.lastlen, is_dir, sc, &d, &pos);
		if (r)
			return r;
		/* vfat_rename adds the entry with start 0 (inode.c) */
		de = dir_slot(&d, pos);
		memcpy(disk, de, DIRENT_SIZE);
		de_set_start(disk, 0);
		inode_written(v, de, disk);
		attach_inode(de, src);
		dir_close(&d);
	}
	if (is_dir && sdir != tdir) {
		r = set_dotdot(v, sc, tdir);
		if (r)
			return r;
	}
	/* adding may have moved nothing, but re-find the source to be safe:
	 * positions in its directory are unchanged unless sdir == tdir grew */
	r = dir_open(v, sdir, &d);
	if (r)
		return r;
	dir_remove(&d, ws.e.start, ws.e.pos);
	dir_close(&d);
	if (old_target)
		fat_free_chain(v, old_target);
	return 0;
}

int vfat_stat(vfat_vol *v, const char *path, struct vfat_stat *st)
{
	struct walk w;
	int r = walk_path(v, path, &w);

	memset(st, 0, sizeof(*st));
	if (r)
		return r;
	if (w.last_kind) {
		/* the root, "." or ".." name a directory on the stack */
		st->is_dir = 1;
		st->attr = ATTR_DIR;
		if (w.last_kind == 1)
			st->first_cluster = w.stack[w.depth];
		else if (w.last_kind == 2 && w.depth > 0)
			st->first_cluster = w.stack[w.depth - 1];
		return 0;
	}
	if (!w.found)
		return -ENOENT;
	if (w.trailing && !is_dir_entry(w.e.de))
		return -ENOTDIR;
	st->is_dir = is_dir_entry(w.e.de);
	st->size = get32(w.e.de + 28);
	st->first_cluster = de_start(v, w.e.de);
	st->attr = w.e.de[11];
	return 0;
}

int vfat_readdir(vfat_vol *v, const char *path, vfat_readdir_cb cb, void *ctx)
{
	struct vfat_stat st;
	struct fat_dir d;
	struct fat_entry e;
	struct vfat_dirent de;
	size_t cur = 0;
	int r = vfat_stat(v, path, &st);

	if (r)
		return r;
	if (!st.is_dir)
		return -ENOTDIR;
	r = dir_open(v, st.first_cluster, &d);
	if (r)
		return r;
	while (dir_next(&d, &cur, &e, 0) == 1) {
		/* every field is set below; the 1 KB name only up to its NUL
		 * (255 units need at most 766 bytes: the conversion fits) */
		if (vfat_utf16_to_utf8(e.uname, e.ulen, de.name, sizeof(de.name)) < 0)
			de.name[0] = '\0';
		memcpy(de.shortname, e.de, 11);
		de.attr = e.de[11];
		de.ntcase = e.de[12];
		de.first_cluster = de_start(v, e.de);
		de.size = get32(e.de + 28);
		de.nlfn = e.nlfn;
		de.is_dummy = vfat_is_dummy_v1(e.de) ||
			      vfat_is_dummy_v3(e.de, e.de[12], e.de[11] & ATTR_DIR);
		de.mtime.sec = fat_time_fat2unix(get16(e.de + 22), get16(e.de + 24));
		de.mtime.nsec = 0;
		de.atime.sec = fat_time_fat2unix(0, get16(e.de + 18));
		de.atime.nsec = 0;
		/* byte 13: hundredths of a second past the 2-s creation time */
		de.crtime.sec = fat_time_fat2unix(get16(e.de + 14), get16(e.de + 16)) + e.de[13] / 100;
		de.crtime.nsec = (uint32_t)(e.de[13] % 100) * 10000000u;
		r = cb(ctx, &de);
		if (r)
			break;
	}
	dir_close(&d);
	return r;
}
