/* fuzzinput.h - fuzz input bytes -> write options + volume geometry +
 * op-script. Shared by harnesses/fuzz_ops.c and `vfat gen --from-input`,
 * so that any crash file of fuzz_ops replays with the CLI:
 *
 *     vfat gen --from-input CRASH --image IMG > ops.txt
 *     vfat apply IMG ops.txt $(sed -n 's/^# apply-options: //p' ops.txt)
 *
 * Layout of the input (every byte read past the end reads as 0, so any
 * byte string decodes, and short inputs are valid):
 *   byte 0   bit 0 dual names, bit 1 dummy v3, bit 2 unique dummies,
 *            bits 3-4 FAT type (0 12, 1 16, 2 32, 3 12),
 *            bits 5-6 cluster size 512 << n
 *   byte 1   shortname rule 1 + b % 4 (lower win95 winnt mixed)
 *   bytes 2-5 seed (little endian) of the volume's random generator
 *   then up to VFAT_FUZZ_MAX_OPS ops: one kind byte, then path specs and
 *   numbers (see fuzzinput.c). Kind bytes 0xE0-0xFF are the second
 *   grammar (truncate, chattr, touch, label by the low two bits); below,
 *   the first six ops as before; a mkdir kind byte with bit 3 set
 *   starts a chain of 7-10 more nested mkdirs (a tree 8+ deep), a create
 *   kind byte with bit 3 set is churn (the file unlinked and created again,
 *   its size from one more byte). Names come from every gen.h name class and
 *   from raw input bytes.
 *
 * The decoded ops are bounded (sizes, offsets, count). The FAT12, FAT16
 * and FAT32 geometries are large enough that a script rarely fills them;
 * the tiny FAT12 (bits 3-4 = 3: 40 clusters, a 32-slot root) fills within
 * a script, so ENOSPC is a correct outcome there (the harness's model
 * predicts it, harnesses/model.h "Capacity").
 */
#ifndef VFAT_FUZZINPUT_H
#define VFAT_FUZZINPUT_H
#include <stddef.h>
#include <stdint.h>
#include "vfat.h"
#include "opscript.h"

#define VFAT_FUZZ_MAX_OPS 24
#define VFAT_FUZZ_MAX_OFF 4096     /* x4 on the tiny volume */
#define VFAT_FUZZ_MAX_SIZE 8191    /* x8 on the tiny volume */

struct vfat_fuzz_input {
	struct vfat_opts opts;
	int fat_type;             /* 12, 16 or 32 */
	uint32_t cluster_bytes;   /* 512 .. 4096 */
	int tiny;                 /* FAT12 of 40 clusters and 32 root slots: it fills within a script */
	struct vfat_script script;
};

/* Decode; 0 or -ENOMEM. Free with vfat_fuzz_input_free. */
int vfat_fuzz_decode(const uint8_t *data, size_t size,
		     struct vfat_fuzz_input *in);
void vfat_fuzz_input_free(struct vfat_fuzz_input *in);

/* Bytes of the template image for a geometry. */
size_t vfat_fuzz_image_size(int fat_type, uint32_t cluster_bytes, int tiny);

/* Format the template (buf of vfat_fuzz_image_size bytes): vfat_mkfs for
 * FAT12/16; for FAT32 a vfat_mkfs FAT32 volume shrunk to 2048 clusters
 * (as mkfs.fat -F 32 makes on small media, with its warning) so that a
 * check stays cheap. 0 or -EINVAL with err. */
int vfat_fuzz_make_image(int fat_type, uint32_t cluster_bytes, int tiny, uint8_t *buf,
			 size_t size, char *err, size_t errlen);

/* "--names dual --dummy v1 --shortname mixed --seed N [--unique]" */
void vfat_fuzz_format_options(const struct vfat_fuzz_input *in, char *out,
			      size_t max);
#endif
