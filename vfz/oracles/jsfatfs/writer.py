"""The jsfatfs writer: an op-script applied with the npm fatfs package's fs API (fs.mkdir, fs.open 'wx' / 'r+', fs.write, fs.close)."""
import os

from vfz import opscript

from vfz.oracles import Writer
from vfz.oracles.jsfatfs import alloc, enospc, exceptions, fewclusters, fsck, meta
from vfz.oracles.jsfatfs.server import Server, ServerError, available


class JsfatfsWriter(Writer):
    """server.js 'apply', one request per script. When the package throws
    outside its callbacks (the process ends), the results of the ops
    answered before are kept and the error names the throw: the checker
    then asks known_failure, which names it from that evidence."""
    @staticmethod
    def known_failure(ev):
        """The earliest of the name and chain failures (exceptions.py), the
        second grammar's (meta.py: SHRINK, DIR_VOLUME), the cluster
        search's ENOSPC (alloc.py), what an ENOSPC leaves (enospc.py) and a
        write past a few-clusters FAT32 volume (fewclusters.py)."""
        found = [k for k in (exceptions.known_failure(ev),
                             meta.known_failure(ev.ops or [], ev.results or [], ev.image),
                             alloc.known_failure(ev), enospc.known_failure(ev),
                             fewclusters.throw_off_volume(ev)) if k]
        return min(found) if found else None

    explain = staticmethod(lambda ev: meta.explain(ev) or fewclusters.explain_few_clusters(ev) or
                           (fsck.explain_checker(ev) if ev.verdict == "complains" else exceptions.explain_write(ev))
                           or meta.explain_split(ev, exceptions.explain_write))

    def __init__(self, name="jsfatfs", **cfg):
        self.name = name
        self.server = Server()

    def available(self):
        return available()

    def _apply(self, image, ops, timeout, w):
        if not os.path.isfile(image):
            w.error = f"no such image: {image}"
            return
        req = {"op": "apply", "image": os.path.abspath(image), "ops": [[o.kind, *(a.sec if isinstance(a, opscript.Time) else a for a in o.args)]
                                                               for o in ops]}
        try:
            ans = self.server.request(req, timeout)
        except ServerError as e:
            ans = dict(e.answer, error=f"jsfatfs: {e}")
        if ans.get("error") and not ans.get("results"):
            w.error = ans["error"]
            w.raw = f"# {ans['error']}\n" + (f"# at {ans['stack']}\n" if ans.get("stack") else "")
            return
        w.results = list(ans.get("results", ()))
        codes = ans.get("codes") or [None] * len(w.results)
        w.raw = "".join(f"# line {o.line}: {o} -> {res} [{code or '-'}]\n"
                        for o, res, code in zip(ops, w.results, codes))
        if ans.get("error"):
            w.error = ans["error"]
            w.raw += f"# {ans['error']}\n" + (f"# at {ans['stack']}\n" if ans.get("stack") else "")

    def close(self):
        self.server.close()
