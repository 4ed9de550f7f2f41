"""Self-contained reproducers for an implementation's maintainers (issue 17).

`vfatfuzz repro FINDING --export DIR` (and tests/test_peer_bugs.py, and
reports/bugs/) write one directory a maintainer can run on a stock Linux
box with nothing but the implementation's own tools:

    README.md        the bug report: versions, steps, expected, actual, a
                     hexdump of the directory entries involved
    image.img.xz     the image the script starts from: the fresh volume for
                     a writer bug, the image another writer made for a
                     reader bug (xz; `xz -dc image.img.xz > image.img`)
    ops.txt          the op-script (vfatfuzz's format, for the record)
    run.sh           POSIX sh: unpacks the image into a work directory,
                     replays the ops / runs the reader with the tool's own
                     commands, prints what the tool printed, compares what
                     it sees with expected.txt and ends with one line:
                       REPRODUCED: <why>       exit 0
                       NOT REPRODUCED          exit 1
                       CANNOT RUN: <why>       exit 2 (tool missing, no root...)
    expected.txt     the listing a correct implementation shows (one line
                     an entry: "d /path", "f /path SIZE [SHA256]", sorted
                     bytewise); seen.txt what this machine's tool showed
                     when the reproducer was exported
    printed.txt      everything run.sh printed at export time
    data/            contents of every create/write (byte i of a create =
                     (SEED + 31*i) mod 256): the script needs no vfatfuzz

Which tool replays what: one module per implementation, vfz/export_<impl>.py
(IMPLS below). Each defines
    PACKAGES   Debian packages whose versions the README gives
    NEEDS      [(command, package)] the script checks for first
    SIDES      the sides it can reproduce: "reader" (the tool reads an
               image) and/or "writer" (the tool applies the ops)
    SHA        whether its listing lines carry contents' SHA-256
    LISTING    whether the common tail compares seen.txt with expected.txt
    shown(case, path)  how a correct implementation's listing spells a
                  path (mtools shows characters outside the BMP as '__')
    body(case, data) -> sh text run after the common preamble: $IMG is the
               unpacked image, $OUT the work directory; it calls
               `bug "why"` for each symptom and writes the listing lines to
               "$OUT/seen.unsorted" when LISTING
    run_elsewhere(dirname, timeout) -> (status, printed, seen text), and
               ELSEWHERE (optional): where to run run.sh when this host says
               CANNOT RUN (Linux: inside the kernel oracle's guest,
               vfz.export.vm)
An implementation vfatfuzz gains later plugs in by adding its module to
IMPLS; until then `export` says which ones it has.
"""
import importlib
import json
import lzma
import os
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass, field

from vfz import errors, fatimg, findings, model, opscript, proc
from vfz.check import checker
from vfz.check import diff

# implementation (oracle family, as findings name it) -> exporter module
IMPLS = {
    "dosfsck": "vfz.export_dosfsck",
    "mtools": "vfz.export_mtools",
    "kernel": "vfz.export_kernel",
    "7z": "vfz.export_sevenzip",
    "grub": "vfz.export_grub",
    "fusefat": "vfz.export_fusefat",
    "sleuthkit": "vfz.export_sleuthkit",
    "fatcat": "vfz.export_fatcat",     # fatcat -l / and fatcat -x, the extracted tree listed
    "fatfs": "vfz.export_fatfs",       # a Node script: the fatfs oracle's server, js-fatfs
    "uboot": "vfz.export_uboot",       # a U-Boot command list typed at qemu-x86 U-Boot's prompt
    "fatsort": "vfz.export_fatsort",   # the transformer: fatsort -f on a copy of the writer's image
}
RESULT = {0: "REPRODUCED", 1: "NOT REPRODUCED", 2: "CANNOT RUN"}


class ExportError(Exception):
    """The reproducer cannot be written; str() is the one-line reason."""


