"""fusefat's dates: the month it writes one too low (fusefat-month-minus-one), recognised from evidence.

Measured through the writer's agent (utimensat on the mount, fusefat 0.1a,
TZ unset: UTC): a touch to 2009-06-27 05:19:33 stores 2009-05-27 05:19:32,
2009-02-01 stores month 0 (read as January: 2009-01-01), 2008-12-31 stores
2008-11-31 (read as 2008-12-01); January dates are right (month 0 is read as
1). The same goes for the times it stamps itself (a file made on 2026-12-04
shows 2026-11-04). The year is not clamped either: 1970 is stored as 2098,
2212 as 2084 (the 7-bit field modulo 128), and a time past what a calendar
date holds (2^63 - 1 s) as some date of its own.
"""
from vfz.oracles import NamedException
from vfz.oracles.evidence import time_rule_holds

MONTH = "fusefat-month-minus-one"
MONTH_READ = "fusefat-month-plus-one-read"
ROOT_TOUCH = "fusefat-root-utime-segv"


def fusefat_time(sec):
    """The seconds Linux reads back from the date and time fusefat stores
    for sec (None: no calendar date, what fusefat stores is its own)."""
    import calendar
    import time
    try:
        t = time.gmtime(sec)
    except (OverflowError, OSError, ValueError):
        return None
    # the month field holds tm_mon (0-11), which Linux reads with month 0
    # as 1; a day past the month's end runs into the next (fat_time_fat2unix)
    return calendar.timegm((1980 + (t.tm_year - 1980) % 128, max(1, t.tm_mon - 1), t.tm_mday,
                            t.tm_hour, t.tm_min, t.tm_sec & ~1))


def read_time(sec):
    """What fusefat's stat shows for a modify time Linux reads as sec: the
    month field taken as tm_mon, one month late (December runs into the
    next January)."""
    import calendar
    import time
    t = time.gmtime(sec)
    y, mon = (t.tm_year + 1, 1) if t.tm_mon == 12 else (t.tm_year, t.tm_mon + 1)
    return calendar.timegm((y, mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec))


def explain_read(ev):
    """MONTH_READ: every difference is a modify time shown as read_time."""
    from vfz.oracles.evidence import shown_rule_holds
    return MONTH_READ if shown_rule_holds(ev, read_time) else None


def explain(ev):
    """MONTH: every difference is a touched time shown as fusefat_time."""
    return MONTH if time_rule_holds(ev, fusefat_time) else None


def _is_root(path):
    """Does path name the root, lexically ('/', '/./', '/d/..' when d exists
    is not decided here: only '.' and '..' that climb from the root)?"""
    depth = 0
    for c in path.split("/"):
        if c in ("", "."):
            continue
        depth = max(0, depth - 1) if c == ".." else depth + 1
    return depth == 0


def root_touch_crash(ops, results, error):
    """ROOT_TOUCH: fusefat died of SIGSEGV (exit -11) and the first op it
    did not answer (ECONNABORTED: the FUSE connection went with it) is a
    touch of the root -> (its index, ROOT_TOUCH), else None."""
    if not error or "exit -11" not in error:
        return None
    for i, (op, r) in enumerate(zip(ops, results)):
        if r in ("ECONNABORTED", "ENOTCONN"):
            return (i, ROOT_TOUCH) if op.kind == "touch" and _is_root(op.path) else None
    return None


EXCEPTIONS = [
    NamedException(MONTH_READ, "fusefat", "reader",
                   "fusefat 0.1a reads FAT's month field (1-12) as struct tm's tm_mon (0-11): "
                   "every modify time it shows is a month late (a file Linux dated 2009-06-27 "
                   "05:19:32 stats as 2009-07-27; December as January of the next year); its "
                   "st_atime is the modify time, so the access date is not shown at all",
                   "every difference is a modify time shown as read_time(expected)",
                   bug="fusefat-month-minus-one"),
    NamedException(ROOT_TOUCH, "fusefat", "writer",
                   "utimensat of the mount's root makes fusefat 0.1a die of SIGSEGV (the root has "
                   "no directory entry to date): the agent's call answers ECONNABORTED, every later "
                   "op too, and what was not yet written back is lost; measured with touch \"/\" "
                   "1246079973 1246079973 alone on FAT16 and FAT32 (exit -11)",
                   "fusefat exit -11, and the first op answered ECONNABORTED is a touch of '/' "
                   "(lexically: '/./', '/a/../')", bug="fusefat-root-utime-segv"),
    NamedException(MONTH, "fusefat", "writer",
                   "fusefat 0.1a stores struct tm's tm_mon (0-11) in FAT's month field (1-12): "
                   "every date it writes, touched or stamped, is a month early (2009-06-27 -> "
                   "2009-05-27; 2008-12-31 -> 'November 31', read as 2008-12-01; January -> month 0, "
                   "read as January), and the year is not clamped (1970 -> 2098)",
                   "every difference of the listing is a modify time or access date shown as "
                   "fusefat_time() of a time of a touch of the script", bug="fusefat-month-minus-one"),
]
