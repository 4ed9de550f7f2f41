/* fuzz_names - one name through the whole name pipeline of names.h:
 *   vfat_prepare_longname -> vfat_create_shortname (every shortname= rule)
 *   -> vfat_build_lfn_slots -> v1 and v3 dummies -> parse the slots back.
 * Asserted for every input (abort with one line on a violation):
 *   - prepare_longname fails only with ENOENT/EINVAL/ENAMETOOLONG, and
 *     on success UTF-16 -> UTF-8 gives back the stripped input bytes;
 *   - case-insensitive equality holds between the name and its ASCII
 *     case-flipped form, and fails against a name one unit different;
 *   - a bare 8.3 result is a valid short name that did not exist yet and
 *     displays as the name itself (ASCII names); an alias is a valid
 *     short name (0x7F allowed: the kernel copies DEL) that did not exist;
 *   - the slot count is ceil(len / 13); the slots parse back (ordinals,
 *     0x40 on the first, attribute 0x0F, type 0, cluster 0, checksum of
 *     the short entry in every slot, 0x0000 then 0xFFFF padding) to the
 *     very same UTF-16 name; the checksum matches an independent one;
 *   - v1 dummies are 20 00 r r r r r r 2F 00 00 with r != 0 and no valid
 *     short name; v3 dummies have one '~', one '/' for files only, the
 *     other base bytes from the invalid set, the alias extension kept.
 * Input: byte 0 = flags (bits 0-1: how many short names "exist" already,
 * bit 2: directory), bytes 1-4 = random seed, the rest = the name.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vfat.h"
#include "names.h"

#define FAIL(...) do { fprintf(stderr, "fuzz_names: VIOLATION: " __VA_ARGS__); fputc('\n', stderr); abort(); } while (0)

struct env_ctx {
	uint64_t rng;
	int exist_mod;    /* a short name "exists" when its hash % mod == 0 */
};