@dataclass
class Case:
    """What a reproducer reproduces."""
    impl: str                 # key of IMPLS
    side: str                 # "reader" | "writer"
    ops: list                 # vfz.opscript.Op
    fs: str                   # campaign fs name or spec ("fat16", "fat32:34M:512")
    image: str                # the image the script starts from
    writer: str = None        # who wrote image (reader side)
    title: str = ""
    kind: str = ""            # named exception or finding kind
    reason: str = ""          # a paragraph: what goes wrong
    signature: str = ""
    entries: list = None      # expected canonical listing after the ops
    results: list = None      # expected per-op results (writer side)
    label: str = None         # volume label the image carries (fsck lists it)
    seed: int = None          # the writer's seed (dummies, hex aliases), reader side
    extra: dict = field(default_factory=dict)   # per-implementation knobs


def impl_module(impl):
    mod = IMPLS.get(impl)
    if mod is None:
        raise ExportError(f"no reproducer exporter for {impl!r} (have: {', '.join(sorted(IMPLS))})")
    return importlib.import_module(mod)


# ---------------------------------------------------------------- building cases
def _pristine(fs, tmp):
    fat, size, cl = diff.parse_fs(checker.FS_SPECS.get(fs, fs))
    p = os.path.join(tmp, "pristine.img")
    diff.mkfs(p, fat, size, cl)
    return p


def expected_of(side, writer, base, ops):
    """(results, entries) a correct implementation gives: for a reader, the
    tree the writer was asked to make (its model); for a writer, what Linux
    does with the ops (the kernel profile, dual names: the tool under test
    makes 8.3 aliases as Linux does)."""
    if side == "reader":
        m = checker.model_of(writer, base, ops)
    else:
        m = model.Model("kernel", "dual", root=model.root_for("kernel", base))
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
        from vfz import oracles
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
                seed=seed if side == "reader" else None, **kw)


def default_extra(impl, writer, extra):
    """The per-implementation knobs a case leaves out. dosfsck "complaints":
    whether fsck.fat -n complaining is itself a symptom -- yes on an image
    whose 8.3 entries are meant to be valid (Linux's aliases, a tool's
    own), no on the seed patch's v1 dummies, which fsck.fat rightly calls
    bad 8.3 names."""
    extra = dict(extra or {})
    if impl == "dosfsck" and "complaints" not in extra and writer:
        try:
            from vfz import oracles
            shorts = oracles.entry(writer).shorts
        except Exception:
            shorts = "v1"
        extra["complaints"] = shorts != "v1"
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
    impl = _impl_of(oracle)
    fs = info.get("fs") or "fat16"
    ops = opscript.load(os.path.join(path, "ops.txt"))
    writer = info.get("writer")
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
                extra=default_extra(impl, writer, None))


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


def _impl_of(oracle):
    if oracle in IMPLS:
        return oracle
    try:
        from vfz import oracles
        fam = oracles.entry(oracle).family
    except Exception:
        fam = oracle
    if fam in IMPLS:
        return fam
    raise ExportError(f"no reproducer exporter for {oracle!r} (have: {', '.join(sorted(IMPLS))})")


def _exception_reason(kind, impl=None):
    """The reason text of the named exception kind (the oracle registry's
    EXCEPTIONS; one name may be an exception of several implementations:
    impl's own first), or ''."""
    from vfz import oracles
    xs = sorted(oracles.exception(kind), key=lambda x: _impl_of(x.oracle) != impl)
    return xs[0].reason if xs else ""


# ---------------------------------------------------------------- image helpers
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


def _lfn_text(fat, offs):
    units = b""
    for off in reversed(offs):
        e = fat.b[off:off + 32]
        units += bytes(e[1:11]) + bytes(e[14:26]) + bytes(e[28:32])
    s = units.decode("utf-16-le", "surrogatepass")
    return s.split("\x00", 1)[0]


