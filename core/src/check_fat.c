/* check_fat.c - the structural checker's view of the FAT: the volume
 * head (media byte, end-of-chain and clean marks, the FAT32 backup boot
 * sector, the FAT copies), the chains of every object (range, loops,
 * cross-links, free and bad clusters, length against the size), and after
 * the walk the free count, the lost clusters and FAT32's FSInfo.
 *
 * Every cluster has at most one owner (k->owner): claiming a chain is
 * what detects loops and cross-links, and what makes the walk linear.
 */
#include <stdio.h>
#include <string.h>
#include "check.h"

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
		ck_finding(k, "fat-media", ROOT_OBJ, NULL,
			   "media byte 0x%02x in the boot sector is invalid", media);
	if (f0 != want0)
		ck_finding(k, "fat-media", ROOT_OBJ, NULL,
			   "FAT[0] is 0x%x, expected 0x%x for media 0x%02x",
			   f0, want0, media);
	if ((f1 | flags) < k->eoc_min)
		ck_finding(k, "fat-eoc", ROOT_OBJ, NULL,
			   "FAT[1] is 0x%x, not an end-of-chain mark", f1);
	/* the clean-shutdown bit of FAT[1] (FAT16/32) and bit 0 of the boot
	 * sector's state byte, which Linux sets while mounted */
	else if (clean_bit && !(f1 & clean_bit))
		ck_finding(k, "dirty", ROOT_OBJ, NULL,
			   "FAT[1] is 0x%x: clean-shutdown bit clear", f1);
	if (k->buf[k->g.fat_type == 32 ? 65 : 37] & 1)
		ck_finding(k, "dirty", ROOT_OBJ, NULL,
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
		ck_finding(k, "boot-backup", ROOT_OBJ, NULL,
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
		ck_finding(k, "boot-backup", ROOT_OBJ, NULL,
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
			ck_finding(k, "fat-copies", ROOT_OBJ, NULL,
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
		ck_finding(k, "fsinfo", ROOT_OBJ, NULL, "no FSInfo sector");
		return;
	}
	if (raw >= k->g.reserved || !k->g.fsinfo_sector) {
		ck_finding(k, "fsinfo", ROOT_OBJ, NULL,
			   "FSInfo sector %u outside the %u reserved sectors",
			   raw, k->g.reserved);
		return;
	}
	if ((uint64_t)(raw + 1) * k->g.sector_size > k->size)
		return;  /* cannot happen: reserved sectors lie in the image */
	fi = k->buf + (uint64_t)raw * k->g.sector_size;
	if (get32(fi) != 0x41615252 || get32(fi + 484) != 0x61417272 ||
	    get32(fi + 508) != 0xAA550000) {
		ck_finding(k, "fsinfo", ROOT_OBJ, NULL,
			   "bad FSInfo signatures 0x%08x 0x%08x 0x%08x",
			   get32(fi), get32(fi + 484), get32(fi + 508));
		return;
	}
	cnt = get32(fi + 488);
	hint = get32(fi + 492);
	if (cnt != 0xFFFFFFFFu && cnt != nfree)
		ck_finding(k, "fsinfo", ROOT_OBJ, NULL,
			   "free cluster count %u, really %u", cnt, nfree);
	if (hint != 0xFFFFFFFFu && (hint < 2 || hint > k->maxc))
		ck_finding(k, "fsinfo", ROOT_OBJ, NULL,
			   "next-free hint %u outside 2..%u", hint, k->maxc);
}

/* ---- chains ------------------------------------------------------------ */

/* Claim the chain of object id for it. Returns 1 when the chain ended
 * cleanly with an end-of-chain mark, 0 when it was cut by an error
 * (already reported). */
int ck_claim_chain(struct ck *k, uint32_t id, int is_root)
{
	struct obj *o = &k->objs[id];
	uint32_t c = o->first, n = 0, v;
	int ok = 0;

	if (c < 2 || c > k->maxc) {
		ck_finding(k, is_root ? "root-cluster" : "cluster-range", id, NULL,
			   "first cluster %u outside 2..%u", c, k->maxc);
		o->nclaimed = 0;
		return 0;
	}
	for (;;) {
		if (k->owner[c] == id) {
			ck_finding(k, "chain-loop", id, NULL,
				   "chain loops back to cluster %u after %u clusters", c, n);
			break;
		}
		if (k->owner[c] != 0) {
			ck_render_path(k, k->owner[c], NULL, k->path2, sizeof(k->path2));
			ck_finding(k, "cross-link", id, NULL,
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
			ck_finding(k, is_root && n == 1 ? "root-cluster" : "chain-free",
				   id, NULL, "cluster %u in the chain is marked free", c);
			break;
		}
		if (v == k->ops->bad) {
			ck_finding(k, is_root && n == 1 ? "root-cluster" : "chain-bad",
				   id, NULL, "cluster %u in the chain is marked bad", c);
			break;
		}
		if (v < 2 || v > k->maxc) {
			ck_finding(k, "cluster-range", id, NULL,
				   "cluster %u points to 0x%x, outside 2..%u", c, v, k->maxc);
			break;
		}
		c = v;
	}
	/* re-read safely: claimed clusters are c0..c(n-1) along the FAT */
	k->objs[id].nclaimed = n;
	return ok;
}

void ck_file_chain(struct ck *k, uint32_t id, uint32_t size)
{
	uint64_t need = ((uint64_t)size + k->g.cluster_size - 1) / k->g.cluster_size;
	uint32_t n;

	if (!ck_claim_chain(k, id, 0))
		return;
	n = k->objs[id].nclaimed;
	if (n > need)
		ck_finding(k, "chain-long", id, NULL,
			   "%u clusters for %u bytes (needs %llu)", n, size,
			   (unsigned long long)need);
	else if (n < need)
		ck_finding(k, "chain-short", id, NULL,
			   "size %u bytes exceeds its %u clusters (%llu bytes)", size, n,
			   (unsigned long long)n * k->g.cluster_size);
}

/* ---- after the walk ---------------------------------------------------- */

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

/* ---- the checker's calls ---------------------------------------------- */

/* Before the walk: the boot sector's and the FAT's own fields. */
void ck_fat_before_walk(struct ck *k)
{
	check_fat_head(k);
	check_boot_backup(k);
	check_fat_copies(k);
}

/* After the walk, when every reachable cluster has its owner. */
void ck_fat_after_walk(struct ck *k)
{
	uint32_t nfree = 0, nlost = 0, firstlost = 0;

	count_free_lost(k, &nfree, &nlost, &firstlost);
	if (nlost)
		ck_finding(k, "lost-clusters", ROOT_OBJ, NULL,
			   "%u clusters allocated but not reachable (first %u)",
			   nlost, firstlost);
	check_fsinfo(k, nfree);
}
