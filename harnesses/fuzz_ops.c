/* fuzz_ops - input bytes -> write options + op-script (fuzzinput.c),
 * applied by the core to an in-memory image; every op is checked in
 * process against the model (model.c) and the structural checker.
 *
 * After each op:
 *   - the op's result equals the model's prediction;
 *   - a failed op left the image byte-identical (free clusters' data,
 *     free directory slots an entry add that ran out of clusters left as
 *     deleted copies of its slots (fat_add_entries' error_remove), and
 *     the FSInfo next-free hint excepted: a failed mkdir allocates and
 *     frees its cluster first, as the kernel does), except an ENOSPC the
 *     model says kept pages or stamped the file (a write or truncate
 *     growth that ran out part-way, as Linux's does): it is checked as a
 *     successful op, and compare_enospc proves that only the file's
 *     chain, their FAT entries, its entry and FSInfo's counters changed;
 *   - after a successful op: vfat_check of the whole image reports
 *     nothing (two equal dummies, "dummy-collision", are allowed in
 *     nodual images without --unique: that is the patch's documented
 *     weakness), and the core's listing (vfat_readdir) of every directory
 *     the op changed equals the model: same names, types, sizes,
 *     contents of changed files (after the last op: the whole tree);
 *   - each entry's short entry fits the mode: a bare 8.3 entry is what
 *     the model predicted; in nodual images a long-named entry has a
 *     well-formed dummy (never a valid short name); in dual images its
 *     alias is a valid short name; aliases (and --unique dummies) are
 *     unique in their directory; an untouched entry's short entry never
 *     changes.
 * After the script a fresh mount of the image must list the same tree
 * with the same file contents. Any violation prints one line and aborts.
 * Replay a crash file with the CLI: see core/src/fuzzinput.h.
 *
 * Built with -DFUZZ_OPS_CHECK_LAST (target fuzz_ops_checklast, for
 * bench/bench_fuzz_ops_len.py only) the per-op checks are dropped: a failed
 * op's image is not compared, and after a successful op only the changed
 * directories' listings are read (the model learns the aliases the core
 * chose from them), without vfat_check and without reading contents; the
 * checks after the last op and on the fresh mount stay. It measures what
 * the per-op checks cost; it is never a fuzzing build.
 *
 * Speed: one pristine template per geometry; after each input only the
 * bytes below the highest cluster ever allocated are restored (the
 * allocator is next-fit; when its hint went down -- it wrapped -- the
 * whole image is). The tiny volume, which fills and wraps by design
 * (at most 40 x 4 KiB), is restored and snapshot whole.
 * The snapshot a failed op is compared with is copied only after a
 * successful op changed the image: a failed op proven not to have
 * changed it leaves the snapshot valid for the next one (ops predicted
 * to fail are ~60% of the ops the fuzzer runs).
 * One reusable vfat_checker and reusable listing scratch (no malloc per
 * directory, file or path); per op only the changed directories are
 * listed; comparison tracing (trace-cmp) is compiled only into the code
 * that reads input bytes, and edge coverage only into the code under test
 * (not the checker, the model or this harness; see CMakeLists.txt).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vfat.h"
#include "fat.h"
#include "names.h"
#include "opscript.h"
#include "fuzzinput.h"
#include "model.h"

struct geo {
	uint8_t *tmpl, *work, *snap;
	size_t size;
	struct fat_geom g;
	uint32_t base_hw;      /* highest cluster in use in the template */
	int whole;             /* restore and snapshot the whole image (tiny) */
	struct model_space sp; /* the template's free clusters and root slots */
	uint8_t *chain;        /* scratch: clusters of one file's chain */
};

static struct geo geos[4][4];   /* FAT12, FAT16, FAT32, tiny FAT12 x cluster size */
static vfat_checker *checker;   /* reused: no allocation per check */

/* With VFAT_FUZZ_OPS_COUNT set in the environment, one line at exit:
 * "fuzz_ops: N inputs, M ops applied, C checked after the op, E answered
 * ENOSPC (K of them keeping pages)" (C = M, or 0 in the FUZZ_OPS_CHECK_LAST
 * build): the checked-op rate the benches report (bench/bench_fuzz.py) is
 * counted here, not estimated; E and K say how often a script filled the
 * volume. */
