"""The compat matrix's rows for readers of a medium of their own: a reader that reads only its writers' images gets one cell per write style, filled by the writer of that style running the class's op-script.

Such a reader (the registry's Entry.medium other than "fat": kernel-vvfat,
QEMU's vvfat in rw mode, whose image is the host directory it wrote back
from a Linux guest's writes) never reads a finished FAT image, so the
core's images cannot be its input. Its row instead asks the same question
of the writers of its medium: in style dual the stock kernel writes the
class's op-script on the vvfat disk, in v1 and v3 the same guest with the
seed patch's modules; a style with no such writer (unique) is n/a. The
expected tree is the model of that writer (vfz.check.predict.model_of:
its profile, names and shortname rule).

Verdicts as the other rows' (vfz.check.verdict.verdict_for with the
reader's and the writer's name hooks: a name vvfat lower-cases by design
is its name exception, as the FAT rows apply theirs): ok = the host tree
is the model's, contents included; misreads = it differs; fails = the
writer failed (QEMU aborted, no host directory). A difference or failure
one of the oracles' named exceptions explains (their explain and
known_failure hooks, as the checker asks them) stays a misread or a
failure here: the detail line names the exception.
"""
import os
import shutil
from collections import Counter

from vfz import oracles
from vfz.check import diff, verdict
from vfz.check.predict import model_of
from vfz.oracles.evidence import Evidence

# images per cell of these rows (a script costs a guest run, an abort a reboot), and the
# classes they run at each size (None: every class; small is the tests' size)
PER_CELL = {"small": 1, "default": 1, "full": 2}
CLASSES_AT = {"small": ("long",), "default": None, "full": None}


def runs(size, cls, k):
    """Do the media rows run the k-th script of class cls at this size?"""
    return k < PER_CELL[size] and (CLASSES_AT[size] is None or cls in CLASSES_AT[size])


def _style(e):
    return "dual" if e.shorts == "alias" else "unique" if e.unique else e.shorts


def media_rows():
    """{row title: (reader name, {style: writer name})}: each independent
    reader of a medium other than FAT, with the writers of that medium by
    the kind of short entries they write."""
    ents = oracles.entries()
    out = {}
    for rn, r in ents.items():
        if not r.reader or r.medium == "fat" or not r.independent:
            continue
        ws = {_style(w): wn for wn, w in ents.items() if w.writer and w.medium == r.medium}
        out[r.title] = (rn, ws)
    return out


MEDIA = media_rows()
# each reader's second row: where the writer failed on a named abort, the verdict of
# the script cut before the op that reaches it (what the checker reads then: its
# known_failure hook); otherwise the whole script's verdict
CUT = ", cut before a named abort"
ROWS = [t for title in MEDIA for t in (title, title + CUT)]


def load(with_kernel, notes):
    """{row: (reader name, reader, {style: (writer name, writer)})} of the rows that can run."""
    out = {}
    for row, (rn, ws) in MEDIA.items():
        if not with_kernel and any(oracles.entry(n).cost == "vm" for n in [rn, *ws.values()]):
            notes.append(f"{row}: skipped (--no-kernel)")
            continue
        reader = diff.load_oracle("reader", rn, False, notes, {})
        if reader is None:
            continue
        writers = {}
        for style, wn in ws.items():
            w = diff.load_oracle("writer", wn, False, notes, {})
            if w is not None:
                writers[style] = (wn, w)
        if writers:
            out[row] = (rn, reader, writers)
    return out


def _named(ev, hooks):
    """The named exceptions the hooks find behind a divergence."""
    for h in hooks:
        try:
            got = h(ev)
        except Exception:
            got = None
        if got:
            return [got[1]] if isinstance(got, tuple) else list(got)
    return []


def _with_names(detail, named):
    if not named:
        return detail
    return f"named {', '.join(named)} (catalogued, still counted): " + detail


