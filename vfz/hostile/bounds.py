"""The I/O-bounds oracle in the hostile campaign: user-space readers and
transformers run under the trace library (vfz.iobounds), and an access
outside the declared volume or the image is an `out-of-bounds` verdict.

hostile_tx.tool() wraps every reader and transformer whose registry entry says iotrace in
Traced, so the campaign, the minimiser, replay and --minimise all read
through it. Traced.read(path, timeout) runs the oracle's read with every
tool it starts traced (vfz.proc's env hook: proc.run, and fusefat's daemon
through proc.traced_env), judges the trace against the image's declared
end (total sectors x bytes per sector of its boot sector) and the file's
size as the tool got it (a transformer's file has the 64 KiB guard after
the image), and leaves in rr.extra["io"]:

    accesses, dropped, commands   what was recorded (records over the
                                  library's cap are counted, not kept)
    out                           the out-of-bounds records (first 64), each
                                  with the named exception its oracle's
                                  io_exception hook attributes it to
    verdicts                      [(message, evidence)], one per group of
                                  unexplained records

A group -- one verdict, one signature -- is the program, read or write and
the region (past volume; past image inside volume: a boot sector declaring
more than the file holds, trusted; past image: outside both; cut volume):
"mcopy read past volume". The evidence lists the accesses with offset,
first sector outside, result, call, command and size in the volume's units
(cluster, sector, bytes). Neither the size (one bug reads FAT sectors and
clusters alike: a 4-minute run split 7-Zip's big reads into 5 findings by
it) nor the field the mutation hit (the minimiser's checks see the image,
not the mutation; diff.txt names it) is in the signature.

FatFs, U-Boot and the kernel VM (iotrace "own") are judged the same way from the sectors
their disk layer recorded (FatFs's disk callbacks, vfz/oracles/fatfs/server.js; QEMU's block
layer for the two guests, vfz/oracles/kernel/trace.py): rr.extra["iotrace"], a writer's
handed on by vfz.hostile.writes.WriterProbe. Not traced: the core (the oracle under test).
"""
import os

from vfz import iobounds, oracles
from vfz.hostile import mutate as hm

# which oracles are traced, and how, is each oracle's trait (vfz.oracles.Entry.iotrace):
# "preload" -- a user-space tool run under the library; "own" -- it records its sectors
# itself in rr.extra["iotrace"] (FatFs's disk layer, the QEMU of U-Boot and of the kernel VM
# with cfg iotrace=True)
KEEP = 64                  # out-of-bounds records kept per answer


def unit(length, geo):
    """The size of an access in the volume's units, for the signature."""
    if geo:
        bps, csize, _ = geo
        if length == csize:
            return "cluster"
        if length % csize == 0:
            return "clusters"
        if length % bps == 0:
            return "sectors" if length > bps else "sector"
    return "bytes"


def judged(trace, head, declared, size, cls=None, who=None):
    """rr.extra["io"] of a Trace (see the module doc); who: the program's
    name in the signature when the records are not a process's (FatFs)."""
    geo = iobounds.geometry(head)
    sector = geo[0] if geo and geo[0] in (512, 1024, 2048, 4096) else iobounds.SECTOR
    oobs = iobounds.judge(trace, declared, size, sector)
    hook = getattr(cls, "io_exception", None)
    out, groups = [], {}
    for o in oobs:
        exc = hook(o, head, declared, size) if hook else None
        if len(out) < KEEP:
            out.append(dict(o.__dict__, exception=exc))
        if exc:
            continue
        key = f"{who or iobounds.program(o.op)} {o.kind} {o.region}"
        groups.setdefault(key, []).append(o)
    verdicts = []
    for key, os_ in groups.items():
        lines = [f"{o.describe()} [{unit(o.length, geo)}]" for o in os_[:8]]
        if len(os_) > 8:
            lines.append(f"... {len(os_) - 8} more such accesses")
        verdicts.append((key, f"declared volume {declared} bytes, image {size} bytes\n" + "\n".join(lines)))
    return {"accesses": len(trace.accesses), "dropped": trace.dropped, "unfinished": len(trace.unfinished),
            "commands": sorted(set(trace.ops.values())), "out": out, "verdicts": verdicts}


class Traced:
    """A hostile reader (or TransformerProbe) whose reads are traced."""

    def __init__(self, name, reader, lib):
        self.name, self.reader, self.lib = name, reader, lib
        self.cls = getattr(reader, "cls", None) or type(reader)

    def __getattr__(self, attr):
        return getattr(self.reader, attr)

    def read(self, path, timeout=60.0):
        return self.read_finish(self.read_start(path, timeout), timeout)

    def read_start(self, path, timeout=60.0):
        """The traced part of a read: the tool's (a writer lane's: its ops, WriterProbe.read_start);
        read_finish() judges it (a reader's read is all start)."""
        pre = getattr(self.reader, "pre", None)     # a writer's, from the lane's prefetch
        if pre is not None and pre.get("path") == path and len(pre.get("image") or b"") >= 512:
            head = bytes(pre["image"][:512])        # the volume's first bytes: not read again
        else:
            with open(path, "rb") as f:
                head = f.read(512)
        size = os.path.getsize(path)
        declared = hm.declared_end(head)
        go = getattr(self.reader, "read_start", self.reader.read)
        trace = None
        if self.lib is None:          # the reader's own records
            got = go(path, timeout)
        else:
            with iobounds.tracing(path, declared or 0, self.lib) as t:
                got = go(path, timeout)
                trace = t.trace()
        return {"got": got, "head": head, "size": size, "declared": declared, "trace": trace}

    def read_finish(self, started, timeout=60.0):
        got = started["got"]
        rr = self.reader.read_finish(got, timeout) if hasattr(self.reader, "read_finish") else got
        extra = rr.extra if rr.extra is not None else {}
        trace = started["trace"]
        if trace is None:
            trace = extra.pop("iotrace", None) or iobounds.Trace()
        size = extra.get("given_bytes") or started["size"]
        extra["io"] = judged(trace, started["head"], started["declared"], size, self.cls,
                             None if self.lib else self.name)
        rr.extra = extra
        return rr

    def close(self):
        self.reader.close()


def traced(name, reader):
    """The reader itself when it is not traced, the library is not built or
    VFZ_IOTRACE=0 (a bench without the oracle)."""
    if os.environ.get("VFZ_IOTRACE") == "0":
        return reader
    how = oracles.entry(name).iotrace if name in oracles.entries() else None
    if how == "own":
        return Traced(name, reader, None)
    lib = iobounds.library()
    if how != "preload" or lib is None:
        return reader
    return Traced(name, reader, lib)

