"""ChaN FatFs R0.15 (npm js-fatfs 0.2.1, compiled to WebAssembly) as a
reader and as a writer: `fatfs`.

FatFs is the FAT stack inside cameras, players, data loggers and boot
ROMs; its answers are what such a device makes of a volume.

The build (js-fatfs's fatfs/source/ffconf.h at v0.2.1, read in the
package's repository; confirmed here by measurement where noted):
  FF_USE_LFN 1, FF_MAX_LFN 255, FF_LFN_UNICODE 2 (UTF-8 API), FF_LFN_BUF
  765, FF_SFN_BUF 34; FF_CODE_PAGE 0 (every code page; this glue asks for
  437 through js-fatfs's create({codepage: 437}), which calls f_setcp);
  FF_FS_RPATH 0 (no "." / ".." in paths: FR_INVALID_NAME, and f_readdir
  skips dot entries); FF_FS_EXFAT 0; FF_FS_LOCK 0; FF_FS_READONLY 0;
  FF_FS_MINIMIZE 0; FF_USE_FIND 0, FF_USE_CHMOD 0, FF_USE_LABEL 0;
  FF_FS_NORTC 0 (timestamps from the host clock); FF_MIN_SS 512, FF_MAX_SS
  4096; FF_VOLUMES 10 with FF_STR_VOLUME_ID 0 (a ':' anywhere in a path
  is read as a drive prefix: FR_INVALID_DRIVE).

The Node side (vfz/oracles/fatfs/server.js, package.json and the pinned
package-lock.json beside it; `vfatfuzz setup` runs `npm ci` there) is one
persistent process per oracle instance, JSON lines over stdin/stdout;
js-fatfs's diskio callbacks read the image file sector by sector straight
into the WebAssembly memory, FatFs's writes stay in an overlay in memory
and are committed after an op-script (a copy of the image, the sectors
written, rename: atomic). A WebAssembly trap or a JavaScript exception is
answered as an error and ends the process; a request that does not
answer within the timeout kills it. Either way the
image's answer is an error (a finding: FatFs crashed or hung on it) and
the next image gets a fresh process.

Reader: walks the tree with f_opendir/f_readdir from the root, listing
long names (FILINFO fname; the 8.3 name when there is no valid long name,
as FatFs shows it), type and size, and hashes each file read with
f_open/f_read (sha256 in Node). Entries carry two extra keys kept for
reports: short83 (FILINFO altname) and attr. A file whose long name FatFs
cannot look up again (f_stat fails: e.g. a long name with trailing dots
that another writer kept) is opened by its 8.3 name when that finds the
same entry; a long name that finds another entry (two names FatFs folds
to one) is read as found, with a complaint. Errors:
  * f_mount fails (FR_NO_FILESYSTEM, FR_DISK_ERR, ...): ReadResult.error
    "f_mount: FR_..." (the image is unreadable to FatFs);
  * an FR_ error while walking or reading (f_readdir, f_open, f_read) is
    a complaint "f_readdir /dir: FR_INT_ERR" and the listing keeps what was
    read (the entry of an unreadable file has its size and no sha256), so
    the listing differs from the expected tree and the complaint says why;
  * a sector past the end of the image file reads as a disk error
    (FR_DISK_ERR), never as zeros;
  * loops end with a complaint, not a hang: a directory whose first
    cluster was listed already is not listed again ("already listed (loop
    or cross-link)"), and a file read is stopped once it returned more
    bytes than the volume holds (f_read follows a cluster chain that loops
    for as long as the size field says, up to 4 GiB); a name the path API
    cannot spell (a unit below 0x20, '\\', ':') is opened by its 8.3 name.
    Measured with 2 000 mutated FAT12 images (1-200 random bytes each):
    no trap, no hang after these guards (11 hangs of the walker before).

Writer: every op of the grammar. What Linux decides in the VFS is decided
in the glue, asking FatFs's own f_stat: the path walk with "." and ".."
(FF_FS_RPATH 0), trailing slashes (FatFs ignores them: create "/a/" would
make a file), unlink of a directory and rmdir of a file (FatFs has one
f_unlink for both: EISDIR / ENOTDIR first), the root, rename's EBUSY,
ENOTDIR / EISDIR between types, EINVAL into its own subtree (f_rename does
not check it) and ENOTEMPTY onto an ancestor, paths of PATH_MAX bytes. A
component the API cannot express is refused before FatFs sees it: a unit
below 0x20 ends a FatFs path, '\\' separates, ':' is a drive prefix (new
name: EINVAL, as Linux; lookup: ENOENT). What Linux decides in the file
system, FatFs decides; its FRESULT becomes the errno below. write zero-
fills a gap past the end of the file itself (f_lseek past the end leaves
it undefined, FatFs's documentation says so). Contents are regenerated in
Node by the rule of vfz.opscript.content (byte i = (seed + 31 i) mod 256).

FRESULT -> errno (measured against the model of Linux in the same
situations by tests/test_fatfs.py and vfat-gen scripts; EXCEPTIONS and the
profile say where FatFs differs by design; FR_WRITE_PROTECTED and the
read-only FR_DENIED of f_unlink are unreachable from op-scripts, which make
no read-only file or volume, so their errnos are unmeasured choices):
  f_mkdir, f_open(FA_CREATE_NEW), f_rename's new name:
    FR_OK ok; FR_EXIST EEXIST; FR_INVALID_NAME EINVAL (also a name longer
    than 255 units, where Linux says ENAMETOOLONG: profile name_err);
    FR_INVALID_DRIVE EINVAL; FR_DENIED ENOSPC (no free cluster, or the
    FAT12/16 root is full); FR_NO_FILE / FR_NO_PATH ENOENT;
    FR_WRITE_PROTECTED EROFS; anything else EIO
  f_rename onto an existing entry: FR_EXIST, always (FatFs never replaces;
    Linux does). The glue then removes the target (f_unlink; FR_DENIED for
    a directory that is not empty: ENOTEMPTY) and calls f_rename again, so
    the entry takes the new spelling (profile knob replace "respell",
    exception fatfs-rename-no-replace)
  f_unlink as unlink: FR_DENIED EACCES (read-only); as rmdir: FR_DENIED
    ENOTEMPTY (FatFs's answer for a directory that is not empty)
  f_write short (bw < btw) or FR_DENIED: ENOSPC; other FR_ errors EIO
  f_stat failing during the path walk: ENOENT (a file as a parent:
    ENOTDIR, decided by the walk)
The FR_ name behind each answer is kept in the WriteResult's raw text (a
replacing rename: the three calls, "FR_EXIST,FR_OK,FR_OK").

Where FatFs differs from Linux by design, each measured (the model
profile PROFILE predicts the writer; EXCEPTIONS names the rest):
  * names (create_name): trailing spaces dropped like dots ('b ' is 'b');
    DEL refused; 255 units counted before the dots are dropped and
    FR_INVALID_NAME (EINVAL) for too long; a name of dots only EINVAL
    (knobs name_err, store; exception fatfs-name-rules);
  * lookups fold every letter ff_wtoupper knows, 848 of the 1173 case
    pairs Python knows (casefold.json, re-measured by the test): 'é'
    finds 'É' (knob lookup; fatfs-unicode-case);
  * a rename to a respelling of the same entry applies it (knob
    case_rename; fatfs-case-rename); a rename onto another entry is
    refused by f_rename and done by the glue (knob replace;
    fatfs-rename-no-replace);
  * aliases: ~1..~5, then a CRC tail; a leading dot leaves the base empty
    (~1.BAS) (the writer's known_failure; fatfs-own-aliases);
  * reading: a long name with DEL is listed but cannot be opened
    (fatfs-del-unopenable), and two names Linux keeps apart that FatFs
    folds to one open the same entry (fatfs-case-twins: 'élongname.txt'
    beside 'Élongname.txt' from any Linux; 'é' beside 'É' from nodual
    writers only, where no alias clash stops Linux); the reader's explain
    hook. The reader opens by the long name as an application would, and
    by the 8.3 name only when the long name finds nothing.

The package: server.py (the Node process), reader.py, writer.py, names.py
(FatFs's folding and name rules: casefold.json and the model profile),
exceptions.py (the catalogue), format.py (f_mkfs as the formatter
`fatfs-mkfs`), __main__.py (`python3 -m vfz.oracles.fatfs
--casefold`). This module holds the registry entry, setup's install step
and the public names.
"""
import os
import shutil

