/* check_label.c - the volume label's two copies, judged as fsck.fat 4.2
 * judges them (check.c check_label and validate_volume_label of
 * dosfstools, which reads its tests/check-label-*.fsck images):
 *
 *   - the boot sector's label is its 11 bytes when the extended BPB
 *     signature 0x29 is there, else empty (fsck.fat then reads 11 NUL
 *     bytes, and calls them an invalid label);
 *   - the root's label is its first live ATTR_VOLUME entry before the
 *     end-of-directory mark (a leading 0x05 stands for 0xE5);
 *   - a label is invalid with a byte below 0x20 or above 0x7E (fsck.fat
 *     reads signed chars: 0x80-0xFF are "below 0x20"), one of
 *     "*+,./:;<=>?[\]|, a leading space, or spaces only; lower case is
 *     only fsck.fat -U's business;
 *   - "NO NAME    " in the boot sector means no label.
 * Findings (kind "label"): an invalid boot label with no root entry, a
 * boot label without a root entry, an invalid root label, a root label
 * with "NO NAME" in the boot sector, and two labels that differ.
 */
#include <stdio.h>
#include "check.h"

static const uint8_t no_name[11] = "NO NAME    ";

static int label_invalid(const uint8_t l[11])
{
	static const char bad[] = "\"*+,./:;<=>?[\\]|";
	int spaces = 0;

	for (int i = 0; i < 11; i++) {
		if (l[i] < 0x20 || l[i] > 0x7E || (l[i] && strchr(bad, l[i])))
			return 1;
		spaces += l[i] == ' ';
	}
	return spaces == 11 || l[0] == ' ';
}

/* The label's bytes as fsck.fat prints them: trailing spaces dropped,
 * anything not printable ASCII as '_'. */
static void shown(const uint8_t l[11], char out[12])
{
	int n = 11;

	while (n > 0 && l[n - 1] == ' ')
		n--;
	for (int i = 0; i < n; i++)
		out[i] = (l[i] >= 0x20 && l[i] < 0x7F) ? (char)l[i] : '_';
	out[n] = 0;
}

void ck_label(struct ck *k)
{
	int so = k->g.fat_type == 32 ? 66 : 38, lo = k->g.fat_type == 32 ? 71 : 43;
	uint8_t boot[11] = { 0 }, root[11];
	char b[12], r[12];

	if (k->buf[so] == 0x29)
		memcpy(boot, k->buf + lo, 11);
	shown(boot, b);
	if (!k->has_root_label) {
		if (!memcmp(boot, no_name, 11))
			return;
		if (label_invalid(boot))
			ck_finding(k, "label", ROOT_OBJ, NULL,
				   "label '%s' in the boot sector is not valid", b);
		else
			ck_finding(k, "label", ROOT_OBJ, NULL,
				   "label '%s' in the boot sector, no volume label entry in the root", b);
		return;
	}
	memcpy(root, k->root_label, 11);
	if (root[0] == 0x05)
		root[0] = 0xE5;
	shown(root, r);
	if (label_invalid(root)) {
		ck_finding(k, "label", ROOT_OBJ, NULL,
			   "volume label '%s' in the root is not valid", r);
		return;
	}
	if (!memcmp(boot, no_name, 11)) {
		if (memcmp(root, no_name, 11))
			ck_finding(k, "label", ROOT_OBJ, NULL,
				   "volume label '%s' in the root, 'NO NAME' in the boot sector", r);
		return;
	}
	if (memcmp(boot, root, 11))
		ck_finding(k, "label", ROOT_OBJ, NULL,
			   "volume label '%s' in the root, '%s' in the boot sector", r, b);
}