static uint32_t rand32(void *p)
{
	struct env_ctx *c = p;
	uint64_t z = (c->rng += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return (uint32_t)((z ^ (z >> 31)) >> 32);
}

static int exists(void *p, const uint8_t sn[11])
{
	struct env_ctx *c = p;
	uint32_t h = 2166136261u;
	if (!c->exist_mod)
		return 0;
	for (int i = 0; i < 11; i++)
		h = (h ^ sn[i]) * 16777619u;
	/* the bare 8.3 forms and the first tails exist more often */
	return (h % (uint32_t)c->exist_mod) == 0;
}

static uint8_t my_checksum(const uint8_t sn[11])
{
	unsigned s = 0;
	for (int i = 0; i < 11; i++)
		s = (((s & 1) << 7) | (s >> 1)) + sn[i], s &= 0xFF;
	return (uint8_t)s;
}

static int v3_bad(uint8_t b)
{
	static const uint8_t set[] = { 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x0B, 0x0C, 0x0E, 0x0F,
		0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x1B, 0x1C, 0x1D,
		0x1E, 0x1F, 0x22, 0x2A, 0x3A, 0x3C, 0x3E, 0x3F, 0x5B, 0x5D, 0x7C };
	return memchr(set, b, sizeof(set)) != NULL;
}

static int alias_valid(const uint8_t sn[11])
{
	uint8_t t[11];
	for (int i = 0; i < 11; i++)
		t[i] = sn[i] == 0x7F ? 'X' : sn[i];
	return vfat_shortname_valid(t);
}

static void check_slots(const uint16_t *u, size_t ulen, const uint8_t sn[11])
{
	uint8_t slots[(VFAT_MAX_SLOTS + 1) * 32];
	static const uint8_t off[13] = { 1, 3, 5, 7, 9, 14, 16, 18, 20, 22, 24, 28, 30 };
	uint16_t back[VFAT_MAX_SLOTS * 13];
	uint8_t ck = vfat_lfn_checksum(sn);
	int n, want = (int)((ulen + 12) / 13);

	if (ck != my_checksum(sn))
		FAIL("vfat_lfn_checksum %02x, independent %02x", ck, my_checksum(sn));
	memset(slots, 0xAB, sizeof(slots));
	n = vfat_build_lfn_slots(u, ulen, ck, slots);
	if (n != want)
		FAIL("%zu units need %d LFN slots, vfat_build_lfn_slots made %d", ulen, want, n);
	for (int i = 0; i < n; i++) {
		const uint8_t *s = slots + 32 * i;
		int ord = n - i;
		if ((s[0] & 0x3F) != ord || ((s[0] & 0x40) != 0) != (i == 0) || (s[0] & 0x80))
			FAIL("slot %d: ordinal byte 0x%02x, want %d%s", i, s[0], ord, i ? "" : "|0x40");
		if (s[11] != 0x0F || s[12] != 0 || s[26] || s[27])
			FAIL("slot %d: attribute/type/cluster bytes wrong", i);
		if (s[13] != ck)
			FAIL("slot %d: checksum 0x%02x, want 0x%02x", i, s[13], ck);
		for (int k = 0; k < 13; k++)
			back[(ord - 1) * 13 + k] = (uint16_t)(s[off[k]] | s[off[k] + 1] << 8);
	}
	for (size_t i = 0; i < (size_t)n * 13; i++) {
		uint16_t want_u = i < ulen ? u[i] : i == ulen ? 0x0000 : 0xFFFF;
		if (back[i] != want_u)
			FAIL("LFN unit %zu reads back 0x%04x, want 0x%04x", i, back[i], want_u);
	}
}

static void check_dummies(struct env_ctx *ec, const uint8_t alias[11], int is_dir)
{
	uint8_t d[11];
	uint32_t r = rand32(ec) & 0x3FFFFFFF, got = 0;

	vfat_dummy_v1(r, d);
	if (d[0] != 0x20 || d[1] || d[8] != '/' || d[9] || d[10])
		FAIL("v1 dummy shape wrong");
	for (int i = 0; i < 6; i++) {
		if (d[2 + i] > 31)
			FAIL("v1 dummy byte %d above 31", 2 + i);
		got |= (uint32_t)d[2 + i] << (5 * i);
	}
	if (got != (r ? r : 1))
		FAIL("v1 dummy encodes %u, drawn %u", got, r);
	if (!vfat_is_dummy_v1(d) || vfat_shortname_valid(d))
		FAIL("v1 dummy not recognised, or a valid short name");

	memcpy(d, alias, 11);
	vfat_dummy_v3(rand32, ec, is_dir, d);
	int tilde = 0, slash = 0;
	for (int i = 0; i < 8; i++) {
		if (d[i] == '~') tilde++;
		else if (d[i] == '/') slash++;
		else if (!v3_bad(d[i])) FAIL("v3 dummy base byte 0x%02x outside the invalid set", d[i]);
	}
	if (tilde != 1 || slash != (is_dir ? 0 : 1))
		FAIL("v3 dummy has %d '~' and %d '/' (dir=%d)", tilde, slash, is_dir);
	if (memcmp(d + 8, alias + 8, 3))
		FAIL("v3 dummy lost the alias extension");
	if (!vfat_is_dummy_v3(d, 0x20, is_dir))
		FAIL("v3 dummy not recognised by vfat_is_dummy_v3");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint16_t u[VFAT_MAX_UNI + 2], flip[VFAT_MAX_UNI + 2], disp[16];
	char back[VFAT_MAX_UNI * 4 + 8];
	size_t ulen, len;
	const char *name;
	struct env_ctx ec;
	int r, ascii = 1;

	if (size < 5)
		return 0;
	ec.rng = (uint64_t)data[1] | (uint64_t)data[2] << 8 | (uint64_t)data[3] << 16 | (uint64_t)data[4] << 24;
	ec.exist_mod = (data[0] & 3) ? 1 << (2 * (data[0] & 3) - 1) : 0;   /* 0, 2, 8, 32 */
	int is_dir = (data[0] >> 2) & 1;
	name = (const char *)data + 5;
	len = size - 5;

	r = vfat_prepare_longname(name, len, u, &ulen);
	if (r) {
		if (r != -ENOENT && r != -EINVAL && r != -ENAMETOOLONG)
			FAIL("prepare_longname returned %d", r);
		return 0;
	}
	if (ulen == 0 || ulen > VFAT_MAX_UNI)
		FAIL("prepare_longname gave %zu units", ulen);
	/* round trip to UTF-8: the input without its trailing dots */
	while (len && name[len - 1] == '.')
		len--;
	int bl = vfat_utf16_to_utf8(u, ulen, back, sizeof(back));
	if (bl < 0 || (size_t)bl != len || memcmp(back, name, len))
		FAIL("UTF-8 -> UTF-16 -> UTF-8 does not give the name back");
	/* case-insensitive equality, ASCII only */
	for (size_t i = 0; i < ulen; i++) {
		uint16_t c = u[i];
		flip[i] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) ? (uint16_t)(c ^ 0x20) : c;
		if (c >= 0x80)
			ascii = 0;
	}
	if (!vfat_name_eq(u, ulen, flip, ulen))
		FAIL("name and its ASCII case flip compare unequal");
	flip[ulen - 1] = (uint16_t)(u[ulen - 1] ^ 0x100);
	if (vfat_name_eq(u, ulen, flip, ulen))
		FAIL("names differing in a non-case unit compare equal");

	for (int rule = VFAT_SN_LOWER; rule <= VFAT_SN_MIXED; rule++) {
		struct vfat_alias_env env = { exists, &ec, rand32, &ec };
		uint8_t sn[11], lcase = 0xEE;
		r = vfat_create_shortname(u, ulen, (enum vfat_shortname)rule, &env, sn, &lcase);
		if (r < 0) {
			if (r != -EEXIST && r != -EINVAL)
				FAIL("create_shortname (rule %d) returned %d", rule, r);
			continue;
		}
		if (exists(&ec, sn))
			FAIL("create_shortname (rule %d) chose a short name that exists", rule);
		if (r == 1) {
			if (!vfat_shortname_valid(sn))
				FAIL("bare 8.3 entry (rule %d) is not a valid short name", rule);
			if (lcase & ~(uint8_t)0x18)
				FAIL("NT case byte 0x%02x", lcase);
			int dn = vfat_shortname_to_utf16(sn, lcase, disp);
			if (ascii && (dn != (int)ulen || memcmp(disp, u, ulen * 2)))
				FAIL("bare 8.3 entry (rule %d) does not display as the name", rule);
			if (ascii && dn > 0 && !vfat_name_eq(disp, (size_t)dn, u, ulen))
				FAIL("bare 8.3 entry (rule %d) does not match the name", rule);
			continue;
		}
		if (r != 0)
			FAIL("create_shortname returned %d", r);
		if (lcase != 0)
			FAIL("alias with NT case byte 0x%02x", lcase);
		if (!alias_valid(sn))
			FAIL("alias (rule %d) is not a valid short name", rule);
		check_slots(u, ulen, sn);
		check_dummies(&ec, sn, is_dir);
	}
	return 0;
}
