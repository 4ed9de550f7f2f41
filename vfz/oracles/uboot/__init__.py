"""The uboot oracle: U-Boot 2023.01 as a reader and as a writer, and its registry entry.

Debian's u-boot-qemu, the 32-bit qemu-x86 build, run under QEMU: `uboot`.

U-Boot is the boot loader of most ARM boards; its FAT code (fs/fat) is
what such a board makes of a volume a host wrote. One module per concern:

  board.py       one QEMU running U-Boot over its serial console; the
                 transfer disk; boards kept per image size (Board, Boards)
  shell.py       paths handed to U-Boot's shell (word, enc, uboot_norm),
                 sessions on one loaded image, fatls output
  reader.py      UbootReader: fatls and fatload, the bytes hashed on the host
  writer.py      UbootWriter: the op-script onto fatmkdir, fatwrite, fatrm
  names.py       names as U-Boot shows them (lfn_low_byte_form, raw_83_form)
  exceptions.py  the named exceptions' names and catalogue (EXCEPTIONS)
  fresh.py       what U-Boot refuses of a formatter's fresh volume (fresh_exceptions)
  explain.py     the evidence that recognises each named exception
  profile.py     the model profile's knobs (PROFILE)

This package holds the registry entry (ENTRIES) and re-exports the names
other code imports from vfz.oracles.uboot. Its modules import each other
directly, never this package.
"""
from vfz.oracles import Entry
from vfz.oracles.uboot.board import (
    BOOT_TIMEOUT, DATA_ADDR, DATA_MAX, ENV_ADDR, ENV_BLOCKS, MARK, MAX_IDLE, MEM_MB, QEMU, ROM,
    SCRIPT_MAX, TRAP, XFER_SIZE, Board, Boards, Trap, available)
from vfz.oracles.uboot.shell import (
    DEV, FILE_LINE, SUMMARY, Session, Unnameable, enc, norm_path, parse_ls, uboot_norm, word)
from vfz.oracles.uboot.names import (
    colliding, dup_short_ext, lfn_low_byte_form, long_05, raw_83_form, shown_paths)
from vfz.oracles.uboot.exceptions import (
    ALIAS_DEL, ALIAS_DUP, ALIAS_E5, ALIAS_LATIN1, COLLIDE, EXCEPTIONS, FSINFO, LFN_LOW_BYTE,
    LITERAL_WALK, NAME_FIRST, NO_RENAME, RAW_83, SHELL_BYTES, SKIPPED_05, UNADDRESSABLE,
    WALK_ENOENT, ZERO_DATE)
from vfz.oracles.uboot.profile import PROFILE
from vfz.oracles.uboot.reader import READ_LINE, UbootReader
from vfz.oracles.uboot.writer import (
    CUT_PARENT, MESSAGES, PBSIZE, WALK_ERR, UbootWriter, cut_walk, errno_of, uboot_parent)

# ---------------------------------------------------------------- registry
EXPORTS = {"uboot": "vfz.oracles.uboot.export"}   # its reproducer template (vfz/oracles/repro.py)
ENTRIES = [
    Entry("uboot", "uboot", iotrace="own", reader="vfz.oracles.uboot:UbootReader",
          writer="vfz.oracles.uboot:UbootWriter", profile=PROFILE, names="dual", shorts="own",
          supports=frozenset({"mkdir", "create", "write", "unlink", "rmdir", "write-offset", "truncate"}),
          needs=("u-boot-qemu", "qemu-system-x86"), cost="vm"),
]

__all__ = [
    "BOOT_TIMEOUT", "DATA_ADDR", "DATA_MAX", "ENV_ADDR", "ENV_BLOCKS", "MARK", "MAX_IDLE",
    "MEM_MB", "QEMU", "ROM", "SCRIPT_MAX", "TRAP", "XFER_SIZE", "Board", "Boards", "Trap",
    "available", "DEV", "FILE_LINE", "SUMMARY", "Session", "Unnameable", "enc", "norm_path",
    "parse_ls", "uboot_norm", "word", "colliding", "dup_short_ext", "lfn_low_byte_form",
    "long_05", "raw_83_form", "shown_paths", "ALIAS_DEL", "ALIAS_DUP", "ALIAS_E5",
    "ALIAS_LATIN1", "COLLIDE", "EXCEPTIONS", "FSINFO", "LFN_LOW_BYTE", "LITERAL_WALK",
    "NAME_FIRST", "NO_RENAME", "RAW_83", "SHELL_BYTES", "SKIPPED_05", "UNADDRESSABLE",
    "WALK_ENOENT", "ZERO_DATE", "PROFILE", "READ_LINE", "UbootReader", "CUT_PARENT", "MESSAGES",
    "PBSIZE", "WALK_ERR", "UbootWriter", "cut_walk", "errno_of", "uboot_parent", "ENTRIES"]
