"""fusefat 0.1a (Debian 12), an independent user-space FAT driver, through FUSE.

Reader: `fusefat -f -s -o ro IMAGE DIR`, then a child agent (agent.py,
chrooted into DIR) walks the tree with os.walk and hashes every file.
Writer: `fusefat -f -s -o rw+ IMAGE DIR` (rw+: fusefat's own read-write
mode; plain rw is refused), the agent applies each op with ordinary
syscalls (mkdir; open(O_CREAT|O_EXCL) + pwrite for create; open(O_WRONLY) +
pwrite at the offset for write; rename, unlink, rmdir) and answers "ok" or
the errno name; then `fusermount -u DIR` and fusefat's exit (it writes its
state back on unmount).

Every request has its own timeout: a FUSE daemon that stops answering
blocks the agent, not the harness; the agent and fusefat are then killed
and the mount is detached (`fusermount -u -z`). Each read or apply mounts
afresh, so a hang or crash never carries over to the next image.

What fusefat does (measured on Debian 12, fusefat 0.1a-1.1):
  * names: only printable ASCII; any other character (non-ASCII, DEL,
    controls) and \\ : * ? " < > | -> EPERM (Linux: EINVAL, or accepts
    non-ASCII); more than 255 characters -> EPERM (Linux ENAMETOOLONG);
    trailing dots and a trailing space are kept ('dots...', 'trail '; Linux
    strips dots and refuses the space); "..." is created as a file
  * every new name gets LFN slots and a short entry '~N' (N a counter of the
    mount: '~1', '~12'), even a valid 8.3 name: its own alias scheme
  * a rename to a name it refuses (EPERM) deletes the source first: data loss
  * a case-only rename of a file frees its clusters (data loss); of a
    directory answers EPERM
  * rmdir of a non-empty directory (and rename onto one) answers EPERM
    (Linux ENOTEMPTY); a write at the end of a one-cluster file or past its
    cluster answers EPERM
  * a write that starts at or past the end of the last cluster of a file
    of two or more clusters answers ok but links the file's first cluster
    to the new ones: its other clusters are cut off (lost), the data lands
    that many clusters too early and the size overshoots the chain
  * rename of a non-empty directory answers ok and leaves it empty under its
    new name: the subtree is lost, its clusters allocated and unreachable
  * unmounting a FAT16 volume mounted rw+ writes 0x8000 into FAT[1] of both
    FATs (was 0xFFFF); FAT12 and FAT32 are left alone
  * the volume label entry is listed as an empty file in the root
  * a rename onto an existing file replaces it under the new spelling
    (rename /B /a over 'a' leaves 'B'; Linux keeps 'a'): modelled
  * the reader ignores the NT case byte: a bare 8.3 name shows as stored
    ('LOWER' for 'lower' with the lower-case flag)
See EXCEPTIONS for how each is recognised. Another program under the
name (Debian 13's fusefat is fusefatfs 0.4) is refused: is_fusefat_01a.

The package: mount.py (the mount, the agent's requests, the unmount, which
program runs), agent.py (the agent itself, standalone), reader.py,
writer.py, names.py (fusefat's name rules and the model profile),
known.py (the first op of a writer's known failure), damage.py (the image
evidence of its data-losing writes), exceptions.py (the catalogue). This
module holds the registry entry and the public names.
"""
from vfz.oracles.evidence import few_clusters_exception
from vfz.oracles import Entry
from vfz.oracles.fusefat.damage import (erase_overrun_evidence, fusefat_seek_relinks, gap_evidence,  # noqa: F401
                                        lost_chains, orphan_short, orphan_tail, write_gap_cut)
from vfz.oracles.fusefat.exceptions import (CASE_RENAME, CASE_TWINS, ERASE_OVERRUN, EXCEPTIONS,  # noqa: F401
                                            FAT1_CLEAN, INTO_SUBTREE, LABEL_AS_FILE, LONG_UTF8_CUT,
                                            NAMES, NT_CASE, RAW_83, RENAME_DIR_EMPTIES, RENAME_ONTO,
                                            RENAME_REFUSED, RMDIR_NONEMPTY, SELF_RENAME_HANG, SLOT_RUN,
                                            TRAILING, WRITE_EPERM, WRITE_GAP)
from vfz.oracles.fusefat.known import (first_known_failure, rename_dir_explains, slot_run_wrapped,  # noqa: F401
                                       stale_self_rename)
from vfz.oracles.fusefat.mount import (AGENT, FUSEFAT, MOUNT_WAIT, UNMOUNT_WAIT, Mount, _mounted,  # noqa: F401
                                       available, is_fusefat_01a)
from vfz.oracles.fusefat.names import PROFILE, fusefat_fold, fusefat_name_err, raw_83, readdir_cut  # noqa: F401
from vfz.oracles.fusefat.reader import FusefatReader, root_label  # noqa: F401
from vfz.oracles.fusefat.writer import FusefatWriter, check_kind, fat1  # noqa: F401

EXPORTS = {"fusefat": "vfz.oracles.fusefat.export"}   # its reproducer template (vfz/oracles/repro.py)
ENTRIES = [
    Entry("fusefat", "fusefat", fat_type="count", iotrace="preload", reader="vfz.oracles.fusefat:FusefatReader",
          writer="vfz.oracles.fusefat:FusefatWriter", profile=PROFILE, names="nodual",
          shortname="win95", shorts="own", needs=("fusefat", "fuse"), cost="process"),
]

# decides the FAT type by the cluster count (Entry.fat_type; the checker applies it)
EXCEPTIONS = EXCEPTIONS + [few_clusters_exception("fusefat")]
