"""Transformers on hostile volumes: tools that rewrite a volume in place
(fatsort, fsck.fat -a: the oracles with the transformer role) in the
hostile campaign, beside the readers (`vfatfuzz hostile --oracles
fatsort,fsck-repair`).

A reader can only misread a hostile stick; a transformer can make it
worse: die half-way, hang, or write where it has no business, past the
volume its boot sector declares (on a stick: into the next partition).
TransformerProbe wraps a transformer so that the campaign, the minimiser,
replay and export drive it as they drive a reader (read(path, timeout) ->
ReadResult): it writes the file the tool gets -- the hostile image
followed by GUARD (given(): 64 KiB, 32 fixed bytes repeated; an exported
run.sh appends it with GUARD_SH), so that bytes past the declared
end exist even when the image has none (a canary image's fill and clusters
lie there already) -- runs the transform on it and compares the protected
regions after it:

    past the declared end   [declared end, end of the file as given), and
                            any growth of the file past the declared end.
                            The declared end is total sectors x bytes per
                            sector of the image's own boot sector
                            (hostile_mutate.declared_end); when that is
                            unusable (0) the file's own end is the limit
                            (only the guard is protected).
    the oracle's own        Transformer.untouched(image) -> [(start, stop,
                            label)]: what this tool never writes on any
                            volume (fatsort: the boot sector, the reserved
                            sectors and the FATs -- it rewrites directory
                            slots only; fsck.fat -a: the reserved sectors but
                            the boot sector, FSINFO, the backup boot sector
                            and where it may create one). What fsck.fat -a
                            legitimately writes -- the boot sector (dirty bit,
                            label), the backup boot sector (it creates a
                            missing one), FSINFO, both FATs, the root and
                            directory slots -- is no finding.

The changes go to ReadResult.extra["writes"]: [{"region", "start", "stop",
"bytes", "ranges": [[offset, length]]}] (offsets in the file), read by
hostile_verdict's "overwrite" verdict. extra["exception"] is the named
exception the oracle's own hooks attribute the failure (failure_exception)
or the overwrite (explain on its raw output) to, e.g.
fatsort-long-set-3-clusters: the verdict's message carries it, so a known
bug and a new one get different signatures.
"""
import hashlib

from vfz import oracles
from vfz.hostile import mutate as hm
from vfz.oracles import ReadResult

