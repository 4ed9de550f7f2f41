/* model_driver - the C model of fuzz_ops (model.c) on its own, for
 * tests/test_models_agree.py, which compares it with the Python model
 * (vfz/model/) op by op.
 *
 *   model_driver [--names nodual|dual] [--dummy v1|v3] [--unique]
 *                [--shortname mixed|winnt|win95|lower] [--seed N]
 *                [--image FILE] OPSCRIPT...
 *
 * Prints one JSON line per op of each script, in the form `vfat apply`
 * prints them plus the script's index and the core's own result:
 *   {"script": 0, "line": 3, "op": "create", "result": "EEXIST", "core": "EEXIST", "free": 17}
 * "result" is the model's prediction, "free" the model's free clusters
 * after the op. As in fuzz_ops, the core applies
 * the same ops alongside, each script to a fresh copy of the volume:
 * --image FILE's bytes (a small volume that fills: the model's capacity,
 * model.h, is read from it as fuzz_ops reads its template's), else a
 * 64 MiB FAT32 volume that never fills. After each op the model predicted
 * to succeed (or to fail with ENOSPC after keeping some pages) it
 * learns the short entries the core wrote from the core's listing of the
 * directories the op changed: the C model does not compute dual-mode
 * aliases, it takes them from the core (model.h). Errors in the
 * arguments or a script: one line on stderr, exit 2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vfat.h"
#include "opscript.h"
#include "model.h"

#define IMAGE_BYTES (64u << 20)
#define PATH_CAP 8192

static int die(const char *what, const char *arg)
{
	fprintf(stderr, "model_driver: %s%s\n", what, arg);
	return 2;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, got;

	if (!f)
		return NULL;
	do {
		if (n + 4096 > cap) {
			cap = 2 * cap + 4096;
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
	} while (got);
	fclose(f);
	*len = n;
	return buf;
}

/* "/a/b" of a model directory from its names ("" for the root). */
static void node_path(const struct mnode *n, char *out, size_t max)
{
	size_t len = 0;

	out[0] = 0;
	for (; n && n->parent; n = n->parent) {
		size_t l = strlen(n->name);
		if (len + l + 2 > max) {
			out[0] = 0;
			return;
		}
		memmove(out + l + 1, out, len + 1);
		out[0] = '/';
		memcpy(out + 1, n->name, l);
		len += l + 1;
	}
}

struct learn {
	struct mnode *dir;
};

/* One entry of the core's listing: the model entry of the same name
 * takes its short entry, as fuzz_ops' compare_dir records it. */
static int learn_entry(void *ctx, const struct vfat_dirent *e)
{
	struct mnode *d = ((struct learn *)ctx)->dir;

	for (size_t i = 0; i < d->nkids; i++) {
		struct mnode *k = d->kids[i];
		if (strcmp(k->name, e->name))
			continue;
		memcpy(k->sn, e->shortname, 11);
		k->ntcase = e->ntcase;
		k->nlfn = e->nlfn;
		k->seen = 1;
		k->pred_pending = 0;
		break;
	}
	return 0;
}

static void learn_changed(struct model *m, vfat_vol *v)
{
	char path[PATH_CAP];

	for (int i = 0; i < m->nchanged; i++) {
		struct learn L = { m->changed[i] };
		node_path(L.dir, path, sizeof(path));
		if (L.dir->parent && !path[0])
			continue;
		vfat_readdir(v, path[0] ? path : "/", learn_entry, &L);
	}
}