from vfz.oracles.evidence import few_clusters_exception
from vfz.oracles import OPS, Entry
from vfz.oracles.fatfs.exceptions import CASE_TWINS, DEL_UNOPENABLE, EXCEPTIONS, OWN_ALIASES  # noqa: F401
from vfz.oracles.fatfs.names import (CASEFOLD, PROFILE, candidate_pairs, fatfs_fold,  # noqa: F401
                                     measure_casefold)
from vfz.oracles.fatfs.reader import FatfsReader, explain_read  # noqa: F401
from vfz.oracles.fatfs.server import (NODE_DIR, SERVER, START_TIMEOUT, WASM, Server,  # noqa: F401
                                      ServerError, available)
from vfz.oracles.fatfs.writer import FatfsWriter, known_failure, spells_alias  # noqa: F401

EXPORTS = {"fatfs": "vfz.oracles.fatfs.export"}   # its reproducer template (vfz/oracles/repro.py)
ENTRIES = [
    Entry("fatfs", "fatfs", fat_type="count", iotrace="own", supports=OPS | {"write-offset", "truncate"}, reader="vfz.oracles.fatfs:FatfsReader", writer="vfz.oracles.fatfs:FatfsWriter",
          profile=PROFILE, names="dual", shortname="winnt", shorts="own", label="FatFs R0.15",
          needs=("nodejs", "npm:js-fatfs"), cost="process"),
    Entry("fatfs-mkfs", "fatfs", formatter="vfz.oracles.fatfs.format:FatfsFormatter",
          needs=("nodejs", "npm:js-fatfs"), label="FatFs f_mkfs"),
]


def install(sh, apt):
    """Setup's step for this oracle (vfz.cli.setup calls every oracle module's
    install): the Node package js-fatfs, pinned in package-lock.json
    (vfz.proc.npm_ci). -> exit code."""
    from vfz.proc import npm_ci
    return npm_ci(sh, apt, NODE_DIR, WASM)

# decides the FAT type by the cluster count (Entry.fat_type; the checker applies it)
EXCEPTIONS = EXCEPTIONS + [few_clusters_exception("fatfs")]
