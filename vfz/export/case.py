"""Building the Case a reproducer reproduces: from an op-script, a finding directory or a catalogued peer bug.

    build_case(impl, side, ops, fs, workdir, writer=None, seed=1, **kw)
    case_from_finding(path, workdir)     a finding of vfz.findings
    case_from_spec(dirname, workdir)     corpus/peer-bugs/NAME
    impl_of(oracle)                      the family whose template reproduces an oracle's bug

The Case (vfz.oracles.repro) carries the expected results and tree (the
model's), the volume label and FAT width; the knobs a case leaves out come
from its template's default_extra hook.
"""
import json
import os
import struct

from vfz import fatimg, findings, model, opscript, oracles
from vfz.check import checker
from vfz.check import diff
from vfz.oracles.repro import Case, ExportError


def fs_geometry(fs):
    """(fat bits, bytes, cluster bytes or None) of a campaign fs name or spec."""
    return diff.parse_fs(checker.FS_SPECS.get(fs, fs))


def _pristine(fs, tmp):
    p = os.path.join(tmp, "pristine.img")
    spec = checker.FS_SPECS.get(fs, fs)
    if "@" in spec or "=" in spec:
        # a geometry spec: its own formatter and options (root=16 is a 16-slot root)
        diff.make_volume(p, spec)
        return p
    fat, size, cl = fs_geometry(fs)
    diff.mkfs(p, fat, size, cl)
    return p


def expected_of(side, writer, base, ops):
    """(results, entries) a correct implementation gives: for a reader, the
    tree the writer was asked to make (its model); for a writer, what Linux
    does with the ops (the kernel profile, dual names: the tool under test
    makes 8.3 aliases as Linux does, and runs out of clusters where Linux
    does: vfz.model.space)."""
    if side == "reader":
        m = checker.model_of(writer, base, ops)
    else:
        from vfz.model.space import space_for
        m = model.Model("kernel", "dual", root=model.root_for("kernel", base),
                        space=space_for("kernel", base))
        m.apply(ops)
    return list(m.results), m.entries()


def build_case(impl, side, ops, fs, workdir, writer=None, seed=1, **kw):
    """A Case from an op-script: a fresh mkfs.fat volume of fs; for a reader
    bug, writer (a registered writer: core-v1, kernel, ...) applies the ops
    to it first. The images live in workdir."""
    if side not in ("reader", "writer"):
        raise ExportError(f"side must be reader or writer, not {side!r}")
    base = _pristine(fs, workdir)
    img = base
    if side == "reader":
        if not writer:
            raise ExportError("a reader bug needs the writer that makes its image")
        cfg = {"seed": seed} if oracles.entry(writer).seeded else {}
        w = oracles.get_writer(writer, **cfg)
        img = os.path.join(workdir, "written.img")
        try:
            wr = checker.write_copy(w, writer, base, img, ops)
        finally:
            w.close()
        if wr.error:
            raise ExportError(f"writer {writer} failed: {wr.error}")
    results, entries = expected_of(side, writer, base, ops)
    kw["extra"] = default_extra(impl, writer, kw.get("extra"))
    return Case(impl=impl, side=side, ops=ops, fs=fs, image=img, writer=writer,
                entries=entries, results=results, label=volume_label(img),
                seed=seed if side == "reader" else None, fat_bits=fs_geometry(fs)[0], **kw)


def default_extra(impl, writer, extra):
    """The per-implementation knobs a case leaves out: its template's
    default_extra(extra, writer) hook fills them in (dosfsck: whether
    complaints are a symptom, from the writer's short entries)."""
    extra = dict(extra or {})
    try:
        hook = getattr(oracles.exporter(impl), "default_extra", None)
    except KeyError:
        hook = None
    if hook:
        hook(extra, writer)
    return extra


