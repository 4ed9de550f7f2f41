"""The compatibility matrix: every name class x write style, each image judged by every checker and reader.

Matrix. For every name class of docs/op-script.md (`vfat gen --names CLASS`) and
image index k, one op-script is generated (`vfat gen --seed S --ops OPS
--names CLASS`) and written by each core style (dual, v1, v3, unique: the
core writers of vfz/oracles/core.py, `vfat apply --seed S`) onto a fresh
mkfs.fat FAT16 image. The expected tree is the model's (vfz.model, profile
kernel). Each image is read by every row:

  fsck.fat -n           reads correctly = no complaint; complains = any
  fsck.fat -a, re-read  fsck.fat -a on a copy, then mtools lists it: reads
                        correctly = the expected tree is intact (or nothing
                        to repair); damages on repair = names/files changed
  mtools, 7-Zip, GRUB, kernel, kernel-nodual, kernel-nodual-v3
                        the driver's verdict (vfz.check.verdict.verdict_for, named
                        exceptions of vfz.model applied): ok = reads
                        correctly, complains, differs = misreads, failed =
                        fails
  a reader of a medium of its own (vvfat rw: the host directory it wrote
                        back from a Linux guest's writes): its writers of
                        each style run the script live (vfz.study.compat_media;
                        PER_CELL of its images per cell, fewer: each is a
                        guest run)
Cells count images per verdict and link to the op-script of the image that
shows the cell's worst verdict (reports/compat/cases/, with the apply
commands and every verdict of that script in its header).
"""
import os
import shutil
import subprocess
import tempfile
import time
from collections import Counter

from vfz import model, opscript, oracles
from vfz.check import diff
from vfz.check import verdict
from vfz.study import compat_media
from vfz.study.tools import vfat_path

CLASSES = ["upper83", "lower83", "long", "slot13", "n255", "latin", "cjk", "astral", "dots",
           "spaces", "traildots", "longchars", "invalid", "reserved", "case", "e5", "meta"]
# "meta": attributes and times (the second grammar: `vfat gen --meta`, over a
# few name classes); each reader's meta keys are compared where it shows them
META_GEN = ["--meta", "--names", "upper83,lower83,long,latin"]
# the core's write styles: its writers, by the kind of short entries they write (not an
# unread one: core-asan writes core-dual's bytes to be compared with them, not read)
STYLES = {("dual" if e.shorts == "alias" else "unique" if e.unique else e.shorts): n
          for n, e in oracles.entries().items() if e.writer and e.under_test and not e.unread}
# one row per independent reader that lists the tree (the registry's), after fsck.fat's two
READER_OF = {e.title: n for n, e in oracles.entries().items()
             if e.reader and e.lists and e.independent and e.medium == "fat"}
ROWS = ["fsck.fat -n", "fsck.fat -a + re-read"] + list(READER_OF) + list(compat_media.ROWS)
VERDICTS = ["reads correctly", "complains", "damages on repair", "misreads", "fails"]
SHORT = {"reads correctly": "ok", "complains": "complains", "damages on repair": "damages",
         "misreads": "misreads", "fails": "fails", "n/a": "n/a"}
MAP = {"ok": "reads correctly", "complains": "complains", "differs": "misreads", "failed": "fails"}
SIZES = {"small": (1, 6), "default": (2, 10), "full": (6, 16)}  # images per cell, ops per script
FS = (16, 16 << 20, 0)
TIMEOUT = 120.0


