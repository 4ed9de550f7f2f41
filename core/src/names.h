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
 * U+FFFD (a crafted image can hold any units; note the kernel's
 * utf16s_to_utf8s drops such units instead). A 0x0000 unit ends the name.
 * Returns bytes written excluding the NUL, or -ENAMETOOLONG when max is
 * too small. */
int vfat_utf16_to_utf8(const uint16_t *u, size_t n, char *out, size_t max);

/* The kernel's treatment of one path component before creating it:
 * trailing dots are stripped (vfat_striptail_len; -ENOENT when nothing is
 * left, e.g. "", "." or "..." -- the caller handles "." and ".." first),
 * then xlate_to_uni (UTF-8 -> UTF-16: -EINVAL bad UTF-8, -ENAMETOOLONG
 * beyond VFAT_MAX_UNI units) and vfat_is_used_badchars (-EINVAL for
 * control characters, * ? < > | " : / \ and a trailing space). Linux 6.1
 * has no vfat_valid_longname. A NUL byte gives -EINVAL. uname must hold
 * VFAT_MAX_UNI units. */
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
	/* the seeded generator standing in for jiffies (the hex tail only;
	 * the dummies draw from a stream of their own) */
	uint32_t (*rand32)(void *rctx);
	void *rctx;
};

/* vfat_create_shortname of Linux 6.1 for the given creation rule.
 * Returns 1 when the name is itself a valid short name under the rule
 * (no LFN slots; *lcase gets the NT case bits 0x08/0x10), 0 when LFN
 * slots are needed (*lcase = 0; out = the alias: the upper-cased 8.3 form
 * itself when the name fits 8.3 but not the case rule, e.g. "readme.txt"
 * under mixed, else the unique BASE~N.EXT or the hex form BA####~D.EXT),
 * or a negative errno (-EEXIST when the 8.3 form already exists, -EINVAL
 * for an empty base or unknown rule, -ENOSPC when all 65536 hex tails
 * exist, where the kernel would loop forever). env->exists may be NULL
 * (empty directory). Verified against the real kernel by
 * tests/test_names_kernel.py. The hex tail calls env->rand32 exactly twice, standing in
 * for the kernel's two reads of jiffies: first the number, then the
 * digit ((r >> 16) & 7). */
int vfat_create_shortname(const uint16_t *uname, size_t ulen,
			  enum vfat_shortname rule,
			  const struct vfat_alias_env *env, uint8_t out[11],
			  uint8_t *lcase);

/* The seed's dummy: 20 00 r0..r5 2F 00 00 from a 30-bit r (0 becomes 1),
 * r0 the low 5 bits. The caller passes rand32() & 0x3FFFFFFF. */
void vfat_dummy_v1(uint32_t r, uint8_t out[11]);

/* The July revision: rewrites out[0..7] ('~', for files '/', invalid
 * characters) drawing 32-bit numbers from rand32; out[8..10] (the alias
 * extension) are left as they are. The NT byte to store is 0x20.
 * Draws: r = rand32(); '~' at t = r % 8, r >>= 3; files: '/' at
 * (t + 1 + r % 7) % 8, r >>= 3; each other byte, left to right, is the
 * (r % 35)-th of docs/write-paths.md's 35 invalid bytes, r /= 35, and r = rand32()
 * whenever r < 35 after a division (also after the last one). */
void vfat_dummy_v3(uint32_t (*rand32)(void *), void *rctx, int is_dir,
		   uint8_t out[11]);

/* Well-formedness tests used by the checker and the reader. v1: exactly
 * the seed's layout with a non-zero r. v3: NT byte with 0x20 set, one '~'
 * in the base, one '/' for files and none for directories, every other
 * base byte one of the 35; the extension is not checked. */
int vfat_is_dummy_v1(const uint8_t sn[11]);
int vfat_is_dummy_v3(const uint8_t sn[11], uint8_t ntcase, int is_dir);

/* Is sn a valid stored short name as fsck.fat 4.2 (defaults) judges it:
 * no byte < 0x20 (except 0x05 at byte 0), no 0x7F, none of
 * * ? < > | " \ / : . and no leading space. Lower case, inner spaces and
 * bytes >= 0x80 are accepted. The NT-byte 0x20 exemption fsck.fat grants
 * is not applied here (see vfat_is_dummy_v3). */
int vfat_shortname_valid(const uint8_t sn[11]);

/* Fill nslots*32 bytes of LFN slots for uname in on-disk order (the slot
 * with the highest ordinal and 0x40 first), padded with 0x0000 then
 * 0xFFFF as the kernel does. Returns the slot count (ceil(ulen/13)), or
 * -EINVAL for ulen 0, -ENAMETOOLONG beyond VFAT_MAX_UNI. */
int vfat_build_lfn_slots(const uint16_t *uname, size_t ulen, uint8_t cksum,
			 uint8_t *slots);

/* Name of a short-only entry as the kernel (shortname=mixed display,
 * codepage 437) shows it: base, '.', extension, NT case bits applied,
 * 0x05 read as 0xE5. out must hold 12 units. Returns the number of
 * UTF-16 units, 0 when there is no non-space byte (the kernel skips the
 * entry). */
int vfat_shortname_to_utf16(const uint8_t sn[11], uint8_t ntcase,
			    uint16_t *out);

/* The same for the display half of any shortname= rule: lower shows
 * everything in lower case, win95 nothing, winnt and mixed follow the
 * NT case bits. */
int vfat_shortname_to_utf16_rule(const uint8_t sn[11], uint8_t ntcase,
				 enum vfat_shortname rule, uint16_t *out);

#endif /* VFAT_NAMES_H */
