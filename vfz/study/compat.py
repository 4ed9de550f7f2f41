"""Compatibility study: which checkers and readers accept images written in
each style, per name class, and why the seed's dummy bytes are what they
are.

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
Cells count images per verdict and link to the op-script of the image that
shows the cell's worst verdict (reports/compat/cases/, with the apply
commands and every verdict of that script in its header).

Variants. One image per variant: the core writes two files in /v (and, for
v3, a directory), then the first short entry's bytes are edited in Python
(LFN checksum recomputed) into a variant of the seed's dummy; stock kernel
(listing with open errors), patched kernel, mtools, 7-Zip, GRUB and
fsck.fat -n / -a judge each.
"""
import csv
import os
import shutil
import subprocess
import tempfile
import time
from collections import Counter

from vfz import fatimg, model, opscript, oracles
from vfz.check import diff
from vfz.check import verdict
from vfz.study.collisions import tool_versions, vfat_ls, vfat_path, _find_short

CLASSES = ["upper83", "lower83", "long", "slot13", "n255", "latin", "cjk", "astral", "dots",
           "spaces", "traildots", "longchars", "invalid", "reserved", "case", "e5", "meta"]
# "meta": attributes and times (the second grammar: `vfat gen --meta`, over a
# few name classes); each reader's meta keys are compared where it shows them
META_GEN = ["--meta", "--names", "upper83,lower83,long,latin"]
# the core's write styles: its writers, by the kind of short entries they write
STYLES = {("dual" if e.shorts == "alias" else "unique" if e.unique else e.shorts): n
          for n, e in oracles.entries().items() if e.writer and e.under_test}
# one row per independent reader that lists the tree (the registry's), after fsck.fat's two
READER_OF = {e.title: n for n, e in oracles.entries().items() if e.reader and e.lists and e.independent}
ROWS = ["fsck.fat -n", "fsck.fat -a + re-read"] + list(READER_OF)
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


def run_matrix(out, seed, size, readers, progress):
    per_cell, nops = SIZES[size]
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
    t0 = time.monotonic()
    nimg = 0
    total = len(CLASSES) * per_cell * len(STYLES)
    try:
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
                        res = {row: ("fails", f"writer: {wr.error}") for row in ROWS}
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
                    verdicts[style] = {row: v for row, (v, _) in res.items()}
                    for row, (v, d) in res.items():
                        if v != "reads correctly" and d:
                            details.setdefault(style, {})[row] = " / ".join(d.splitlines()[:3])[:300]
                            sig = " ".join(d.splitlines()[0].split())[:140]
                            ent = notable.setdefault((row, style, v), {}).setdefault(sig, [0, case, cls])
                            ent[0] += 1
                    for row, (v, _) in res.items():
                        cells.setdefault((row, style, cls), Counter())[v] += 1
                        links.setdefault((row, style, cls, v), case)
                    nimg += 1
                    progress(f"compat: {nimg}/{total} images, class {cls}, style {style}, "
                             f"{time.monotonic() - t0:.0f}s")
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
            f.write("# verdicts measured on this script:\n")
            for style, rv in verdicts.items():
                f.write(f"#   {style}: " + "; ".join(f"{r}={SHORT[v]}" for r, v in rv.items()) + "\n")
            for style, dd in details.items():
                for row, d in dd.items():
                    f.write(f"# detail {style} / {row}: {' '.join(d.split())}\n")
            f.write(text if text.endswith("\n") else text + "\n")
    return cells, links, mismatches, notable


# ------------------------------------------------------------------ variants
VARIANT_OPS = {
    # only the target has a dummy (plus, for v3, the directory target), so
    # what a checker says is about the variant; OTHER.TXT follows it (does a
    # reader still see the entries after the target?)
    "v1": """mkdir "/V"
create "/V/a long file name.txt" 100 7
create "/V/OTHER.TXT" 50 3
mkdir "/V/SUBDIR"
create "/V/SUBDIR/INNER.TXT" 20 9
""",
    "v3": """mkdir "/V"
create "/V/a long file name.txt" 100 7
create "/V/OTHER.TXT" 50 3
mkdir "/V/a long directory name"
create "/V/a long directory name/INNER.TXT" 20 9
""",
}
TARGET = "/V/a long file name.txt"
DTARGET = "/V/a long directory name"