static long count_inputs, count_ops, count_checked, count_nospc, count_kept;

static void count_print(void)
{
	fprintf(stderr, "fuzz_ops: %ld inputs, %ld ops applied, %ld checked after the op, "
		"%ld answered ENOSPC (%ld of them keeping pages)\n",
		count_inputs, count_ops, count_checked, count_nospc, count_kept);
}

struct run {
	const struct vfat_fuzz_input *in;
	struct geo *G;
	size_t opi;
	const struct vfat_op *op;
	char opline[4200];
	struct model m;
	int nodual, allow_dummy_dup;
	char first_finding[600];
	int nfind;
};

static void fail(struct run *R, const char *fmt, ...)
{
	char opts[200];
	va_list ap;

	vfat_fuzz_format_options(R->in, opts, sizeof(opts));
	if (!R->op)
		snprintf(R->opline, sizeof(R->opline), "(after the last op, on a fresh mount)");
	else if (vfat_op_format(R->op, R->opline, sizeof(R->opline)))
		snprintf(R->opline, sizeof(R->opline), "(op too long to print)");
	fprintf(stderr, "fuzz_ops: VIOLATION: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n  fat %d cluster %u, options %s\n  op %zu: %s\n",
		R->in->fat_type, R->in->cluster_bytes, opts, R->opi + 1, R->opline);
	abort();
}

static void on_finding(void *ctx, const char *line);

static struct geo *get_geo(int fat_type, uint32_t cs, int tiny)
{
	int t = tiny ? 3 : fat_type == 12 ? 0 : fat_type == 16 ? 1 : 2, c = 0;
	struct geo *G;
	char err[200];

	while ((512u << c) < cs)
		c++;
	G = &geos[t][c];
	if (G->tmpl)
		return G;
	G->size = vfat_fuzz_image_size(fat_type, cs, tiny);
	G->tmpl = malloc(G->size);
	G->work = malloc(G->size);
	G->snap = malloc(G->size);
	if (!G->tmpl || !G->work || !G->snap)
		abort();
	if (vfat_fuzz_make_image(fat_type, cs, tiny, G->tmpl, G->size, err, sizeof(err)) ||
	    fat_parse_boot(G->tmpl, G->size, &G->g, err, sizeof(err))) {
		fprintf(stderr, "fuzz_ops: template FAT%d/%u: %s\n", fat_type, cs, err);
		abort();
	}
	struct run R0;
	memset(&R0, 0, sizeof(R0));
	if (vfat_check(G->tmpl, G->size, on_finding, &R0) != 0) {
		fprintf(stderr, "fuzz_ops: VIOLATION: the freshly formatted template FAT%d/%u fails "
			"vfat_check: %s\n", fat_type, cs, R0.first_finding);
		abort();
	}
	memcpy(G->work, G->tmpl, G->size);
	G->base_hw = fat_type == 32 ? 2 : 1;
	G->whole = tiny;
	G->chain = calloc(G->g.nclusters + 2, 1);
	if (!G->chain || model_space_read(&G->sp, G->tmpl, G->size))
		abort();
	return G;
}

static size_t end_of(const struct geo *G, uint32_t clus)
{
	size_t e = (size_t)G->g.data_off + (size_t)(clus >= 2 ? clus - 1 : 0) * G->g.cluster_size;
	return e < G->size ? e : G->size;
}

/* vfat_shortname_valid, except that 0x7F counts as valid: the kernel's
 * vfat_create_shortname copies DEL into aliases (cp437 maps it to
 * itself) although fsck.fat 4.2 calls such a name bad. */
static int alias_valid(const uint8_t sn[11])
{
	uint8_t t[11];

	for (int i = 0; i < 11; i++)
		t[i] = sn[i] == 0x7F ? 'X' : sn[i];
	return vfat_shortname_valid(t);
}

/* ---- checker ------------------------------------------------------------ */

/* "shortname-invalid: PATH: bad short name HEX22" where the only bad
 * bytes are 0x7F: the kernel's own aliases (see alias_valid). */
static int only_del(const char *line)
{
	const char *h = strstr(line, "bad short name ");
	uint8_t sn[11];
	unsigned x;

	if (!h || strlen(h + 15) < 22)
		return 0;
	for (int i = 0; i < 11; i++) {
		if (sscanf(h + 15 + 2 * i, "%2x", &x) != 1)
			return 0;
		sn[i] = (uint8_t)x;
	}
	return memchr(sn, 0x7F, 11) && alias_valid(sn);
}

