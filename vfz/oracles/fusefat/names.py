"""How fusefat shows, folds and refuses names, and the model profile of its writes.

Shown names (raw_83, readdir_cut), compared names (fusefat_fold), refused
new names (fusefat_name_err) and PROFILE, the knobs of vfz.model that
predict what the fusefat writer does.
"""


def raw_83(name):
    """A bare 8.3 name as fusefat shows it: its stored bytes (upper case,
    cp437) taken as UTF-8 by the host (U+FFFD for what is not UTF-8); None
    when the name has no cp437 form."""
    from vfz.model.names import _cp437_upper
    try:
        b = "".join(c.upper() if c.isascii() else _cp437_upper(c) for c in name).encode("cp437")
    except UnicodeEncodeError:
        return None
    return b.decode("utf-8", "replace")


def fusefat_fold(name):
    """A name as fusefat compares it (libfat.c utf8_stricmp): ASCII letters
    folded, every other character by Unicode simple case folding ('Σ' and
    'σ', 'É' and 'é' are one name; 'ß' stays 'ß')."""
    out = []
    for c in name:
        f = c.casefold()
        out.append(f if len(f) == 1 else (c.lower() if len(c.lower()) == 1 else c))
    return "".join(out)


def readdir_cut(leaf):
    """The name fusefat's readdir gives for a long name (LONG_UTF8_CUT):
    fat_readdir (libfat.c) converts the UTF-16 name to UTF-8 and copies
    at most 255 bytes into d_name, so a name of 255 units or fewer whose
    UTF-8 form is longer (any non-ASCII character in a long enough name)
    is cut, maybe inside a character (shown here as U+FFFD, as the agent's
    bytes are decoded). A lookup of the cut name finds nothing (ENOENT)."""
    b = leaf.encode("utf-8", "surrogatepass")
    return b[:255].decode("utf-8", "replace") if len(b) > 255 else leaf


_FUSEFAT_BAD = set('\\/:*?"<>|')


def fusefat_name_err(leaf):
    """The errno fusefat answers for a new name, as measured: EPERM for any
    character outside printable ASCII or in \\ / : * ? " < > |, and for
    more than 255 characters; else the checks Linux's VFS makes first."""
    if any(not (0x20 <= ord(c) < 0x7F) or c in _FUSEFAT_BAD for c in leaf) or len(leaf) > 255:
        return "EPERM"
    if leaf.strip(".") == "":
        from vfz.model import check_new_name
        return check_new_name(leaf)
    return None


# Model profile of the fusefat writer (knobs: vfz.model, "Profile knobs"):
# its name rule, names stored as given (trailing dots and spaces kept), and
# a rename onto an existing file takes the new spelling: fat_rename
# (libfat.c) deletes the target (fat_delete) and creates the source's entry
# under the name given (fat_create), where Linux reuses the target's entry
# (campaign seed 10102: rename /X26 onto /x12 leaves /XXXXXXXXXXXX).
PROFILE = {
    "name_err": fusefat_name_err,
    "store": lambda leaf: leaf,
    "replace": "respell",
    # the second grammar (measured through the agent): truncate(2) only
    # shrinks (to the same size or larger: EPERM); FAT_IOCTL_SET_ATTRIBUTES
    # is ENOTTY (no ioctl: its supports leave chattr out), and nothing sets
    # a label; utimensat sets both times, of a directory too (exceptions.py
    # names the dates it writes wrong: fusefat-month-minus-one)
    "truncate_grow": "EPERM",
    # a new entry stamps its directory's access date as well as its modify time
    "dir_atime": "clock",
}
