/* check_lfn.c - the structural checker's reading of long name sets, as
 * fat_parse_long reads them: slots in descending order from a first slot
 * (0x40), one checksum across the set, which must match the short entry
 * that closes it; then the name's terminator, padding, length and
 * characters. A set cut short (a free or deleted entry, a label, a dot
 * entry, the directory's end) is an orphan; a bad slot breaks the set
 * until the next first slot.
 */
#include "check.h"

static void slot_units(const uint8_t *de, uint16_t *u)
{
	static const uint8_t off[13] = { 1, 3, 5, 7, 9, 14, 16, 18, 20, 22, 24, 28, 30 };

	for (int i = 0; i < 13; i++)
		u[i] = get16(de + off[i]);
}

static int lfn_char_invalid(uint16_t c)
{
	return c < 0x20 || c == '*' || c == '?' || c == '<' || c == '>' ||
	       c == '|' || c == '"' || c == ':' || c == '/' || c == '\\';
}

/* Entry at ends the open set, if any, before its short entry. */
void ck_lfn_interrupt(struct ck *k, uint32_t dir, struct lfn_set *s,
		      size_t at, const char *why)
{
	if (s->st == LFN_OPEN)
		ck_finding(k, "lfn-orphan", dir, NULL,
			   "long name slots at %zu..%zu %s", s->start, at - 1, why);
	s->st = LFN_NONE;
}

/* Long name slot i (de) of directory dir: opens, continues or breaks s. */
void ck_lfn_slot(struct ck *k, uint32_t dir, struct lfn_set *s,
		 const uint8_t *de, size_t i)
{
	uint8_t b0 = de[0];
	int ord = b0 & 0x3F;

	if (get16(de + 26) != 0)
		ck_finding(k, "lfn-cluster", dir, NULL,
			   "long name slot %zu has cluster field 0x%04x", i, get16(de + 26));
	if (b0 & 0x80) {
		if (s->st == LFN_OPEN)
			ck_lfn_interrupt(k, dir, s, i, "interrupted by a bad slot");
		ck_finding(k, "lfn-order", dir, NULL,
			   "long name slot %zu has ordinal byte 0x%02x", i, b0);
		s->st = LFN_BROKEN;
		return;
	}
	if (b0 & 0x40) {
		if (s->st == LFN_OPEN)
			ck_lfn_interrupt(k, dir, s, i, "interrupted by a new set");
		if (ord == 0) {
			ck_finding(k, "lfn-order", dir, NULL,
				   "long name slot %zu is a first slot with ordinal 0", i);
			s->st = LFN_BROKEN;
			return;
		}
		s->st = LFN_OPEN;
		s->nslots = ord;
		s->expect = ord - 1;
		s->csum = de[13];
		s->start = i;
		slot_units(de, k->ubuf + (size_t)(ord - 1) * 13);
		return;
	}
	if (s->st == LFN_BROKEN)
		return;
	if (s->st == LFN_NONE) {
		ck_finding(k, "lfn-order", dir, NULL,
			   "long name slot %zu (ordinal %d) without a first slot (0x40)", i, ord);
		s->st = LFN_BROKEN;
		return;
	}
	if (s->expect == 0) {
		ck_finding(k, "lfn-order", dir, NULL,
			   "long name slot %zu (ordinal %d) follows the set's last slot", i, ord);
		s->st = LFN_BROKEN;
		return;
	}
	if (ord != s->expect) {
		ck_finding(k, "lfn-order", dir, NULL,
			   "long name slot %zu has ordinal %d, expected %d", i, ord, s->expect);
		s->st = LFN_BROKEN;
		return;
	}
	if (de[13] != s->csum) {
		ck_finding(k, "lfn-checksum", dir, NULL,
			   "long name slot %zu has checksum 0x%02x, its set 0x%02x",
			   i, de[13], s->csum);
		s->st = LFN_BROKEN;
		return;
	}
	slot_units(de, k->ubuf + (size_t)(ord - 1) * 13);
	s->expect--;
}

/* Padding, length and characters of a complete set; returns its length
 * in units. */
size_t ck_lfn_finish(struct ck *k, uint32_t id, const struct lfn_set *s)
{
	size_t total = (size_t)s->nslots * 13, len = total;
	int badpad = 0, badchar = 0;

	for (size_t i = 0; i < total; i++) {
		if (k->ubuf[i] == 0) {
			len = i;
			break;
		}
	}
	if (len == total) {
		/* no terminator: then there must be no padding either */
		for (size_t i = 0; i < total; i++) {
			if (k->ubuf[i] == 0xFFFF) {
				ck_finding(k, "lfn-padding", id, NULL,
					   "padding 0xFFFF at unit %zu without a 0x0000 terminator", i);
				break;
			}
		}
	}
	for (size_t i = len + 1; i < total; i++)
		if (k->ubuf[i] != 0xFFFF)
			badpad = 1;
	for (size_t i = 0; i < len; i++)
		if (lfn_char_invalid(k->ubuf[i]))
			badchar = 1;
	if (len == 0)
		ck_finding(k, "lfn-padding", id, NULL, "empty long name");
	else if (len <= total - 13)
		ck_finding(k, "lfn-padding", id, NULL,
			   "%d slots for a name of %zu units", s->nslots, len);
	if (badpad)
		ck_finding(k, "lfn-padding", id, NULL,
			   "padding after the terminator is not 0xFFFF");
	if (s->nslots > VFAT_MAX_SLOTS || len > VFAT_MAX_UNI)
		ck_finding(k, "lfn-toolong", id, NULL,
			   "%d slots, %zu units (at most %d slots, %d units)",
			   s->nslots, len, VFAT_MAX_SLOTS, VFAT_MAX_UNI);
	if (badchar)
		ck_finding(k, "longname-invalid", id, NULL,
			   "long name holds a character invalid in long names");
	else if (len > 0 && len <= total && k->ubuf[len - 1] == '.')
		ck_finding(k, "longname-invalid", id, NULL,
			   "long name ends with '.', which Linux strips before every lookup");
	return len;
}

/* The units of the set up to its terminator (at most nslots * 13). */
size_t ck_lfn_len(const struct ck *k, const struct lfn_set *s)
{
	size_t n = 0;

	while (n < (size_t)s->nslots * 13 && k->ubuf[n])
		n++;
	return n;
}

/* A short entry closes the open set s: 1 when the set is complete and
 * its checksum is the short entry's, so that the long name is its name;
 * otherwise 0, with the finding. */
int ck_lfn_attach(struct ck *k, uint32_t dir, const struct lfn_set *s,
		  const uint8_t *sn, size_t i)
{
	uint8_t want;

	if (s->expect != 0) {
		ck_finding(k, "lfn-order", dir, NULL,
			   "long name set at %zu ends at ordinal %d, slots below missing before entry %zu",
			   s->start, s->expect + 1, i);
		return 0;
	}
	if (s->csum != (want = vfat_lfn_checksum(sn))) {
		ck_units_to_name(k, k->ubuf, ck_lfn_len(k, s));
		ck_finding(k, "lfn-checksum", dir, k->ebuf,
			   "slot checksum 0x%02x != 0x%02x of the short entry %zu",
			   s->csum, want, i);
		return 0;
	}
	return 1;
}
