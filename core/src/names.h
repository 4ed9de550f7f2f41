/* names.h - name policy of the core: pure functions, no volume access.
 *
 * Mirrors the Linux 6.1 fs/fat name code (namei_vfat.c, dir.c) with
 * Debian's mount defaults: codepage=437, iocharset=ascii, utf8,
 * shortname=mixed. The directory layer calls these; they never touch
 * an image, so they can be unit-tested and fuzzed on their own.
 */
#ifndef VFAT_NAMES_H
#define VFAT_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include "vfat.h"

#define VFAT_MAX_UNI 255     /* UTF-16 units in a long name */
#define VFAT_LFN_CHARS 13    /* UTF-16 units per LFN slot */
#define VFAT_MAX_SLOTS 20    /* ceil(255 / 13) */

/* Decode UTF-8 (strict: no overlongs, no surrogates, <= U+10FFFF) into
 * UTF-16 with surrogate pairs. -EINVAL on bad UTF-8, -ENAMETOOLONG when
 * more than max units would be needed. */
int vfat_utf8_to_utf16(const char *s, size_t len, uint16_t *out, size_t max,
		       size_t *outlen);

/* Encode UTF-16 into NUL-terminated UTF-8. An unpaired surrogate becomes
 * U+FFFD (a crafted image can hold any units). Returns bytes written
 * excluding the NUL, or -ENAMETOOLONG when max is too small. */
int vfat_utf16_to_utf8(const uint16_t *u, size_t n, char *out, size_t max);

/* The kernel's treatment of one path component before creating it:
 * trailing dots are stripped (vfat_striptail_len), then
 * vfat_valid_longname and xlate_to_uni's bad-character test apply.
 * Returns 0 and the UTF-16 name, or -EINVAL / -ENAMETOOLONG / -ENOENT
 * (empty after stripping, as the kernel answers). */
int vfat_prepare_longname(const char *name, size_t len, uint16_t *uname,
			  size_t *ulen);

/* Case-insensitive equality of two long names as the kernel compares
 * them with iocharset=ascii + utf8: only ASCII letters fold. */
int vfat_name_eq(const uint16_t *a, size_t alen, const uint16_t *b,
		 size_t blen);

/* LFN checksum of the 11 short-name bytes (rotate right, add). */
uint8_t vfat_lfn_checksum(const uint8_t sn[11]);

/* Callbacks the alias generator needs from the directory layer. */
struct vfat_alias_env {
	/* 1 when a short entry with exactly these 11 bytes exists in the
	 * target directory (the kernel's vfat_find_form). */
	int (*exists)(void *ctx, const uint8_t sn[11]);
	void *ctx;
	/* the seeded generator, standing in for jiffies and random32() */
	uint32_t (*rand32)(void *rctx);
	void *rctx;
};

/* vfat_create_shortname of Linux 6.1 for the given creation rule.
 * Returns 1 when the name is itself a valid short name under the rule
 * (no LFN slots; *lcase gets the NT case bits 0x08/0x10), 0 when LFN
 * slots are needed (out = the unique alias BASE~N.EXT, *lcase = 0),
 * or a negative errno (-EEXIST when the 8.3 form already exists). */
int vfat_create_shortname(const uint16_t *uname, size_t ulen,
			  enum vfat_shortname rule,
			  const struct vfat_alias_env *env, uint8_t out[11],
			  uint8_t *lcase);

/* The seed's dummy: 20 00 r0..r5 2F 00 00 from a 30-bit r (0 becomes 1),
 * r0 the low 5 bits. The caller passes rand32() & 0x3FFFFFFF. */
void vfat_dummy_v1(uint32_t r, uint8_t out[11]);

/* The July revision: rewrites out[0..7] ('~', for files '/', invalid
 * characters) drawing 32-bit numbers from rand32; out[8..10] (the alias
 * extension) are left as they are. The NT byte to store is 0x20. */
void vfat_dummy_v3(uint32_t (*rand32)(void *), void *rctx, int is_dir,
		   uint8_t out[11]);

/* Well-formedness tests used by the checker and the reader. */
int vfat_is_dummy_v1(const uint8_t sn[11]);
int vfat_is_dummy_v3(const uint8_t sn[11], uint8_t ntcase, int is_dir);

/* Is sn a valid stored short name (what fsck.fat accepts: no bad
 * characters, no lower case, no leading space, no inner spaces in base)? */
int vfat_shortname_valid(const uint8_t sn[11]);

/* Fill nslots*32 bytes of LFN slots for uname in on-disk order (the slot
 * with the highest ordinal and 0x40 first), padded with 0x0000 then
 * 0xFFFF as the kernel does. Returns the slot count. */
int vfat_build_lfn_slots(const uint16_t *uname, size_t ulen, uint8_t cksum,
			 uint8_t *slots);

/* Name of a short-only entry as the kernel (shortname=mixed display,
 * codepage 437) shows it: base, '.', extension, NT case bits applied,
 * 0x05 read as 0xE5. Returns the number of UTF-16 units. */
int vfat_shortname_to_utf16(const uint8_t sn[11], uint8_t ntcase,
			    uint16_t *out);

#endif /* VFAT_NAMES_H */