def dir_records(image, paths, limit=12, slots=24):
    """{path: [(offset, 32 bytes, what)]} for the entries of paths: LFN
    slots and 8.3 entry, looked up by long name, else 8.3 name,
    case-insensitively. A path the image does not hold under that name
    (a tool that stored it another way) gives its parent directory's
    first used slots instead, under the key 'PATH (not found: its
    directory)'."""
    with open(image, "rb") as f:
        fat = fatimg.Fat(f.read())

    def cluster_of(off):
        start = fat.cluster_off(2)
        return 2 + (off - start) // fat.csize if off >= start else None

    def note(off, what):
        c = cluster_of(off)
        return what + (f" (cluster {c})" if c is not None else " (root)")

    out = {}
    for p in paths:
        if len(out) >= limit:
            break
        comps = [c for c in p.split("/") if c and c != "."]
        cl, recs, parent_ok = None, None, True
        for i, c in enumerate(comps):
            hit = None
            for off, name11, attr, first, size, lfn in fat.short_entries(cl):
                long = _lfn_text(fat, lfn) if lfn else None
                short = fatimg.short_text(name11)
                if (long and long.lower() == c.lower()) or short.lower() == c.lower():
                    hit = (off, attr, first, lfn)
                    break
            if hit is None:
                parent_ok = i == len(comps) - 1
                recs = None
                break
            off, attr, first, lfn = hit
            recs = [(o, bytes(fat.b[o:o + 32]), note(o, f"LFN {k + 1}/{len(lfn)}"))
                    for k, o in enumerate(lfn)]
            recs.append((off, bytes(fat.b[off:off + 32]), note(off, "8.3 entry")))
            if i < len(comps) - 1:
                if not attr & 0x10:
                    recs, parent_ok = None, False
                    break
                cl = first
        if recs:
            out[p] = recs
        elif parent_ok:
            used = [(o, e) for o, e in fat.entries(cl) if e[0] != 0xE5][:slots]
            if used:
                out[f"{p} (not found: its directory)"] = [
                    (o, e, note(o, "LFN" if e[11] == 0x0F else "8.3 entry")) for o, e in used]
    return out


def hexdump(records):
    """Text: each 32-byte slot as two xxd-like lines, annotated."""
    lines = []
    for off, raw, what in records:
        for half in (0, 16):
            chunk = raw[half:half + 16]
            hx = " ".join(chunk[i:i + 2].hex() for i in range(0, 16, 2))
            asc = "".join(chr(c) if 0x20 <= c < 0x7F else "." for c in chunk)
            note = f"  {what}" if half == 0 else ""
            lines.append(f"{off + half:08x}: {hx}  {asc}{note}")
    return "\n".join(lines)


# ---------------------------------------------------------------- script text
def q(s):
    """s as one sh word (single quotes)."""
    return "'" + s.replace("'", "'\\''") + "'"


def listing_lines(case, impl):
    """expected.txt: the expected entries in the implementation's listing form."""
    out = []
    for e in case.entries or []:
        p = impl.shown(case, e["path"])
        if e["type"] == "dir":
            out.append(f"d {p}")
        elif impl.SHA and e.get("sha256"):
            out.append(f"f {p} {e.get('size')} {e['sha256']}")
        else:
            out.append(f"f {p} {e.get('size')}")
    return sorted(out, key=lambda s: s.encode("utf-8", "surrogatepass"))


class Data:
    """The contents files of the reproducer (data/<name>.bin)."""

    def __init__(self):
        self.files = {}

    def add(self, stem, blob):
        name = f"data/{stem}.bin"
        self.files[name] = blob
        return name


def op_data(data, i, op):
    """data/opN.bin for a create or write: the bytes it puts down."""
    if op.kind == "create":
        return data.add(f"op{i + 1}", opscript.content(op.args[2], op.args[1]))
    if op.kind == "write":
        return data.add(f"op{i + 1}", opscript.content(op.args[3], op.args[2]))
    return None


