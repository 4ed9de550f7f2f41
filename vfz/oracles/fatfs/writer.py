"""The FatFs writer: an op-script applied by server.js, and its known failure.

Every op of the grammar, the VFS's decisions made in server.js, FatFs's
FRESULT mapped to an errno (the table is in the package's docstring).
known_failure recognises OWN_ALIASES: an op that spells a numbered alias;
spread_exception COUNT_EDGES_WRITE: the hostile campaign's damage spread on a
volume FatFs takes for FAT12 where Linux reads FAT16.
"""
import os
import re
import struct

from vfz import iobounds, opscript
from vfz.fatimg import Fat
from vfz.oracles import Timer, Writer, WriteResult
from vfz.oracles.fatfs.exceptions import COUNT_EDGES_WRITE, OWN_ALIASES, _get
from vfz.oracles.fatfs.server import Server, ServerError, available


_NUMBERED = re.compile(r"[^~.]{0,7}~[0-9A-Fa-f]{1,7}(\.[^.]{1,3})?")


def spells_alias(op):
    """Does op name a path component shaped as a numbered 8.3 alias
    (BASE~N[.EXT])? FatFs's aliases (gen_numname) are not Linux's: ~1 to ~5
    only, then BAS~XXXX with a CRC of the long name; and a name with a
    leading dot has an empty base ('.bashrc' -> ~1.BAS, Linux BASHRC~1)."""
    for kind, a in zip(opscript.OPS[op.kind], op.args):
        if kind == "s" and any(_NUMBERED.fullmatch(c) for c in a.split("/")):
            return True
    return False


def known_failure(ev):
    """The writer's first divergence is an op that spells a numbered alias
    (OWN_ALIASES): the model looked it up among Linux's aliases, FatFs
    among its own, so the name finds another entry, nothing, or is free;
    the readers check the script cut before it."""
    bad, ops = _get(ev, "bad"), _get(ev, "ops") or []
    if bad is not None and bad < len(ops) and spells_alias(ops[bad]):
        return bad, OWN_ALIASES
    return None


# ff.c's MAX_FAT12 (0xFF5): FatFs's FAT12 ends one cluster above Microsoft's and Linux's
FATFS_FAT12_MAX = 4085


def spread_exception(head):
    """COUNT_EDGES_WRITE when the boot sector in head (the volume's first bytes before the ops)
    is FAT16 to Linux and FAT12 to FatFs -- a 16-bit FAT size over exactly 4 085 clusters --,
    else None: whatever FatFs's 12-bit FAT writes did to entries the ops did not name is that
    one difference (vfz.hostile.writes asks this of a writer's damage spread)."""
    try:
        f = Fat(bytes(head[:512]), copy=True)
    except (ArithmeticError, ValueError, struct.error):
        return None
    return COUNT_EDGES_WRITE if f.bits == 16 and f.clusters == FATFS_FAT12_MAX else None


class FatfsWriter(Writer):
    known_failure = staticmethod(known_failure)
    spread_exception = staticmethod(spread_exception)

    def __init__(self, name="fatfs", **cfg):
        self.name = name
        self.server = Server()

    def available(self):
        return available()

    def apply(self, image, ops, timeout=60.0):
        w = WriteResult(self.name)
        with Timer() as t:
            if not os.path.isfile(image):
                w.error = f"no such image: {image}"
            else:
                try:
                    req = {"op": "apply", "image": os.path.abspath(image),
                           "ops": [[o.kind, *(a.sec if isinstance(a, opscript.Time) else a for a in o.args)]
                                   for o in ops]}
                    ans = self.server.request(req, timeout)
                    self.last_iotrace = iobounds.sector_trace(ans.pop("io", None) or {})
                    if ans.get("error"):
                        w.error = ans["error"]
                    else:
                        w.results = list(ans["results"])
                        w.raw = "".join(f"# line {o.line}: {o} -> {res} [{fr or '-'}]\n"
                                        for o, res, fr in zip(ops, w.results, ans["fr"]))
                except ServerError as e:
                    w.error = f"fatfs: {e}"
                except Exception as e:
                    w.error = f"fatfs writer: {type(e).__name__}: {e}"
        w.seconds = t.seconds
        return w

    def close(self):
        self.server.close()
