"""The differential campaign (`vfatfuzz campaign`, the main job).

    campaign [--minutes M] [--seed N] [--oracles LIST] [--writers LIST]
             [--jobs J] [--workdir DIR] [--fs LIST] [--vfat PATH]

Loop until the time budget is spent (or SIGINT/SIGTERM):
  1. take the next op-script: a harvested fuzz_ops corpus entry converted
     with `vfat gen --from-input` (when build-fuzz/fuzz/fuzz_ops exists, it
     runs on J workers in the background for the whole budget), else
     `vfat gen --seed S --ops K` with S, K and the volume (FAT12/16/32)
     derived from the campaign seed and the iteration number;
  2. every writer applies it to a fresh mkfs.fat image; its per-op results
     are compared with the model's, and every reader reads the image
     (vfz.diff.verdict_for decides ok|differs|complains|failed); readers
     and writers are loaded once, so the kernel VM stays up;
     a known failure of the mtools writer (vfz.model EXCEPTIONS
     mtools-long-utf8, mtools-no-dir-slots, mtools-mmove-grow-abort: see
     mtools_known_failure) is one divergence of its own kind, and the
     readers then check the image of the script cut before the failing op
     (written again), so that it files no follow-on reader findings;
  3. every divergence gets a stable signature (vfz.findings); a new one is
     minimised (vfz.minimize) on the writer and oracle that showed it, the
     minimised script is checked once more on every oracle, and the finding
     is written atomically to <workdir>/findings/<signature>/.
A progress line at least every 5 s, a summary table at the end. A later
run with the same workdir skips known signatures and continues the seeds
(<workdir>/state.json). The summary is also written to
<workdir>/summary.json (images checked per oracle and per minute, scripts,
fuzzer exec/s, new findings). Exit 0 no new finding, 1 new findings, 2
could not run.
"""
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

from vfz import oracles
from vfz.oracles import ReadResult
from vfz import diff, findings, minimize, model, opscript
from vfz.proc import run

from vfz import REPO  # noqa: E402
DEFAULT_READERS = oracles.names("reader", default=True)
DEFAULT_WRITERS = [n for n in oracles.names("writer", default=True) if oracles.entry(n).cost != "vm"]
OPTIONAL_WRITERS = [n for n in oracles.names("writer", default=True) if n not in DEFAULT_WRITERS]
DEFAULT_FS = ["fat12", "fat16", "fat32"]
FS_SPECS = {"fat12": "fat12:2M", "fat16": "fat16:4M:512", "fat32": "fat32:34M:512"}
PROGRESS_EVERY = 5.0
MIN_BUDGET = 90.0                      # seconds per finding's minimisation (cap)
MIN_LATE = 5.0                         # ... when the time budget is already spent
GEN_OPS = (3, 24)


class Stop(BaseException):
    """Raised by the SIGTERM handler: stop cleanly."""


class UsageError(Exception):
    pass


def vfat_default():
    from vfz.oracles.core import vfat_binary
    return vfat_binary()


def family(writer):
    return oracles.entry(writer).family


def fold_path(p):
    return p.upper()


def _op_for_path(ops, path):
    """Kind of the last op that touched path (by exact or case-folded path,
    or by leaf name), '-' when none did."""
    if not path:
        return "-"
    leaf = findings.leaf_of(path).upper()
    best = "-"
    for op in ops:
        for a in op.args:
            if isinstance(a, str) and (a == path or fold_path(a) == fold_path(path) or
                                       findings.leaf_of(a).upper() == leaf):
                best = op.kind
    return best


def _cls(path):
    return findings.name_class(findings.leaf_of(path)) if path else "-"


def _listing_fields(detail):
    """Parse a listing diff ('- {json}' / '+ {json}' lines) into
    (kind, representative path)."""
    exp, act = {}, {}
    for ln in detail.splitlines():
        ln = ln.strip()
        if ln[:2] in ("- ", "+ "):
            try:
                e = json.loads(ln[2:])
            except ValueError:
                continue
            (exp if ln[0] == "-" else act)[e.get("path")] = e
    both = sorted(set(exp) & set(act))
    if both:
        p = both[0]
        keys = sorted(k for k in set(exp[p]) | set(act[p]) if exp[p].get(k) != act[p].get(k))
        return "changed:" + ",".join(keys), p
    miss, extra = sorted(set(exp) - set(act)), sorted(set(act) - set(exp))
    if miss and extra:
        return "renamed", miss[0]
    if miss:
        return "missing", miss[0]
    if extra:
        return "extra", extra[0]
    return "other", None




def dummy_05_explains(img, detail):
    """True when every path a reader lost (a '-' line of the listing diff)
    is, or lies under, an entry whose short entry is a v3 dummy starting
    with 0x05 (vfz.model V3_DUMMY_05), and the reader shows no more
    entries than it lost (each such entry at most shown as its dummy).
    The short entries come from the core's listing of the image."""
    exp, act = set(), set()
    for ln in detail.split("\n"):
        if ln[:2] in ("- ", "+ "):
            try:
                path = json.loads(ln[2:]).get("path")
            except ValueError:
                return False
            (exp if ln[0] == "-" else act).add(path)
    lost, shown = exp - act, act - exp
    if not lost or len(shown) > len(lost) or exp & act:
        return False
    r = oracles.get_reader("core").read(img)
    if r.error or not r.listing:
        return False
    d05 = {e["path"] for e in r.listing if e.get("dummy") and str(e.get("short", "")).startswith("05")}
    return bool(d05) and all(any(p == q or p.startswith(q + "/") for q in d05) for p in lost)


MTOOLS_WRITERS = ("mtools",)


def op_raw(raw, line):
    """The part of the mtools writer's log for the op on line: its mtools
    commands and their output, up to the writer's '# line N:' note."""
    text = "\n" + (raw or "")
    end = text.find(f"\n# line {line}: ")
    if end < 0:
        return ""
    start = text.rfind("\n# line ", 0, end)
    start = text.find("\n", start + 1) if start >= 0 else 0
    return text[start:end]


def _parent_is_root(path):
    comps = []
    for c in [c for c in path.split("/") if c][:-1]:
        if c == "..":
            if comps:
                comps.pop()
        elif c != ".":
            comps.append(c)
    return not comps


def long_names_explain(img, entries):
    """True when the core's listing of img differs from the model's
    entries only in paths with a component over 255 UTF-8 bytes (lost, or
    shown under another name: no more extra entries than lost ones)."""
    r = oracles.get_reader("core").read(img)
    if r.error or r.listing is None:
        return False
    exp = {(e["path"], e["type"]) for e in entries}
    act = {(e["path"], e["type"]) for e in r.listing}
    lost, extra = exp - act, act - exp
    return bool(lost) and len(extra) <= len(lost) and all(
        any(model.mtools_too_long(c) for c in p.split("/")) for p, _ in lost)