static void on_finding(void *ctx, const char *line)
{
	struct run *R = ctx;

	if (R->allow_dummy_dup && !strncmp(line, "dummy-collision:", 16))
		return;
	if (!strncmp(line, "shortname-invalid:", 18) && only_del(line))
		return;
	if (!R->nfind++)
		snprintf(R->first_finding, sizeof(R->first_finding), "%s", line);
}

static void run_check(struct run *R)
{
	int n;

	R->nfind = 0;
	if (!checker && vfat_checker_new(&checker))
		abort();
	n = vfat_check_with(checker, R->G->work, R->G->size, on_finding, R);
	if (n < 0)
		fail(R, "vfat_check: image unusable (%d)", n);
	if (R->nfind)
		fail(R, "vfat_check: %d finding(s), first: %s", R->nfind, R->first_finding);
}

/* ---- failed op: image unchanged ------------------------------------------ */

static uint32_t fat_entry(const struct geo *G, const uint8_t *img, uint32_t c)
{
	return fatent_ops_for(G->g.fat_type)->get(img + G->g.fat_off, c);
}

/* Linux's fat_add_entries writes a new entry's slots into its directory's
 * free tail before it asks for the clusters the rest needs, and on ENOSPC
 * marks them deleted (error_remove): free slots may come back as 0xE5
 * copies. Is every 32-byte slot of a cluster that differs such a slot? */
static int only_deleted_slots(const uint8_t *a, const uint8_t *b, size_t len)
{
	for (size_t i = 0; i < len; i += 32)
		if (memcmp(a + i, b + i, 32) && !(b[i] == 0xE5 && (a[i] == 0 || a[i] == 0xE5)))
			return 0;
	return 1;
}

static void compare_unchanged(struct run *R, size_t snap_end, int nospc)
{
	const struct geo *G = R->G;
	const uint8_t *a = G->snap, *b = G->work;
	size_t meta = (size_t)G->g.data_off, hint = (size_t)-1;

	if (G->g.fat_type == 32 && G->g.fsinfo_sector)
		hint = (size_t)G->g.fsinfo_sector * G->g.sector_size + 492;
	if (hint > meta)
		hint = meta;
	if (memcmp(a, b, hint) || (hint + 4 < meta && memcmp(a + hint + 4, b + hint + 4, meta - hint - 4))) {
		size_t i = 0;
		while (a[i] == b[i] || (i >= hint && i < hint + 4))
			i++;
		fail(R, "failed op changed byte %zu (0x%02x -> 0x%02x) of the metadata", i, a[i], b[i]);
	}
	for (uint32_t c = 2; c <= G->g.nclusters + 1; c++) {
		size_t off = (size_t)G->g.data_off + (size_t)(c - 2) * G->g.cluster_size;
		if (off >= snap_end)
			break;
		if (fat_entry(G, b, c) == 0)
			continue;
		if (memcmp(a + off, b + off, G->g.cluster_size) &&
		    !(nospc && only_deleted_slots(a + off, b + off, G->g.cluster_size)))
			fail(R, "failed op changed the data of allocated cluster %u", c);
	}
}

/* ---- failed op that kept pages: exactly that changed ---------------------- */

/* The model's fail_changed: a write or truncate growth ran out of clusters
 * (ENOSPC) and kept what Linux keeps. Against the snapshot, only these may
 * differ: FSInfo's free count and hint; the FAT entries (every copy) of
 * clusters in the file's chain now; those clusters' data (the listing
 * compares the content with the model's); free clusters' data; and one
 * directory slot, the file's entry, whose name and case byte stay and
 * whose size is the model's. A create whose write ran out may also have
 * written its new entry's slots (as many as the model gave it) and grown
 * its directory (the directory's chain, and the clusters it just took);
 * the listing and vfat_check judge what those hold. */
/* Mark the chain from c in G->chain with tag (1: the file's, 2: its
 * directory's). */
