"""The mtools reader: mdir lists the tree, one recursive mcopy gives the contents.

`mdir -/ -b -a ::/` gives one full path a line ("::/Dir A/" for a
directory), then `mcopy -s '::/*'` copies everything into a temporary
directory (no per-file mtype: mtools treats [ ] ? * in a source path as
a glob); a file mcopy cannot give a host name is read with mtype. The
attributes, modify times and label come from mattrib, mdir and minfo
(shown.py). The reader's named exceptions are recognised in exceptions.py.
"""
import os
import shlex
import shutil
import tempfile

from vfz import listing
from vfz.oracles import Reader
from vfz.oracles.mtools import exceptions as mx, shown
from vfz.oracles.mtools.tool import list_paths, mpath, mtools_env
from vfz.proc import run


class MtoolsReader(Reader):
    name_exception = staticmethod(mx.reader_name_exception)
    io_exception = staticmethod(mx.io_exception)
    split_ambiguous = staticmethod(mx.split_ambiguous)
    explain = staticmethod(mx.reader_explain)
    meta_mask = staticmethod(shown.mask)          # mdir: times to the minute

    def __init__(self, name="mtools", mdir="mdir", mcopy="mcopy", **cfg):
        self.name = name
        self.mdir = shlex.split(mdir) if isinstance(mdir, str) else list(mdir)
        self.mcopy = shlex.split(mcopy) if isinstance(mcopy, str) else list(mcopy)

    @classmethod
    def hostile_cfg(cls, asan_bin=None):
        """With the sanitizer peers: their mdir and mcopy."""
        if not asan_bin:
            return {}
        return {"mdir": os.path.join(asan_bin, "mdir"), "mcopy": os.path.join(asan_bin, "mcopy")}


    def _read(self, image, timeout, r):
        if not os.path.isfile(image):
            r.error = f"no such image: {image}"
            return
        paths, p = list_paths(image, timeout, self.mdir)
        r.raw += p.raw()
        if paths is None:
            r.error = p.error or f"mdir exit {p.rc}: {p.errtext.strip()[:200]}"
            return
        tmp = tempfile.mkdtemp(prefix="vfz-mtools-x-")
        try:
            files = [s for s, d in paths if s and not d]
            if files:
                c = run([*self.mcopy, "-i", image, "-s", "-n", "-p", "-Q", "::/*", tmp],
                        timeout=timeout, env=mtools_env())
                r.raw += c.raw()
                if c.error:
                    r.error = f"mcopy: {c.error}"
                    return
            # names mtools shows alike (characters outside the BMP become
            # '__'): it cannot tell them apart by path, so failing to
            # extract them says nothing about the image
            seen, ambiguous = set(), set()
            for s, d in paths:
                (ambiguous if s in seen else seen).add(s)
            if ambiguous:
                r.extra["ambiguous"] = sorted(ambiguous)
            if files and c.rc != 0 and not ambiguous:
                r.complaints.append(f"mcopy exit {c.rc}: {c.errtext.strip()[:200]}")
            entries = []
            for s, d in paths:
                if not s:
                    r.complaints.append("mdir listed an entry with an empty name")
                    continue
                if d:
                    entries.append(listing.entry(s, "dir"))
                    continue
                if any(s == a or s.startswith(a + "/") for a in ambiguous):
                    # mcopy wrote them all to one host name: contents unknown
                    entries.append(listing.entry(s, "file", size=None))
                    continue
                host = os.path.join(tmp, s.lstrip("/"))
                try:
                    with open(host, "rb") as f:
                        data = f.read()
                    entries.append(listing.entry(s, "file", data))
                except OSError as e:
                    # mcopy could not give it a host name: ask mtype by path
                    t = run(["mtype", "-i", image, mpath(s)], timeout=timeout, env=mtools_env())
                    if t.rc == 0 and not t.error:
                        entries.append(listing.entry(s, "file", t.out))
                        continue
                    r.raw += t.raw()
                    r.complaints.append(f"cannot extract {s}: {e.strerror}; mtype: "
                                        f"{t.error or t.errtext.strip()[:100]}")
                    entries.append(listing.entry(s, "file", size=None))
            r.listing = sorted(entries, key=lambda e: e["path"])
            shown.add_shown(image, r.listing, timeout, r)      # attrs, mtime, label
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