static int run_script(int idx, const char *file, const struct vfat_opts *o, uint8_t *img,
		      const uint8_t *blank, size_t bytes, const struct model_space *sp)
{
	struct vfat_script s;
	struct model m;
	vfat_vol *v;
	char err[300];
	size_t len;
	char *text = slurp(file, &len);

	if (!text)
		return die("cannot read op-script ", file);
	if (vfat_script_parse(text, len, &s, err, sizeof(err))) {
		free(text);
		fprintf(stderr, "model_driver: %s: %s\n", file, err);
		return 2;
	}
	free(text);
	memcpy(img, blank, bytes);
	if (vfat_open(&v, img, bytes, o, err, sizeof(err))) {
		vfat_script_free(&s);
		return die("vfat_open: ", err);
	}
	model_init(&m, o, sp);
	for (size_t i = 0; i < s.n; i++) {
		int pred = model_apply(&m, &s.ops[i]);
		int core = vfat_op_apply(v, &s.ops[i]);

		if (pred == 0 || m.fail_changed)
			learn_changed(&m, v);
		printf("{\"script\": %d, \"line\": %d, \"op\": \"%s\", \"result\": \"%s\", \"core\": \"%s\", "
		       "\"free\": %u}\n", idx, s.ops[i].line, vfat_op_name(s.ops[i].kind), vfat_errname(pred),
		       vfat_errname(core), m.free);
	}
	model_free(&m);
	vfat_close(v);
	vfat_script_free(&s);
	return 0;
}

int main(int argc, char **argv)
{
	struct vfat_opts o;
	struct vfat_mkfs_opts mo;
	uint8_t *blank = NULL, *img;
	char err[300];
	const char *image = NULL;
	size_t bytes = IMAGE_BYTES;
	struct model_space sp;
	int nfiles = 0, r = 0;
	const char **files = calloc((size_t)argc, sizeof(*files));

	if (!files)
		abort();
	vfat_opts_default(&o);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : "";
		if (!strcmp(a, "--names")) {
			if (!strcmp(val, "dual")) o.names = VFAT_NAMES_DUAL;
			else if (!strcmp(val, "nodual")) o.names = VFAT_NAMES_NODUAL;
			else return die("--names takes nodual or dual, not ", val);
			i++;
		} else if (!strcmp(a, "--dummy")) {
			if (!strcmp(val, "v1")) o.dummy = VFAT_DUMMY_V1;
			else if (!strcmp(val, "v3")) o.dummy = VFAT_DUMMY_V3;
			else return die("--dummy takes v1 or v3, not ", val);
			i++;
		} else if (!strcmp(a, "--unique")) {
			o.unique = 1;
		} else if (!strcmp(a, "--shortname")) {
			if (!strcmp(val, "mixed")) o.shortname = VFAT_SN_MIXED;
			else if (!strcmp(val, "winnt")) o.shortname = VFAT_SN_WINNT;
			else if (!strcmp(val, "win95")) o.shortname = VFAT_SN_WIN95;
			else if (!strcmp(val, "lower")) o.shortname = VFAT_SN_LOWER;
			else return die("--shortname takes mixed, winnt, win95 or lower, not ", val);
			i++;
		} else if (!strcmp(a, "--seed")) {
			char *end;
			o.seed = strtoull(val, &end, 10);
			if (!val[0] || *end)
				return die("bad --seed value ", val);
			i++;
		} else if (!strcmp(a, "--image")) {
			if (!val[0])
				return die("--image needs a FILE", "");
			image = val;
			i++;
		} else if (a[0] == '-' && a[1]) {
			return die("unknown option ", a);
		} else {
			files[nfiles++] = a;
		}
	}
	if (!nfiles)
		return die("usage: model_driver [apply options] OPSCRIPT...", "");
	if (image) {
		blank = (uint8_t *)slurp(image, &bytes);
		if (!blank)
			return die("cannot read image ", image);
	} else {
		blank = malloc(IMAGE_BYTES);
		if (!blank)
			abort();
		vfat_mkfs_opts_default(&mo);
		mo.fat_type = 32;
		if (vfat_mkfs(blank, IMAGE_BYTES, &mo, err, sizeof(err)))
			return die("mkfs: ", err);
	}
	img = malloc(bytes);
	if (!img)
		abort();
	if (model_space_read(&sp, blank, bytes))
		return die("not a usable FAT image: ", image ? image : "(built in)");
	for (int i = 0; i < nfiles && !r; i++)
		r = run_script(i, files[i], &o, img, blank, bytes, &sp);
	model_space_free(&sp);
	free(blank);
	free(img);
	free(files);
	return r;
}