static void mark_chain(const struct geo *G, uint32_t c, uint8_t tag)
{
	for (uint32_t hops = 0; c >= 2 && c < G->g.nclusters + 2 && !G->chain[c] &&
	     hops < G->g.nclusters; hops++) {
		G->chain[c] = tag;
		c = fat_entry(G, G->work, c) & fatent_ops_for(G->g.fat_type)->mask;
	}
}

static void node_path(const struct mnode *n, char *out, size_t max);

struct slotdiff {
	int n;
	size_t off;
};

static void slot_diffs(struct slotdiff *sd, const uint8_t *a, const uint8_t *b, size_t base, size_t len)
{
	for (size_t i = 0; i < len; i += 32) {
		if (!memcmp(a + base + i, b + base + i, 32))
			continue;
		if (!sd->n++)
			sd->off = base + i;
	}
}

#define PATH_CAP 8192

static void compare_enospc(struct run *R, vfat_vol *v, size_t snap_end, int create)
{
	const struct geo *G = R->G;
	const struct fatent_ops *ops = fatent_ops_for(G->g.fat_type);
	const uint8_t *a = G->snap, *b = G->work;
	const struct mnode *f = R->m.fail_node;
	size_t fat0 = (size_t)G->g.fat_off, fat_end = fat0 + (size_t)G->g.nfats * G->g.fat_bytes;
	size_t fsi = (size_t)-1;
	struct slotdiff sd = { 0, 0 };
	struct vfat_stat st, ps;
	char path[PATH_CAP], ppath[PATH_CAP];
	int allowed = create ? (int)f->nslot : 1;

	node_path(f, path, sizeof(path));
	if (vfat_stat(v, path, &st))
		fail(R, "ENOSPC: stat %s failed after the op", path);
	memset(G->chain, 0, G->g.nclusters + 2);
	mark_chain(G, st.first_cluster, 1);
	if (create) {
		/* the new entry's directory may have grown for it */
		node_path(f->parent, ppath, sizeof(ppath));
		if (ppath[0] && vfat_stat(v, ppath, &ps))
			fail(R, "ENOSPC: stat %s failed after the op", ppath);
		mark_chain(G, ppath[0] ? ps.first_cluster : G->g.root_cluster, 2);
	}
	if (G->g.fat_type == 32 && G->g.fsinfo_sector)
		fsi = (size_t)G->g.fsinfo_sector * G->g.sector_size + 488;
	for (size_t i = 0; i < fat0; i++)
		if (a[i] != b[i] && (i < fsi || i >= fsi + 8))
			fail(R, "ENOSPC changed byte %zu (0x%02x -> 0x%02x) of the reserved sectors", i, a[i], b[i]);
	for (uint32_t k = 0; k < G->g.nfats; k++) {
		const uint8_t *fa = a + fat0 + (size_t)k * G->g.fat_bytes, *fb = b + fat0 + (size_t)k * G->g.fat_bytes;
		for (uint32_t c = 0; c < G->g.nclusters + 2; c++)
			if (ops->get(fa, c) != ops->get(fb, c) && (c < 2 || !G->chain[c]))
				fail(R, "ENOSPC changed FAT %u entry %u (0x%x -> 0x%x), not of %s's chain%s",
				     k, c, ops->get(fa, c), ops->get(fb, c), path, create ? " or its directory's" : "");
	}
	slot_diffs(&sd, a, b, fat_end, (size_t)G->g.data_off - fat_end);
	for (uint32_t c = 2; c <= G->g.nclusters + 1; c++) {
		size_t off = (size_t)G->g.data_off + (size_t)(c - 2) * G->g.cluster_size;
		if (off >= snap_end)
			break;
		/* free now, the file's, or (a create) a cluster its directory
		 * just took: the listing and vfat_check judge those */
		if (fat_entry(G, b, c) == 0 || G->chain[c] == 1 ||
		    (G->chain[c] == 2 && fat_entry(G, a, c) == 0))
			continue;
		slot_diffs(&sd, a, b, off, G->g.cluster_size);
	}
	if (sd.n > allowed)
		fail(R, "ENOSPC changed %d directory slots (or data outside %s), the first at byte %zu",
		     sd.n, path, sd.off);
	if (create)
		return;         /* the new entry's slots: the listing judged them */
	if (sd.n == 1) {
		const uint8_t *x = a + sd.off, *y = b + sd.off;
		if (memcmp(x, y, 11) || x[12] != y[12] || get32(y + 28) != f->size)
			fail(R, "ENOSPC changed the slot at byte %zu, which is not %s's entry at size %u",
			     sd.off, path, f->size);
	} else if (f->size != st.size) {
		fail(R, "ENOSPC: %s's size changed without its entry", path);
	}
}

