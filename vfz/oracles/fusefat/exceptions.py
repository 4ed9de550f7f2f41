"""The catalogue of fusefat's named exceptions (fusefat 0.1a, Debian 12).

Each NamedException says what fusefat does and how it is recognised; the
recognisers are the reader's and writer's hooks (reader.py, writer.py),
the writer's known failures (known.py) and the image evidence
(damage.py). The names are constants here so that every module uses the
same spelling.
"""
from vfz.oracles import NamedException


FAT1_CLEAN = "fusefat-fat1-0x8000"
RMDIR_NONEMPTY = "fusefat-rmdir-eperm"
RENAME_DIR_EMPTIES = "fusefat-rename-dir-empties"
INTO_SUBTREE = "fusefat-rename-into-own-subtree"
NT_CASE = "fusefat-ignores-nt-case"
NAMES = "fusefat-ascii-names"
TRAILING = "fusefat-trailing-kept"
LABEL_AS_FILE = "fusefat-label-as-file"
RAW_83 = "fusefat-raw-83"
CASE_TWINS = "fusefat-case-twins"
WRITE_EPERM = "fusefat-write-eperm"
RENAME_REFUSED = "fusefat-rename-refused-loses-source"
CASE_RENAME = "fusefat-case-rename"
WRITE_GAP = "fusefat-write-gap-cuts-chain"
ERASE_OVERRUN = "fusefat-erase-overruns-cluster"
SELF_RENAME_HANG = "fusefat-stale-self-rename-hangs"
RENAME_ONTO = "fusefat-rename-dir-onto-dir-eperm"
SLOT_RUN = "fusefat-slot-run-offset-wraps"


LONG_UTF8_CUT = "fusefat-readdir-cuts-long-utf8"