def _variants():
    """(id, base style, target, description, edit(sn, nt) -> (sn, nt))."""
    def setb(i, v):
        def f(sn, nt):
            sn = bytearray(sn)
            sn[i] = v
            return bytes(sn), nt
        return f

    def rand_zero(sn, nt):
        return bytes([0x20, 0] + [0] * 6 + [0x2F, 0, 0]), nt

    def printable(sn, nt):
        return bytes([0x20, 0]) + b"QWERTY" + bytes([0x2F, 0, 0]), nt

    def nt(v):
        return lambda sn, n: (sn, v)

    def lead05(sn, n):
        sn = bytearray(sn)
        if sn[0] in (ord("~"), ord("/")):       # keep the '~'/'/' count: swap it away
            i = next(j for j in range(1, 8) if sn[j] not in (ord("~"), ord("/")))
            sn[i] = sn[0]
        sn[0] = 0x05
        return bytes(sn), n

    def dir_slash(sn, n):
        sn = bytearray(sn)
        i = next(j for j in range(8) if sn[j] != ord("~"))
        sn[i] = ord("/")
        return bytes(sn), n
    return [
        ("v1-seed", "v1", TARGET, "v1 as the seed writes it: 20 00 r r r r r r 2F 00 00, NT 0", None),
        ("v1-space8", "v1", TARGET, "byte 8 a space instead of '/'", setb(8, 0x20)),
        ("v1-nul8", "v1", TARGET, "byte 8 NUL instead of '/'", setb(8, 0x00)),
        ("v1-noleadspace", "v1", TARGET, "byte 0 'X' instead of the leading space", setb(0, ord("X"))),
        ("v1-nul0", "v1", TARGET, "byte 0 NUL (the end-of-directory mark)", setb(0, 0x00)),
        ("v1-e5", "v1", TARGET, "byte 0 0xE5 (the deleted mark)", setb(0, 0xE5)),
        ("v1-space1", "v1", TARGET, "byte 1 a space instead of NUL", setb(1, 0x20)),
        ("v1-zero", "v1", TARGET, "random part 0 (the seed never writes it)", rand_zero),
        ("v1-printable", "v1", TARGET, "printable random bytes 'QWERTY' instead of 0x01-0x1F", printable),
        ("v1-nt20", "v1", TARGET, "v1 bytes with NT byte 0x20 (v3's FAT_NO_83NAME flag)", nt(0x20)),
        ("v3-seed", "v3", TARGET, "v3 file as the July revision writes it ('~', '/', invalid bytes, ext, NT 0x20)", None),
        ("v3-nt0", "v3", TARGET, "v3 file bytes with NT byte 0", nt(0x00)),
        ("v3-lead05", "v3", TARGET, "v3 file whose drawn byte 0 is 0x05 (one of the 35; the 0xE5 escape)",
         lead05),
        ("v3-dir-seed", "v3", DTARGET, "v3 directory as written (no '/')", None),
        ("v3-dir-slash", "v3", DTARGET, "v3 directory with a '/' in its base (as files have)", dir_slash),
    ]


def set_short(img, old_sn, new_sn, new_nt=None):
    offs = _find_short(img, old_sn)
    if len(offs) != 1:
        raise RuntimeError(f"short entry {old_sn.hex()} found {len(offs)} times")
    o = offs[0]
    img[o:o + 11] = new_sn
    if new_nt is not None:
        img[o + 12] = new_nt
    ck = fatimg.lfn_checksum(new_sn)
    p = o - 32
    while p >= 0 and img[p + 11] == 0x0F:
        img[p + 13] = ck
        if img[p] & 0x40:
            break
        p -= 32


