"""The model profile of the jsfatfs writer: how the npm fatfs package spells, refuses and finds names (helpers.js longname, dir.js findInDirectory), read in its source and measured."""
from vfz import model

# JavaScript's String.prototype.trim() whitespace (ECMAScript WhiteSpace and
# LineTerminator): what longname() cuts from both ends of every component
JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008" \
           "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def longname(c):
    """helpers.js longname(): trim, then trailing dots dropped (in that
    order: 'a .' keeps 'a ')."""
    return c.strip(JS_SPACE).rstrip(".")


def throws(c):
    """Does longname() throw for path component c? Its pattern
    /[^a-zA-Z0-9$%'-_@~`!(){}^#&.+,;=[\\] ]/ writes the range ' to _
    (0x27-0x5F), which takes in * : < > ? \\ as well, so what it refuses
    is an ASCII unit outside that set: a unit below 0x20, '"', '|' and DEL
    (U+007F); and a name of more than 255 UTF-16 units once trimmed. The
    throw is not an error of the call: it escapes the package's lock."""
    s = longname(c)
    if any(ord(x) < 0x20 or x in '"|\x7f' for x in s):
        return True
    return model.utf16_len(s) > 255


def comps_of(path):
    """The components of the path the package is given: '.' left out and
    '..' folded lexically, as the glue's walk (server.js resolve) does
    before it calls the package ('/a/../a/x' is '/a/x')."""
    out = []
    for c in path.split("/"):
        if c == "..":
            out = out[:-1]
        elif c and c != ".":
            out.append(c)
    return out


def js_upper(s):
    """JavaScript's toUpperCase(), with which findInDirectory compares a
    name with every entry's: full Unicode case mapping ('ß' -> 'SS'), as
    Python's str.upper()."""
    return s.upper()


def _name_err(leaf):
    """The package's verdict on a new name: a name longname() throws for
    cannot be answered (the process ends: exception jsfatfs-name-throws cuts
    the script there; the model says what Linux does); a name that longname
    empties ('...', ' ') is the root, which exists (EEXIST); everything
    else is accepted, * : < > ? \\ included (Linux: EINVAL)."""
    if throws(leaf):
        return model.check_new_name(leaf) or "EINVAL"
    if not longname(leaf):
        return "EEXIST"
    return None


def _lookup(d, leaf):
    """The entry of model directory d that the package finds for leaf
    when Linux's lookup (ASCII case folded) finds none: it trims the
    component and compares upper-cased long names ('é' finds 'É', ' a'
    finds 'a', 'ss' finds 'ß')."""
    key = js_upper(longname(leaf))
    if not key:
        return None
    for k in d.kids.values():
        if js_upper(longname(k.name)) == key:
            return k
    return None


# Knobs of vfz.model (see the knob comments in vfz/model/profiles.py).
PROFILE = {
    "name_err": _name_err,
    "store": longname,
    "lookup": _lookup,
    # the second grammar (index.js, dir.js _updateEntry; measured): fs.open
    # for writing refuses a read-only entry (ACCES), and truncate, chmod
    # ('\\r+') and utimes ('r+') open the path so; utimes of a directory is
    # ISDIR; ftruncate to the current size returns at once; every data
    # change is _touch (archive, access date and modify time now); a new
    # directory's entry gets the archive bit (dir.init's _touch)
    "ro_refuses": frozenset({"write", "truncate", "chattr", "touch"}),
    "touch_dir": "EISDIR",
    "truncate_same": "noop",
    "write_atime": "clock",
    "dir_attr": 0x30,
    # capacity: the package runs out where Linux does (no free cluster for
    # the data) -- where it runs out earlier or keeps other bytes, its
    # exceptions say why (alloc.py, enospc.py)
    "linux_capacity": True,
}