def mtools_known_failure(ops, expected, wr, bad, fat_bits, img, entries):
    """A known failure of the mtools writer (vfz.model EXCEPTIONS) behind
    its first divergence -> (index of the op it starts at, kind), else
    (None, None). bad: index of the first op whose result differs (None:
    all equal). Evidence only:
      mtools-no-dir-slots: that op's own mtools output says 'No directory
        slots', the model expects ok, and its directory can grow (not the
        FAT12/16 root);
      mtools-mmove-grow-abort: that op is a rename the model expects to
        succeed and its mmove/mren died of dirCache.c's freeDirCacheRange
        assertion (EIO);
      mtools-long-utf8: an op at or before it names a component over 255
        UTF-8 bytes (model.mtools_long_names) and the divergence is the
        writer's failure, a result on such an op, or, with no result
        divergence before it, the image's names (core listing)."""
    found = []
    if bad is not None and not wr.error:
        op, a, e = ops[bad], wr.results[bad] if bad < len(wr.results) else None, expected[bad]
        if op.kind in ("create", "mkdir", "rename") and e == "ok" and a == "EINVAL" \
                and "No directory slots" in op_raw(wr.raw, op.line):
            target = op.args[1] if op.kind == "rename" else op.args[0]
            if fat_bits == 32 or not _parent_is_root(target):
                found.append((bad, model.MTOOLS_NO_DIR_SLOTS))
        if op.kind == "rename" and e == "ok" and a == "EIO" and \
                "freeDirCacheRange: Assertion" in op_raw(wr.raw, op.line):
            found.append((bad, model.MTOOLS_MMOVE_GROW))
    at = next((i for i, op in enumerate(ops) if model.mtools_long_names(op)), None)
    if at is not None:
        if wr.error:
            if at <= len(wr.results):
                found.append((at, model.MTOOLS_LONG_UTF8))
        elif bad is not None and bad >= at and model.mtools_long_names(ops[bad]):
            found.append((at, model.MTOOLS_LONG_UTF8))
        elif (bad is None or bad > at) and img and long_names_explain(img, entries):
            found.append((at, model.MTOOLS_LONG_UTF8))
    # the earliest: what the writer did from there on is not the model's
    return min(found) if found else (None, None)


def trailing_dot_explains(detail, listing=None):
    """True when a reader's listing diff is only entries whose name ends
    in '.' listed without size or contents (Linux lists them but cannot
    open them) and entries under such a directory missing (exception
    mtools-trailing-dot-unopenable). listing: the reader's own entries,
    whose dotted names the diff may show as the model spells them (a named
    writer exception mapped 'C.O.' to 'C.O'); the dots then come from
    there."""
    exp, act = {}, {}
    for ln in detail.split("\n"):
        if ln[:2] in ("- ", "+ "):
            try:
                e = json.loads(ln[2:])
            except ValueError:
                return False
            (exp if ln[0] == "-" else act)[e.get("path")] = e
        elif ln.strip():
            return False
    if not exp or set(act) - set(exp):
        return False

    def comps(p):
        return [c for c in (p or "").split("/") if c]

    def dotted(cs):
        return any(c.endswith(".") and c not in (".", "..") for c in cs)

    def key(cs):
        return "/".join(c.rstrip(".").upper() for c in cs)
    # dotted entries as the reader listed them, unopened (no size)
    shown = {key(comps(e.get("path"))) for e in listing or ()
             if dotted(comps(e.get("path"))[-1:]) and "size" not in e and "sha256" not in e}

    def unopened(cs):
        return dotted(cs[-1:]) or key(cs) in shown
    for p, e in exp.items():
        cs = comps(p)
        if p in act:
            a = act[p]
            if a.get("type") != e.get("type") or "size" in a or "sha256" in a or \
                    not any(unopened(cs[:i]) for i in range(1, len(cs) + 1)):
                return False
        elif not any(unopened(cs[:i]) for i in range(1, len(cs))):
            return False
    return True


def mtools_reader_long_names(rr, entries):
    """The mtools reader failed to copy the tree to the host because of a
    name over 255 UTF-8 bytes as mtools shows it (the host refuses it):
    mcopy died of stack smashing, or every complaint is mcopy's 'File name
    too long'; and the tree holds such a name (exception mtools-long-utf8)."""
    raw = rr.raw or ""
    if "stack smashing detected" not in raw and not (
            rr.complaints and all(c.startswith("mcopy exit") and "File name too long" in c
                                  for c in rr.complaints)):
        return False
    return any(any(model.mtools_too_long(model.mtools_shown(c))
                   for c in e["path"].split("/")) for e in entries or ())


def mtools_check_kind(complaint, ops):
    """The named exception behind a `vfat check` complaint about an image
    the mtools writer wrote, else None: a long name ending in '.'
    (mtools keeps trailing dots; Linux strips them before every lookup:
    mtools-trailing-dot-unopenable), or a character invalid in long names
    where the script names a character outside the BMP whose low 16 bits
    are one (mtools-astral-truncated: U+2000B is written as U+000B)."""
    if not complaint.startswith("longname-invalid: "):
        return None
    if complaint.endswith("long name ends with '.', which Linux strips before every lookup"):
        return model.MTOOLS_TRAILING_DOT
    if complaint.endswith("long name holds a character invalid in long names"):
        for op in ops:
            for a in op.args:
                if isinstance(a, str) and any(
                        ord(c) > 0xFFFF and model.check_new_name(chr(ord(c) & 0xFFFF)) == "EINVAL"
                        for c in a):
                    return model.MTOOLS_ASTRAL_TRUNCATED
    return None


class HarnessError:
    def __init__(self, msg):
        self.msg = msg


def model_key(wn):
    """(profile, names) of the model that predicts writer wn (vfz.diff's
    rule when it has one)."""
    f = getattr(diff, "model_for_writer", None)
    if f:
        return tuple(f(wn))
    return ("mtools",) if wn == "mtools" else ("kernel",)


def model_of(wn, base, ops):
    """The model that predicts writer wn on a copy of image base, after ops
    (its root's slots come from base; the v3 writers' shortname rule)."""
    prof = model_key(wn)
    m = model.Model(*prof, root=model.root_for(prof[0], base), rule=diff.shortname_rule(wn))
    m.apply(ops)
    return m


def write_copy(w, wn, base, img, ops):
    """Writer w applies ops to a fresh copy of base at img -> WriteResult
    (an exception of the glue is the writer's error, not a crash)."""
    findings.sparse_copy(base, img)
    try:
        return w.apply(img, ops, diff.WRITE_TIMEOUT)
    except Exception as e:
        return oracles.WriteResult(wn, error=f"{type(e).__name__}: {e}")


def expected_dosfsck(wn, m, fs, image=None):
    fat = diff.parse_fs(FS_SPECS.get(fs, fs))[0]
    return diff.expected_dosfsck(wn, m, fat_bits=fat, image=image)


class Divergence:
    def __init__(self, fields, writer, detail):
        self.fields = fields
        self.sig = findings.sig_hash(fields)
        self.writer = writer
        self.detail = detail

    def __repr__(self):
        return f"<{self.sig} {findings.sig_text(self.fields)} via {self.writer}>"


class CheckResult:
    def __init__(self):
        self.divs = {}            # sig -> Divergence (first writer wins)
        self.images = {}          # writer -> image after
        self.raws = {}            # "writer" / "writer.oracle" -> raw text
        self.verdicts = {}        # writer -> {oracle: verdict}
        self.details = {}         # writer -> {oracle: detail}

    def add(self, d):
        self.divs.setdefault(d.sig, d)