/* ---- listing against the model ------------------------------------------- */

/* Scratch reused by every input, like the templates and the checker:
 * one entry array and match map per directory depth, one content
 * buffer and one path buffer, instead of a malloc per directory, file
 * and path (under ASan those took ~10% of the time, measured with perf).
 * Paths are built in place: the decoder bounds them far below PATH_CAP. */

struct level {
	struct vfat_dirent *e;
	size_t n, cap;
	uint8_t *matched;
	size_t mcap;
};

static struct level *levels;
static size_t nlevels;
static uint8_t *cbuf;
static size_t ccap;

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	while (*cap < need)
		*cap = *cap ? 2 * *cap : 16;
	p = realloc(p, *cap * elem);
	if (!p)
		abort();
	return p;
}

static struct level *level_at(size_t depth)
{
	if (depth >= nlevels) {
		size_t old = nlevels;
		levels = grow(levels, &nlevels, depth + 1, sizeof(*levels));
		memset(levels + old, 0, (nlevels - old) * sizeof(*levels));
	}
	return &levels[depth];
}

static int collect(void *ctx, const struct vfat_dirent *e)
{
	struct level *L = ctx;
	struct vfat_dirent *d;

	L->e = grow(L->e, &L->cap, L->n + 1, sizeof(*L->e));
	d = &L->e[L->n++];
	/* the fields, and the 1 KB name only up to its NUL */
	memcpy(d->name, e->name, strlen(e->name) + 1);
	memcpy(d->shortname, e->shortname, sizeof(d->shortname));
	d->attr = e->attr;
	d->ntcase = e->ntcase;
	d->first_cluster = e->first_cluster;
	d->size = e->size;
	d->nlfn = e->nlfn;
	d->is_dummy = e->is_dummy;
	d->mtime = e->mtime;
	d->atime = e->atime;
	d->crtime = e->crtime;
	return 0;
}

static int is_v3_bad(uint8_t b)
{
	static const uint8_t set[] = { 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x0B, 0x0C, 0x0E, 0x0F,
		0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x1B, 0x1C, 0x1D,
		0x1E, 0x1F, 0x22, 0x2A, 0x3A, 0x3C, 0x3E, 0x3F, 0x5B, 0x5D, 0x7C };
	return memchr(set, b, sizeof(set)) != NULL;
}

/* docs/write-paths.md's dummy shapes, checked without the core's predicates. */
static const char *dummy_problem(const struct run *R, const struct vfat_dirent *e)
{
	const uint8_t *s = e->shortname;

	if (R->in->opts.dummy == VFAT_DUMMY_V1) {
		uint32_t r = 0;
		if (s[0] != 0x20 || s[1] != 0 || s[8] != '/' || s[9] || s[10])
			return "v1 dummy is not 20 00 r r r r r r 2F 00 00";
		for (int i = 0; i < 6; i++) {
			if (s[2 + i] > 31)
				return "v1 dummy random byte above 31";
			r |= (uint32_t)s[2 + i] << (5 * i);
		}
		if (!r)
			return "v1 dummy with random number 0";
		if (e->ntcase)
			return "v1 dummy with a non-zero NT case byte";
		if (vfat_shortname_valid(s))
			return "v1 dummy is a valid short name";
		return NULL;
	}
	int tilde = 0, slash = 0;
	for (int i = 0; i < 8; i++) {
		if (s[i] == '~') tilde++;
		else if (s[i] == '/') slash++;
		else if (!is_v3_bad(s[i])) return "v3 dummy base byte outside the invalid set";
	}
	if (tilde != 1)
		return "v3 dummy without exactly one '~'";
	if (slash != ((e->attr & 0x10) ? 0 : 1))
		return "v3 dummy '/' count wrong for its type";
	if (e->ntcase != 0x20)
		return "v3 dummy NT byte is not 0x20";
	return NULL;
}

