/* inode.c - a directory entry as the disk holds it between write-backs.
 *
 * Linux writes a short entry at two moments only: vfat_add_entry writes
 * the new slot (start 0 for a new file and for any renamed entry, the
 * cluster of a new directory, size 0, the time of the call), and
 * __fat_write_inode writes the inode's attributes, start, size and times
 * back at the next write-back, which in one mount without fsync or dirsync
 * is the unmount. In between, a write, a truncate, a chattr, a utimes or a
 * rename onto the entry change only the in-memory inode. An entry removed
 * before the write-back (unlink, rmdir, the old name of a rename) is marked
 * deleted on disk over the bytes of its last write: add_entry's, or what
 * the slot held when the volume was mounted (its inode is detached first,
 * so the write-back skips it).
 *
 * The core changes entries in place, so its live entries already hold
 * what the unmount writes back. This table keeps, for each slot whose
 * in-memory inode has changed since its last write, the bytes the
 * kernel's disk holds, and dir_remove marks those deleted instead.
 * Keyed by the slot's offset in the image: slots never move.
 *
 * The same table keeps each file's mmu_private: how far fat_get_block has
 * mapped the file's blocks, where cont_expand_zero starts the zero-fill of
 * a write past the end. It decides how much of a gap a write that runs
 * out of clusters keeps (namei.c, short_write_end). fat_fill_inode starts
 * it at i_size, exact, for an inode read from disk (a file with no record);
 * a write or a growth past it maps whole blocks up to its end; a truncate
 * that does not grow lowers it to the new size, exact (fat_truncate_blocks,
 * also on a truncate to the same size), and so does fat_write_failed after
 * ENOSPC. Keyed by the file's first cluster, which follows the inode
 * through a rename; a file without one is empty, its mmu_private 0. A file
 * that gets a first cluster gets a record with it, so a record left by a
 * freed file is never read.
 */
#include <stdlib.h>
#include <string.h>
#include "fat.h"

struct inode_slot {
	uint64_t key;                 /* offset + 1, or MMU_KEY(cluster); 0 = empty */
	union {
		uint8_t disk[DIRENT_SIZE];
		uint64_t mmu;
	};
};

#define MMU_KEY(c) ((1ull << 63) | (c))

struct inode_table {
	struct inode_slot *s;
	size_t cap;                   /* a power of two */
	size_t used;
};

static size_t slot_hash(uint64_t key, size_t cap)
{
	key ^= key >> 29;
	key *= 0xBF58476D1CE4E5B9ull;
	return (size_t)(key ^ (key >> 32)) & (cap - 1);
}

static struct inode_slot *find(struct inode_table *t, uint64_t key, int add)
{
	size_t i;

	if (!t->cap)
		return NULL;
	for (i = slot_hash(key, t->cap); t->s[i].key; i = (i + 1) & (t->cap - 1))
		if (t->s[i].key == key)
			return &t->s[i];
	return add ? &t->s[i] : NULL;
}

static int grow(struct inode_table *t)
{
	struct inode_table n = { NULL, t->cap ? t->cap * 2 : 64, 0 };

	n.s = calloc(n.cap, sizeof(*n.s));
	if (!n.s)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		if (t->s[i].key) {
			*find(&n, t->s[i].key, 1) = t->s[i];
			n.used++;
		}
	}
	free(t->s);
	*t = n;
	return 0;
}

/* The record for key, made (with *fresh set) when there is none; NULL
 * without memory. */
static struct inode_slot *slot_for(vfat_vol *v, uint64_t key, int *fresh)
{
	struct inode_table *t = v->inodes;
	struct inode_slot *s;

	if (!t && !(t = v->inodes = calloc(1, sizeof(*t))))
		return NULL;
	if ((t->used + 1) * 2 > t->cap && grow(t))
		return NULL;
	s = find(t, key, 1);
	*fresh = !s->key;
	if (*fresh)
		t->used++;
	s->key = key;
	return s;
}

/* Record disk as the on-disk bytes of the slot at de; keep an earlier
 * record unless replace (a fresh write of the slot). Without memory the
 * record is lost: the slot is then deleted with its in-memory bytes,
 * as before this table existed. */
static void record(vfat_vol *v, const uint8_t *de, const uint8_t *disk, int replace)
{
	int fresh;
	struct inode_slot *s = slot_for(v, (uint64_t)(de - v->buf) + 1, &fresh);

	if (s && (fresh || replace))
		memcpy(s->disk, disk, DIRENT_SIZE);
}

uint64_t inode_mmu(vfat_vol *v, const uint8_t *de)
{
	uint32_t c = de_start(v, de);
	struct inode_slot *s = c && v->inodes ? find(v->inodes, MMU_KEY(c), 0) : NULL;

	return s ? s->mmu : get32(de + 28);
}

void inode_set_mmu(vfat_vol *v, const uint8_t *de, uint64_t mmu)
{
	uint32_t c = de_start(v, de);
	int fresh;
	struct inode_slot *s = c ? slot_for(v, MMU_KEY(c), &fresh) : NULL;

	if (s)
		s->mmu = mmu;
}

void inode_written(vfat_vol *v, const uint8_t *de, const uint8_t *disk)
{
	record(v, de, disk, 1);
}

void inode_dirty(vfat_vol *v, const uint8_t *de)
{
	record(v, de, de, 0);
}

void inode_remove(vfat_vol *v, uint8_t *de)
{
	struct inode_slot *s = v->inodes ? find(v->inodes, (uint64_t)(de - v->buf) + 1, 0) : NULL;

	if (s) {
		/* the deleted slot keeps the last write; the record stays,
		 * harmless: a new entry there replaces it (inode_written) */
		memcpy(de + 1, s->disk + 1, DIRENT_SIZE - 1);
	}
	de[0] = DELETED_FLAG;
}

void inode_free(vfat_vol *v)
{
	if (v->inodes)
		free(v->inodes->s);
	free(v->inodes);
	v->inodes = NULL;
}
