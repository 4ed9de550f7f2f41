"""The repair probe: what `fsck.fat -a` does to a copy of an image, seen
through mtools before and after (lost paths, lost contents, changes).
"""
import os
import shutil
import tempfile

from vfz import listing
from vfz.oracles.dosfsck.parse import gave_up
from vfz.proc import run


def repair_probe(fsck, image, timeout):
    """fsck: the fsck.fat argv prefix. -> dict: rc, error, output, gave_up
    (fsck.fat's message when it stopped before the end: parse.gave_up), changes
    (listing diff lines), lost/new paths, data_lost (contents that exist
    nowhere after the repair), content_changed; mtools_error when mtools
    could not list the copy."""
    from vfz.oracles.mtools import MtoolsReader
    tmp = tempfile.mkdtemp(prefix="vfz-fsck-")
    try:
        copy = os.path.join(tmp, "repair.img")
        shutil.copyfile(image, copy)
        mt = MtoolsReader()
        before = mt.read(copy, timeout)
        p = run([*fsck, "-a", copy], timeout=timeout)
        after = mt.read(copy, timeout)
        rep = {"rc": p.rc, "error": p.error, "output": p.text[-4000:], "gave_up": gave_up(p)}
        if before.listing is not None and after.listing is not None:
            d = listing.diff(before.listing, after.listing)
            rep["changes"] = d.splitlines()
            bp = {e["path"] for e in before.listing}
            ap = {e["path"] for e in after.listing}
            rep["lost"] = sorted(bp - ap)
            rep["new"] = sorted(ap - bp)
            # contents that exist nowhere after the repair (renames do not count)
            def blobs(ls):
                c = {}
                for e in ls:
                    # size None: mtools could not read it (e.g. names it
                    # shows alike); unknown contents cannot count as lost
                    if e.get("type") == "file" and e.get("size") is not None:
                        k = (e.get("size"), e.get("sha256"))
                        c[k] = c.get(k, 0) + 1
                return c
            b, a = blobs(before.listing), blobs(after.listing)
            rep["data_lost"] = sum(max(0, n - a.get(k, 0)) for k, n in b.items())
            bm = {e["path"]: e.get("sha256") for e in before.listing}
            rep["content_changed"] = sorted(e["path"] for e in after.listing
                                            if e["path"] in bm and e.get("sha256") != bm[e["path"]])
        else:
            rep["changes"] = None
            rep["mtools_error"] = before.error or after.error
        return rep
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