/* Append "/name" to the path in buf (length len); returns the new length. */
static size_t path_push(char *buf, size_t len, const char *name)
{
	size_t l = strlen(name);

	if (len + l + 2 > PATH_CAP)
		abort();   /* the decoder bounds paths well below this */
	buf[len] = '/';
	memcpy(buf + len + 1, name, l + 1);
	return len + 1 + l;
}

#ifdef FUZZ_OPS_CHECK_LAST
#define CHECK_EVERY_OP 0
#else
#define CHECK_EVERY_OP 1
#endif

static void check_content(struct run *R, vfat_vol *v, const char *path, struct mnode *k)
{
	uint8_t *buf;
	size_t got = 0;
	int r;

	buf = cbuf = grow(cbuf, &ccap, k->size ? k->size : 1, 1);
	r = vfat_read(v, path, 0, buf, k->size, &got);
	if (r || got != k->size)
		fail(R, "read %s: %s, %zu of %u bytes", path, vfat_errname(r), got, k->size);
	if (k->size && memcmp(buf, k->data, k->size))
		fail(R, "content of %s differs from the model", path);
	k->touched = 0;
}

/* path: a PATH_CAP buffer holding this directory's path ("" = root),
 * len its length; children are appended in place and cut off again. */
static void compare_dir(struct run *R, vfat_vol *v, char *path, size_t len, struct mnode *d,
			int all, int recurse, size_t depth)
{
	struct level *L = level_at(depth);
	uint8_t *matched;
	int r;

	L->n = 0;
	r = vfat_readdir(v, path[0] ? path : "/", collect, L);
	if (r)
		fail(R, "readdir %s: %s", path[0] ? path : "/", vfat_errname(r));
	if (L->n != d->nkids)
		fail(R, "%s: core lists %zu entries, model has %zu", path[0] ? path : "/", L->n, d->nkids);
	matched = L->matched = grow(L->matched, &L->mcap, d->nkids + 1, 1);
	memset(matched, 0, d->nkids + 1);
	for (size_t i = 0; i < L->n; i++) {
		const struct vfat_dirent *e = &L->e[i];
		struct mnode *k = NULL;
		size_t j;
		for (j = 0; j < d->nkids; j++) {
			if (!matched[j] && !strcmp(d->kids[j]->name, e->name)) {
				k = d->kids[j];
				matched[j] = 1;
				break;
			}
		}
		if (!k)
			fail(R, "%s: core lists \"%s\", which the model does not have", path[0] ? path : "/", e->name);
		int isdir = (e->attr & 0x10) != 0;
		if (isdir != k->is_dir)
			fail(R, "%s/%s: type differs (core dir=%d)", path, e->name, isdir);
		if (!isdir && e->size != k->size)
			fail(R, "%s/%s: size %u, model %u", path, e->name, e->size, k->size);
		if (e->attr != k->attr)
			fail(R, "%s/%s: attributes 0x%02x, model 0x%02x", path, e->name, e->attr, k->attr);
		if (k->times_known && (e->mtime.sec != k->mtime || e->atime.sec != k->atime))
			fail(R, "%s/%s: times %lld/%lld, model %lld/%lld", path, e->name,
			     (long long)e->mtime.sec, (long long)e->atime.sec,
			     (long long)k->mtime, (long long)k->atime);
		/* the short entry */
		if (k->pred_pending) {
			if (k->pred_short) {
				if (e->nlfn)
					fail(R, "%s/%s: a valid 8.3 name got LFN slots", path, e->name);
				if (memcmp(e->shortname, k->pred_sn, 11) || e->ntcase != k->pred_lcase)
					fail(R, "%s/%s: bare short entry differs from the name's 8.3 form", path, e->name);
			} else if (!e->nlfn) {
				fail(R, "%s/%s: a long name got no (valid) LFN slots", path, e->name);
			}
			k->pred_pending = 0;
		} else if (k->seen && (memcmp(e->shortname, k->sn, 11) || e->ntcase != k->ntcase ||
				       e->nlfn != k->nlfn)) {
			fail(R, "%s/%s: short entry or LFN slots of an untouched entry changed", path, e->name);
		}
		if (e->nlfn) {
			if (R->nodual) {
				const char *p = dummy_problem(R, e);
				if (p)
					fail(R, "%s/%s: %s", path, e->name, p);
			} else {
				if (e->is_dummy || !alias_valid(e->shortname))
					fail(R, "%s/%s: dual-mode alias is not a valid short name", path, e->name);
			}
		} else if (!vfat_shortname_valid(e->shortname) || e->is_dummy) {
			fail(R, "%s/%s: bare short entry is not a valid short name", path, e->name);
		}
		memcpy(k->sn, e->shortname, 11);
		k->ntcase = e->ntcase;
		k->nlfn = e->nlfn;
		k->seen = 1;
		if (!isdir && (all || (k->touched && CHECK_EVERY_OP))) {
			path_push(path, len, e->name);
			check_content(R, v, path, k);
			path[len] = 0;
		}
	}
	/* short entries unique in the directory (dummies too with --unique) */
	for (size_t i = 0; i < L->n; i++) {
		for (size_t j = i + 1; j < L->n; j++) {
			if (memcmp(L->e[i].shortname, L->e[j].shortname, 11))
				continue;
			if (R->allow_dummy_dup && L->e[i].nlfn && L->e[j].nlfn)
				continue;
			fail(R, "%s: \"%s\" and \"%s\" share a short entry", path[0] ? path : "/",
			     L->e[i].name, L->e[j].name);
		}
	}
	for (size_t i = 0; recurse && i < L->n; i++) {
		if (!(L->e[i].attr & 0x10))
			continue;
		struct mnode *k = NULL;
		for (size_t j = 0; j < d->nkids; j++)
			if (!strcmp(d->kids[j]->name, L->e[i].name))
				k = d->kids[j];
		size_t sub = path_push(path, len, L->e[i].name);
		compare_dir(R, v, path, sub, k, all, 1, depth + 1);
		path[len] = 0;
		L = level_at(depth);   /* the recursion may have moved the levels */
	}
}