def _verdict(rn, reader, wn, writer, ops, seed, base, image, timeout):
    """Writer wn runs ops live (its image over a copy of base), reader rn
    reads it against wn's model -> (verdict, detail, mismatch, known):
    verdict as compat_matrix.VERDICTS; mismatch: the writer's results that
    differ from its model's (then the tree of the ops it carried out is
    expected, as the FAT rows do); known: the writer's known_failure
    (cut, name) when it failed."""
    m = model_of(wn, base, ops)
    shutil.copyfile(base, image)
    if oracles.entry(wn).seeded:
        writer.seed = seed
    wr = writer.apply(image, ops, timeout)
    if wr.error:
        ev = Evidence(ops, writer=wn, wr=wr, results=m.results)
        known = oracles.oracle_class(wn, "writer").known_failure(ev)
        return "fails", _with_names(f"writer: {wr.error}", [known[1]] if known else []), None, known
    expected, mismatch = m.entries(), None
    if wr.results != m.results:
        okops = [op for op, r in zip(ops, wr.results) if r == "ok"]
        expected = model_of(wn, base, okops).entries()
        mismatch = "; ".join(f"line {op.line}: model {a}, {wn} {b}"
                             for op, a, b in zip(ops, m.results, wr.results) if a != b)
    r = reader.read(image, timeout)
    vd = verdict.verdict_for(r, expected, rn, {}, Counter(), writer=wn)
    if vd.verdict == "ok":
        return "reads correctly", "", mismatch, None
    ev = Evidence(ops, writer=wn, reader=rn, rr=r, verdict=vd.verdict, diff=vd.diff, lines=vd.lines,
                  detail=vd.text(), image=image, entries=expected)
    hooks = [oracles.oracle_class(rn, "reader").explain, oracles.oracle_class(wn, "writer").explain]
    named = _named(ev, hooks) if vd.verdict == "differs" else []
    v = {"differs": "misreads", "failed": "fails", "complains": "complains"}[vd.verdict]
    return v, _with_names(vd.text(), named), mismatch, None


def judge_one(row, rn, reader, wn, writer, ops, seed, base, image, timeout):
    """The verdicts of one script written by wn and read by rn -> ({row:
    (verdict, detail), row + CUT: (verdict, detail)}, [mismatches])."""
    sup = oracles.entry(wn).supports
    ops = [o for o in ops if o.kind not in oracles.META_OPS or o.kind in sup]
    v, d, mm, known = _verdict(rn, reader, wn, writer, ops, seed, base, image, timeout)
    out, mism = {row: (v, d)}, [mm] if mm else []
    if known is None:
        out[row + CUT] = (v, d)
        return out, mism
    cut, name = known
    cv, cd, cmm, _ = _verdict(rn, reader, wn, writer, ops[:cut], seed, base, image, timeout)
    out[row + CUT] = (cv, f"{name}: cut before line {ops[cut].line} ({cut} ops); " + (cd or "read correctly")
                      if cv != "reads correctly" else "")
    return out, mism + ([f"(cut) {cmm}"] if cmm else [])


def run_script(rows, case, ops, seed, base, tmp, timeout):
    """The media rows' verdicts of one script -> ({style: {row: (verdict,
    detail)}}, [writer mismatches])."""
    out, mism = {}, []
    for row, (rn, reader, writers) in rows.items():
        for style, (wn, w) in writers.items():
            img = os.path.join(tmp, f"media-{style}.img")
            res, mm = judge_one(row, rn, reader, wn, w, ops, seed, base, img, timeout)
            out.setdefault(style, {}).update(res)
            mism += [f"{case} {wn}: {x}" for x in mm]
    return out, mism


def replay_lines(rows, seed):
    """How a case file's header says to replay the media rows' cells."""
    def sets(wn):
        return f" --set {wn}.seed={seed}" if oracles.entry(wn).seeded else ""
    return [f"#   {row}, {style}: vfatfuzz diff --ops THIS --writers {wn} --fs fat16{sets(wn)}"
            for row, (_, _, writers) in rows.items() for style, (wn, _) in writers.items()]


def close(rows):
    for _, reader, writers in rows.values():
        for o in [reader, *(w for _, w in writers.values())]:
            try:
                o.close()
            except Exception:
                pass
