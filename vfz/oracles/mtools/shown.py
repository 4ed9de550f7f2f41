"""What mtools shows besides names and bytes: attributes (mattrib), modify times (mdir) and the label (mdir, minfo).

The meta keys of the canonical listing (docs/listing.md) as mtools 4.0.32
shows them, with TZ=UTC0 (tool.py):
  * attrs: `mattrib -/ ::/` prints the letters A S H R before each path
    (the same path syntax as `mdir -b`); a path it does not print, none;
  * mtime: `mdir -/ -a ::/` prints each entry's date and time to the minute
    ("2009-06-27   5:19"): the mask (meta_mask) floors both sides to the
    minute; the entry is found by its long name, else its 8.3 name as
    mdir prints it (NAME.EXT); mdir shows no access date;
  * label: mdir's "Volume in drive : is X" / "has no label" is the root
    entry's, minfo's `disk label="..."` the boot sector's (without the 0x29
    signature minfo prints none: then not compared).
A line that cannot be matched to a listed path leaves that entry without
the key (compared where shown).
"""
import calendar
import re

from vfz.oracles.mtools.tool import mtools_env
from vfz.proc import run

_LETTERS = {"R": "r", "H": "h", "S": "s", "A": "a"}
_DIR = re.compile(r"^Directory for ::(/.*)$")
_ROW = re.compile(r"^(.{8}) (.{3}) +(?:<DIR>|[0-9 ]+?) +(\d{4})-(\d\d)-(\d\d) +(\d{1,2}):(\d\d)(?: *$|  (.+)$)")
_LABEL = re.compile(r"^ Volume in drive . (?:is (.*)|has no label)$")
_DISK = re.compile(r'disk label="(.{11})"')


def mask(key, value):
    """mdir shows times to the minute."""
    return value - value % 60 if key == "mtime" and isinstance(value, int) else value


def attrs(image, timeout):
    """{path: letters} from mattrib, and the Proc."""
    p = run(["mattrib", "-i", image, "-/", "::/"], timeout=timeout, env=mtools_env())
    out = {}
    for line in p.text.split("\n"):
        head, sep, path = line.partition("::")
        if not sep or not path.startswith("/") or path == "/":
            continue
        s = "".join(c for c in "rhsa" if c.upper() in head)
        out[path] = s or "-"
    return out, p


def times_and_label(image, timeout):
    """({path: mtime floored to the minute}, root label or None, shown?) from
    mdir, and the Proc."""
    p = run(["mdir", "-i", image, "-/", "-a", "::/"], timeout=timeout, env=mtools_env())
    out, cur, root, shown = {}, None, None, False
    for line in p.text.split("\n"):
        m = _LABEL.match(line)
        if m and cur is None:
            shown, root = True, (m.group(1).rstrip(" ") if m.group(1) is not None else None)
            continue
        m = _DIR.match(line)
        if m:
            cur = m.group(1).rstrip("/")
            continue
        m = _ROW.match(line)
        if not m or cur is None:
            continue
        short, ext = m.group(1).rstrip(" "), m.group(2).rstrip(" ")
        if short in (".", ".."):
            continue
        name = m.group(8) if m.group(8) else short + ("." + ext if ext else "")
        y, mo, d, hh, mm = (int(m.group(i)) for i in range(3, 8))
        try:
            out[cur + "/" + name] = calendar.timegm((y, mo, d, hh, mm, 0))
        except (ValueError, OverflowError):
            continue
    return out, root, shown, p


def boot_label(image, timeout):
    """The boot sector's label as minfo prints it (None: not shown), Proc."""
    p = run(["minfo", "-i", image, "::"], timeout=timeout, env=mtools_env())
    m = _DISK.search(p.text)
    return (m.group(1).rstrip(" ") if m else None), p


def add_shown(image, entries, timeout, r):
    """Add attrs and mtime to the listing's entries, and the label to the
    ReadResult r's extra, as mtools shows them."""
    a, pa = attrs(image, timeout)
    t, root, shown, pt = times_and_label(image, timeout)
    b, pb = boot_label(image, timeout)
    r.raw += pa.raw() + pt.raw() + pb.raw()
    for e in entries:
        if e["path"] in a:
            e["attrs"] = a[e["path"]]
        if e["path"] in t:
            e["mtime"] = t[e["path"]]
    lab = {}
    if shown:
        lab["root"] = root
    if b is not None:
        lab["boot"] = b
    if lab:
        r.extra["label"] = lab
