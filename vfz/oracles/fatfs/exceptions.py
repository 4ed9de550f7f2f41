"""The catalogue of FatFs's named exceptions (FatFs R0.15 through js-fatfs 0.2.1).

Each NamedException says what FatFs does and how it is recognised: the
reader's explain hook (reader.py), the writer's known_failure
(writer.py), or the model profile (names.py) for what is modelled.
"""
from vfz.oracles import NamedException
from vfz.oracles.evidence import ev_get as _get  # noqa: F401 (reader.py, writer.py)


DEL_UNOPENABLE = "fatfs-del-unopenable"
CASE_TWINS = "fatfs-case-twins"
OWN_ALIASES = "fatfs-own-aliases"
MKFS_FAT16_MAX = "fatfs-mkfs-fat16-65525"
COUNT_EDGES = "fatfs-count-edges"
COUNT_EDGES_WRITE = "fatfs-count-edges-write"


EXCEPTIONS = [
    NamedException(
        OWN_ALIASES, "fatfs", "writer",
        "FatFs makes its own aliases: colliding long names are numbered ~1 to ~5 only, then get a "
        "CRC of the long name (longfilename6.txt -> LON~D306.TXT, measured), where Linux (and the "
        "model's dual aliases) go on to ~6 .. ~9; a name with a leading dot keeps an empty base "
        "('.bashrc' -> ~1.BAS, '.git' -> ~1.GIT; Linux BASHRC~1, GIT~1); so an op that spells "
        "LONGFI~6.TXT or BASHRC~1 finds nothing on FatFs",
        "the first differing op spells a component shaped BASE~N[.EXT] (known_failure; the "
        "readers check the script cut before it)"),
    NamedException(
        DEL_UNOPENABLE, "fatfs", "reader",
        "FatFs lists a long name holding DEL (U+007F, which Linux accepts) but cannot open it: "
        "create_name refuses DEL in every path (FR_INVALID_NAME), so a file under such a name has "
        "no contents and a directory no children; the reader opens it by its 8.3 name when that "
        "finds the same entry (dual aliases without DEL), which nodual dummies cannot",
        "every difference lies at or under a path component with DEL; the complaint names "
        "FR_INVALID_NAME (explain_read)", bug="fatfs"),
    NamedException(
        CASE_TWINS, "fatfs", "reader",
        "FatFs compares long names with its Unicode upper-casing (as the FAT long-name rules and "
        "Windows do), Linux (iocharset=ascii) with ASCII only: Linux makes 'élongname.txt' beside "
        "'Élongname.txt' (dual: two aliases, ÉLONGN~1 and ~2) and, in nodual mode, even 'é' beside "
        "'É' (no alias clash any more), and FatFs opens the first of the two for both names",
        "every difference is one of two expected names of a directory equal under fatfs_fold "
        "(explain_read)"),
    NamedException(
        "fatfs-rename-no-replace", "fatfs", "writer",
        "f_rename never replaces an existing entry (FR_EXIST) where POSIX rename does; the glue "
        "removes the target first, so the entry ends up with the spelling the rename gave, not "
        "the target's as on Linux",
        "modelled: profile knob replace 'respell'; the raw record shows FR_EXIST for the first "
        "f_rename"),
    NamedException(
        "fatfs-rename-into-subtree", "fatfs", "writer",
        "f_rename moves a directory into its own subtree without a check and answers FR_OK: the "
        "subtree is cut off the tree (measured: f_rename('/a', '/a/b/c') FR_OK, /a gone, "
        "fsck.fat -n reclaims its 5 clusters). Linux refuses it in the VFS (EINVAL); so does "
        "the glue, before FatFs sees it, so the writer never makes such an image",
        "not seen by the campaign: the glue answers EINVAL as the model does (identity of "
        "directories by their first cluster)"),
    NamedException(
        "fatfs-name-rules", "fatfs", "writer",
        "create_name drops trailing spaces as well as dots ('b ' -> 'b', Linux: EINVAL), refuses "
        "DEL (Linux accepts it), counts the 255-unit limit before dropping them and answers "
        "FR_INVALID_NAME for a long name (Linux: ENAMETOOLONG), and a name of dots only",
        "modelled: profile knobs name_err and store"),
    NamedException(
        "fatfs-unicode-case", "fatfs", "writer",
        "long names are compared with ff_wtoupper, which folds most non-ASCII letters ('é' finds "
        "'É': EEXIST where Linux with iocharset=ascii makes a second entry); 848 of 1173 "
        "candidate pairs, measured (casefold.json)",
        "modelled: profile knob lookup (fatfs_fold)"),
    NamedException(
        "fatfs-case-rename", "fatfs", "writer",
        "f_rename to a respelling of the entry's own name applies it ('a' -> 'A' is 'A'); "
        "Linux 6.1 keeps the old spelling",
        "modelled: profile knob case_rename 'apply'"),
    NamedException(
        MKFS_FAT16_MAX, "fatfs", "formatter",
        "FatFs's f_mkfs makes FAT16 up to 65 525 clusters (ff.c MAX_FAT16 0xFFF5, 'differs from specs, "
        "but right for real DOS/Windows behavior'), one more than the FAT specification's and "
        "Linux's 65 524: on a FAT16 boot sector over exactly 65 525 clusters fsck.fat 4.2 gives up "
        "('Too many clusters (65525) for FAT16 filesystem'), Linux 6.1 does not mount it ('count of "
        "clusters too big'), `vfat ls`/`vfat check` refuse it, The "
        "Sleuth Kit and 7-Zip take it for FAT32 and fail; GRUB, mtools, fusefat and FatFs read it "
        "(measured, formatter sweep; reports/formatters.md). FatFs's FAT12 stops below 4 085 and "
        "its FAT16 starts at 4 086: no other boundary count is made",
        "the fresh volume's boot sector is FAT16 (16-bit FAT size not 0) over exactly 65 525 "
        "clusters; what is explained is a reader's failure, and its complaints when one of them "
        "names the count of 65525 clusters (FatfsFormatter.fresh_exceptions)"),
    NamedException(
        COUNT_EDGES, "fatfs", "reader",
        "FatFs decides the FAT type by the cluster count with MAX_FAT12 0xFF5 and MAX_FAT16 0xFFF5, "
        "one above Microsoft's 4 084 and 65 524: a volume of 4 085 clusters is read as FAT12 and "
        "one of 65 525 as FAT16, so a FAT32 boot sector over exactly 65 525 clusters (vfat mkfs, "
        "mformat -F at their smallest FAT32) fails f_mount with FR_NO_FILESYSTEM (measured; "
        "below 65 525 it is fatfs-fat32-few-clusters)",
        "FatFs's answer is 'f_mount: FR_NO_FILESYSTEM' on a FAT32 boot sector over exactly "
        "65 525 clusters (fresh volumes: FatfsReader.fresh_exceptions; images: explain_read)"),
    NamedException(
        COUNT_EDGES_WRITE, "fatfs", "writer",
        "the writer's side of fatfs-count-edges: FatFs takes a FAT16 volume of exactly 4 085 "
        "clusters (Linux's, mkfs.fat's and the FAT specification's smallest FAT16) for FAT12 "
        "(MAX_FAT12 0xFF5) and writes 12-bit entries into its 16-bit FAT: the chains FatFs "
        "allocates and frees are packed across the 16-bit entries of other clusters, so a "
        "cluster in use (a directory's) reads as free to FatFs and is given to a new file "
        "(entries appear in that directory), and clusters Linux reads as in use are cut from "
        "their chains (entries are lost). Measured: write-fatfs-spread-a7c9646d09 (FAT0 after "
        "the ops holds 1560 0117 8001 ..., FAT12 packing), -a4e64e974a (one 12-bit end mark "
        "over FAT16 entries 2-3: the new file got cluster 3, a directory's)",
        "a damage spread (vfz.hostile.writes) on a volume whose boot sector has a 16-bit FAT "
        "size and exactly 4 085 clusters (FatfsWriter.spread_exception)"),
]