EXCEPTIONS = [
    NamedException(FAT1_CLEAN, "fusefat", "writer",
                   "unmounting a FAT16 volume mounted rw+ writes 0x8000 into FAT[1] of both FATs "
                   "(mkfs.fat wrote 0xFFFF): bit 15 (clean shutdown) set, bit 14 (no hard error) "
                   "cleared and the end-of-chain bits lost; by the FAT specification FAT[1] holds "
                   "an EOC mark whose top two bits are these flags, so fusefat is wrong: the "
                   "volume now claims a disk error, and mtools refuses it ('Initial bytes of fat "
                   "is not 0xff') unless mtools_skip_check is set. FAT12 and FAT32 are untouched",
                   "FAT16 image written by the fusefat writer; FAT[1] was 0xFFFF before the "
                   "mount and is 0x8000 in every FAT after the unmount (FusefatWriter.last_fat1, "
                   "the writer's raw output); a checker's complaints about its image that all "
                   "say 'FAT[1] is 0x8000' (vfat-check: 'fat-eoc: /: FAT[1] is 0x8000'; "
                   "FusefatWriter.explain; regression case fusefat-fat1-clean-bit)"),
    NamedException(RMDIR_NONEMPTY, "fusefat", "writer",
                   "rmdir of a non-empty directory, and rename of a directory onto a non-empty "
                   "one, answer EPERM; POSIX and Linux answer ENOTEMPTY. fusefat is wrong by "
                   "POSIX rmdir(2)/rename(2); nothing is changed",
                   "an rmdir or rename op the model answers ENOTEMPTY and fusefat answers EPERM"),
    NamedException(LONG_UTF8_CUT, "fusefat", "reader",
                   "a long name whose UTF-8 form is over 255 bytes (255 UTF-16 units or fewer: FAT "
                   "and Linux take it; any non-ASCII character in a name near 255 characters) is "
                   "listed cut to its first 255 UTF-8 bytes, maybe inside a character: fat_readdir "
                   "(libfat.c) copies at most 255 bytes of its 521-byte UTF-8 buffer into d_name. "
                   "A lookup of the cut name finds nothing (ENOENT), so the file cannot be opened "
                   "through fusefat. fusefat is wrong (FUSE takes names up to 1024 bytes). "
                   "Campaign seed 10103: a 255-character name with one non-ASCII character "
                   "written by the core's dual writer",
                   "the shown leaf is the expected one's first 255 UTF-8 bytes, decoded with "
                   "U+FFFD for a cut character (readdir_cut)", bug="fusefat-readdir-cuts-long-utf8"),
    NamedException(RENAME_ONTO, "fusefat", "writer",
                   "a rename of a directory onto an existing empty directory answers EPERM and "
                   "changes nothing: fat_rename (libfat.c) refuses a directory onto any existing "
                   "target (\"destination file already exist: cant overwrite with a directory\"). "
                   "POSIX and Linux replace the empty directory (ok; onto a non-empty one "
                   "ENOTEMPTY: fusefat-rmdir-eperm). fusefat is wrong by POSIX rename(2); no data "
                   "is lost. Campaign seed 10102: mkdir /+; mkdir /a; rename /+ /a",
                   "a rename answered EPERM of a directory onto another directory, both in the "
                   "model's tree before it, which the model answers ok (FusefatWriter.known_failure: "
                   "one finding, the readers check the script cut before it, fusefat's image being "
                   "the model's before the op)"),
    NamedException(SLOT_RUN, "fusefat", "writer",
                   "a new long name (create, mkdir, rename's target) in a directory made of clusters "
                   "(any FAT32 directory, a FAT12/16 subdirectory) answers EPERM and is not made "
                   "when the run of deleted slots fusefat reuses for it starts in one cluster and "
                   "reaches the end of a later one: fusefat computes the run's offset in the later "
                   "cluster, which is negative ('findlfnslots: found 20 slots at clus:7, "
                   "off:4294967200', 'Offset too big', 'write error in fat_create()'). Linux makes "
                   "the entry. Measured (512-byte clusters): 130 characters + 255 characters "
                   "created, the 255 deleted and made again: EPERM (its 21 slots are the 5 left in "
                   "the first cluster + the whole second); with 39 characters first (12 + 9 "
                   "slots) it is made; the FAT16 root (one contiguous region) is not affected. "
                   "Campaign seed 11102, 137188933897",
                   "an op answered EPERM that creates a name fusefat accepts (fusefat_name_err) and "
                   "the model answers ok, with fusefat's log showing the run at an offset of 2^31 "
                   "or more and 'Offset too big' (slot_run_wrapped; FusefatWriter.known_failure: "
                   "one finding, the readers check the script cut before it)"),
    NamedException(RENAME_REFUSED, "fusefat", "writer",
                   "a rename to a name fusefat refuses (EPERM: non-ASCII, \\ : * ? \" < > |, over "
                   "255 characters) deletes the source entry before it tries the new name: the "
                   "answer is EPERM but the file or directory is gone (its slots 0xE5) and its "
                   "clusters stay allocated and unreachable (fsck.fat 'Reclaimed', vfat-check "
                   "'lost-clusters'). Data loss; fusefat is wrong (a failed rename(2) changes "
                   "nothing). Measured: create /f; rename /f /\u00c5 -> EPERM, /f gone; campaign "
                   "seed 1414",
                   "a rename answered EPERM whose new leaf fusefat_name_err refuses and whose "
                   "source exists in the model's tree (FusefatWriter.known_failure: one finding; "
                   "the readers check the script cut before that op)"),
    NamedException(CASE_RENAME, "fusefat", "writer",
                   "a rename to a respelling of the entry's own name ('abc' -> 'ABC'): for a "
                   "file fusefat answers ok, shows the new spelling and frees the file's "
                   "clusters in the FAT while the entry still points at them (vfat-check "
                   "'chain-free'; the next allocation overwrites the data: data loss); for a "
                   "directory it answers EPERM. Linux 6.1 answers ok and keeps the old spelling "
                   "(vfs_rename sees one inode); Windows respells it. Freeing the clusters is "
                   "fusefat's bug (it deletes the 'target', which is the source itself)",
                   "a rename answered ok of an existing entry whose target leaf differs from the "
                   "source's leaf as given only in ASCII case, whatever the stored spelling "
                   "(known_failure: one finding, readers check the cut script); a directory's answered EPERM (result_exception)"),
    NamedException(WRITE_EPERM, "fusefat", "writer",
                   "a pwrite that starts exactly at the end of the file, or past the clusters "
                   "the file has, answers EPERM (measured on 8 MiB FAT12, 2048-byte clusters, "
                   "a 100-byte file: offsets 100 and 2048+ fail, 99, 101-2047 pass); a failed "
                   "write past the clusters still grows the file to the cluster's end and "
                   "allocates one more cluster (vfat-check 'chain-long'). Linux writes them all; "
                   "fusefat is wrong (write(2) extends a regular file)",
                   "a write op the model answers ok and fusefat answers EPERM (result_exception; "
                   "known_failure cuts the readers' script before it: the file lacks the bytes)"),
    NamedException(WRITE_GAP, "fusefat", "writer",
                   "a write that starts at or past the end of the last cluster of a file of n >= 2 "
                   "clusters (a gap of whole clusters, or an append exactly at a cluster-aligned "
                   "end) answers ok, but fat_seek (libfat.c) links the file's first cluster to the "
                   "first new one (it links F->CurClus, where the walk began, not the last cluster "
                   "it read): the file's clusters 2..n are cut off, allocated and unreachable "
                   "(fsck.fat 'Reclaimed', 'Free cluster summary wrong'), the written bytes land "
                   "n-1 clusters early, and the size overshoots the chain by n-1 clusters (fsck.fat "
                   "'File size is S bytes, cluster chain length is C bytes'). Data loss; fusefat "
                   "is wrong. Measured on FAT12/16/32 with 512-, 2048- and 4096-byte clusters; a "
                   "write inside the last cluster (even past the end), or to a one-cluster file, "
                   "is not cut. Campaign seed 9101: create /Rpe@o 1024, write /rpe@o 1632 512",
                   "a write answered ok whose offset is at or past n*cluster for a file of n >= 2 "
                   "clusters in the model's tree (write_gap_cut), and the image fusefat wrote "
                   "holds a lost chain of exactly n-1 clusters holding that file's bytes from its "
                   "second cluster on (gap_evidence; FusefatWriter.known_failure: one finding, the "
                   "readers check the script cut before that op)"),
    NamedException(ERASE_OVERRUN, "fusefat", "writer",
                   "on FAT12/16, deleting an entry (unlink, rmdir, the source of a rename) whose "
                   "slots run from one cluster of a subdirectory into the next writes the erased "
                   "copies of all its slots (0xE5, or 0x00 when it was the directory's last entry) "
                   "in one piece from the first (fat_real_delete, libfat.c: "
                   "lseek + write, the fixed-root path): when the directory's next cluster is not "
                   "the physically next one, the slots there stay live (fsck.fat 'Long filename "
                   "fragment found outside a LFN sequence', a live '~N' short entry: a cross-link "
                   "after a directory rename) and the bytes overwrite the cluster after the first, "
                   "another directory's '.' and '..' or a file's data (fsck.fat 'Expected a valid "
                   "'.' entry'). Data loss; fusefat is wrong. FAT32 erases through the chain. "
                   "Campaign seed 9102: mkdir /d; mkdir /d/x; create /d/<182 chars>; unlink it",
                   "an unlink/rmdir/rename answered ok of an entry in a subdirectory of a FAT12/16 "
                   "volume, and the image fusefat wrote holds a subdirectory cluster, not "
                   "physically after its predecessor, that begins with long-name slots of order "
                   "j..1 and their short entry spelling the first 13*j characters of the removed "
                   "name, or (j = 0) with a live short entry whose erased long-name slots at the "
                   "end of the cluster before spell the whole removed name (erase_overrun_evidence, "
                   "orphan_tail, orphan_short; known_failure: one finding, the readers check the "
                   "script cut before that op)"),
    NamedException(SELF_RENAME_HANG, "fusefat", "writer",
                   "a rename of a path onto itself shortly (within the 1-s entry timeout) after "
                   "that path was removed through another case spelling (mkdir /a; rmdir /A; "
                   "rename /a /a) hangs the mount for good: fusefat (libfuse 2 high-level API) "
                   "gives each spelling its own node, so the kernel keeps /a's dentry; it "
                   "revalidates the rename's target (ENOENT) but not its source and sends RENAME "
                   "of that node onto its own name, which libfuse's get_path2 locks twice and "
                   "then waits for in pthread_cond_wait (0 % CPU; with -s no request is served "
                   "again). Linux answers ENOENT. fusefat's case-insensitive aliasing and "
                   "libfuse's 'FIXME: locking two paths needs deadlock checking' together",
                   "a rename whose source and target are the same path, that timed out (writer "
                   "error 'line N (rename): timeout'), whose source the model no longer has "
                   "because an earlier op answered ok (unlink, rmdir, rename) removed it spelled "
                   "differently in ASCII case (stale_self_rename; known_failure: one finding, the "
                   "readers check the script cut before it)"),
    NamedException(INTO_SUBTREE, "fusefat", "writer",
                   "a rename of a directory into its own subtree, the source spelled in another "
                   "case ('mkdir /d; rename /D /d/x'), answers ok and moves the directory into "
                   "itself: it leaves the tree (its '..' points at itself; fsck.fat: \"Invalid "
                   "'..' entry\", \"Start does point to containing directory\"), with all it "
                   "held. The kernel's EINVAL check compares the names as given and lets it "
                   "through; fusefat folds case and checks nothing. Linux answers EINVAL. "
                   "Data loss; fusefat is wrong (campaign seed 9103)",
                   "a rename answered ok of a directory of the model's tree whose target path "
                   "lies inside the source under fusefat_fold (known_failure: one finding, the "
                   "readers check the script cut before it); where the target exists, the "
                   "target's errno (ENOTDIR, EISDIR, ENOTEMPTY, EEXIST) for such a rename that "
                   "Linux answers EINVAL (result_exception)", bug="fusefat-rename-into-own-subtree"),
    NamedException(RENAME_DIR_EMPTIES, "fusefat", "writer",
                   "rename of a non-empty directory answers ok, but the directory under its new "
                   "name is empty: its entries are gone and their clusters stay allocated and "
                   "unreachable (vfat-check 'lost-clusters', fsck.fat 'Reclaimed'); a later "
                   "rmdir of it succeeds. Data loss; fusefat is wrong (rename(2) keeps the "
                   "subtree). Measured: mkdir /A; create /A/f; rename /A /B -> /B empty",
                   "a rename answered ok whose source was a directory with entries in the "
                   "model's tree (FusefatWriter.known_failure: one finding, the readers check the "
                   "script cut before that op); rename_dir_explains for a listing diff"),
    NamedException(NAMES, "fusefat", "writer",
                   "fusefat accepts only printable ASCII in new names: non-ASCII, DEL and controls, "
                   "the characters \\ : * ? \" < > | and names over 255 characters are refused "
                   "with EPERM (Linux takes non-ASCII names; it refuses the others with EINVAL / "
                   "ENAMETOOLONG). Modelled in PROFILE (fusefat_name_err); a design limit, not "
                   "a wrong answer",
                   "EPERM on create/mkdir/rename whose new leaf fusefat_name_err refuses"),
    NamedException(TRAILING, "fusefat", "writer",
                   "fusefat stores a name as given, trailing dots and a trailing space included "
                   "('dots...', 'trail '), and looks names up exactly: 'a.' and 'a' are two "
                   "entries. Linux strips trailing dots (and refuses a trailing space, EINVAL), "
                   "Windows too; an image holding 'dots...' is not readable by Linux (exception "
                   "mtools-trailing-dot-unopenable is the same effect). Wrong by the Win32 "
                   "namespace rules fusefat claims to follow",
                   "a create/mkdir/rename answered ok whose new leaf ends with '.' or ' ', or an "
                   "op answered ENOENT where the model answers otherwise and one of its paths "
                   "has a component ending in '.' or ' ' (known_failure: the readers check the "
                   "script cut before it); vfat-check's "
                   "'long name ends with '.'' and Linux readers that list such a name unopened "
                   "(explain, with the recogniser of mtools-trailing-dot-unopenable)"),
    NamedException(LABEL_AS_FILE, "fusefat", "reader",
                   "fusefat lists the root's volume label entry (attribute 0x08) as an empty "
                   "file ('/VFATFUZZ' on every image mkfs.fat -n made); by the FAT specification "
                   "an ATTR_VOLUME_ID entry is not a file: fusefat is wrong",
                   "the root holds a volume label entry and fusefat lists a root file of that "
                   "name, size 0: the reader drops it and records extra['exceptions'] = "
                   "['fusefat-label-as-file'] and extra['label_as_file']"),
    NamedException(CASE_TWINS, "fusefat", "reader",
                   "fusefat compares names case-insensitively beyond ASCII (libfat.c utf8_stricmp: "
                   "Unicode simple case folding), as the FAT long-name rules and Windows do; Linux "
                   "(iocharset=ascii/utf8) folds ASCII only, so a nodual writer makes 'σ' beside "
                   "'Σ' and 'é' beside 'É', and fusefat opens the first of the two for both "
                   "names: a design difference, like fatfs-case-twins",
                   "every difference lies at or under one of two expected names of a directory "
                   "equal under fusefat_fold (FusefatReader.explain)"),
    NamedException(RAW_83, "fusefat", "reader",
                   "fusefat hands a bare 8.3 name's bytes to the host as they are stored (cp437, "
                   "upper case): a non-ASCII one is not UTF-8, shows with U+FFFD, and cannot be "
                   "opened by that name (ENOENT: size and contents unknown). fusefat is wrong "
                   "(it has no code page for short names)",
                   "the expected leaf is non-ASCII and the shown one equals raw_83(expected) "
                   "(mtools writes such names bare: mtools-translit); a diff made only of such "
                   "files listed without contents (FusefatReader.explain)"),
    NamedException(NT_CASE, "fusefat", "reader",
                   "fusefat ignores the NT case byte (0x08 / 0x10): a bare 8.3 entry stored as "
                   "'LOWER' with the lower-case flag shows as 'LOWER' (Linux, Windows: 'lower')",
                   "actual leaf == expected leaf upper-cased, expected an ASCII name that fits "
                   "8.3 under the winnt rule (stored bare with case flags)"),
]