PREAMBLE = r"""#!/bin/sh
# {title}
# Reproducer exported by vfatfuzz; it needs none of vfatfuzz, only
# {tools}, xz and coreutils.
# Usage: sh run.sh [WORKDIR]
# Ends with one line and exit status:
#   REPRODUCED: <why>  (0)   NOT REPRODUCED  (1)   CANNOT RUN: <why>  (2)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${{1:-$(mktemp -d "${{TMPDIR:-/tmp}}/repro.XXXXXX")}}
mkdir -p "$OUT" || exit 2
cannot() {{ echo "CANNOT RUN: $*"; exit 2; }}
need() {{ command -v "$1" >/dev/null 2>&1 || cannot "$1 not found (Debian package $2)"; }}
BUGS=0
WHY=""
bug() {{ echo "BUG: $*"; BUGS=$((BUGS + 1)); [ -n "$WHY" ] || WHY="$*"; }}
indent() {{ sed 's/^/    /'; }}
need xz xz-utils
{needs}
export LC_ALL=C.UTF-8 LANG=C.UTF-8
xz -dc "$HERE/image.img.xz" > "$OUT/image.img" || cannot "cannot unpack image.img.xz"
IMG="$OUT/image.img"
echo "work directory: $OUT"
"""

TAIL_LISTING = r"""
LC_ALL=C sort "$OUT/seen.unsorted" > "$OUT/seen.txt"
echo "== expected listing vs what {tool} shows (- expected, + seen)"
if diff -u "$HERE/expected.txt" "$OUT/seen.txt" > "$OUT/listing.diff"; then
    echo "    (same)"
else
    tail -n +3 "$OUT/listing.diff" | indent
    bug "{tool} shows another tree than expected ($(grep -c '^[-+][^-+]' "$OUT/listing.diff") lines differ)"
fi
"""

FSCK_RUN = r"""
echo "== fsck.fat -n of the image {tool} left{note}"
command -v fsck.fat >/dev/null 2>&1 || cannot "fsck.fat not found (Debian package dosfstools): needed to see this bug"
fsck.fat -n "$OUT/after.img" > "$OUT/fsck.txt" 2>&1
rc=$?
indent < "$OUT/fsck.txt"
echo "    exit $rc"
"""

FSCK_ANY = r"""[ "$rc" = 0 ] || bug "fsck.fat -n on the image {tool} left: $(sed -n '2,3p' "$OUT/fsck.txt" | tr -s ' \n' ' ')"
"""


def fsck_check(tool, note="", show="", verdict=None):
    """sh text of a writer exporter's knob extra {"check": "fsck"} (mtools,
    fusefat, U-Boot): after the tool ran, fsck.fat -n reads the image it
    left ("$OUT/after.img", which the body has copied) for damage the
    tool's own listing cannot show; its output and exit status ($rc) are
    printed. fsck.fat missing: CANNOT RUN.
    tool: the tool's name as the script prints it ("the image TOOL left");
    note: text added to the heading line; show: sh text run after fsck's
    output (more of the image to print: od of the root, mdir);
    verdict: sh text that calls `bug` from $rc and "$OUT/fsck.txt";
    None: any complaint (non-zero exit) is the symptom."""
    head = FSCK_RUN.replace("{tool}", tool).replace("{note}", note)
    return head + show + (FSCK_ANY.replace("{tool}", tool) if verdict is None else verdict)


TAIL = r"""
if [ "$BUGS" -gt 0 ]; then
    echo "REPRODUCED: $WHY"
    exit 0
fi
echo "NOT REPRODUCED"
exit 1
"""


def script(case, impl, data):
    needs = "\n".join(f"need {c} {p}" for c, p in impl.NEEDS)
    tools = ", ".join(sorted({p for _, p in impl.NEEDS}))
    text = PREAMBLE.format(title=(case.title or case.kind or "reproducer").replace("\n", " "),
                           tools=tools, needs=needs)
    text += impl.body(case, data)
    if impl.LISTING:
        text += TAIL_LISTING.format(tool=impl.TOOL)
    return text + TAIL


# ---------------------------------------------------------------- export
def package_versions(pkgs):
    """{package: version} from dpkg-query (absent ones: 'not installed')."""
    out = {}
    for p in pkgs:
        try:
            r = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", p], capture_output=True,
                               text=True, timeout=20)
            out[p] = r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else "not installed"
        except (OSError, subprocess.TimeoutExpired):
            out[p] = "unknown (no dpkg-query)"
    return out


