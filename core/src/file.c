/* file.c - what Linux 6.1's fs/fat/file.c does to an inode besides its
 * data: FAT_IOCTL_SET_ATTRIBUTES (fat_ioctl_set_attributes) and the times
 * of utimensat (fat_setattr). Truncation is in namei.c beside the data
 * path it shares (file_io). The root directory has no entry, so nothing
 * of it can change (fat_truncate_time returns early for the root).
 */
#include "fat.h"

#define SET_ATTRS (ATTR_RO | ATTR_HIDDEN | ATTR_SYS | ATTR_ARCH)

/* ATTR_VOLUME and ATTR_DIR cannot change and the bits the kernel keeps
 * in no inode field (0x40, 0x80) are dropped (fat_save_attrs keeps
 * ATTR_UNUSED | ATTR_RO). A directory keeps ATTR_RO in i_attrs without
 * the rodir option, so its read-only bit is written too; its mode keeps
 * the write bits, so it stays writable. The change is a chmod() with
 * ATTR_CTIME only, and FAT has no field for ctime: no time changes. */
int vfat_set_attrs(vfat_vol *v, const char *path, uint8_t attrs)
{
	uint8_t *de;
	int r = namei_resolve(v, path, &de);

	if (r)
		return r;
	attrs &= SET_ATTRS;
	if (!de)
		return attrs ? -EINVAL : 0;   /* "The root directory has no attributes" */
	inode_dirty(v, de);
	de[11] = (uint8_t)(attrs | (de[11] & (ATTR_VOLUME | ATTR_DIR)));
	if (de[11] & ATTR_DIR)
		put32(de + 28, 0);            /* fat_write_inode: a directory's size is 0 */
	return 0;
}

/* notify_change clamps both times to the volume's range (s_time_min,
 * s_time_max); fat_setattr truncates the mtime to 2 s and the atime to
 * the day (local midnight: UTC here). The creation time is i_crtime,
 * which only vfat_build_slots sets: utimensat leaves it. */
int vfat_utimes(vfat_vol *v, const char *path, const struct vfat_time *mtime,
		const struct vfat_time *atime)
{
	uint8_t *de;
	uint16_t t, d;
	int64_t s;
	int r = namei_resolve(v, path, &de);

	if (r || !de)
		return r;
	inode_dirty(v, de);
	if (de[11] & ATTR_DIR)
		put32(de + 28, 0);
	s = fat_clamp_time(atime->sec);
	fat_time_unix2fat(s - s % 86400, &t, &d);
	put16(de + 18, d);
	s = fat_clamp_time(mtime->sec) & ~(int64_t)1;
	fat_time_unix2fat(s, &t, &d);
	put16(de + 22, t);
	put16(de + 24, d);
	return 0;
}
