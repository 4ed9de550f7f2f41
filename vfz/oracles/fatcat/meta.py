"""What fatcat 1.1.0 shows of attributes and times, and the files it drops for their attributes (fatcat-skips-attr-files).

fatcat's JSON listing has an entry's modify time ("EditDate", to the
second, as stored: no time zone) and IsHidden, no other attribute and no
access date: the reader shows mtime, and no attrs (a hidden bit alone is
not the attribute set). A month or day field 0 is read as 1, as Linux's
fat_time_fat2unix does (fatcat prints "00").

fatcat-skips-attr-files (measured on FAT16 volumes the core wrote, one
file each): a file whose attribute byte is not 0 and has neither
ATTR_ARCH nor ATTR_DIR (chattr r, h, s, rh ...) is not listed at all;
"ra", "hsa", "a" and "-" are. FatEntry::isCorrect takes such an entry for
garbage (the directories it lists always have ATTR_DIR).
"""
import calendar
import re

from vfz.oracles import NamedException

SKIPS_ATTR = "fatcat-skips-attr-files"
_DATE = re.compile(r"(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)")


def edit_time(text):
    """'2009-06-27T05:19:32' -> seconds since the epoch, or None."""
    m = _DATE.fullmatch(text or "")
    if not m:
        return None
    y, mo, d, hh, mm, ss = (int(x) for x in m.groups())
    try:
        return calendar.timegm((y, max(1, mo), max(1, d), hh, mm, ss))
    except (ValueError, OverflowError):
        return None


def dropped(attrs):
    """Does fatcat drop a file with these attribute letters?"""
    return attrs not in (None, "-") and "a" not in attrs


def skips_attr(ev):
    """SKIPS_ATTR: the only differences are files missing from fatcat's
    listing whose expected attributes fatcat drops (nothing extra, nothing
    changed)."""
    d = getattr(ev, "diff", None)
    if ev.verdict != "differs" or d is None or not d.missing or d.extra or d.changed \
            or d.ambiguous or d.label:
        return None
    want = {e["path"]: e for e in (getattr(ev, "entries", None) or ())}
    for e in d.missing:
        w = want.get(e["path"])
        if w is None or w["type"] != "file" or not dropped(w.get("attrs")):
            return None
    return SKIPS_ATTR


EXCEPTIONS = [
    NamedException(SKIPS_ATTR, "fatcat", "reader",
                   "fatcat 1.1.0 does not list a file whose attribute byte is not 0 and has "
                   "neither ATTR_ARCH nor ATTR_DIR (read-only, hidden or system without archive): "
                   "FatEntry::isCorrect takes it for garbage; measured with chattr r, h, s, rh on "
                   "a core-written FAT16 volume ('ra', 'hsa', 'a', '-' are listed)",
                   "every difference is a missing file whose expected attributes have r, h or s "
                   "and no a (meta.skips_attr)", bug=SKIPS_ATTR),
]