def run_script(dirname, timeout=300):
    """Run DIR/run.sh with a scratch work directory -> (status, printed
    text, work directory). status: 0 reproduced, 1 not, 2 cannot run.
    A timeout kills the script's whole process group (the QEMU or the
    fusefat it started too), as does the death of this process."""
    work = tempfile.mkdtemp(prefix="vfz-export-run-")
    r = proc.run(["sh", os.path.join(dirname, "run.sh"), work], timeout=timeout)
    if r.timed_out:
        return 2, r.text + f"\nCANNOT RUN: timeout after {timeout}s\n", work
    if r.rc is None:
        return 2, f"CANNOT RUN: {r.error}\n", work
    return r.rc, (r.out + r.err).decode("utf-8", "replace"), work


def last_line(text):
    lines = [ln for ln in text.strip().split("\n") if ln.strip()]
    return lines[-1] if lines else ""


def export(case, dirname, run=True, timeout=300):
    """Write the reproducer of case into dirname (created; files in it are
    replaced). run: run it once here and keep what it printed and saw.
    -> {"dir", "status" (0/1/2 or None), "result" (its last line)}."""
    impl = impl_module(case.impl)
    if case.side not in impl.SIDES:
        raise ExportError(f"the {case.impl} exporter reproduces {' and '.join(impl.SIDES)} bugs, "
                          f"not {case.side} bugs")
    for sub in ("data", "fatfs"):       # files of an earlier export
        if os.path.isdir(os.path.join(dirname, sub)):
            shutil.rmtree(os.path.join(dirname, sub))
    os.makedirs(os.path.join(dirname, "data"), exist_ok=True)
    data = Data()
    text = script(case, impl, data)
    _write(dirname, "run.sh", text.encode("utf-8", "surrogatepass"), mode=0o755)
    for name, blob in data.files.items():
        _write(dirname, name, blob)
    if not any(n.startswith("data/") for n in data.files):
        os.rmdir(os.path.join(dirname, "data"))
    with open(case.image, "rb") as f:
        _write(dirname, "image.img.xz", lzma.compress(f.read(), preset=9))
    _write(dirname, "ops.txt", opscript.dump(case.ops).encode("utf-8", "surrogatepass"))
    exp = listing_lines(case, impl)
    _write(dirname, "expected.txt", "".join(s + "\n" for s in exp).encode("utf-8", "surrogatepass"))
    status, printed, after = None, "", None
    work = None
    if run:
        status, printed, work = run_script(dirname, timeout)
        seen = os.path.join(work, "seen.txt")
        if os.path.isfile(seen):
            shutil.copyfile(seen, os.path.join(dirname, "seen.txt"))
        elif status == 2 and hasattr(impl, "run_elsewhere"):
            # this host cannot (Linux: no vfat, no root): where the oracle runs
            why = next((ln for ln in printed.split("\n") if ln.startswith("CANNOT RUN")), last_line(printed))
            st2, pr2, seen2 = impl.run_elsewhere(dirname, timeout)
            if st2 != 2:
                status = st2
                printed = f"# this host: {why}; run in {impl.ELSEWHERE}\n" + pr2
                if seen2 is not None:
                    _write(dirname, "seen.txt", seen2.encode("utf-8", "surrogateescape"))
        _write(dirname, "printed.txt", printed.encode("utf-8"))
        for cand in ("after.img", "repaired.img"):
            if os.path.isfile(os.path.join(work, cand)):
                after = os.path.join(work, cand)
                break
    try:
        readme = report(case, impl, exp, status, printed, after, dirname)
        _write(dirname, "README.md", readme.encode("utf-8", "surrogatepass"))
    finally:
        if work:
            shutil.rmtree(work, ignore_errors=True)
    return {"dir": dirname, "status": status, "result": last_line(printed)}


def _write(dirname, name, blob, mode=0o644):
    p = os.path.join(dirname, name)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p + ".tmp", "wb") as f:
        f.write(blob)
    os.chmod(p + ".tmp", mode)
    os.replace(p + ".tmp", p)