class Checker:
    """Writers x readers on op-scripts, oracles loaded once."""

    def __init__(self, readers=None, writers=None, vfat=None, timeout=60.0, notes=None,
                 explicit_readers=False, explicit_writers=False, cfg=None):
        self.notes = notes if notes is not None else []
        self.timeout = timeout
        self.vfat = vfat
        self.tmp = tempfile.mkdtemp(prefix="vfz-campaign-")
        self.pristine = {}
        self.images_checked = Counter()
        self.applies = Counter()
        cfg = dict(cfg or {})
        if vfat:
            for w in oracles.WRITERS:
                if oracles.entry(w).family == "core":
                    cfg.setdefault(w, {})["vfat"] = vfat
        self.readers = []
        for n in readers or DEFAULT_READERS:
            if n not in oracles.READERS:
                raise UsageError(f"unknown reader {n!r} (known: {', '.join(sorted(oracles.READERS))})")
            o = diff.load_oracle("reader", n, False, self.notes, cfg)
            if o is not None:
                self.readers.append((n, o))
        self.writers = []
        for n in writers or DEFAULT_WRITERS:
            if n not in oracles.WRITERS:
                raise UsageError(f"unknown writer {n!r} (known: {', '.join(sorted(oracles.WRITERS))})")
            o = diff.load_oracle("writer", n, False, self.notes, cfg)
            if o is not None:
                self.writers.append((n, o))
        if not self.writers:
            raise UsageError("no writer available: " + "; ".join(self.notes))

    @property
    def reader_names(self):
        return [n for n, _ in self.readers]

    @property
    def writer_names(self):
        return [n for n, _ in self.writers]

    def close(self):
        for _, o in self.readers + self.writers:
            try:
                o.close()
            except Exception:
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    def pristine_image(self, fs):
        if fs not in self.pristine:
            fat, size, cl = diff.parse_fs(FS_SPECS.get(fs, fs))
            p = os.path.join(self.tmp, f"pristine-{fs.replace(':', '_')}.img")
            diff.mkfs(p, fat, size, cl)
            self.pristine[fs] = p
        return self.pristine[fs]

    def check(self, ops, fs, writers=None, readers=None, workdir=None):
        """Apply ops with each writer to a fresh image of fs, read with each
        reader. writers/readers: subsets by name (None = all)."""
        res = CheckResult()
        wdir = workdir or self.tmp
        models = {}
        base = self.pristine_image(fs)
        for wn, w in self.writers:
            if writers is not None and wn not in writers:
                continue
            key = model_key(wn) + (diff.shortname_rule(wn),)     # the rule sets slot counts
            if key not in models:
                try:
                    m = model_of(wn, base, ops)
                except Exception as e:          # a harness bug is a finding, not a crash
                    m = HarnessError(f"model {key[:-1]}: {type(e).__name__}: {e}")
                models[key] = m
            m = models[key]
            if isinstance(m, HarnessError):
                res.add(Divergence({"role": "harness", "oracle": "model", "verdict": "failed",
                                    "kind": findings.normalise(m.msg, 80), "op": "-", "cls": "-"},
                                   wn, m.msg))
                continue
            img = os.path.join(wdir, f"{wn}.img")
            wr = write_copy(w, wn, base, img, ops)
            self.applies[wn] += 1
            res.images[wn] = img
            res.raws[wn] = wr.raw
            res.verdicts[wn] = {}
            res.details[wn] = {}
            # the first op whose result differs (unexplained by the model's
            # named exceptions)
            bad = None
            if not wr.error:
                for i, op in enumerate(ops):
                    e = m.results[i] if i < len(m.results) else None
                    a = wr.results[i] if i < len(wr.results) else None
                    if e == a or (a is not None and model.result_exception(wn, op, e, a)):
                        continue
                    bad = i
                    break
            cut, known = None, None
            if wn in MTOOLS_WRITERS:
                cut, known = mtools_known_failure(ops, m.results, wr, bad, diff.parse_fs(FS_SPECS.get(fs, fs))[0],
                                                  img, m.entries())
            if known:
                # a known failure of the writer: one finding, whatever the
                # op and the names; what the writer did from that op on is
                # not the model's, so the readers check the script cut
                # before it (no follow-on reader findings)
                op = ops[cut]
                det = (f"named exception {known} from line {op.line}: {op}"
                       + (f"; writer failed: {wr.error}" if wr.error else "")
                       + (f"; first differing result line {ops[bad].line}: {ops[bad]}: expected "
                          f"{m.results[bad]}, got {wr.results[bad] if bad < len(wr.results) else None}"
                          if bad is not None else "; results as expected, the image's names differ")
                       + f"; readers check the first {cut} ops")
                res.verdicts[wn]["(writer)"] = "differs"
                res.details[wn]["(writer)"] = det
                res.add(Divergence({"role": "writer", "oracle": family(wn), "verdict": "result",
                                    "kind": known, "op": "-", "cls": "-"}, wn, det))
                if readers is not None and not [rn for rn, _ in self.readers if rn in readers]:
                    continue
                pre = ops[:cut]
                img = os.path.join(wdir, f"{wn}-cut.img")
                pw = write_copy(w, wn, base, img, pre)
                res.images[f"{wn}-cut"] = img
                res.raws[f"{wn}-cut"] = pw.raw
                if pw.error:
                    continue
                m = model_of(wn, base, pre)
            elif wr.error:
                res.verdicts[wn]["(writer)"] = "failed"
                res.details[wn]["(writer)"] = wr.error
                last = ops[len(wr.results)] if len(wr.results) < len(ops) else None
                res.add(Divergence({"role": "writer", "oracle": family(wn), "verdict": "failed",
                                    "kind": findings.normalise(wr.error, 60),
                                    "op": last.kind if last else "-",
                                    "cls": _cls(last.args[-1] if last and last.kind == "rename"
                                                else last.path if last else None)},
                                   wn, wr.error))
                continue
            elif bad is not None:
                op = ops[bad]
                e, a = m.results[bad], wr.results[bad] if bad < len(wr.results) else None
                cls = _cls(op.path)
                if op.kind == "rename":
                    cls = f"{_cls(op.args[0])}>{_cls(op.args[1])}"
                det = f"line {op.line}: {op}: expected {e}, got {a}"
                res.verdicts[wn]["(writer)"] = "differs"
                res.details[wn]["(writer)"] = det
                res.add(Divergence({"role": "writer", "oracle": family(wn), "verdict": "result",
                                    "kind": f"{e}->{a}", "op": op.kind, "cls": cls}, wn, det))
            used = Counter()
            exp_entries = m.entries()
            exp_c = expected_dosfsck(wn, m, fs, img)
            for rn, r in self.readers:
                if readers is not None and rn not in readers:
                    continue
                try:
                    rr = r.read(img, self.timeout)
                except Exception as ex:
                    rr = ReadResult(rn, error=f"{type(ex).__name__}: {ex}")
                self.images_checked[rn] += 1
                hook = getattr(r, "expected_complaints", None)
                if hook:
                    rr.complaints = hook(rr.complaints, oracles.entry(wn))
                try:
                    v, d = diff.verdict_for(rr, exp_entries, rn, exp_c, used, wn)
                except Exception as e:
                    msg = f"verdict for {rn}: {type(e).__name__}: {e}"
                    res.add(Divergence({"role": "harness", "oracle": rn, "verdict": "failed",
                                        "kind": findings.normalise(msg, 80), "op": "-", "cls": "-"},
                                       wn, msg))
                    continue
                res.raws[f"{wn}.{rn}"] = rr.raw
                res.verdicts[wn][rn] = v
                res.details[wn][rn] = d
                if v != "ok":
                    for div in self._reader_divs(ops, wn, rn, rr, v, d, exp_c, img, exp_entries):
                        res.add(div)
        return res

    def _reader_divs(self, ops, wn, rn, rr, v, d, exp_c, img, entries=None):
        base = {"role": "reader", "oracle": rn, "verdict": v}
        if v == "failed":
            if rn == "mtools" and mtools_reader_long_names(rr, entries):
                yield Divergence(dict(base, kind=model.MTOOLS_LONG_UTF8, op="-", cls="-"), wn, d)
                return
            yield Divergence(dict(base, kind=findings.normalise(rr.error, 60), op="-", cls="-"), wn, d)
            return
        if v == "differs":
            if oracles.entry(wn).shorts == "v3" and dummy_05_explains(img, d):
                # one signature per reader, whatever the op and the names
                yield Divergence(dict(base, kind=model.V3_DUMMY_05, op="-", cls="-"), wn, d)
                return
            if wn in MTOOLS_WRITERS and trailing_dot_explains(d, rr.listing):
                # named exception: one signature per reader
                yield Divergence(dict(base, kind=model.MTOOLS_TRAILING_DOT, op="-", cls="-"), wn, d)
                return
            kind, p = _listing_fields(d)
            yield Divergence(dict(base, kind=kind, op=_op_for_path(ops, p), cls=_cls(p)), wn, d)
            return
        # complains
        if rn == "dosfsck":
            got = Counter(c["kind"] for c in rr.extra.get("complaints", []))
            want = {k: c for k, c in (exp_c or {}).items()}
            kinds = set(got) | {k for k, c in want.items() if c is not None}
            differs = False
            for k in sorted(kinds):
                if want.get(k, 0) is None:
                    continue
                g, w = got.get(k, 0), want.get(k, 0)
                if g == w:
                    continue
                paths = [c.get("path") for c in rr.extra.get("complaints", []) if c["kind"] == k]
                p = next((x for x in paths if x and x.startswith("/")), None)
                if p and " and " in p:
                    p = p.split(" and ")[0]
                yield Divergence(dict(base, kind=("+" if g > w else "-") + k,
                                      op=_op_for_path(ops, p), cls=_cls(p)), wn, d)
                differs = True
            if not differs and getattr(exp_c, "crossings", None):
                # named exception (vfz.model EXCEPTIONS): one signature, whatever the names
                yield Divergence(dict(base, kind=diff.CROSS, op="-", cls="-"), wn, d)
            elif not differs and "repair probe: fsck.fat -a destroyed" in d:
                yield Divergence(dict(base, kind="repair-data-lost", op="-", cls="-"), wn, d)
            return
        if rn == "mtools" and mtools_reader_long_names(rr, entries):
            # mcopy failed to copy the tree: one signature with the crash
            yield Divergence(dict(base, verdict="failed", kind=model.MTOOLS_LONG_UTF8, op="-", cls="-"),
                             wn, d)
            return
        seen = set()
        if rn == "vfat-check" and wn in MTOOLS_WRITERS:
            known = {mtools_check_kind(c, ops) for c in rr.complaints}
            if None not in known:
                # named exceptions of the mtools writer: one finding each
                for kind in sorted(known):
                    yield Divergence(dict(base, kind=kind, op="-", cls="-"), wn, d)
                return
        for c in rr.complaints:
            if rn == "vfat-check":
                parts = c.split(": ", 2)
                kind = parts[0]
                p = parts[1] if len(parts) > 1 and parts[1].startswith("/") and parts[1] != "/" else None
            else:
                kind, p = findings.normalise(c, 60), None
            if kind in seen:
                continue
            seen.add(kind)
            yield Divergence(dict(base, kind=kind, op=_op_for_path(ops, p), cls=_cls(p)), wn, d)
            if len(seen) >= 3:
                break