def case_from_finding(path, workdir):
    """A Case from a finding directory (vfz.findings): its signature says
    which implementation and side; its images are used as they are."""
    why = findings.well_formed(path)
    if why:
        raise ExportError(f"{path}: not a finding: {why}")
    info = findings.load_finding(path)
    f = info["fields"]
    side, oracle = f.get("role"), f.get("oracle")
    if side not in ("reader", "writer"):
        raise ExportError(f"{path}: a {side} finding has no implementation to report to")
    writer = info.get("writer")
    if side == "reader" and writers_bug(f.get("kind", ""), writer):
        # a reader saw the writer's named bug (fsck.fat complaining of the
        # FATs the writer left): the writer's own template reproduces it
        side, oracle = "writer", writer
    # a writer's finding names its family (vvfat); a writer with a template of its
    # own under its registry name (kernel-vvfat) is reproduced by that one
    impl = impl_of(writer if side == "writer" and writer in oracles.exporters() else oracle)
    fs = info.get("fs") or "fat16"
    ops = opscript.load(os.path.join(path, "ops.txt"))
    base = os.path.join(path, f"before-{fs.replace(':', '_')}.img")
    if not os.path.isfile(base):
        cands = [n for n in os.listdir(path) if n.startswith("before-") and n.endswith(".img")]
        if not cands:
            base = _pristine(fs, workdir)
        else:
            base = os.path.join(path, sorted(cands)[0])
    if side == "reader":
        img = os.path.join(path, f"after-{writer}.img")
        if not os.path.isfile(img):
            raise ExportError(f"{path}: no after-{writer}.img to give the reader")
    else:
        img = base
    results, entries = expected_of(side, writer, base, ops)
    return Case(impl=impl, side=side, ops=ops, fs=fs, image=img, writer=writer if side == "reader" else None,
                title=info.get("summary", ""), kind=f.get("kind", ""), signature=info["signature"],
                reason=_exception_reason(f.get("kind", ""), impl) or info.get("summary", ""),
                entries=entries, results=results, label=volume_label(img),
                # the writer's seed as the campaign ran it (dummies drawn from it)
                seed=(info.get("writer_seeds") or {}).get(writer),
                extra=default_extra(impl, writer, None), fat_bits=fs_geometry(fs)[0])


def writers_bug(kind, writer):
    """Is kind a named writer-side exception of writer's family, which has
    a reproducer template of its own?"""
    if not writer or writer not in oracles.entries():
        return False
    fam = oracles.entry(writer).family
    return fam in oracles.exporters() and any(
        x.side == "writer" and x.oracle == fam for x in oracles.exception(kind))


def load_spec(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def case_from_spec(dirname, workdir):
    """A Case from a catalogued peer bug (corpus/peer-bugs/NAME/: ops.txt,
    bug.json {"impl", "side", "fs", "writer", "seed", "kind", "title",
    "extra"}, README)."""
    spec = load_spec(os.path.join(dirname, "bug.json"))
    ops = opscript.load(os.path.join(dirname, "ops.txt"))
    with open(os.path.join(dirname, "README"), encoding="utf-8") as f:
        note = f.read().strip()
    kind = spec.get("kind", "")
    reason = _exception_reason(kind, spec["impl"])
    reason = note + ("\n\n" + reason if reason and reason not in note else "")
    return build_case(spec["impl"], spec["side"], ops, spec.get("fs", "fat16"), workdir,
                      writer=spec.get("writer"), seed=spec.get("seed", 1), title=spec.get("title", ""),
                      kind=kind, reason=reason, extra=spec.get("extra", {}))


def impl_of(oracle):
    """The family whose reproducer template reproduces oracle's bug (the
    oracle name itself when it is a family with a template)."""
    have = oracles.exporters()
    if oracle in have:
        return oracle
    try:
        fam = oracles.entry(oracle).family
    except Exception:
        fam = oracle
    if fam in have:
        return fam
    raise ExportError(f"no reproducer exporter for {oracle!r} (have: {', '.join(sorted(have))})")


def _exception_reason(kind, impl=None):
    """The reason text of the named exception kind (the oracle registry's
    EXCEPTIONS; one name may be an exception of several implementations:
    impl's own first), or ''."""
    xs = sorted(oracles.exception(kind), key=lambda x: impl_of(x.oracle) != impl)
    return xs[0].reason if xs else ""


def volume_label(image):
    """The root directory's volume label entry (what fsck.fat -l lists), or None."""
    try:
        with open(image, "rb") as f:
            fat = fatimg.Fat(f.read())
        for off, e in fat.entries(None):
            if e[0] != 0xE5 and e[11] != 0x0F and e[11] & 0x08:
                return e[:11].decode("cp437").rstrip(" ")
    except (OSError, struct.error, ValueError, IndexError):
        return None
    return None