def involved_paths(case):
    """Paths the ops name that the expected tree holds (then their parents)."""
    have = {e["path"] for e in case.entries or []}
    out = []
    for op in case.ops:
        for a in op.args:
            if isinstance(a, str) and a.startswith("/"):
                p = "/" + "/".join(c for c in a.split("/") if c)
                if p in have and p not in out:
                    out.append(p)
    return out[-8:]


def report(case, impl, expected_lines, status, printed, after, dirname):
    """README.md: the bug report."""
    vers = package_versions(impl.PACKAGES)
    fat = diff.parse_fs(checker.FS_SPECS.get(case.fs, case.fs))
    L = [f"# {case.title or case.kind or 'Reproducer'}", ""]
    L.append(f"Implementation: **{case.impl}** ({'reading an image' if case.side == 'reader' else 'writing'})"
             + (f"; the image was written by `{case.writer}`" if case.writer else "")
             + (f" (seed {case.seed})" if case.seed is not None else "") + ".")
    if case.kind:
        L.append(f"vfatfuzz kind: `{case.kind}`" + (f", finding {case.signature}" if case.signature else "")
                 + ".")
    L += ["", "## Versions", ""]
    L += [f"- {p} {v}" for p, v in vers.items()]
    L.append(f"- volume: FAT{fat[0]}, {fat[1]} bytes" + (f", {fat[2]}-byte clusters" if fat[2] else "")
             + " (mkfs.fat)" + (f", label {case.label}" if case.label else ""))
    if case.reason:
        L += ["", "## What goes wrong", "", case.reason]
    L += ["", "## Steps", "",
          "    sh run.sh            # or: sh run.sh WORKDIR to keep the work files", "",
          f"`run.sh` unpacks `image.img.xz` and {impl.STEPS}. It prints every command's "
          "output and ends with `REPRODUCED: why` (exit 0), `NOT REPRODUCED` (exit 1) or "
          "`CANNOT RUN: why` (exit 2).", ""]
    if case.side == "writer":
        L += ["The operations (vfatfuzz op-script, `ops.txt`; the expected result of each is "
              "what Linux 6.1's vfat does):", "", "```"]
        for i, op in enumerate(case.ops):
            r = case.results[i] if case.results and i < len(case.results) else "?"
            L.append(f"{opscript.format_op(op)}    # -> {r}")
        L += ["```", ""]
    else:
        L += [f"The image holds what `{case.writer}` made of these operations (`ops.txt`):", "", "```"]
        L += [opscript.format_op(op) for op in case.ops]
        L += ["```", ""]
    L += ["## Expected", "", f"`expected.txt`: {impl.EXPECTED}", "", "```"]
    L += _clip(expected_lines)
    L += ["```", "", "## Actual", ""]
    if status is None:
        L.append("Not run when exported.")
    else:
        where = "On the exporting machine"
        if printed.startswith("# this host: "):
            where += (", whose own run said " + printed.split("\n", 1)[0][len("# this host: "):]
                      .split("; run in ")[0] + f", run in {getattr(impl, 'ELSEWHERE', 'another place')}")
        L.append(f"{where}: **{RESULT.get(status, status)}** (`{last_line(printed)}`).")
        L += ["", "What `run.sh` printed (`printed.txt`):", "", "```"]
        L += _clip(printed.rstrip("\n").split("\n"), 80)
        L += ["```"]
        if os.path.isfile(os.path.join(dirname, "seen.txt")):
            with open(os.path.join(dirname, "seen.txt"), encoding="utf-8", errors="replace") as f:
                seen = f.read().rstrip("\n").split("\n")
            L += ["", "`seen.txt`:", "", "```"] + _clip(seen) + ["```"]
    paths = involved_paths(case)
    for title, img in ((("The directory entries involved, in the image the script starts from"),
                        case.image),
                       (("The same entries after the tool ran"), after)):
        if not img or not paths:
            continue
        try:
            recs = dir_records(img, paths)
        except Exception as e:      # a damaged image: say so, the report stands
            recs, err = {}, f"{type(e).__name__}: {e}"
        else:
            err = ""
        L += ["", f"## {title}", ""]
        if not recs:
            L.append(f"(none found{': ' + err if err else ''})")
            continue
        L.append("Each 32-byte slot as offset: bytes (LFN slots first, then the 8.3 entry).")
        for p, r in recs.items():
            L += ["", f"`{p}`:", "", "```", hexdump(r), "```"]
    L += ["", "## Files", "",
          "`image.img.xz` (xz), `ops.txt`, `run.sh`, `expected.txt`, `seen.txt`, `printed.txt`"
          + (", `data/` (the bytes each create/write puts down)" if os.path.isdir(os.path.join(dirname, "data"))
             else "") + ".", ""]
    return "\n".join(L)


