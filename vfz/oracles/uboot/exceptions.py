"""The uboot oracle's named exceptions: their names and their catalogue entries.

Part of the uboot oracle (vfz/oracles/uboot/). What each one is and the
evidence that recognises it; the recognising code is explain.py.
"""
from vfz.oracles import NamedException

LFN_LOW_BYTE = "uboot-lfn-low-byte"
RAW_83 = "uboot-83-oem-bytes"
SHELL_BYTES = "uboot-shell-bytes"
ALIAS_LATIN1 = "uboot-alias-latin1"
ZERO_DATE = "uboot-zero-date"
NO_RENAME = "uboot-no-rename"
LITERAL_WALK = "uboot-literal-walk"
UNADDRESSABLE = "uboot-unaddressable"
WALK_ENOENT = "uboot-walk-enoent"
FSINFO = "uboot-fsinfo-stale"
ALIAS_DEL = "uboot-alias-del"
ALIAS_DUP = "uboot-alias-dup"
NAME_FIRST = "uboot-name-check-first"
SKIPPED_05 = "uboot-05-skipped"
COLLIDE = "uboot-lfn-collide"
ALIAS_E5 = "uboot-alias-e5"
FS_TYPE = "uboot-fs-type-string"
SECTOR_SIZE = "uboot-sector-size"

