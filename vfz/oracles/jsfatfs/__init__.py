"""The npm fatfs package 0.10.8 (natevw/fatfs, pure JavaScript) as a reader and a writer: `jsfatfs`.

Image tools use it to edit the boot partition of device images without
mounting them (about 28 000 downloads a month). Its registry name is
jsfatfs: `fatfs` is ChaN's FatFs (vfz/oracles/fatfs.py).

Modules: server.js (the Node side, beside its package.json and the
package-lock.json that pins fatfs 0.10.8, fifolock 1.0.0, struct-fu 1.2.1,
xok 1.0.0; `vfatfuzz setup` runs `npm ci` here, vfz.proc.npm_ci), server.py
(the one persistent Node process per oracle instance, JSON lines, restarted
after a throw, a crash or a hang), reader.py, writer.py, profile.py (the
model profile), exceptions.py (the named exceptions and their evidence),
fsck.py (fsck.fat's complaints on its images, each recognised as one of
them), fewclusters.py (its writes on a FAT32 volume of few clusters, read
as it reads them), partial.py (an entry cut at a full fixed root's end), alloc.py (its
cluster search: forward from a hint, never the last two clusters), enospc.py
(what its ENOSPC leaves: a size over a short chain, no entry), emptyread.py
(an empty file's cluster 0 read: before the volume with 64 KiB clusters), export.py and repro_js.py (the reproducer template: run.sh with node
and the pinned package, the ops as direct calls of its fs API, the image's
FAT copies, FSInfo and '..' entries read back).

Reader: fs.readdir from the root, fs.stat of each name (a directory answers
EISDIR: fs.stat opens it as a file, and the glue takes EISDIR for "a
directory"), fs.readFile of each file (size and sha256 of what it returns).
A name fs.stat does not find and a file fs.readFile fails on are complaints
("stat P: NOENT", "readFile P: IO"), their entries left out; a directory it
cannot read is "readdir P: IO". createFileSystem refusing the volume is the
error. Loops end with a complaint (more than 64 levels, 20 000 entries).

Writer: mkdir (fs.mkdir), create (fs.open 'wx', one fs.write of the op's
bytes, fs.close) and write (fs.open 'r+', one fs.write at the offset, fs.close;
a write of 0 bytes is not sent: pwrite of nothing does not extend a file,
the package's fs.write would pad). The package has no rename, unlink or
rmdir (README: "Coming Soon"), so `supports` leaves them out. What Linux
decides in the VFS the glue decides, with fs.stat as the lookup: the walk
with "." and ".." (the package folds them lexically: '/file/..' would be
'/'), ENOTDIR, trailing slashes, the root, PATH_MAX. The package's error
codes are errno names without the E ('EXIST' -> EEXIST). A script's ops run
as one burst: fs.close releases its path-cache entry 500 ms later, and the
glue holds those releases to the script's end, so nothing depends on the
machine's speed. The package's writes go to an overlay, committed to the
image atomically after the last op.

A throw that escapes the package (longname()'s name check: it throws from
inside the package's lock, the instance never answers again) ends the Node
process after it committed what the package wrote before it (its driver
writes through on a real volume) and reported the throw and the results
before it; a hang is
killed at the timeout. Either way the next image gets a fresh process.

Where the package differs from Linux, each read in its source and measured
by hand on mkfs.fat FAT12/16/32 volumes (exceptions.py names them, with
their evidence; profile.py models the design differences): names are
trimmed of blanks and trailing dots and compared upper-cased over all of
Unicode; '*', ':', '<', '>', '?', '\\' are accepted in long names (and
'+', ',', ';', '=', '[', ']' in short ones); every name gets long-name
slots (model rule "lfn") and an 8.3 alias of its own (no ~1: the first
clash is ~2); the bugs of exceptions.py. Shrinking a file (fs.truncate,
or fs.writeFile over a longer file) writes prefix + 0 (0xFF00 on FAT16)
into the freed clusters and leaves the new last cluster's link: the second
grammar's truncate shows it (meta.py, jsfatfs-truncate-ff00). Its model
runs out of clusters where Linux does (profile knob linux_capacity); where
the package runs out earlier, later or leaves another file behind, alloc.py,
enospc.py and fewclusters.py name why (campaign 3201's filled volumes).
"""
from vfz.oracles.evidence import few_clusters_exception
from vfz.oracles import Entry
from vfz.oracles.jsfatfs.alloc import EXCEPTIONS as _ALLOC_EXCEPTIONS
from vfz.oracles.jsfatfs.emptyread import EXCEPTIONS as _EMPTY_READ_EXCEPTIONS
from vfz.oracles.jsfatfs.enospc import EXCEPTIONS as _ENOSPC_EXCEPTIONS
from vfz.oracles.jsfatfs.exceptions import EXCEPTIONS as _EXCEPTIONS
from vfz.oracles.jsfatfs.fewclusters import EXCEPTIONS as _FEW_EXCEPTIONS
from vfz.oracles.jsfatfs.meta import EXCEPTIONS as _META_EXCEPTIONS
from vfz.oracles.jsfatfs.partial import EXCEPTIONS as _PARTIAL_EXCEPTIONS
from vfz.oracles.jsfatfs.profile import PROFILE
from vfz.oracles.jsfatfs.server import NODE_DIR, PACKAGE

EXCEPTIONS = _EXCEPTIONS + _META_EXCEPTIONS + _FEW_EXCEPTIONS + _PARTIAL_EXCEPTIONS + _ALLOC_EXCEPTIONS + \
    _ENOSPC_EXCEPTIONS + _EMPTY_READ_EXCEPTIONS
EXPORTS = {"jsfatfs": "vfz.oracles.jsfatfs.export"}   # its reproducer template (vfz/oracles/repro.py)

ENTRIES = [
    Entry("jsfatfs", "jsfatfs", fat_type="count", reader="vfz.oracles.jsfatfs.reader:JsfatfsReader",
          writer="vfz.oracles.jsfatfs.writer:JsfatfsWriter", profile=PROFILE, names="nodual",
          shortname="lfn", shorts="own", label="fatfs (npm, natevw)",
          supports=frozenset({"mkdir", "create", "write", "write-offset", "truncate", "chattr", "touch"}),
          needs=("nodejs", "npm:fatfs"), cost="process"),
]


def install(sh, apt):
    """Setup's step: npm ci of the pinned package (vfz.proc.npm_ci)."""
    from vfz.proc import npm_ci
    return npm_ci(sh, apt, NODE_DIR, PACKAGE)

# decides the FAT type by the cluster count (Entry.fat_type; the checker applies it)
EXCEPTIONS = EXCEPTIONS + [few_clusters_exception("jsfatfs")]