def _clip(lines, n=60):
    lines = [ln if len(ln) <= 300 else ln[:300] + " [...]" for ln in lines]
    if len(lines) > n:
        return lines[:n] + [f"... ({len(lines) - n} more lines)"]
    return lines


def load_spec(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


# ---------------------------------------------------------------- vfatfuzz repro --export
def is_spec(path):
    return os.path.isfile(os.path.join(path, "bug.json"))


def hostile_source(path):
    """The hostile finding directory PATH stands for: PATH itself
    (reports/hostile/NAME, vfz.hostile.findings), or the one a peer-bug
    case names (bug.json "hostile", relative to the repository); else None."""
    from vfz.hostile import findings as hostile_findings
    if hostile_findings.is_hostile_finding(path):
        return path
    if is_spec(path):
        h = load_spec(os.path.join(path, "bug.json")).get("hostile")
        if h:
            repo = os.path.abspath(os.path.join(path, "..", "..", ".."))
            return h if os.path.isabs(h) else os.path.join(repo, h)
    return None


def repro_export(args, target):
    """`vfatfuzz repro TARGET --export DIR`: write and run the reproducer
    (target None: args.target is a catalogued peer bug, corpus/peer-bugs/NAME).
    -> exit status: 1 it reproduces (the bug still shows), 0 it does not,
    2 it could not be written or run."""
    import sys
    hostile = hostile_source(args.target)
    if hostile:
        from vfz.export import hostile as export_hostile
        try:
            res = export_hostile.export_finding(hostile, args.export, run=True,
                                                timeout=max(60.0, args.timeout * 5))
        except ExportError as e:
            print(f"vfatfuzz repro: {e}", file=sys.stderr)
            return 2
        print(f"exported hostile-volume reproducer of {hostile} to {res['dir']}")
        print(f"run.sh here: {res['result'] or '(no output)'}")
        return {0: 1, 1: 0}.get(res["status"], 2)
    work = tempfile.mkdtemp(prefix="vfz-export-")
    try:
        if target is None:
            case = case_from_spec(args.target, work)
        elif target.kind == "finding":
            case = case_from_finding(target.path, work)
        else:
            writers = [w for w in (args.writers or "").split(",") if w]
            readers = [r for r in (args.oracles or "").split(",") if r]
            if len(writers) != 1 or len(readers) > 1:
                raise ExportError("for an op-script or crash file, --export needs --writers W "
                                  "(W's own bug) or --writers W --oracles R (reader R on W's image)")
            fs = (args.fs or target.fs or "fat16").split(",")[0]
            if readers:
                case = build_case(_impl_of(readers[0]), "reader", target.ops, fs, work,
                                  writer=writers[0], title=f"{readers[0]} reading {writers[0]}'s image")
            else:
                case = build_case(_impl_of(writers[0]), "writer", target.ops, fs, work,
                                  title=f"{writers[0]} applying an op-script")
        res = export(case, args.export, run=True, timeout=max(60.0, args.timeout * 5))
    except (ExportError, errors.UsageError) as e:
        print(f"vfatfuzz repro: {e}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"exported {case.impl} ({case.side}) reproducer to {res['dir']}")
    print(f"run.sh here: {res['result'] or '(no output)'}")
    return {0: 1, 1: 0}.get(res["status"], 2)