EXCEPTIONS = [
    NamedException(LFN_LOW_BYTE, "uboot", "reader",
                   "U-Boot 2023.01 builds a long name from the low byte of each UTF-16 unit "
                   "(fs/fat/fat.c slot2str) and ends a slot at a unit whose low byte is 0: "
                   "names in U+0000-U+00FF come out as their Latin-1 bytes (right), others as "
                   "unrelated bytes ('日本' -> 'åg'), cut at U+xx00 ('emoji 😀 file' -> "
                   "'emoji ='), empty when the first unit is U+xx00 ('Āx': fatls shows a "
                   "blank name, which no command can be given). U-Boot is wrong (LFN slots "
                   "hold UTF-16; it has no code page)",
                   "actual leaf == lfn_low_byte_form(expected leaf), not empty "
                   "(UbootReader.name_exception); an empty name: as many per directory and type "
                   "as the image holds long names whose form is empty, each explaining one "
                   "missing entry whose form is empty and everything under it "
                   "(UbootReader.explain, _empty_names)"),
    NamedException(RAW_83, "uboot", "reader",
                   "U-Boot shows a bare 8.3 entry as its stored OEM bytes, lower-cased by the "
                   "NT case bits with a Latin-1 tolower ('é' stored as cp437 0x90 shows as "
                   "byte 0x90); Linux decodes the code page",
                   "actual leaf == raw_83_form(expected leaf)"),
    NamedException(SHELL_BYTES, "uboot", "writer",
                   "U-Boot's command line holds bytes; its FAT writer turns each byte into one "
                   "UTF-16 unit, so a name with a character beyond U+00FF cannot be written; "
                   "its hush refuses a \"'\" inside an expanded variable. The glue answers "
                   "EILSEQ before U-Boot sees such a name, whatever the op and before any "
                   "lookup, and the uboot profile predicts it",
                   "result EILSEQ, predicted by the profile's path_err (no result exception)"),
    NamedException(NO_RENAME, "uboot", "writer",
                   "U-Boot 2023.01 has no FAT rename: the writer answers ENOSYS and its Entry "
                   "does not support rename, so the campaign sends it no renames",
                   "op kind rename, result ENOSYS"),
    NamedException(ALIAS_LATIN1, "uboot", "writer",
                   "U-Boot's writer builds the 8.3 alias of a Latin-1 name from the raw bytes "
                   "('Über Größe.dat' -> DC 'BERGR~1DAT', 'é' -> E9 '~1'): Latin-1 bytes, lower "
                   "case kept, where the FAT specification wants upper-case OEM (cp437: 9A). "
                   "Long-name readers are unaffected; a DOS reader shows other characters. "
                   "U-Boot is wrong by the specification (not compared: listings hold long names). "
                   "x86 builds only: str2fat compares a plain char, signed on x86 and unsigned on "
                   "ARM; still in a v2026.07 qemu-x86 build (reports/bugs.md)",
                   "short entry bytes >= 0x80 equal to the long name's Latin-1 bytes"),
    NamedException(LITERAL_WALK, "uboot", "writer",
                   "U-Boot matches the directories of a path as given (fat_itr_resolve: "
                   "strncasecmp on the whole component) but drops leading blanks and trailing "
                   "dots and blanks from the leaf it writes (split_filename): '/d./f' finds no "
                   "'d' (Linux ignores trailing dots), '/ d/f' finds no 'd'. By design "
                   "(U-Boot's lookup is literal); the script is cut before the op",
                   "the first differing op has a component before its leaf that uboot_norm "
                   "changes, and one side answered ENOENT/ENOTDIR (UbootWriter.known_failure)"),
    NamedException(NAME_FIRST, "uboot", "writer",
                   "U-Boot checks the new leaf (split_filename, normalize_longname) before it "
                   "walks the parent: a refused name under a missing parent is EINVAL (or EIO "
                   "for a leaf of blanks and dots) where Linux says ENOENT (or ENOTDIR). Both "
                   "refuse; the order differs",
                   "predicted by the profile (name_first: mkdir/create answer name_err(leaf) "
                   "before the parent walk's ENOENT/ENOTDIR; no result exception)"),
    NamedException(ALIAS_E5, "uboot", "writer",
                   "U-Boot 2023.01 builds the 8.3 alias from the raw Latin-1 bytes and does not "
                   "turn a first byte 0xE5 into 0x05: a file named 'åland' gets alias E5 'LAND~1' "
                   "and reads as a deleted entry to every FAT reader (U-Boot's own included); "
                   "fsck.fat -n: 'Orphaned long file name part', its cluster leaks. U-Boot is "
                   "wrong: fatgen103, DIR_Name[0] 0xE5 means free, 0x05 stands for 0xE5",
                   "an op answered ok made a leaf starting with U+00E5 and the core's listing of "
                   "the image lacks it (UbootWriter.known_failure)", bug="uboot-alias-e5"),
    NamedException(SKIPPED_05, "uboot", "reader",
                   "U-Boot skips an entry with a long name whose 8.3 entry starts with 0x05, "
                   "the FAT stand-in for a first byte 0xE5 (fs/fat/fat.c extract_vfat_name: "
                   "'if (dent->nameext.name[0] == DELETED_FLAG || ... == aRING) return NULL'): "
                   "FatFs writes 'σ' (CP437 0xE5) so, as the specification says, and so may a v3 "
                   "dummy. fatls does not list it, fatload cannot find it, nothing under a "
                   "skipped directory is reachable. U-Boot is wrong: fatgen103, DIR_Name[0] "
                   "0x05 means the name starts with 0xE5 (its get_name does turn 0x05 into "
                   "0xE5 for a bare 8.3 entry; commit a2c5a92d486 fixed fat_itr_next alone). "
                   "Present in v2023.01 and in master of 2026-08",
                   "every missing entry is, or lies under, an entry that the core's listing of "
                   "the image shows with LFN slots and a short entry starting 05 "
                   "(UbootReader.explain, long_05)", bug="uboot-05-skipped"),
    NamedException(COLLIDE, "uboot", "reader",
                   "Distinct long names that U-Boot's one byte per UTF-16 unit "
                   "(uboot-lfn-low-byte) shows alike in one directory ('😀' and '😀😀' are both "
                   "'=', 'Ł' and 'a' both 'a' to its case-insensitive lookup), or a shown name "
                   "as long as another entry's and equal to the start of that entry's 8.3 name "
                   "(fat_itr_resolve compares the 8.3 name over the long name's length: '_x_' "
                   "finds U+5401 'x' U+5401, alias _X_~1): fat_itr_resolve "
                   "finds the first only, so the others cannot be loaded or listed by name. "
                   "U-Boot is wrong (a consequence of uboot-lfn-low-byte)",
                   "every difference and complaint concerns a path that the core's listing of "
                   "the image shows two entries of one directory share in U-Boot's form, or "
                   "that such an 8.3 name shadows (UbootReader.explain, shown_paths, colliding, "
                   "shadowed)"),
    NamedException(UNADDRESSABLE, "uboot", "reader",
                   "A name whose U-Boot form (one byte per UTF-16 unit) holds '/' ('启' U+542F) "
                   "or '\\' ('한' U+D55C) names another path to U-Boot (both are separators "
                   "to it, ISDIRDELIM); one holding 0xFF cannot be given to its hush (the end "
                   "of input), one holding a LF ('上' U+4E0A) cannot be imported into a variable "
                   "nor typed. Measured on all 255 low bytes of U+54xx: these four, and a \"'\" "
                   "beside other non-ASCII bytes; every other control byte (CR from '名' "
                   "U+540D included) reaches fatload intact. The reader lists such an entry "
                   "(fatls) but cannot load the file or list the directory",
                   "the entries the listing marks unread=uboot-unaddressable are exactly those "
                   "the core's listing of the image predicts (names.unaddressable), per U-Boot "
                   "path and type; each explains its own entry (missing, without contents, or "
                   "under U-Boot's path) and everything missing under a directory so marked "
                   "(UbootReader.explain, _Unreached)"),
    NamedException(WALK_ENOENT, "uboot", "writer",
                   "U-Boot's lookup answers ENOENT for a path that goes through a file "
                   "(fat_itr_resolve: 'bad trailing path'), where Linux says ENOTDIR",
                   "expected ENOTDIR, got ENOENT (UbootWriter.result_exception)"),
    NamedException(ALIAS_DEL, "uboot", "writer",
                   "U-Boot copies DEL (0x7F) from a long name into its ~N alias ('\x7f' -> "
                   "7F '~1'), as Linux does into its aliases; fsck.fat 4.2 calls such a short "
                   "name bad and renames it under -a. fatgen103 does not list 0x7F among the "
                   "illegal DIR_Name bytes: fsck.fat is stricter than the specification",
                   "every fsck.fat complaint on the uboot writer's image is a bad short name "
                   "holding 0x7F at a path holding DEL (UbootWriter.explain)"),
    NamedException(ALIAS_DUP, "uboot", "writer",
                   "U-Boot 2023.01 gives two long names the same ~N alias when the extension "
                   "has one or two characters: 'abcdefgh.c' and 'abcdefgx.c' both get "
                   "ABCDEF~1.C, 'ab.tar.gz' and 'ab.x.gz' both AB~1.GZ (with no extension or "
                   "three characters it counts on to ~2). Two equal 8.3 names in one directory: "
                   "fsck.fat 'Duplicate directory entry', renames the second under -a; a "
                   "lookup by the alias finds the first. U-Boot is wrong (fatgen103: short "
                   "names are unique in a directory)",
                   "fsck.fat complains of a duplicate and the core's listing of the image shows "
                   "two entries of one directory with the same 8.3 bytes and a 1-2 character "
                   "extension (UbootWriter.explain, dup_short_ext)", bug="uboot-alias-dup"),
    NamedException(FSINFO, "uboot", "writer",
                   "U-Boot 2023.01 does not update the FAT32 FSInfo free-cluster count when it "
                   "allocates or frees clusters; fsck.fat -n reports 'Free cluster summary "
                   "wrong'. fatgen103 calls the count a hint that may be wrong (0xFFFFFFFF: "
                   "unknown); Linux keeps it right. Harmless by the specification",
                   "fsck.fat's only complaint kind on a FAT32 image of the uboot writer is "
                   "free-count (UbootWriter.explain)"),
    NamedException(ZERO_DATE, "uboot", "writer",
                   "U-Boot 2023.01 (qemu-x86 build) writes creation, access and modification "
                   "dates 0x0000 (1980-00-00: month 0, day 0) on every entry fatwrite/fatmkdir "
                   "make; fatgen103 wants month 1-12 and day 1-31. fsck.fat 4.2 -n does not "
                   "check dates and stays silent; listings do not hold dates. U-Boot is wrong "
                   "by the specification, harmless to every reader here. Fixed upstream in "
                   "v2024.07 (ba23c378c54); a v2026.07 build writes real dates (reports/bugs.md)",
                   "date fields 0x0000 on the entries the uboot writer made"),
    NamedException(FS_TYPE, "uboot", "reader",
                   "U-Boot 2023.01 decides FAT12 or FAT16 by the boot sector's type string "
                   "(fs/fat/fat.c read_bootsectandvi: exactly 'FAT12   ' or 'FAT16   ', else "
                   "'broken fs_type sign'), which the FAT specification calls informational; "
                   "FatFs R0.15's f_mkfs writes 'FAT     ' on every FAT12/16 volume, so U-Boot "
                   "reads none of them (fatls fails without a message); FAT32 is decided by the "
                   "FAT size and read (measured: every FatFs FAT12/16 volume of the formatter sweep)",
                   "a fresh volume with a FAT12/16 boot sector whose type string is neither, and "
                   "U-Boot's fatls of / failed (vfz/oracles/uboot/fresh.py)", bug="uboot-fs-type-string"),
    NamedException(SECTOR_SIZE, "uboot", "reader",
                   "U-Boot's FAT code reads a volume only when its bytes per sector equal the "
                   "block device's (get_fs_info: 'FAT sector size mismatch (fs=N, dev=512)'); the "
                   "QEMU board's virtio disk has 512-byte blocks, so volumes of 1024..4096-byte "
                   "sectors are refused (a design limit: a 4Kn disk would read them)",
                   "U-Boot's error names the mismatch and the boot sector's sector size is not 512 "
                   "(vfz/oracles/uboot/fresh.py)"),
]
