"""The uboot model profile: the knobs with which vfz.model predicts U-Boot's writer.

Its name checks, its lookup, the order of its refusals.

Part of the uboot oracle (vfz/oracles/uboot/); the registry entry in
__init__.py hands PROFILE to the model (vfz/model/profiles.py says what
each knob means).
"""
from vfz.oracles.uboot.names import latin1_lower
from vfz.oracles.uboot.shell import Unnameable, enc, uboot_norm, word


def uboot_name_err(leaf):
    """A new name (U-Boot's fat_write.c, measured): nothing left after uboot_norm: the
    command fails without an errno ("Unable to write file": EIO, where Linux
    says ENOENT for dots, EINVAL for blanks); normalize_longname refuses "."
    and "..", 256 bytes or more, units below 0x20 and <>:"/\\|?* (EINVAL).
    A trailing blank is not refused (U-Boot drops it; Linux: EINVAL).
    A control character or a '\\' comes first: the glue answers EINVAL for
    it before it encodes the name (UbootWriter._static). The glue's EILSEQ
    for a name it cannot hand over is path_err's, for the whole path and
    before any lookup; under a parent with a control byte or a '\\' the
    glue answers ENOENT instead (no entry holds one), so not here."""
    if any(ord(c) < 0x20 or c == "\\" for c in leaf):
        return "EINVAL"
    n = uboot_norm(leaf)
    if not n:
        return "EIO"
    if n in (".", "..") or len(n) >= 256:
        return "EINVAL"
    if any(ord(c) < 0x20 or c in '<>:"/\\|?*' for c in n):
        return "EINVAL"
    return None


def _fold(leaf):
    return latin1_lower(uboot_norm(leaf).encode("latin-1", "replace"))


def _uboot_lookup(d, leaf):
    """The entry U-Boot's writer finds for leaf where Linux's rule finds
    none: the normalised leaf (uboot_norm), case folded with U-Boot's
    Latin-1 tolower (strncasecmp): " x" and "x " find "x", "é" finds "É"."""
    key = _fold(leaf)
    for k in d.kids.values():
        if _fold(k.name) == key:
            return k
    return None


def _uboot_path_err(op):
    """EBUSY for unlink/rmdir of a root entry whose name U-Boot normalises
    away ("/...", "/ "). EILSEQ where the glue refuses the path before U-Boot sees it
    (UbootWriter._static, Session.words): a character beyond U+00FF, or a
    path word() cannot build (a "'" with non-ASCII bytes, or in a path over
    400 bytes); whatever the op and whether anything on the path exists.
    Not for the paths the glue answers as Linux first: the root, a last
    component "." or "..", a '\\' or a control character (EINVAL/ENOENT)."""
    comps = [c for c in op.args[0].split("/") if c]
    if op.kind in ("unlink", "rmdir") and len(comps) == 1 and not uboot_norm(comps[0]) \
            and not any(ord(x) < 0x20 or x == "\\" for x in comps[0]):
        # fatrm "/..." or "/ ": split_filename drops the trailing dots and
        # blanks (fatgen103) and leaves the root: "cannot remove root" (EBUSY),
        # where Linux finds no such name (ENOENT)
        return "EBUSY"
    if op.kind == "rename" or not comps or comps[-1] in (".", "..") or \
            any("\\" in c or any(ord(x) < 0x20 for x in c) for c in comps):
        return None
    try:
        word(enc(op.args[0]), "p")
    except Unnameable:
        return "EILSEQ"
    return None


PROFILE = {
    "name_err": uboot_name_err,
    # the glue's EILSEQ comes before any lookup, and U-Boot checks a new
    # leaf (split_filename, normalize_longname) before it walks the parent
    # (fat_write.c file_fat_write_at, fat_mkdir): exceptions uboot-shell-bytes
    # and uboot-name-check-first, predicted rather than tolerated
    "path_err": _uboot_path_err,
    "name_first": True,
    "lookup": _uboot_lookup,
    "store": uboot_norm,
    # U-Boot gives every name LFN slots and a ~N alias (even "dir" -> DIR~1):
    # the fixed root fills by its own count, not modelled
    "unbounded_root": True,
    # fatmkdir gives a directory ATTR_DIR | ATTR_ARCH (fat_write.c fat_mkdir;
    # measured: 0x30), Linux ATTR_DIR alone
    "dir_attr": 0x30,
}
