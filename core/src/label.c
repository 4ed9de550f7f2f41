/* label.c - the volume label: 11 bytes in the boot sector's extended BPB
 * and a root-directory entry with ATTR_VOLUME. Linux's vfat never writes
 * either, so the rules are dosfstools' fatlabel (4.2), the tool whose
 * fsck.fat judges the result (docs/op-script.md "label"):
 *   - at most 11 characters, each printable ASCII: fatlabel's check reads
 *     the CP437 bytes as signed chars, so any byte >= 0x80 counts as a
 *     control character and is refused, as are " * + , . / : ; < = > ?
 *     [ \ ] |, a leading space and a label of spaces only (EINVAL);
 *     lower case is kept as given (fsck.fat only objects with -U);
 *   - the boot sector gets the label padded with spaces (an old boot
 *     sector without the 0x29 signature gets one, serial 0, "NO NAME" and
 *     the FAT type), and so does FAT32's backup boot sector;
 *   - the root's first live ATTR_VOLUME entry gets the new name, or a new
 *     entry takes the root's first free slot, as fat_add_entries places a
 *     one-slot entry (fatlabel would skip deleted LFN slots);
 *   - "" removes the label: "NO NAME    " in the boot sector and the
 *     entry deleted with its attributes cleared, as fatlabel -r does.
 */
#include "fat.h"

#define BOOT_LABEL_OFF(v) ((v)->g.fat_type == 32 ? 71 : 43)
#define BOOT_SIG_OFF(v) ((v)->g.fat_type == 32 ? 66 : 38)
#define NO_NAME "NO NAME    "

/* fatlabel's validate_volume_label on 11 padded bytes, without the
 * lowercase warning: 0 or -EINVAL. */
static int label_valid(const uint8_t l[11])
{
	static const char bad[] = "\"*+,./:;<=>?[\\]|";

	for (int i = 0; i < 11; i++)
		if (l[i] < 0x20 || l[i] >= 0x7F || strchr(bad, l[i]))
			return -EINVAL;
	if (l[0] == ' ')
		return -EINVAL;       /* also catches a label of spaces only */
	return 0;
}

static void write_boot(vfat_vol *v, uint8_t *b, const uint8_t l[11])
{
	int lo = BOOT_LABEL_OFF(v), so = BOOT_SIG_OFF(v);

	if (b[so] != 0x29) {
		b[so] = 0x29;
		put32(b + so + 1, 0);
		memcpy(b + lo, NO_NAME, 11);
		memcpy(b + lo + 11, v->g.fat_type == 32 ? "FAT32   " :
		       v->g.fat_type == 16 ? "FAT16   " : "FAT12   ", 8);
	}
	memcpy(b + lo, l, 11);
}

static void set_boot_label(vfat_vol *v, const uint8_t l[11])
{
	uint32_t bk;

	write_boot(v, v->buf, l);
	if (v->g.fat_type != 32)
		return;
	/* fatlabel writes the same 90 bytes to the backup boot sector */
	bk = get16(v->buf + 50);
	if (bk && bk < v->g.reserved && (uint64_t)(bk + 1) * v->g.sector_size <= v->size)
		memcpy(v->buf + (uint64_t)bk * v->g.sector_size, v->buf, 90);
}

/* The root's first live volume-label entry (fatlabel's find_volume_de):
 * its slot, or -1. The scan ends at the end-of-directory mark. */
static long find_label(struct fat_dir *d)
{
	for (size_t i = 0; i < d->nslots; i++) {
		uint8_t *de = dir_slot(d, i);
		if (de[0] == 0)
			return -1;
		if (de[0] != DELETED_FLAG && de[11] != ATTR_LFN && (de[11] & ATTR_VOLUME))
			return (long)i;
	}
	return -1;
}

static int set_root_label(vfat_vol *v, const uint8_t *l)
{
	struct fat_dir d;
	uint8_t slot[DIRENT_SIZE], *de;
	size_t pos;
	long at;
	int r = dir_open(v, 0, &d);

	if (r)
		return r;
	at = find_label(&d);
	if (!l) {
		if (at >= 0) {
			de = dir_slot(&d, (size_t)at);
			de[0] = DELETED_FLAG;
			de[11] = 0;
		}
	} else if (at >= 0) {
		memcpy(dir_slot(&d, (size_t)at), l, 11);
	} else {
		memset(slot, 0, sizeof(slot));
		memcpy(slot, l, 11);
		slot[11] = ATTR_VOLUME;
		fat_stamp_mtime(slot);
		memcpy(slot + 14, slot + 22, 2);   /* creation time = the time */
		memcpy(slot + 16, slot + 24, 2);   /* creation and access date */
		memcpy(slot + 18, slot + 24, 2);
		r = dir_add_slots(&d, slot, 1, &pos);
	}
	dir_close(&d);
	dix_invalidate(v, 0);   /* the root's index knows no label slots */
	return r;
}

int vfat_set_label(vfat_vol *v, const char *label)
{
	uint8_t l[11];
	size_t n = strlen(label);
	int r;

	if (n == 0) {
		r = set_root_label(v, NULL);
		if (r == 0)
			set_boot_label(v, (const uint8_t *)NO_NAME);
		return r;
	}
	if (n > 11)
		return -EINVAL;
	memset(l, ' ', sizeof(l));
	memcpy(l, label, n);
	r = label_valid(l);
	if (r)
		return r;
	/* the entry first: a full FAT12/16 root refuses before anything changes */
	r = set_root_label(v, l);
	if (r == 0)
		set_boot_label(v, l);
	return r;
}

int vfat_get_label(vfat_vol *v, uint8_t boot[11], int *has_boot,
		   uint8_t root[11], int *has_root)
{
	struct fat_dir d;
	long at;
	int r = dir_open(v, 0, &d);

	if (r)
		return r;
	*has_boot = v->buf[BOOT_SIG_OFF(v)] == 0x29;
	if (*has_boot)
		memcpy(boot, v->buf + BOOT_LABEL_OFF(v), 11);
	at = find_label(&d);
	*has_root = at >= 0;
	if (*has_root)
		memcpy(root, dir_slot(&d, (size_t)at), 11);
	dir_close(&d);
	return 0;
}