# ---------------------------------------------------------------- fuzzer
def fuzz_ops_binary():
    b = os.path.join(REPO, "build-fuzz", "fuzz", "fuzz_ops")
    return b if os.access(b, os.X_OK) else None


def from_input_supported(vfat):
    """Does `vfat gen --from-input` exist (H7)? -> (bool, message)."""
    with tempfile.NamedTemporaryFile(suffix=".bin", delete=False) as f:
        f.write(b"\x00" * 8)
        name = f.name
    try:
        p = run([vfat, "gen", "--from-input", name], timeout=20)
    finally:
        os.unlink(name)
    if p.rc == 0:
        return True, ""
    return False, (f"`{vfat} gen --from-input` is not supported by this build: "
                   f"{(p.errtext or p.text).strip().splitlines()[-1:] or p.error}")


def convert_input(vfat, path, timeout=20):
    """A fuzz input -> (ops list, options line or '') via vfat gen --from-input."""
    p = run([vfat, "gen", "--from-input", path], timeout=timeout)
    if p.rc != 0:
        raise opscript.OpScriptError(f"vfat gen --from-input {path}: "
                                     f"{(p.errtext or p.error or '').strip()[:200]}")
    opts = ""
    for ln in p.text.split("\n"):
        if ln.startswith("# apply-options:"):
            opts = ln.split(":", 1)[1].strip()
        elif ln.startswith("# vfat gen --from-input:"):
            for fat in ("12", "16", "32"):       # "# vfat gen --from-input: FAT16, ..."
                if f"FAT{fat}" in ln:
                    opts += f" --fat {fat}"
    return opscript.parse(p.text), opts, p.text


def fs_from_options(opts):
    """'# apply-options' may carry no geometry; a '--fat N' word picks the volume."""
    w = opts.split()
    if "--fat" in w:
        i = w.index("--fat")
        if i + 1 < len(w) and w[i + 1] in ("12", "16", "32"):
            return "fat" + w[i + 1]
    return None


