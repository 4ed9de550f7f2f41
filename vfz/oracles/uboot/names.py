"""Names as U-Boot shows them: its long-name form, its bare 8.3 form, an image's paths in them.

Its long-name form keeps one byte per UTF-16 unit; an image's paths in
U-Boot's forms come from the core's listing of the image.

Part of the uboot oracle (vfz/oracles/uboot/): pure functions, used to
recognise its named exceptions (explain.py) and by its model profile.
"""
from vfz import listing
from vfz.model.names import _cp437_upper


def lfn_low_byte_form(leaf):
    """The long name as U-Boot 2023.01 builds it (fs/fat/fat.c slot2str):
    per 13-unit LFN slot, the low byte of each UTF-16 unit up to the first
    unit whose low byte is 0 -- as Latin-1 characters (the reader's
    decoding). 'Über' -> 'Über' (U+00DC's low byte is 0xDC), 'emoji 😀 file'
    -> 'emoji =' (D83D -> '=', DE00 ends the slot)."""
    b = leaf.encode("utf-16-le", "surrogatepass")
    units = [b[i] | b[i + 1] << 8 for i in range(0, len(b), 2)]
    out = []
    for k in range(0, len(units), 13):
        for u in units[k:k + 13]:
            if u & 0xFF == 0:
                break
            out.append(chr(u & 0xFF))
    return "".join(out)


def latin1_lower(bs):
    # U-Boot's tolower (lib/ctype.c: Latin-1 classes) on raw bytes
    return bytes(c + 32 if 0x41 <= c <= 0x5A or (0xC0 <= c <= 0xDE and c != 0xD7) else c for c in bs)


def raw_83_form(leaf):
    """A bare 8.3 entry as U-Boot shows it (get_name): the stored OEM bytes
    (Linux upper-cases through cp437), each part lower-cased with U-Boot's
    Latin-1 tolower when Linux set its NT lower-case bit (the part has no
    upper-case letter), decoded as Latin-1. None if leaf is not 8.3-able."""
    base, dot, ext = leaf.rpartition(".") if "." in leaf[1:] else (leaf, "", "")
    try:
        # a character outside the code page is never stored bare, even
        # when its upper case is in it ('ı' -> 'I', 'ſ' -> 'S')
        leaf.encode("cp437")
        parts = []
        for part in (base, ext):
            # upper-cased as Linux does, in the code page: 'ß' stays 'ß' (0xE1), not 'SS'
            raw = "".join(_cp437_upper(c) for c in part).encode("cp437")
            if part and part == part.lower():
                raw = latin1_lower(raw)
            parts.append(raw)
    except UnicodeEncodeError:
        return None
    return (parts[0] + (b"." + parts[1] if dot else b"")).decode("latin-1")


def dup_short_ext(listing_):
    """Pairs of entries of one directory with the same 8.3 bytes whose
    extension has 1 or 2 characters (the core's listing: "short" hex)."""
    seen, out = {}, []
    for e in listing_ or ():
        sh = e.get("short")
        if not sh:
            continue
        key = (e["path"].rpartition("/")[0], sh)
        if key in seen:
            ext = bytes.fromhex(sh)[8:].rstrip(b" ")
            if 1 <= len(ext) <= 2:
                out.append((seen[key], e["path"]))
        else:
            seen[key] = e["path"]
    return out


def long_05(listing_):
    """Paths of the entries that have LFN slots and whose short entry starts
    with 0x05 (the FAT stand-in for a first byte 0xE5), from the core's
    listing of the image (its "short" hex and "lfn" count)."""
    return {e["path"] for e in listing_ or ()
            if e.get("lfn") and str(e.get("short", "")).lower().startswith("05")}


def fold_shown(text):
    return latin1_lower(text.encode("latin-1", "replace")).decode("latin-1")


def shown_paths(listing_, fold=True):
    """{path: the path as U-Boot shows it, case folded unless not fold} for
    every entry of the core's listing of an image: a long name as
    lfn_low_byte_form makes it, a bare 8.3 entry as its OEM bytes (NT case
    bits, 0x05 read as 0xE5)."""
    own = {}
    for e in listing_ or ():
        path = e["path"]
        leaf = path.rpartition("/")[2]
        sh = e.get("short")
        if e.get("lfn") or not sh:
            own[path] = lfn_low_byte_form(leaf)
            continue
        raw = bytearray(bytes.fromhex(sh))
        if raw[0] == 0x05:
            raw[0] = 0xE5
        base, ext = bytes(raw[:8]).rstrip(b" "), bytes(raw[8:11]).rstrip(b" ")
        nt = e.get("nt") or 0
        base = latin1_lower(base) if nt & 0x08 else base
        ext = latin1_lower(ext) if nt & 0x10 else ext
        own[path] = (base + (b"." + ext if ext else b"")).decode("latin-1")
    out = {}
    for path in own:
        comps = path.split("/")[1:]
        vis = "".join("/" + own.get("/".join([""] + comps[:i + 1]), c) for i, c in enumerate(comps))
        out[path] = fold_shown(vis) if fold else vis
    return out


