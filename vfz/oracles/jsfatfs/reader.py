"""The jsfatfs reader: the whole tree as the npm fatfs package serves it (fs.readdir, fs.stat, fs.readFile), as a canonical listing."""
import json
import os

from vfz.oracles import Reader
from vfz.oracles.jsfatfs import emptyread, exceptions
from vfz.oracles.jsfatfs.server import Server, ServerError, available


class JsfatfsReader(Reader):
    """server.js 'list': fs.readdir from the root, fs.stat of each name
    (a directory answers EISDIR: the package opens it as a file), fs.readFile
    of each file (sha256 in Node). A name fs.stat does not find, or a file
    fs.readFile cannot read, is a complaint and the entry stays out (its
    listing then differs, the complaint says why); the volume refused by
    createFileSystem is the error; a throw of the package ends the process
    and is the error (exception jsfatfs-name-throws when it is the name
    check)."""
    explain = staticmethod(lambda ev: exceptions.explain_read(ev) or emptyread.explain(ev) or
                           emptyread.explain_split(ev, exceptions.explain_read))

    @staticmethod
    def name_exception(expected_leaf, actual_leaf):
        """A bare 8.3 name shows as stored: the NT case byte is ignored."""
        from vfz.model import short_only
        if actual_leaf == expected_leaf.upper() and actual_leaf != expected_leaf \
                and short_only(expected_leaf, "winnt") and expected_leaf.isascii():
            return exceptions.NT_CASE
        return None

    def __init__(self, name="jsfatfs", **cfg):
        self.name = name
        self.server = Server()

    def available(self):
        return available()

    def _read(self, image, timeout, r):
        if not os.path.isfile(image):
            r.error = f"no such image: {image}"
            return
        try:
            ans = self.server.request({"op": "list", "image": os.path.abspath(image)}, timeout)
        except ServerError as e:
            r.error = f"jsfatfs: {e}"
            r.raw = json.dumps(e.answer, ensure_ascii=False)[:20000]
            return
        r.raw = json.dumps(ans, ensure_ascii=False)[:20000]
        if ans.get("error"):
            r.error = ans["error"]
            return
        r.listing = sorted(ans["entries"], key=lambda e: e["path"])
        r.complaints = list(ans.get("complaints", ()))

    def close(self):
        self.server.close()