class Fuzzer:
    """fuzz_ops on J workers in the background, corpus in <workdir>/corpus,
    crashes in <workdir>/crashes; harvest() yields corpus entries not seen
    before (newest first)."""

    def __init__(self, binary, workdir, jobs, seconds, seed):
        self.binary = os.path.abspath(binary)
        self.corpus = os.path.join(workdir, "corpus")
        self.crashes = os.path.join(workdir, "crashes")
        self.logs = os.path.join(workdir, "fuzz-logs")
        for d in (self.corpus, self.crashes, self.logs):
            os.makedirs(d, exist_ok=True)
        self.seen_file = os.path.join(workdir, "harvested.txt")
        self.seen = set()
        if os.path.exists(self.seen_file):
            with open(self.seen_file) as f:
                self.seen = {ln.strip() for ln in f if ln.strip()}
        self.crash_seen = set()
        self.jobs = max(1, jobs)
        self.deadline = time.monotonic() + seconds
        self.seed = seed
        self.procs = []
        self.restarts = 0
        seeds = os.path.join(REPO, "corpus", "fuzz_ops")
        self.seed_dirs = [seeds] if os.path.isdir(seeds) else []
        dic = os.path.join(REPO, "corpus", "fuzz_ops.dict")
        self.dict = dic if os.path.isfile(dic) else None

    def _start(self, i):
        """One libFuzzer process in fork mode with J jobs: it keeps going
        after a crash (each crash is written to crashes/) and merges new
        inputs into corpus/."""
        left = int(self.deadline - time.monotonic())
        if left < 2:
            return None
        argv = [self.binary, self.corpus, *self.seed_dirs, f"-max_total_time={left}",
                f"-seed={(self.seed + 7919 * (i + self.restarts)) % (1 << 31) or 1}",
                f"-artifact_prefix={self.crashes}/", "-print_final_stats=0",
                f"-fork={self.jobs}", "-ignore_crashes=1", "-ignore_ooms=1", "-ignore_timeouts=1",
                "-close_fd_mask=1"]
        if self.dict:
            argv.append(f"-dict={self.dict}")
        log = open(os.path.join(self.logs, f"worker{i}.log"), "ab")
        p = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        log.close()
        return p

    def start(self):
        self.procs = [self._start(0)]

    def poll(self):
        """Restart workers that stopped (a crash stops libFuzzer) while time is left."""
        for i, p in enumerate(self.procs):
            if p is not None and p.poll() is not None:
                self.restarts += 1
                self.procs[i] = self._start(i)

    def execs_per_s(self):
        total = 0.0
        for i in range(len(self.procs)):
            try:
                with open(os.path.join(self.logs, f"worker{i}.log"), "rb") as f:
                    f.seek(0, 2)
                    n = f.tell()
                    f.seek(max(0, n - 4096))
                    tail = f.read().decode("utf-8", "replace")
            except OSError:
                continue
            # fork mode: "#4771: cov: 755 ... time: 15s job: 61"; else "exec/s: N"
            m = None
            for m in re.finditer(r"#(\d+): cov: .*? time: (\d+)s", tail):
                pass
            if m and int(m.group(2)) > 0:
                total += int(m.group(1)) / int(m.group(2))
                continue
            k = tail.rfind("exec/s: ")
            if k >= 0:
                try:
                    total += float(tail[k + 8:].split()[0])
                except ValueError:
                    pass
        return total

    def harvest(self, limit=20, queued=()):
        """Newest corpus entries not processed yet (mark_done when checked)."""
        try:
            names = os.listdir(self.corpus)
        except OSError:
            return []
        q = {os.path.basename(x) for x in queued}
        new = []
        for n in names:
            if n not in self.seen and n not in q and not n.startswith("."):
                p = os.path.join(self.corpus, n)
                try:
                    new.append((os.path.getmtime(p), p, n))
                except OSError:
                    continue
        new.sort(reverse=True)
        return [p for _, p, _ in new[:limit]]

    def mark_done(self, path):
        n = os.path.basename(path)
        self.seen.add(n)
        with open(self.seen_file, "a") as f:
            f.write(n + "\n")

    def new_crashes(self, limit=3):
        """Up to limit crash files not looked at yet (a fault can make
        hundreds; the rest wait for the next round)."""
        try:
            names = sorted(os.listdir(self.crashes))
        except OSError:
            return []
        out = []
        for n in names:
            if n not in self.crash_seen and not n.startswith("."):
                self.crash_seen.add(n)
                out.append(os.path.join(self.crashes, n))
                if len(out) >= limit:
                    break
        return out

    def crash_message(self, path):
        """The violation line fuzz_ops prints for a crash file; None when it
        no longer fails."""
        p = run([self.binary, path], timeout=30)
        if p.rc == 0:
            return None
        return crash_line(p.errtext + p.text, p.rc)

    def stop(self):
        for p in self.procs:
            if p is not None and p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except OSError:
                    pass
        for p in self.procs:
            if p is not None:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    p.wait()


# ---------------------------------------------------------------- campaign
def iter_params(seed, i):
    """(gen seed, number of ops, fs) of iteration i: a pure function."""
    h = hashlib.sha256(f"{seed}:{i}".encode()).digest()
    gseed = int.from_bytes(h[:6], "little")
    nops = GEN_OPS[0] + h[6] % (GEN_OPS[1] - GEN_OPS[0] + 1)
    return gseed, nops, h[7]


def gen_script(vfat, gseed, nops, names=None):
    argv = [vfat, "gen", "--seed", str(gseed), "--ops", str(nops)]
    if names:
        argv += ["--names", names]
    p = run(argv, timeout=30)
    if p.rc != 0:
        raise UsageError(f"vfat gen failed: {(p.errtext or p.error or '').strip()[:200]}")
    return opscript.parse(p.text)