def run_variants(out, seed, readers, progress):
    from vfz.proc import run
    from vfz.oracles.dosfsck import parse_fsck
    tmp = tempfile.mkdtemp(prefix="vfz-variants-")
    rows = []
    try:
        base = {}
        expected = {}
        for style in ("v1", "v3"):
            ops = os.path.join(tmp, f"v-{style}.ops")
            with open(ops, "w") as f:
                f.write(VARIANT_OPS[style])
            img = os.path.join(tmp, f"base-{style}.img")
            diff.mkfs(img, *FS)
            subprocess.run([vfat_path(), "apply", img, ops, "--dummy", style, "--seed", str(seed)],
                           check=True, capture_output=True)
            base[style] = (img, {e["path"]: e for e in vfat_ls(img)})
            m = model.Model("kernel")
            m.apply(opscript.load(ops))
            expected[style] = m.entries()
        for vid, style, target, desc, edit in _variants():
            bimg, ls = base[style]
            img = os.path.join(tmp, f"{vid}.img")
            shutil.copyfile(bimg, img)
            sn = bytes.fromhex(ls[target]["short"])
            nt = ls[target].get("nt", 0)
            if edit:
                nsn, nnt = edit(sn, nt)
                data = bytearray(open(img, "rb").read())
                set_short(data, sn, nsn, nnt)
                with open(img, "wb") as f:
                    f.write(data)
                sn, nt = nsn, nnt
            row = {"id": vid, "description": desc, "bytes": sn.hex(" "), "nt": f"0x{nt:02x}"}
            # fsck.fat -n and -a
            p = run(["fsck.fat", "-n", img], timeout=TIMEOUT)
            cs = parse_fsck(p.text + "\n" + p.errtext)
            kinds = Counter(c["kind"] for c in cs)
            row["fsck.fat -n"] = ", ".join(f"{k} x{v}" for k, v in sorted(kinds.items())) or "clean"
            row["fsck.fat -a"] = repair_effect(img, target, expected[style])
            for rname in ("kernel", "kernel-nodual", "mtools", "7-Zip", "GRUB"):
                o = readers.get(rname)
                if o is None:
                    row[rname] = "n/a"
                    continue
                r = o.read(img, TIMEOUT)
                row[rname] = describe(r, target, expected[style])
            rows.append(row)
            progress(f"compat: variant {vid}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def repair_effect(img, target, expected, timeout=TIMEOUT):
    """What fsck.fat -a does to the target and to the rest of the tree."""
    from vfz.oracles.mtools import MtoolsReader
    from vfz.proc import run
    tmp = tempfile.mkdtemp(prefix="vfz-variant-a-")
    try:
        copy = os.path.join(tmp, "a.img")
        shutil.copyfile(img, copy)
        before = MtoolsReader().read(img, timeout)
        p = run(["fsck.fat", "-a", copy], timeout=timeout)
        if p.error or p.rc not in (0, 1):
            return f"fails ({p.error or 'exit %d' % p.rc})"
        after = MtoolsReader().read(copy, timeout)
        if after.listing is None or before.listing is None:
            return f"re-read fails: {after.error or before.error}"
        exp = {e["path"]: e for e in expected}
        t = exp[target]
        leaf = target.rpartition("/")[2]
        if t["type"] == "file":
            hits = [e["path"] for e in after.listing
                    if e.get("sha256") == t.get("sha256") and e.get("size") == t.get("size")]
        else:
            inner = [p for p in exp if p.startswith(target + "/")]
            il = inner[0].rpartition("/")[2] if inner else None
            hits = [e["path"].rpartition("/")[0] for e in after.listing
                    if il and e["path"].endswith("/" + il)]
        if not hits:
            tgt = "target gone"
        elif any(h.rpartition("/")[2] == leaf for h in hits):
            tgt = "target keeps its long name"
        else:
            tgt = f"target renamed {hits[0].rpartition('/')[2]} (long name lost)"
        bp = {e["path"] for e in before.listing}
        ap = {e["path"] for e in after.listing}
        changed = sorted(bp - ap)
        others = [c for c in changed if c != target and not c.startswith(target + "/")]
        if others:
            tgt += f"; also changed: {', '.join(others[:2])}" + (" ..." if len(others) > 2 else "")
        new = sorted(ap - bp)
        if new and not others:
            tgt += f"; new: {', '.join(new[:2])}"
        return tgt
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def describe(r, target, expected):
    """What a reader did with the variant entry (and the rest of /v)."""
    if r.listing is None:
        return f"fails: {(r.error or '?')[:80]}"
    # GRUB shows 8.3 names in lower case: compare paths case-insensitively
    got = {e["path"].lower(): e for e in r.listing}
    exp = {e["path"].lower(): e for e in expected}
    target = target.lower()
    e = got.get(target)
    parts = []
    if e is None:
        parts.append("not listed")
    else:
        errs = [f"{k} {e[k]}" for k in ("open_error", "stat_error", "read_error") if e.get(k)]
        if errs:
            parts.append("listed, " + ", ".join(errs))
        elif e.get("sha256") is not None and e.get("sha256") != exp[target].get("sha256"):
            parts.append("listed, wrong contents")
        else:
            parts.append("listed, reads")
    others = [p for p in exp if p != target and p.startswith("/v/")
              and not p.startswith(target + "/")]
    missing = [p for p in others if p not in got]
    if missing:
        parts.append(f"{len(missing)} other entries of /v lost")
    extra = [p for p in got if p not in exp]
    if extra:
        parts.append("extra: " + ", ".join(extra[:2]))
    if r.complaints:
        parts.append(f"{len(r.complaints)} complaint(s): {r.complaints[0][:70]}")
    return "; ".join(parts)


# ------------------------------------------------------------------ report
def run_study(out, seed, size, progress, with_kernel=True):
    os.makedirs(out, exist_ok=True)
    t0 = time.monotonic()
    notes = []
    readers = load_readers(with_kernel, notes)
    try:
        cells, links, mismatches, notable = run_matrix(out, seed, size, readers, progress)
        for mm in mismatches:
            notes.append("writer results differ from the model (expected tree = the ops the "
                         "writer carried out): " + mm)
        variants = run_variants(out, seed, readers, progress)
    finally:
        for o in readers.values():
            try:
                o.close()
            except Exception:
                pass
    rows_present = [r for r in ROWS if any(k[0] == r for k in cells)]
    with open(os.path.join(out, "compat.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["row", "style", "class", *VERDICTS, "case"])
        for row in ROWS:
            for style in STYLES:
                for cls in CLASSES:
                    c = cells.get((row, style, cls))
                    if c is None:
                        w.writerow([row, style, cls, *["" for _ in VERDICTS], "n/a"])
                        continue
                    wv = _worst(c)
                    w.writerow([row, style, cls, *[c.get(v, 0) for v in VERDICTS],
                                "compat/cases/" + links[(row, style, cls, wv)]])
    with open(os.path.join(out, "compat-variants.csv"), "w", newline="") as f:
        if variants:
            w = csv.DictWriter(f, fieldnames=list(variants[0]))
            w.writeheader()
            w.writerows(variants)
    write_md(os.path.join(out, "compat.md"), cells, links, variants, notes, seed, size,
             time.monotonic() - t0, rows_present, notable)


def _cell(c, link):
    if c is None:
        return "n/a"
    parts = [f"{SHORT[v]} {c[v]}" for v in reversed(VERDICTS) if c.get(v)]
    return f"[{', '.join(parts)}]({link})"


def summary_for(cells, style, rows_present):
    tot = Counter()
    per_row = {}
    for row in rows_present:
        c = Counter()
        for cls in CLASSES:
            c.update(cells.get((row, style, cls), Counter()))
        per_row[row] = c
        tot.update(c)
    lines = []
    for row, c in per_row.items():
        n = sum(c.values())
        bad = {v: c[v] for v in VERDICTS if v != "reads correctly" and c.get(v)}
        if bad:
            lines.append(f"{row}: " + ", ".join(f"{SHORT[v]} {k}/{n}" for v, k in bad.items()))
    return lines


EXPECT = {
    "dual": "the classic layout, as Linux writes it. Every checker and reader should take it; what "
            "is not 'ok' below is a tool's own limit with that name class, shared by every style "
            "(see the table of details: e.g. an alias holding DEL 0x7F, which Linux writes too "
            "and fsck.fat renames).",
    "v1": "fsck.fat calls every v1 dummy a bad short name and `fsck.fat -a` renames each such "
          "file and drops its long name (FSCKnnnn.nnn): never run a repairing fsck on a v1 "
          "volume. Readers that find files by long name (Linux stock and patched, mtools, "
          "7-Zip, GRUB) reach them.",
    "v3": "fsck.fat exempts entries whose NT byte has 0x20 set, so v3 passes the checker and "
          "its repair. But 0x05 is one of the 35 'invalid' bytes, and 0x05 at byte 0 is the "
          "escape of a name starting with 0xE5: 7-Zip and GRUB then show the dummy as a short "
          "name and lose the long name (Linux and mtools do not). Byte 0 is a drawn byte with "
          "probability 6/8 (files) or 7/8 (directories), 0x05 with about 1/35: about 2 % of v3 "
          "long names (1 in 47 files, 1 in 40 directories). Collisions are rarer than v1 "
          "(see collisions.md).",
    "unique": "the v1 bytes, redrawn until unique in the directory: the same checker behaviour "
              "as v1 (bad short names, destructive repair), without same-directory duplicates.",
}


def write_md(path, cells, links, variants, notes, seed, size, secs, rows_present, notable):
    per_cell, nops = SIZES[size]
    vers = tool_versions()
    L = []
    A = L.append
    A("# Compatibility matrix: checkers and readers x write style x name class")
    A("")
    A(f"Generated by `vfatfuzz study compat --seed {seed} --size {size}` "
      f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {secs:.0f} s): {per_cell} generated "
      f"op-script(s) of {nops} ops per name class, each written by every style onto a fresh "
      f"mkfs.fat FAT16 16 MiB image, every image read by every row.")
    A("")
    A("Tools: " + "; ".join(f"{k}: `{v}`" for k, v in vers.items()))
    A("")
    for n in notes:
        A(f"* note: {n}")
    A("")
    A("Verdicts: **ok** = reads correctly (checkers: no complaint; repair: expected tree intact "
      "after `fsck.fat -a`), **complains** = same tree but messages (fsck.fat complaints, mcopy "
      "errors, kernel FAT-fs messages), **damages** = `fsck.fat -a` changed names or files, "
      "**misreads** = listing or contents differ from the model's expected tree (named "
      "exceptions of vfz.model applied), **fails** = could not read / crashed / timed out. "
      "Each cell: counts over its images, worst first, linking to the op-script of the image "
      "that shows the worst verdict (header: apply commands and every verdict of that script). "
      "CSV: compat.csv.")
    A("")
    A("## What a user of each style should expect")
    A("")
    for style in STYLES:
        A(f"* **{style}**: {EXPECT[style]}")
        lines = summary_for(cells, style, rows_present)
        A("  Measured (non-ok counts over all classes): " + ("; ".join(lines) if lines else
                                                             "every row read every image correctly") + ".")
    A("")
    for style in STYLES:
        A(f"## Style {style} (`{STYLES[style]}`)")
        A("")
        A("| reader \\ class | " + " | ".join(CLASSES) + " |")
        A("|---|" + "---|" * len(CLASSES))
        for row in ROWS:
            cs = []
            for cls in CLASSES:
                c = cells.get((row, style, cls))
                cs.append(_cell(c, "compat/cases/" + links[(row, style, cls, _worst(c))]) if c else "n/a")
            A(f"| {row} | " + " | ".join(cs) + " |")
        A("")
    A("## What the non-ok cells say")
    A("")
    A("Per row, style and verdict: the distinct first lines of the tools' details (listing diff "
      "`-` expected / `+` seen, or the complaint), how many images showed each, and one case. "
      "fsck.fat rows on v1/unique images are left out: every v1 dummy is a bad short name to "
      "fsck.fat (see the variants below).")
    A("")
    A("| row | style | verdict | images | first detail line | case |")
    A("|---|---|---|---:|---|---|")
    for (row, style, v), sigs in sorted(notable.items(), key=lambda kv: (ROWS.index(kv[0][0]),
                                                                      list(STYLES).index(kv[0][1]))):
        if row.startswith("fsck") and style in ("v1", "unique"):
            continue
        for sig, (n, case, cls) in sorted(sigs.items(), key=lambda kv: -kv[1][0])[:4]:
            A(f"| {row} | {style} | {SHORT[v]} | {n} | `{sig.replace('|', '/').replace('`', '')}` | "
              f"[{cls}](compat/cases/{case}) |")
    A("")
    A("## Why the seed's bytes are what they are: dummy variants")
    A("")
    A("Each variant: the core writes `/V/a long file name.txt` (the target), `/V/OTHER.TXT` "
      "(short name only, after it) and a directory with `INNER.TXT` (v3: `/V/a long directory "
      "name`, the target of the `v3-dir-*` rows) with v1 or v3 dummies (seed "
      f"{seed}); then the short entry of the target (the first file; the directory for the "
      "`v3-dir-*` rows) is edited in Python, its LFN checksums recomputed. Columns: what each "
      "tool does with the target (kernel: readdir + open + read in the QEMU guest, stock and "
      "patched modules), and with the rest of /V (upper case: a short-only entry, so the target is the only dummy). CSV: compat-variants.csv.")
    A("")
    cols = ["id", "description", "bytes", "nt", "kernel", "kernel-nodual", "mtools", "7-Zip", "GRUB",
            "fsck.fat -n", "fsck.fat -a"]
    A("| " + " | ".join(cols) + " |")
    A("|" + "---|" * len(cols))
    for v in variants:
        A("| " + " | ".join(str(v.get(c, "")).replace("|", "\\|") for c in cols) + " |")
    A("")
    V = {v["id"]: v for v in variants}

    def say(vid, col):
        return V.get(vid, {}).get(col, "n/a")
    A("Reading the table (every statement is the measured cell it quotes):")
    A("")
    A(f"* **'/' at byte 8.** Stock 6.1's lookup, `fat_search_long` (fs/fat/dir.c), parses "
      f"every entry's 11 bytes with `fat_parse_short` before it compares any name, and when the "
      f"parsed short name has length 0 it skips the entry (`if (len == 0) continue;`): the long "
      f"name is never compared. `fat_parse_short` counts each part up to its last byte other than "
      f"a space and stops at a NUL, so `20 00 ...` parses to nothing unless the extension holds "
      f"another byte. With the seed's '/' the parse is `./` and the long name is compared: it "
      f"reads the file (`v1-seed`: {say('v1-seed', 'kernel')}); with a space or a NUL there "
      f"readdir (which has no such check) lists the name but lookup skips the entry "
      f"(`v1-space8`: {say('v1-space8', 'kernel')}; `v1-nul8`: {say('v1-nul8', 'kernel')}). The "
      f"patched module (the seed's dir.c hunk: an empty parse no longer skips the long name) "
      f"reads all three ({say('v1-space8', 'kernel-nodual')}).")
    A(f"* **Leading space.** (Reason: no valid 8.3 name starts with a space, so a dummy can never "
      f"equal a real short name.) fsck.fat flags the entry either way (`v1-seed`: {say('v1-seed', 'fsck.fat -n')}; "
      f"`v1-noleadspace`: {say('v1-noleadspace', 'fsck.fat -n')}). Byte 0 may not be NUL "
      f"(end of directory: `v1-nul0` mtools: {say('v1-nul0', 'mtools')}) nor 0xE5 (deleted: "
      f"`v1-e5` kernel: {say('v1-e5', 'kernel')}).")
    A(f"* **fsck.fat and the NT byte.** v1 dummies are bad short names to fsck.fat and `-a` "
      f"renames them (`v1-seed`: {say('v1-seed', 'fsck.fat -a')}); with NT 0x20 (what v3 "
      f"stores) the same bytes pass (`v1-nt20`: -n {say('v1-nt20', 'fsck.fat -n')}, -a "
      f"{say('v1-nt20', 'fsck.fat -a')}); v3 bytes with NT 0 do not (`v3-nt0`: "
      f"{say('v3-nt0', 'fsck.fat -n')}; -a {say('v3-nt0', 'fsck.fat -a')}).")
    A(f"* **0x05 at byte 0 (v3).** A legal v3 draw: `v3-lead05` 7-Zip: {say('v3-lead05', '7-Zip')}; "
      f"GRUB: {say('v3-lead05', 'GRUB')}; kernel: {say('v3-lead05', 'kernel')}; mtools: "
      f"{say('v3-lead05', 'mtools')}.")
    A(f"* **'/' in directories.** The July revision keeps '/' out of directory dummies for "
      f"photo frames; the Linux readers measured here do not care (`v3-dir-slash` kernel: "
      f"{say('v3-dir-slash', 'kernel')}; fsck.fat -n: {say('v3-dir-slash', 'fsck.fat -n')}).")
    A("")
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")