/* "" for the root, else "/a/b" from the model's names (the names the
 * listing shows, which the core's lookup accepts). */
static void node_path(const struct mnode *n, char *out, size_t max)
{
	size_t len = 0;

	out[0] = 0;
	for (; n && n->parent; n = n->parent) {
		size_t l = strlen(n->name);
		if (len + l + 2 > max)
			abort();   /* the decoder bounds paths well below this */
		memmove(out + l + 1, out, len + 1);
		out[0] = '/';
		memcpy(out + 1, n->name, l);
		len += l + 1;
	}
}

/* After a successful op that is not the last: the directories the op
 * changed (model.changed: parents, new and moved directories), their
 * changed files' contents, and vfat_check of the whole image. After the
 * last op: the whole tree (every file's content is read on the fresh
 * mount that follows). Directories an op did not touch are compared
 * again at the end, so a stray write into one is still caught (and by
 * vfat_check at once when it breaks the structure). A failed op is
 * proven not to have changed the image. */
static void compare_after_op(struct run *R, vfat_vol *v, int last)
{
	char path[PATH_CAP];

	path[0] = 0;
	if (last) {
		compare_dir(R, v, path, 0, R->m.root, 0, 1, 0);
	} else {
		for (int i = 0; i < R->m.nchanged; i++) {
			node_path(R->m.changed[i], path, sizeof(path));
			compare_dir(R, v, path, strlen(path), R->m.changed[i], 0, 0, 0);
		}
	}
	if (CHECK_EVERY_OP)
		run_check(R);
}

/* ASan defaults for this target: a smaller quarantine keeps the
 * allocator's memory warm (large per-op allocations otherwise fault in
 * fresh pages every time); use-after-free of recent frees is still
 * caught. ASAN_OPTIONS overrides. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "quarantine_size_mb=16:malloc_context_size=10";
}

/* ---- start-up ------------------------------------------------------------- */

/* Every template is built before the first input: under AFL++ this runs
 * before the fork server starts, so each forked child inherits them
 * instead of building its own (a template is an mkfs and a vfat_check of
 * up to 17 MB: tens of ms under ASan, past AFL++'s calibrated timeout of
 * ~20 ms, so a child killed on a timeout was replaced by one that had to
 * build them again; measured: a new child every ~6 executions, ~220
 * exec/s). Only under afl-fuzz (it sets __AFL_SHM_ID): under libFuzzer
 * the templates stay lazy, as before, because building them up front
 * cost ~15-35 % of the checked ops per CPU-second in two A/B pairs of
 * 20 s (quiet machine, 2026-12-04; cause not found). */