def _gen(seed, nops, cls):
    names = META_GEN if cls == "meta" else ["--names", cls]
    p = subprocess.run([vfat_path(), "gen", "--seed", str(seed), "--ops", str(nops), *names],
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError(f"vfat gen --names {cls}: {p.stderr.strip()}")
    return p.stdout


def _worst(counter):
    for v in reversed(VERDICTS):
        if counter.get(v):
            return v
    return None


def load_readers(with_kernel, notes):
    out = {}
    for row, name in READER_OF.items():
        if oracles.entry(name).cost == "vm" and not with_kernel:
            notes.append(f"{row}: skipped (--no-kernel)")
            continue
        o = diff.load_oracle("reader", name, False, notes, {})
        if o is not None:
            out[row] = o
    dos = diff.load_oracle("reader", "dosfsck", False, notes, {"dosfsck": {"repair": False}})
    if dos is not None:
        out["fsck.fat -n"] = dos
    return out


def fsck_repair(image, expected, timeout=TIMEOUT):
    """fsck.fat -a on a copy; mtools lists the image before and the copy
    after: (verdict, detail). Damage = what the repair changed (names,
    files, contents), so a reader's own limits do not count here."""
    from vfz.oracles.mtools import MtoolsReader
    from vfz import listing
    from vfz.proc import run
    tmp = tempfile.mkdtemp(prefix="vfz-compat-a-")
    try:
        copy = os.path.join(tmp, "a.img")
        shutil.copyfile(image, copy)
        before = MtoolsReader().read(image, timeout)
        p = run(["fsck.fat", "-a", copy], timeout=timeout)
        if p.error:
            return "fails", f"fsck.fat -a: {p.error}"
        if p.rc not in (0, 1):
            return "fails", f"fsck.fat -a exit {p.rc}: {(p.errtext or p.text).strip()[-200:]}"
        after = MtoolsReader().read(copy, timeout)
        if after.listing is None:
            return "fails", f"re-read after fsck.fat -a: {after.error}"
        ref = before.listing if before.listing is not None else expected
        d = listing.diff(ref, after.listing)
        if d:
            return "damages on repair", d
        return "reads correctly", ""
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def judge(image, expected, readers, timeout=TIMEOUT):
    """{row: (verdict, detail)} for one written image."""
    out = {}
    used = Counter()
    fs = readers.get("fsck.fat -n")
    if fs is not None:
        r = fs.read(image, timeout)
        if r.error:
            out["fsck.fat -n"] = ("fails", r.error)
        elif r.complaints:
            out["fsck.fat -n"] = ("complains", "\n".join(r.complaints[:5]))
        else:
            out["fsck.fat -n"] = ("reads correctly", "")
        if r.error is None and not r.complaints:
            out["fsck.fat -a + re-read"] = ("reads correctly", "nothing to repair")
        else:
            out["fsck.fat -a + re-read"] = fsck_repair(image, expected, timeout)
    for row in ROWS:
        if row in out or row not in readers:
            continue
        o = readers[row]
        try:
            r = o.read(image, timeout)
        except Exception as e:
            from vfz import oracles
            r = oracles.ReadResult(READER_OF[row], error=f"{type(e).__name__}: {e}")
        vd = verdict.verdict_for(r, expected, READER_OF[row], {}, used)
        v, d = vd.verdict, vd.text()
        out[row] = (MAP[v], d)
    return out


def _account(acc, case, cls, style, res):
    """Count one image's verdicts {row: (verdict, detail)} of style into acc."""
    cells, links, notable, verdicts, details = acc
    verdicts.setdefault(style, {}).update({row: v for row, (v, _) in res.items()})
    for row, (v, d) in res.items():
        if v != "reads correctly" and d:
            details.setdefault(style, {})[row] = " / ".join(d.splitlines()[:3])[:300]
            sig = " ".join(d.splitlines()[0].split())[:140]
            ent = notable.setdefault((row, style, v), {}).setdefault(sig, [0, case, cls])
            ent[0] += 1
        cells.setdefault((row, style, cls), Counter())[v] += 1
        links.setdefault((row, style, cls, v), case)


def run_matrix(out, seed, size, readers, progress, media=None):
    """media: the rows of compat_media.load (run on the scripts
    compat_media.runs says)."""
    per_cell, nops = SIZES[size]
    media = media or {}
    cases = os.path.join(out, "compat", "cases")
    if os.path.isdir(cases):
        for f in os.listdir(cases):
            if f.endswith(".ops"):
                os.unlink(os.path.join(cases, f))
    os.makedirs(cases, exist_ok=True)
    cells = {}      # (row, style, cls) -> Counter
    links = {}      # (row, style, cls, verdict) -> case file
    written = {}    # case file -> (text, {style: {row: verdict}}, seed, details)
    mismatches = []  # writer results that differ from the model's
    notable = {}     # (row, style, verdict) -> {first detail line: [count, case, class]}
    tmp = tempfile.mkdtemp(prefix="vfz-compat-")
    base = os.path.join(tmp, "pristine.img")
    t0 = time.monotonic()
    nimg = 0
    total = len(CLASSES) * per_cell * len(STYLES)
    try:
        diff.mkfs(base, *FS)
        for ci, cls in enumerate(CLASSES):
            for k in range(per_cell):
                s = seed * 100000 + ci * 100 + k
                text = _gen(s, nops, cls)
                ops = opscript.parse(text)
                m = model.Model("kernel")
                m.apply(ops)
                model_expected = m.entries()
                case = f"{cls}-{s}.ops"
                verdicts = {}
                details = {}
                for style, wname in STYLES.items():
                    img = os.path.join(tmp, f"{style}.img")
                    diff.mkfs(img, *FS)
                    w = diff.load_oracle("writer", wname, True, [], {wname: {"seed": s}})
                    wr = w.apply(img, ops, 300.0)
                    expected = model_expected
                    if wr.error:
                        res = {row: ("fails", f"writer: {wr.error}") for row in ROWS
                               if row not in compat_media.ROWS}
                    else:
                        if wr.results != m.results:
                            # the model's documented limit (dual aliases spelled by a later
                            # name: EEXIST on Linux and in the core): expect the tree of the
                            # ops the writer carried out
                            okops = [op for op, r in zip(ops, wr.results) if r == "ok"]
                            m2 = model.Model("kernel")
                            m2.apply(okops)
                            expected = m2.entries()
                            bad = [f"line {op.line}: model {a}, {wname} {b}"
                                   for op, a, b in zip(ops, m.results, wr.results) if a != b]
                            mismatches.append(f"{case} {style}: " + "; ".join(bad[:3]))
                            details.setdefault(style, {})["writer"] = "; ".join(bad[:3])
                        res = judge(img, expected, readers)
                    _account((cells, links, notable, verdicts, details), case, cls, style, res)
                    nimg += 1
                    progress(f"compat: {nimg}/{total} images, class {cls}, style {style}, "
                             f"{time.monotonic() - t0:.0f}s")
                if media and compat_media.runs(size, cls, k):
                    by_style, mm = compat_media.run_script(media, case, ops, s, base, tmp, TIMEOUT)
                    mismatches += mm
                    for style, res in by_style.items():
                        _account((cells, links, notable, verdicts, details), case, cls, style, res)
                    progress(f"compat: {case}: " + "; ".join(
                        f"{style} {SHORT[v]}" for style, rv in by_style.items() for v, _ in rv.values())
                        + f", {time.monotonic() - t0:.0f}s")
                written[case] = (text, verdicts, s, details)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    used_cases = {c for c in links.values()}
    for case in used_cases:
        text, verdicts, s, details = written[case]
        with open(os.path.join(cases, case), "w") as f:
            cls = case.rsplit('-', 1)[0]
            f.write(f"# compat case: vfat gen --seed {s} "
                    f"{' '.join(META_GEN) if cls == 'meta' else '--names ' + cls}\n")
            f.write("# replay: mkfs.fat -F 16 -i 12345678 -n VFATFUZZ -C IMG 16384, then\n")
            for style, wname in STYLES.items():
                from vfz.oracles.core import MODES
                f.write(f"#   {style}: vfat apply IMG THIS {' '.join(MODES[wname])} --seed {s}\n")
            for line in compat_media.replay_lines(media, s):
                f.write(line + "\n")
            f.write("# verdicts measured on this script:\n")
            for style, rv in verdicts.items():
                f.write(f"#   {style}: " + "; ".join(f"{r}={SHORT[v]}" for r, v in rv.items()) + "\n")
            for style, dd in details.items():
                for row, d in dd.items():
                    f.write(f"# detail {style} / {row}: {' '.join(d.split())}\n")
            f.write(text if text.endswith("\n") else text + "\n")
    return cells, links, mismatches, notable