# 32 fixed bytes, all in 0x80..0xDF: no ASCII (names, spaces), no 0x00, 0xE5,
# 0xF6 or 0xFF (end marks, deleted slots, format filler), so a tool's write
# there rarely leaves a byte as it was
GUARD_LINE = bytes(0x80 + b % 0x60 for b in hashlib.sha256(b"vfatfuzz guard").digest())
GUARD_BYTES = 64 * 1024
GUARD = GUARD_LINE * (GUARD_BYTES // len(GUARD_LINE))   # fixed: a replay gives the tool the same file
PAST_END = "past the declared volume end"
# POSIX sh that appends GUARD to "$IMG" (an exported reproducer's image is
# hostile.img itself; run.sh gives the tool what the campaign gave it)
GUARD_SH = ("g=0\nwhile [ $g -lt %d ]; do printf '%s'; g=$((g + 1)); done >> \"$IMG\"\n"
            % (GUARD_BYTES // len(GUARD_LINE), "".join("\\%03o" % b for b in GUARD_LINE)))


def is_transformer(name):
    """A hostile oracle name that is a transformer, not a reader."""
    e = oracles.entries().get(name)
    return bool(e and e.transformer and not e.reader)


def given(image):
    """The file a transformer gets for this hostile image."""
    return image + GUARD


def regions(image, cls=None):
    """[(start, stop, label)] of the file given(image) that the tool must
    leave as they are; stop None = the end of the file (and beyond)."""
    end = hm.declared_end(image)
    if end is None:
        end = len(image)
    out = [(end, None, PAST_END)]
    hook = getattr(cls, "untouched", None) if cls is not None else None
    if hook:
        out += [(s, min(e, end), lab) for s, e, lab in hook(image) if s < min(e, end)]
    return out


def changed(before, after, regs):
    """The protected regions' changes -> [{"region", "start", "stop",
    "bytes", "ranges"}] (empty when none changed)."""
    out = []
    for s, e, label in regs:
        stop_b = len(before) if e is None else min(e, len(before))
        stop_a = len(after) if e is None else min(e, len(after))
        a, b = before[s:stop_b], after[s:stop_a]
        if a == b:
            continue
        rs = [[s + o, n] for o, n in hm.byte_ranges(a, b)]
        # a tail the tool appended counts whole; one it cut off too
        n = sum(n for _, n in rs) + max(0, len(a) - len(b))
        out.append({"region": label, "start": s, "stop": e, "bytes": n, "ranges": rs,
                    "size_before": len(before), "size_after": len(after)})
    return out


def describe(writes, limit=8):
    """Evidence lines of extra["writes"]."""
    lines = []
    for w in writes:
        stop = "end of file" if w["stop"] is None else f"{w['stop']:#x}"
        lines.append(f"{w['bytes']} bytes changed {w['region']} ({w['start']:#x}..{stop}) "
                     f"in {len(w['ranges'])} ranges:")
        for off, n in w["ranges"][:limit]:
            lines.append(f"  offset {off:#x} (sector {off // 512}), {n} bytes")
        if len(w["ranges"]) > limit:
            lines.append(f"  ... {len(w['ranges']) - limit} more ranges")
        if w["size_after"] != w["size_before"]:
            lines.append(f"  the file's size went from {w['size_before']} to {w['size_after']} bytes")
    return "\n".join(lines)


class TransformerProbe:
    """A transformer driven as a hostile reader (see the module doc)."""

    def __init__(self, name, **cfg):
        self.name = name
        self.tool = oracles.get_transformer(name, **cfg)
        self.cls = type(self.tool)

    def available(self):
        if hasattr(self.tool, "available"):
            return self.tool.available()
        return True, ""

    def read(self, path, timeout=60.0):
        with open(path, "rb") as f:
            image = f.read()
        before = given(image)
        with open(path, "wb") as f:
            f.write(before)
        wr = self.tool.transform(path, timeout)
        with open(path, "rb") as f:
            after = f.read()
        writes = changed(before, after, regions(image, self.cls))
        exc = None
        if wr.error:
            exc = self.cls.failure_exception(wr)
        elif writes:
            exc = self.cls.explain({"raw": wr.raw})
        return ReadResult(self.name, listing=None, raw=wr.raw or "", error=wr.error, seconds=wr.seconds,
                          extra={"transformer": True, "writes": writes, "exception": exc,
                                 "given_bytes": len(before)})

    def close(self):
        try:
            self.tool.close()
        except Exception:
            pass


WRITE = "write:"     # the hostile campaign's name of a writer's lane: write:kernel


def tool(name, **cfg):
    """The hostile campaign's oracle of that name: a reader, a transformer
    wrapped in TransformerProbe, or (write:NAME) a writer wrapped in
    vfz.hostile.writes.WriterProbe; traced (vfz.hostile.bounds) when it is a
    user-space tool."""
    from vfz.hostile import bounds as hostile_bounds     # the I/O-bounds oracle traces what it runs
    if name.startswith(WRITE):
        from vfz.hostile.writes import WriterProbe
        return hostile_bounds.traced(name[len(WRITE):], WriterProbe(name[len(WRITE):], **cfg))
    if is_transformer(name):
        return hostile_bounds.traced(name, TransformerProbe(name, **cfg))
    return hostile_bounds.traced(name, oracles.get_reader(name, **cfg))


def names():
    """Transformers the hostile campaign can run (not in its default set)."""
    return [n for n in oracles.names("transformer") if is_transformer(n)]


if __name__ == "__main__":
    raise SystemExit("use: scripts/vfatfuzz hostile --oracles " + ",".join(names()))