int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const int types[] = { 12, 16, 32 };

	(void)argc;
	(void)argv;
	if (!getenv("__AFL_SHM_ID"))
		return 0;
	for (int t = 0; t < 4; t++)
		for (uint32_t cs = 512; cs <= 4096; cs *= 2)
			get_geo(types[t % 3], cs, t == 3);
	return 0;
}

/* ---- one input ------------------------------------------------------------ */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vfat_fuzz_input in;
	struct run R;
	vfat_vol *v;
	uint32_t hw;
	size_t snap_len = 0;    /* G->snap[0, snap_len) is the image before this op */
	int wrapped = 0, any_ok = 0;
	char err[200];

	if (vfat_fuzz_decode(data, size, &in))
		return 0;
	if (!count_inputs++ && getenv("VFAT_FUZZ_OPS_COUNT"))
		atexit(count_print);
	memset(&R, 0, sizeof(R));
	R.in = &in;
	R.G = get_geo(in.fat_type, in.cluster_bytes, in.tiny);
	R.nodual = in.opts.names == VFAT_NAMES_NODUAL;
	R.allow_dummy_dup = R.nodual && !in.opts.unique;
	model_init(&R.m, &in.opts, &R.G->sp);
	hw = R.G->base_hw;

	/* one mount for the whole script, as a kernel writer would keep it;
	 * FSInfo is flushed after every op so that the checker sees it */
	if (vfat_open(&v, R.G->work, R.G->size, &in.opts, err, sizeof(err)))
		fail(&R, "vfat_open: %s", err);
	for (R.opi = 0; R.opi < in.script.n; R.opi++) {
		const struct vfat_op *op = &in.script.ops[R.opi];
		size_t snap_end = R.G->whole ? R.G->size : end_of(R.G, hw + 1);
		int pred, r;
		uint32_t h0 = v->free_hint;

		R.op = op;
		pred = model_apply(&R.m, op);
		if (pred && CHECK_EVERY_OP && snap_len < snap_end) {
			memcpy(R.G->snap + snap_len, R.G->work + snap_len, snap_end - snap_len);
			snap_len = snap_end;
		}
		r = vfat_op_apply(v, op);
		if (r != pred)
			fail(&R, "core returned %s, model predicts %s", vfat_errname(r), vfat_errname(pred));
		if (v->free_hint < h0)
			wrapped = 1;    /* the allocator wrapped: restore everything */
		if (v->free_hint > hw)
			hw = v->free_hint;
		fat_update_fsinfo(v);
		if (r == 0) {
			compare_after_op(&R, v, R.opi + 1 == in.script.n), any_ok = 1;
			snap_len = 0;   /* the image changed: copy afresh */
		} else if (R.m.fail_changed) {
			/* ENOSPC part-way: the pages kept, and nothing else */
			compare_after_op(&R, v, R.opi + 1 == in.script.n), any_ok = 1;
			if (CHECK_EVERY_OP)
				compare_enospc(&R, v, snap_end, op->kind == OP_CREATE);
			snap_len = 0;
		} else if (CHECK_EVERY_OP) {
			compare_unchanged(&R, snap_end, r == -ENOSPC);
			if (r == -ENOSPC)
				snap_len = 0;   /* deleted copies of slots may be new: copy afresh */
		}
		count_ops++;
		count_checked += CHECK_EVERY_OP;
		count_nospc += r == -ENOSPC;
		count_kept += R.m.fail_changed;
	}
	vfat_close(v);
	if (any_ok) {
		/* a fresh mount sees the same tree: nothing lived only in the
		 * volume handle (directory index, free hint) */
		R.op = NULL;
		if (!CHECK_EVERY_OP)
			run_check(&R);
		if (vfat_open(&v, R.G->work, R.G->size, &in.opts, err, sizeof(err)))
			fail(&R, "re-open after the script: %s", err);
		char path[PATH_CAP] = "";
		compare_dir(&R, v, path, 0, R.m.root, 1, 1, 0);
		vfat_close(v);
	}

	/* back to the pristine template */
	memcpy(R.G->work, R.G->tmpl, wrapped || R.G->whole ? R.G->size : end_of(R.G, hw + 1));
	model_free(&R.m);
	vfat_fuzz_input_free(&in);
	return 0;
}