def unaddressable(listing_):
    """The entries of the core's listing of an image that U-Boot lists but
    that the reader cannot hand to a command, with nothing under them
    listed: -> {path: (U-Boot's path, folded; cause)}, cause LFN_LOW_BYTE
    for an empty name (its first unit's low byte is 0: U-Boot lists it as
    'DIR/'), UNADDRESSABLE for a name holding '/' (a separator to U-Boot)
    or a path shell.word() refuses (LF, 0xFF, '\\', a quote with bytes the
    shell cannot take). Only entries U-Boot reaches: none under such an
    entry, nor under an entry U-Boot skips (long_05)."""
    from vfz.oracles.uboot.exceptions import LFN_LOW_BYTE, UNADDRESSABLE
    from vfz.oracles.uboot.shell import Unnameable, word
    raw = shown_paths(listing_, fold=False)
    cut = set(long_05(listing_))
    out = {}
    for e in sorted(listing_ or (), key=lambda e: e["path"]):
        path = e["path"]
        if listing.under(path, cut):
            continue
        vis = raw[path]
        leaf = lfn_form_of(e)
        cause = None
        if not leaf:
            cause = LFN_LOW_BYTE
        elif "/" in leaf:
            cause = UNADDRESSABLE
        else:
            try:
                word(vis.encode("latin-1"), "p")
            except Unnameable:
                cause = UNADDRESSABLE
        if cause:
            out[path] = (fold_shown(vis), cause)
            cut.add(path)
    return out


def lfn_form_of(e):
    """The leaf of a core listing entry as U-Boot shows it (its own form)."""
    leaf = e["path"].rpartition("/")[2]
    if e.get("lfn") or not e.get("short"):
        return lfn_low_byte_form(leaf)
    return shown_paths([dict(e, path="/" + leaf)], fold=False)["/" + leaf][1:]


def s_name(e):
    """The 8.3 name U-Boot's get_name makes of a core listing entry's short
    entry (its OEM bytes, NT case bits with the Latin-1 tolower, 0x05 read
    as 0xE5), as Latin-1 text; None without one."""
    sh = e.get("short")
    if not sh:
        return None
    raw = bytearray(bytes.fromhex(sh))
    if raw[0] == 0x05:
        raw[0] = 0xE5
    base, ext = bytes(raw[:8]).rstrip(b" "), bytes(raw[8:11]).rstrip(b" ")
    nt = e.get("nt") or 0
    base = latin1_lower(base) if nt & 0x08 else base
    ext = latin1_lower(ext) if nt & 0x10 else ext
    return (base + (b"." + ext if ext else b"")).decode("latin-1")


def shadowed(listing_, shown):
    """The shown (folded) paths U-Boot's lookup may take for another entry
    of their directory through its 8.3 name: fat_itr_resolve matches a
    component C against an entry's short name with strncasecmp over
    max(len(long name as shown), len(C)) characters, so a C as long as the
    other entry's shown long name and equal to that many first characters
    of its 8.3 name (or, shorter than it, the whole 8.3 name) finds that entry ('_x_' finds U+5401 'x' U+5401, shown
    '\x01x\x01', alias _X_~1) when it comes first in the directory (the
    order is not in the listing: both ways are taken)."""
    by_dir = {}
    for e in listing_ or ():
        if e["path"] in shown:
            by_dir.setdefault(e["path"].rpartition("/")[0], []).append(e)
    out = set()
    for kids in by_dir.values():
        for e in kids:
            sn = s_name(e)
            if not sn or not e.get("lfn"):
                continue             # without a long name the 8.3 name is the name
            lf = fold_shown(lfn_low_byte_form(e["path"].rpartition("/")[2]))
            for a in kids:
                if a is e:
                    continue
                c = shown[a["path"]].rpartition("/")[2]
                if len(c) >= len(lf):
                    hit = len(sn) >= len(c) and fold_shown(sn[:len(c)]) == c
                else:
                    hit = fold_shown(sn) == c
                if c and hit:
                    out.add(shown[a["path"]])
    return out


def colliding(shown):
    """The shown (folded) paths two or more entries of one directory share:
    U-Boot's lookup (fat_itr_resolve, strncasecmp) finds the first of them
    only, so the others cannot be opened, listed or loaded by name."""
    count = {}
    for v in shown.values():
        count[v] = count.get(v, 0) + 1
    return {v for v, n in count.items() if n > 1}