def load_state(workdir):
    try:
        with open(os.path.join(workdir, "state.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def save_state(workdir, st):
    tmp = os.path.join(workdir, f".state.json.{os.getpid()}")
    with open(tmp, "w") as f:
        json.dump(st, f, indent=1)
    os.replace(tmp, os.path.join(workdir, "state.json"))


class Campaign:
    def __init__(self, args, out=sys.stdout):
        self.args = args
        self.out = out
        self.notes = []
        self.t0 = time.monotonic()
        self.scripts = 0
        self.harvested = 0
        self.new = []             # (sig, summary) of findings written in this run
        self.seen_divs = Counter()  # (role, oracle or writer): divergences seen (incl. known)
        self.phase = "starting"
        self.fuzzer = None
        self.checker = None
        self.known = set()
        self.lock = threading.Lock()
        self._stop_progress = threading.Event()

    def say(self, msg):
        with self.lock:
            print(msg, file=self.out, flush=True)

    def progress_line(self):
        el = time.monotonic() - self.t0
        ck = self.checker
        per = " ".join(f"{n}={ck.images_checked[n]}" for n in ck.reader_names) if ck else ""
        execs = self.fuzzer.execs_per_s() if self.fuzzer else 0.0
        if not execs:
            execs = sum(ck.applies.values()) / el if ck and el > 0 else 0.0
        corpus = ""
        if self.fuzzer:
            try:
                corpus = f"corpus {len(os.listdir(self.fuzzer.corpus))} "
            except OSError:
                pass
        return (f"[campaign] {el:6.0f}s execs/s {execs:.1f} {corpus}scripts {self.scripts} "
                f"images[{per}] findings {len(self.new)} new/{len(self.known)} total ({self.phase})")

    def _progress_loop(self):
        while not self._stop_progress.wait(PROGRESS_EVERY):
            try:
                self.say(self.progress_line())
            except Exception:
                pass

    # .........................................................
    def run(self):
        a = self.args
        self.workdir = os.path.abspath(a.workdir)
        os.makedirs(self.workdir, exist_ok=True)
        findings.clean_temp(self.workdir)
        self.known = findings.known_signatures(self.workdir)
        st = load_state(self.workdir)
        seed = a.seed if a.seed is not None else st.get("last_seed")
        if seed is None:
            seed = random.SystemRandom().randrange(1, 1 << 31)
        self.seed = seed
        seeds = st.setdefault("seeds", {})
        self.iter = int(seeds.get(str(seed), 0))
        st["last_seed"] = seed
        self.state = st
        self.vfat = a.vfat or vfat_default()
        budget = a.minutes * 60.0
        self.deadline = self.t0 + budget
        resumed = f", resuming at iteration {self.iter}" if self.iter else ""
        self.say(f"campaign seed {seed} (replay: --seed {seed}){resumed}; workdir {self.workdir}; "
                 f"{len(self.known)} known findings; budget {a.minutes:g} min")
        readers = a.oracles.split(",") if a.oracles else list(DEFAULT_READERS)
        if a.writers:
            writers = a.writers.split(",")
        else:
            writers = list(DEFAULT_WRITERS)
            writers += OPTIONAL_WRITERS
        if a.fuzz_bin and not os.access(a.fuzz_bin, os.X_OK):
            raise UsageError(f"--fuzz-bin {a.fuzz_bin} is not an executable")
        self.fs_list = a.fs.split(",") if a.fs else list(DEFAULT_FS)
        for fs in self.fs_list:
            diff.parse_fs(FS_SPECS.get(fs, fs))
        kcfg = {k: {"auto_build": False} for k in ("kernel", "kernel-nodual", "kernel-nodual-v3")}
        self.checker = Checker(readers, writers, vfat=a.vfat, timeout=a.timeout, notes=self.notes,
                               cfg=kcfg)
        thr = threading.Thread(target=self._progress_loop, daemon=True)
        thr.start()            # progress lines while the kernel VM boots, too
        try:
            self.probe_kernel()
        except BaseException:
            self._stop_progress.set()
            self.checker.close()
            raise
        knotes = [n for n in self.notes if "kernel" in n]
        if knotes:
            self.say(f"kernel oracle not available ({knotes[0].split(': ', 1)[-1].replace('; skipped', '')[:200]}); "
                     f"going on without it")
        for n in self.notes:
            if "kernel" not in n:
                self.say(f"note: {n[:300]}")
        self.say(f"writers: {','.join(self.checker.writer_names)}; readers: "
                 f"{','.join(self.checker.reader_names)}; volumes: {','.join(self.fs_list)}")
        self.queue = []
        fb = None if a.no_fuzzer else (a.fuzz_bin or fuzz_ops_binary())
        if fb:
            ok, why = from_input_supported(self.vfat)
            if not ok:
                self.say(f"note: fuzz_ops exists but {why}; corpus harvesting off")
            else:
                self.fuzzer = Fuzzer(fb, self.workdir, a.jobs, budget, seed)
                self.fuzzer.start()
                self.say(f"fuzzer: {fb} on {a.jobs} worker(s), corpus {self.fuzzer.corpus}")
        elif not a.no_fuzzer:
            self.say("note: build-fuzz/fuzz/fuzz_ops not built (cmake --preset fuzz); generated scripts only")
        stopped = None
        try:
            self.loop()
        except (Stop, KeyboardInterrupt) as e:
            stopped = "SIGTERM" if isinstance(e, Stop) else "SIGINT"
        finally:
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGTERM, signal.SIG_IGN)   # finish the clean-up
            self._stop_progress.set()
            if self.fuzzer:
                self.fuzzer.stop()
            findings.clean_temp(self.workdir)
            seeds[str(seed)] = self.iter
            save_state(self.workdir, st)
            self.checker.close()
        if stopped:
            self.say(f"stopped by {stopped}; everything found so far is in {findings.findings_dir(self.workdir)}")
        self.summary()
        return 1 if self.new else 0

    def probe_kernel(self):
        """Boot the kernel VM once up front (an empty volume); if it cannot
        read, drop the kernel oracles with a note instead of reporting
        every script as a finding."""
        ck = self.checker
        kr = [n for n in ck.reader_names if n.startswith("kernel")]
        kw = [n for n in ck.writer_names if n.startswith("kernel")]
        if not kr and not kw:
            return
        self.phase = "booting the kernel VM"
        fs = self.fs_list[0]
        why = None
        if kr:
            r = ck.readers[ck.reader_names.index(kr[0])][1]
            img = os.path.join(ck.tmp, "probe.img")
            findings.sparse_copy(ck.pristine_image(fs), img)
            try:
                rr = r.read(img, max(self.args.timeout, 120.0))
                why = rr.error
            except Exception as e:
                why = f"{type(e).__name__}: {e}"
        elif kw:
            w = ck.writers[ck.writer_names.index(kw[0])][1]
            img = os.path.join(ck.tmp, "probe.img")
            findings.sparse_copy(ck.pristine_image(fs), img)
            try:
                why = w.apply(img, [], max(self.args.timeout, 120.0)).error
            except Exception as e:
                why = f"{type(e).__name__}: {e}"
        if why:
            self.notes.append(f"kernel: {why}")
            for lst in (ck.readers, ck.writers):
                for n, o in [x for x in lst if x[0].startswith("kernel")]:
                    try:
                        o.close()
                    except Exception:
                        pass
                    lst.remove((n, o))

    def loop(self):
        while time.monotonic() < self.deadline:
            if self.fuzzer:
                self.fuzzer.poll()
                for c in self.fuzzer.new_crashes():
                    self.crash_finding(c)
                if len(self.queue) < 5:
                    self.queue.extend(self.fuzzer.harvest(queued=self.queue))
            src = None
            if self.queue and self.scripts % 2 == 0:
                path = self.queue.pop(0)
                self.fuzzer.mark_done(path)
                self.harvested += 1
                try:
                    ops, opts, _ = convert_input(self.vfat, path)
                except opscript.OpScriptError as e:
                    self.notes.append(str(e))
                    continue
                fs = fs_from_options(opts) or self.fs_list[self.scripts % len(self.fs_list)]
                src = {"source": "fuzz_ops corpus", "input": os.path.basename(path)}
            else:
                gseed, nops, fsb = iter_params(self.seed, self.iter)
                fs = self.fs_list[fsb % len(self.fs_list)]
                ops = gen_script(self.vfat, gseed, nops, self.args.names)
                if fsb & 0x80:                   # half the scripts: tricky additions
                    ops = enrich(ops, random.Random(gseed))
                src = {"source": "vfat gen", "iteration": self.iter, "gen_seed": gseed, "ops": nops}
                self.iter += 1
            if not ops:
                continue
            self.phase = "checking"
            res = self.checker.check(ops, fs)
            self.scripts += 1
            for sig, d in res.divs.items():
                # a writer's own (results, failures) by writer name: family
                # names ("kernel") would mix with the reader of that name
                role = d.fields["role"]
                self.seen_divs[(role, d.writer if role == "writer" else d.fields["oracle"])] += 1
                if sig in self.known:
                    continue
                self.new_finding(d, ops, fs, src)
            self.phase = "running"
            if self.scripts % 20 == 0:
                self.state["seeds"][str(self.seed)] = self.iter
                save_state(self.workdir, self.state)

    def new_finding(self, d, ops, fs, src):
        self.phase = f"minimising {d.sig}"
        self.say(f"new divergence {d.sig}: {findings.sig_text(d.fields)} (writer {d.writer}, {len(ops)} ops); minimising")
        t0 = time.monotonic()
        # minimisation may overrun the budget a little, never by much:
        # past the deadline a finding gets MIN_LATE seconds
        left = self.deadline - time.monotonic()
        mops, stats = minimize_divergence(self.checker, d, ops, fs,
                                          budget=min(self.args.min_budget, max(MIN_LATE, left)))
        write_full(self.workdir, self.checker, d, ops, mops, fs,
                   dict(src, seed=self.seed, found_after_s=round(t0 - self.t0, 1),
                        minimise_s=round(time.monotonic() - t0, 1), minimise=stats))
        self.known.add(d.sig)
        self.new.append((d.sig, summary_line(d, mops, fs)))
        self.say(f"finding {d.sig}: {summary_line(d, mops, fs)}")

    def crash_finding(self, path):
        msg = self.fuzzer.crash_message(path)
        if msg is None:
            self.say(f"note: {os.path.basename(path)} no longer fails in fuzz_ops; ignored")
            return
        fields = {"role": "fuzz", "oracle": "fuzz_ops", "verdict": "failed",
                  "kind": findings.normalise(msg, 80), "op": "-", "cls": "-"}
        h = findings.sig_hash(fields)
        if h in self.known:
            return
        try:
            ops, opts, text = convert_input(self.vfat, path)
        except opscript.OpScriptError as e:
            ops, opts, text = [], "", f"# {e}\n"
        # shrink the input bytes (libFuzzer -minimize_crash); keep the result
        # only if it still fails with the same kind of violation
        self.phase = f"minimising {h}"
        mtext, mops = text, ops
        left = self.deadline - time.monotonic()
        mpath = os.path.join(self.fuzzer.logs, f"min-{os.path.basename(path)}")
        ok, _ = minimize_crash(path, mpath, min(15.0, self.args.min_budget, max(MIN_LATE, left)),
                               self.fuzzer.binary)
        if ok:
            m2 = self.fuzzer.crash_message(mpath)
            if m2 is not None and findings.normalise(m2, 80) == fields["kind"]:
                try:
                    mops, _, mtext = convert_input(self.vfat, mpath)
                except opscript.OpScriptError:
                    mtext, mops = text, ops
        summary = f"fuzz_ops violation: {msg[:200]} ({len(mops)} ops)"
        info = {"signature": h, "fields": fields, "summary": summary, "message": msg,
                "crash_file": os.path.basename(path), "apply_options": opts, "seed": self.seed,
                "ops_orig": len(ops), "ops_min": len(mops), "fuzz_bin": self.fuzzer.binary,
                "found_after_s": round(time.monotonic() - self.t0, 1)}
        files = {"ops.txt": mtext, "ops.orig.txt": text}
        with open(path, "rb") as f:
            files_bin = {"crash.bin": f.read()}
        if os.path.isfile(mpath):
            with open(mpath, "rb") as f:
                files_bin["crash.min.bin"] = f.read()
            os.unlink(mpath)
        findings.write_finding(self.workdir, h, info, files, {}, {}, binary=files_bin)
        self.known.add(h)
        self.new.append((h, summary))
        self.say(f"finding {h}: {summary}")

    def summary(self):
        ck = self.checker
        el = time.monotonic() - self.t0
        self.say("")
        self.say(f"campaign summary: seed {self.seed}, {el:.0f} s, {self.scripts} scripts, "
                 f"{sum(ck.applies.values())} images written, next iteration {self.iter}")
        self.say(f"{'oracle':<14} {'role':<7} {'images':>8} {'divergences':>12}")
        for n in ck.writer_names:
            self.say(f"{n:<14} {'writer':<7} {ck.applies[n]:>8} {self.seen_divs.get(('writer', n), 0):>12}")
        for n in ck.reader_names:
            self.say(f"{n:<14} {'reader':<7} {ck.images_checked[n]:>8} {self.seen_divs.get(('reader', n), 0):>12}")
        if self.fuzzer:
            self.say(f"fuzz_ops: {self.harvested} corpus entries checked in this run "
                     f"({len(self.fuzzer.seen)} in all), {self.fuzzer.restarts} worker restarts")
        self.say(f"findings: {len(self.new)} new, {len(self.known)} total in {findings.findings_dir(self.workdir)}")
        for h, s in self.new:
            self.say(f"  NEW {h}  {s}")
        # machine-readable form (bench, CI): <workdir>/summary.json
        summ = {"seed": self.seed, "seconds": round(el, 1), "scripts": self.scripts,
                "next_iteration": self.iter,
                "writers": {n: ck.applies[n] for n in ck.writer_names},
                "readers": {n: ck.images_checked[n] for n in ck.reader_names},
                "images_per_minute": {n: round(ck.images_checked[n] * 60.0 / el, 1) if el else 0.0
                                      for n in ck.reader_names},
                "fuzz_execs_per_s": self.fuzzer.execs_per_s() if self.fuzzer else None,
                "new_findings": [h for h, _ in self.new], "total_findings": len(self.known)}
        try:
            tmp = os.path.join(self.workdir, f".summary.json.{os.getpid()}")
            with open(tmp, "w") as f:
                json.dump(summ, f, indent=1)
            os.replace(tmp, os.path.join(self.workdir, "summary.json"))
        except OSError:
            pass


def summary_line(d, mops, fs):
    return (f"{findings.sig_text(d.fields)} | writer {d.writer} on {fs} | {len(mops)} ops: "
            + "; ".join(str(o) for o in mops[:3])[:200] + (" ..." if len(mops) > 3 else ""))


def divergence_test(checker, d, fs):
    """ops -> bool: does the same signature still appear (same writer/oracle)?"""
    rd = [d.fields["oracle"]] if d.fields["role"] == "reader" else []
    if d.fields["role"] == "harness" and d.fields["oracle"] != "model":
        rd = [d.fields["oracle"]]

    def test(ops):
        r = checker.check(ops, fs, writers=[d.writer], readers=rd)
        return d.sig in r.divs
    return test


def minimize_divergence(checker, d, ops, fs, budget=MIN_BUDGET):
    test = divergence_test(checker, d, fs)
    return minimize.minimize(ops, test, budget=budget)


def write_full(workdir, checker, d, orig_ops, mops, fs, extra):
    """Re-check the minimised script on every oracle and write the finding."""
    wd = tempfile.mkdtemp(prefix="vfz-finding-", dir=checker.tmp)
    try:
        res = checker.check(mops, fs, workdir=wd)
        if d.sig not in res.divs:        # flaky: keep the original script's evidence
            res = checker.check(orig_ops, fs, workdir=wd)
        images = {f"before-{fs}.img": checker.pristine_image(fs)}
        for w, p in res.images.items():
            images[f"after-{w}.img"] = p
        info = {"signature": d.sig, "fields": d.fields, "summary": summary_line(d, mops, fs),
                "writer": d.writer, "fs": fs, "fs_spec": FS_SPECS.get(fs, fs),
                "ops_orig": len(orig_ops), "ops_min": len(mops), "detail": d.detail[:4000],
                "verdicts": res.verdicts, "details": {w: {o: t[:4000] for o, t in v.items()}
                                                      for w, v in res.details.items()},
                "also": sorted({findings.sig_text(x.fields) for x in res.divs.values()
                                if x.sig != d.sig}), **extra}
        return findings.write_finding(workdir, d.sig, info,
                                      {"ops.txt": opscript.dump(mops), "ops.orig.txt": opscript.dump(orig_ops)},
                                      images, res.raws)
    finally:
        shutil.rmtree(wd, ignore_errors=True)


def add_arguments(p):
    p.add_argument("--minutes", type=float, default=10.0, help="time budget (default 10)")
    p.add_argument("--seed", type=int, help="campaign seed (default: resume the workdir's, else random)")
    p.add_argument("--oracles", help=f"readers (default {','.join(DEFAULT_READERS)}; also vfat-check)")
    p.add_argument("--writers", help=f"writers (default {','.join(DEFAULT_WRITERS)} + kernel when available)")
    p.add_argument("--jobs", type=int, default=1, help="fuzzer workers (default 1)")
    p.add_argument("--workdir", default="campaign", help="findings, corpus and state (default ./campaign)")
    p.add_argument("--fs", help=f"volumes, comma-separated (default {','.join(DEFAULT_FS)})")
    p.add_argument("--names", help="name classes for vfat gen (default all)")
    p.add_argument("--vfat", help="the vfat binary the core writers run (default build/vfat)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per oracle call")
    p.add_argument("--min-budget", type=float, default=MIN_BUDGET,
                   help=f"seconds of minimisation per finding (default {MIN_BUDGET:g})")
    p.add_argument("--no-fuzzer", action="store_true", help="generated scripts only")
    p.add_argument("--fuzz-bin", help="the fuzz_ops binary to run (default build-fuzz/fuzz/fuzz_ops)")


def run_cmd(args):
    if args.minutes <= 0:
        print("vfatfuzz campaign: --minutes must be positive", file=sys.stderr)
        return 2
    if args.jobs < 1:
        print("vfatfuzz campaign: --jobs must be at least 1", file=sys.stderr)
        return 2

    def on_term(signum, frame):
        raise Stop()
    old = signal.signal(signal.SIGTERM, on_term)
    try:
        return Campaign(args).run()
    except (UsageError, diff.UsageError) as e:
        print(f"vfatfuzz campaign: {e}", file=sys.stderr)
        return 2
    except (Stop, KeyboardInterrupt):
        print("vfatfuzz campaign: stopped while starting; nothing was found yet", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, old)


# ---------------------------------------------------------------- repro / minimize
ALL_READERS = ["dosfsck", "mtools", "kernel", "7z", "grub", "vfat-check"]
REPRO_WRITERS = ["core-dual", "core-v1", "core-v3", "kernel"]


class Target:
    """What repro/minimize were given: a finding directory, a fuzz input
    (crash file) or an op-script."""

    def __init__(self, path, vfat):
        self.path = path
        self.info = None
        self.fuzz_bin = None
        self.crash = None
        self.fs = None
        self.opts = ""
        if os.path.isdir(path):
            if not os.path.isfile(os.path.join(path, "finding.json")):
                raise UsageError(f"{path}: a directory but not a finding (no finding.json)")
            self.info = findings.load_finding(path)
            self.kind = "finding"
            self.fs = self.info.get("fs")
            self.ops = opscript.load(os.path.join(path, "ops.txt"))
            self.fuzz_bin = self.info.get("fuzz_bin")
            for n in ("crash.min.bin", "crash.bin"):
                if os.path.isfile(os.path.join(path, n)):
                    self.crash = os.path.join(path, n)
                    break
            if self.fs is None:
                self.fs = fs_from_options(self.info.get("apply_options", "")) or None
            return
        if not os.path.isfile(path):
            raise UsageError(f"no such finding, crash file or op-script: {path}")
        with open(path, "rb") as f:
            data = f.read()
        try:
            self.ops = opscript.parse(data.decode("utf-8"))
            self.kind = "op-script"     # parse raised unless every other line is blank or '#'
            return
        except (UnicodeDecodeError, opscript.OpScriptError) as e:
            err = e
        # not an op-script: a fuzz input
        ok, why = from_input_supported(vfat)
        if not ok:
            raise UsageError(f"{path} is not an op-script ({err}) and cannot be converted as a "
                             f"fuzz input: {why}")
        self.kind = "crash file"
        self.crash = path
        self.ops, self.opts, _ = convert_input(vfat, path)
        self.fs = fs_from_options(self.opts)


def crash_line(text, rc):
    """The one line that says why fuzz_ops failed on an input."""
    lines = text.splitlines()
    for pat in ("VIOLATION", "runtime error:", "ERROR: AddressSanitizer", "ERROR: libFuzzer",
                "ERROR:", "SUMMARY:"):
        for i, ln in enumerate(lines):
            if pat in ln:
                out = ln.strip()
                j = i + 1        # a quoted name with a line break in it: join its lines
                while out.count('"') % 2 and j < len(lines) and j <= i + 3:
                    out += "\\n" + lines[j]
                    j += 1
                return out
    return f"exit {rc}"


def replay_crash(path, binary=None):
    """Run fuzz_ops on a crash file when it is built: (ran, still_fails, message)."""
    b = binary or fuzz_ops_binary()
    if not b:
        return False, False, "build-fuzz/fuzz/fuzz_ops not built"
    p = run([b, path], timeout=60)
    return True, p.rc != 0, crash_line(p.errtext + p.text, p.rc)


def common_arguments(p):
    p.add_argument("target", help="finding directory, crash file (fuzz_ops input) or op-script")
    p.add_argument("--oracles", help=f"readers (default: every available one of {','.join(ALL_READERS)})")
    p.add_argument("--writers", help=f"writers (default {','.join(REPRO_WRITERS)} when available, "
                                     "plus the finding's writer)")
    p.add_argument("--fs", help="volumes, comma-separated (default: the finding's, else fat16)")
    p.add_argument("--vfat", help="the vfat binary the core writers run (default build/vfat)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per oracle call")
    p.add_argument("--fuzz-bin", help="fuzz_ops binary for crash files (default build-fuzz/fuzz/fuzz_ops)")


def minimize_crash(path, out, budget, binary=None):
    """libFuzzer's -minimize_crash on a fuzz_ops crash file -> (ok, message)."""
    b = binary or fuzz_ops_binary()
    if not b:
        return False, "build-fuzz/fuzz/fuzz_ops not built"
    p = run([b, "-minimize_crash=1", f"-max_total_time={max(1, int(budget))}",
             f"-exact_artifact_path={out}", path], timeout=budget + 60)
    if not os.path.isfile(out):
        return False, f"fuzz_ops -minimize_crash produced nothing (exit {p.rc})"
    return True, ""


def checker_for(args, target, notes):
    readers = args.oracles.split(",") if args.oracles else list(ALL_READERS)
    writers = args.writers.split(",") if args.writers else list(REPRO_WRITERS)
    if target.info and target.info.get("writer") and target.info["writer"] not in writers:
        writers.append(target.info["writer"])
    if target.info and target.info["fields"].get("role") == "reader" and \
            target.info["fields"]["oracle"] not in readers:
        readers.append(target.info["fields"]["oracle"])
    return Checker(readers, writers, vfat=args.vfat, timeout=args.timeout, notes=notes)


def fs_list(args, target):
    if args.fs:
        out = args.fs.split(",")
    else:
        out = [target.fs or "fat16"]
    for fs in out:
        diff.parse_fs(FS_SPECS.get(fs, fs))
    return out


# ---------------------------------------------------------------- script enrichment
def enrich(ops, rng):
    """Append a few ops aimed at tricky semantics to a generated script:
    aliases that collide (siblings sharing the first 6 characters and the
    extension), case-only renames, renames onto an existing file, names of
    13*k characters, a name whose first byte is 0xE5 in CP437. Random but
    seeded (rng), so a replay gives the same script."""
    made = [o for o in ops if o.kind in ("create", "mkdir")]
    files = [o.path for o in ops if o.kind == "create"]
    out = list(ops)
    n = 1 + rng.randrange(4)
    for _ in range(n):
        k = rng.randrange(7)
        parent = "/"
        if made and rng.randrange(2):
            parent = made[rng.randrange(len(made))].path.rpartition("/")[0] + "/"
        if k == 0 and made:
            src = made[rng.randrange(len(made))].path
            par, _, leaf = src.rpartition("/")
            base, dot, ext = leaf.rpartition(".") if "." in leaf[1:] else (leaf, "", "")
            stem = (base or leaf)[:6] or "x"
            for j in range(1 + rng.randrange(3)):
                sib = f"{stem}{'_-+ '[rng.randrange(4)]}{rng.randrange(100)}{dot}{ext[:3]}"
                out.append(opscript.Op("create", [f"{par}/{sib}", rng.randrange(600), rng.randrange(256)]))
        elif k == 1 and made:
            src = made[rng.randrange(len(made))].path
            par, _, leaf = src.rpartition("/")
            out.append(opscript.Op("rename", [src, f"{par}/{leaf.swapcase()}"]))
        elif k == 2 and len(files) >= 2:
            a, b = rng.sample(files, 2)
            out.append(opscript.Op("rename", [a, b]))
        elif k == 3:
            name = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(13 * (1 + rng.randrange(4))))
            out.append(opscript.Op("create", [parent + name, rng.randrange(3000), rng.randrange(256)]))
        elif k == 5 and len([o for o in made if o.kind == "mkdir"]) >= 2:
            dirs = [o.path for o in made if o.kind == "mkdir"]
            a, b = rng.sample(dirs, 2)
            out.append(opscript.Op("rename", [a, b + "/" + a.rpartition("/")[2]]))
        elif k == 4:
            for j in range(2):
                out.append(opscript.Op("create", [f"{parent}LongName{'ABC'[j]}{rng.randrange(9)}.txt",
                                                  rng.randrange(600), rng.randrange(256)]))
        else:
            out.append(opscript.Op("mkdir", [parent + "\u03c3" + str(rng.randrange(100))]))
    return campaign_renumber(out)


def campaign_renumber(ops):
    return [opscript.Op(o.kind, list(o.args), i + 1) for i, o in enumerate(ops)]
