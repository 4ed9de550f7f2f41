"""How mtools is run: its environment, its path syntax, and mdir's listing of an image.

Every mtools call gets a generated MTOOLSRC (codepage 437, where mtools
defaults to 850; mtools_skip_check=1), LC_ALL=C.UTF-8 (long names in
UTF-8) and TZ=UTC0 (FAT keeps local time: UTC, as in the kernel oracle). Paths are ::/... with glob characters escaped.
"""
import os
import tempfile

from vfz import lifeline
from vfz.proc import run


_CFG_DIR = None


def mtools_env():
    """Environment for every mtools call (config written once per process)."""
    global _CFG_DIR
    if _CFG_DIR is None or not os.path.isdir(_CFG_DIR):
        _CFG_DIR = lifeline.scratch(tempfile.mkdtemp(prefix="vfz-mtools-"))   # for this process's life
        with open(os.path.join(_CFG_DIR, "mtoolsrc"), "w") as f:
            f.write("mtools_skip_check=1\nmtools_no_vfat=0\ndefault_codepage=437\n")
    return {"MTOOLSRC": os.path.join(_CFG_DIR, "mtoolsrc"), "MTOOLS_SKIP_CHECK": "1",
            "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "TZ": "UTC0"}   # FAT's local time: UTC


def mpath(path):
    """An absolute image path as an mtools argument, glob characters escaped."""
    out = []
    for ch in path:
        if ch in "[]*?\\":
            out.append("\\")
        out.append(ch)
    return "::" + ("".join(out) or "/")


def mtarget(parent, leaf):
    """A new entry as an mtools target: mtools globs the directory part (so
    it is escaped) but takes the last component literally (a backslash in it
    would be refused)."""
    base = mpath(parent)
    return base + ("" if base.endswith("/") else "/") + leaf


def _is_empty_root(p):
    return p.rc == 1 and p.errtext.strip().endswith('File "::/" not found')


def list_paths(image, timeout, cmd=("mdir",)):
    """[(path, is_dir)] as mdir -/ -b -a prints them, plus the Proc."""
    p = run([*cmd, "-i", image, "-/", "-b", "-a", "::/"], timeout=timeout, env=mtools_env())
    if p.error or (p.rc != 0 and not _is_empty_root(p)):
        return None, p
    out = []
    # "\n" only: str.splitlines() also breaks at \v \f \x1c-\x1e \x85
    # U+2028 U+2029, which are legal in long names (U+2028) or reach them
    # through mtools' own astral truncation (U+2000B -> \v)
    for line in p.text.split("\n"):
        if not line.startswith("::/"):
            continue
        if line == "::/":
            # an entry whose name mtools cannot print (e.g. only a character
            # outside the BMP, cut to a lone surrogate): no usable path
            out.append(("", False))
            continue
        s = line[2:]
        is_dir = s.endswith("/") and len(s) > 1
        if is_dir:
            s = s[:-1]
        out.append((s, is_dir))
    return out, p
