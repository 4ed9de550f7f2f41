"""The checker: writers x readers on one op-script, each answer held against the model, divergences with signatures.

For each writer: the model that predicts it (its registry traits: profile,
names mode, shortname rule) applied to the pristine volume, the writer's
results compared op by op (its named exceptions first), a known failure
of the writer recognised by its own hook (the readers then check the
script cut before that op), and every reader's verdict on the image
(vfz.check.verdict). A divergence the oracles' hooks explain is filed under the
exception's name, one finding whatever the op and the names; any other
gets a signature from its structure (role, oracle, verdict, kind, op,
name class).
"""
import functools
import os
import shutil
import tempfile
import threading
import time
from collections import Counter

from vfz import findings, lifeline, model, oracles, proc
from vfz.check import diff
from vfz.check import verdict
from vfz.errors import UsageError
from vfz.oracles.evidence import Evidence, fat_type_exception
from vfz.check.predict import model_key, model_of  # noqa: F401
from vfz.check import transform
from vfz.check import twins
from vfz.check.divergence import (CheckResult, Divergence, _own_exception, family, first_bad, fold_path,  # noqa: F401
                                  name_class, op_for_path, ops_for)
from vfz.check.twins import twin_listing
from vfz.check.formatted import check_formatted, format_failed
from vfz.check import bootbytes
from vfz import geometry

DEFAULT_READERS = oracles.names("reader", default=True)
DEFAULT_WRITERS = [n for n in oracles.names("writer", default=True) if oracles.entry(n).cost != "vm"]
OPTIONAL_WRITERS = [n for n in oracles.names("writer", default=True) if n not in DEFAULT_WRITERS]
# the campaign's readers beside the default ones, the build under test's own tools (~ms an
# image): its `vfat check` (a fault of the name policy it shares with the writers shows as its
# complaints) and its `vfat ls` (reader core: what only the listing uses, the UTF-16 -> UTF-8
# of long names, shows as a listing that differs from the model's)
OWN_READERS = ["vfat-check-own", "core"]
# ... and its write policies beside the default writers (core-unique: v1 dummies redrawn until
# unique in their directory, a path of its own in dir.c that no default writer takes); no
# kernel implements them, so they have no twin, and each costs one more image per script
OWN_WRITERS = [n for n in oracles.names("writer") if oracles.entry(n).under_test
               and n not in DEFAULT_WRITERS + OPTIONAL_WRITERS]
FS_SPECS = {"fat12": "fat12:2M", "fat16": "fat16:4M:512", "fat32": "fat32:34M:512"}


class HarnessError:
    def __init__(self, msg):
        self.msg = msg


def write_copy(w, wn, base, img, ops):
    """Writer w applies ops to a fresh copy of base at img -> WriteResult
    (an exception of the glue is the writer's error, not a crash)."""
    findings.sparse_copy(base, img)
    try:
        return w.apply(img, ops, diff.WRITE_TIMEOUT)
    except Exception as e:
        return oracles.WriteResult(wn, error=f"{type(e).__name__}: {e}")


class ImageTemplate:
    """An image held as its non-zero 64 KiB blocks: copies of it are written
    as a sparse file with no read of the source (the pristine volumes are
    copied once per writer per script)."""
    BLK = 1 << 16

    def __init__(self, path):
        zero = bytes(self.BLK)
        self.chunks = []
        with open(path, "rb") as f:
            off = 0
            while True:
                b = f.read(self.BLK)
                if not b:
                    break
                if b != zero[:len(b)]:
                    if self.chunks and self.chunks[-1][0] + len(self.chunks[-1][1]) == off:
                        self.chunks[-1] = (self.chunks[-1][0], self.chunks[-1][1] + b)
                    else:
                        self.chunks.append((off, b))
                off += len(b)
        self.size = off

    def copy_to(self, dst):
        with open(dst, "wb") as g:
            for off, b in self.chunks:
                g.seek(off)
                g.write(b)
            g.truncate(self.size)


def is_geometry(spec):
    """A --fs spec of the geometry dimension (vfz.geometry: key=N fields or @FORMATTER)."""
    return "@" in spec or "=" in spec


def fat_bits(fs):
    spec = FS_SPECS.get(fs, fs)
    return geometry.parse(spec).fat if is_geometry(spec) else diff.parse_fs(spec)[0]


@functools.lru_cache(maxsize=None)
def no_sync_supported(vfat=None):
    """Does this `vfat apply` take --no-sync (skip the fsync of the image)?"""
    from vfz.oracles.core import vfat_binary
    b = vfat_binary(vfat)
    if not os.access(b, os.X_OK):
        return False
    p = proc.run([b, "apply", "--no-sync"], timeout=20)
    return "unknown option" not in p.errtext


FORMATTERS = ("mkfs.fat", "vfat")      # the checker's default formatters (--formatter)


def vfat_mkfs(image, fat, size, cluster, vfat=None):
    """The pristine volume made by `vfat mkfs` of the build under test
    (formatter "vfat"), so that its mkfs is checked by every reader too."""
    from vfz.oracles.core import vfat_binary
    from vfz.proc import run
    argv = [vfat_binary(vfat), "mkfs", image, "--size", str(size), "--fat", str(fat)]
    if cluster:
        argv += ["--cluster", str(cluster)]
    p = run(argv, timeout=60)
    if p.rc != 0:
        raise UsageError(f"vfat mkfs failed: {(p.errtext or p.text or p.error or '').strip()[-200:]}")


class Checker:
    """Writers x readers on op-scripts, oracles loaded once."""

    def __init__(self, readers=None, writers=None, vfat=None, timeout=60.0, notes=None,
                 explicit_readers=False, explicit_writers=False, cfg=None, formatter="mkfs.fat",
                 transformers=(), unread=(), asan_vfat=None):
        self.notes = notes if notes is not None else []
        # writers whose images no reader reads: they write for the twin
        # byte comparison only (a kernel twin in a mutant hunt; Entry.unread: core-asan)
        self.unread = frozenset(unread) | {n for n, e in oracles.entries().items() if e.unread}
        self.timeout = timeout
        self.vfat = vfat
        self.formatted = set()          # geometry specs whose fresh volume the readers checked
        self.format_argv = {}           # spec -> the formatter's exact command
        self.boot_bytes = {}            # spec -> the own mkfs's bytes against mkfs.fat's (bootbytes)
        if formatter not in FORMATTERS:
            raise UsageError(f"unknown formatter {formatter!r} (known: {', '.join(FORMATTERS)})")
        self.formatter = formatter      # who makes the pristine volumes
        self.tmp = lifeline.scratch(tempfile.mkdtemp(prefix="vfz-campaign-"))
        self.pristine = {}
        self.templates = {}
        self.images_checked = Counter()
        self.applies = Counter()
        # where the time goes (vfz.campaign.loop's summary): wall seconds per
        # stage ("model", "write core-v1", "read mtools", "compare") and
        # the oracles' own seconds (their Timer: the tool call alone)
        self.stage_s = Counter()
        self.stage_n = Counter()
        self.own_s = Counter()
        self.cpu_s = Counter()   # CPU seconds of the call: its tools' (and VM's) + the glue's
        self._lock = threading.Lock()
        cfg = dict(cfg or {})
        if vfat:
            # the build under test writes, and its `vfat ls` is the core reader
            for w in list(oracles.WRITERS) + list(oracles.READERS):
                if oracles.entry(w).under_test and not oracles.entry(w).sanitized:
                    cfg.setdefault(w, {})["vfat"] = vfat
        if asan_vfat:
            # its ASan build runs the sanitized writers (core-asan; default build-asan/vfat)
            for w in oracles.WRITERS:
                if oracles.entry(w).sanitized:
                    cfg.setdefault(w, {})["vfat"] = asan_vfat
        if no_sync_supported(vfat):        # scratch images: no fsync of each one
            for w in oracles.WRITERS:
                if oracles.entry(w).under_test:
                    kw = cfg.setdefault(w, {})
                    kw["extra_args"] = list(kw.get("extra_args", ())) + ["--no-sync"]
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
            if oracles.entry(n).sanitized and vfat and not asan_vfat:
                # the repository's ASan build is not the build under test's
                self.notes.append(f"writer {n} skipped: no ASan build of {vfat} (--asan-vfat)")
                continue
            o = diff.load_oracle("writer", n, False, self.notes, cfg)
            if o is not None:
                self.writers.append((n, o))
        if not self.writers:
            raise UsageError("no writer available: " + "; ".join(self.notes))
        self.transformers = []
        for n in transformers or ():
            if n not in oracles.TRANSFORMERS:
                raise UsageError(f"unknown transformer {n!r} (known: {', '.join(sorted(oracles.TRANSFORMERS))})")
            o = diff.load_oracle("transformer", n, False, self.notes, cfg)
            if o is not None:
                self.transformers.append((n, o))

    @property
    def reader_names(self):
        return [n for n, _ in self.readers]

    @property
    def writer_names(self):
        return [n for n, _ in self.writers]

    def close(self):
        for _, o in self.readers + self.writers + self.transformers:
            try:
                o.close()
            except Exception:
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)
        lifeline.unscratch(self.tmp)

    def pristine_image(self, fs):
        with self._lock:             # lanes of the campaign share a checker
            if fs not in self.pristine:
                spec = FS_SPECS.get(fs, fs)
                p = os.path.join(self.tmp, f"pristine-{len(self.pristine)}.img")
                if is_geometry(spec):
                    self._format(spec, p)
                else:
                    fat, size, cl = diff.parse_fs(spec)
                    if oracles.entry(self.formatter).under_test:     # the build under test's own mkfs
                        vfat_mkfs(p, fat, size, cl, self.vfat)
                    else:
                        diff.mkfs(p, fat, size, cl)
                self.templates[p] = ImageTemplate(p)
                self.pristine[fs] = p
            return self.pristine[fs]

    def timed(self, stage, seconds, own=None, n=1, cpu=None):
        """Account seconds of wall time to a stage (and an oracle's own time:
        wall seconds in its call, CPU seconds of its processes and glue)."""
        with self._lock:
            self.stage_s[stage] += seconds
            self.stage_n[stage] += n
            if own is not None:
                self.own_s[stage] += own
            if cpu is not None:
                self.cpu_s[stage] += cpu

    def _write(self, w, wn, base, img, ops):
        """write_copy, the copy made from the pristine volume's template."""
        t0 = time.monotonic()
        c0 = proc.thread_cpu() + time.thread_time()
        tpl = self.templates.get(base)
        if tpl is None:
            wr = write_copy(w, wn, base, img, ops)
        else:
            tpl.copy_to(img)
            try:
                wr = w.apply(img, ops, diff.WRITE_TIMEOUT)
            except Exception as e:
                wr = oracles.WriteResult(wn, error=f"{type(e).__name__}: {e}")
        self.timed(f"write {wn}", time.monotonic() - t0, wr.seconds,
                   cpu=proc.thread_cpu() + time.thread_time() - c0)
        with self._lock:
            self.applies[wn] += 1
        return wr

    def _format(self, spec, path):
        """The fresh volume of a geometry spec, made by its formatter (else the checker's)."""
        g = geometry.parse(spec)
        name = g.formatter or self.formatter
        cfg = {"vfat": self.vfat} if oracles.entry(name).under_test and self.vfat else {}
        r = oracles.get_formatter(name, **cfg).format(path, g, self.timeout)
        if r.error:
            raise UsageError(f"{spec}: {r.error}")
        if oracles.entry(name).under_test:   # before the free window marks clusters bad
            self.boot_bytes[spec] = bootbytes.compare(path, self.timeout)
        geometry.apply_window(path, g)       # free=N: the clusters outside the window bad
        self.format_argv[spec] = r.argv

    def check(self, ops, fs, writers=None, readers=None, workdir=None):
        """Apply ops with each writer to a fresh image of fs, read with each
        reader. writers/readers: subsets by name (None = all). The first check
        of a geometry spec first has every reader read its fresh volume
        (vfz.check.formatted)."""
        res = CheckResult()
        wdir = workdir or self.tmp
        models = {}
        spec = FS_SPECS.get(fs, fs)
        try:
            base = self.pristine_image(fs)
        except UsageError as e:     # the build under test's mkfs failed: its finding, not a stop
            fmt = (geometry.parse(spec).formatter if is_geometry(spec) else None) or self.formatter
            if not format_failed(res, spec, fmt, e):
                raise
            return res
        if is_geometry(spec) and spec not in self.formatted:
            self.formatted.add(spec)
            g = geometry.parse(spec)
            check_formatted(res, [(rn, r) for rn, r in self.readers
                                  if (readers is None or rn in readers) and oracles.reads(rn)],
                            g, g.formatter or self.formatter, self.format_argv.get(spec, []), base,
                            g.fat, self.timeout)
        if spec in self.boot_bytes:     # every check of the volume: a minimisation sees it again
            g = geometry.parse(spec)
            bootbytes.add_divergence(res, g.formatter or self.formatter, self.boot_bytes[spec], spec)
        for wn, w in self.writers:
            if writers is not None and wn not in writers:
                continue
            wops = ops_for(wn, ops)
            key = model_key(wn) + (len(wops),)         # the rule sets slot counts
            if key not in models:
                t0 = time.monotonic()
                try:
                    m = model_of(wn, base, wops)
                except Exception as e:          # a harness bug is a finding, not a crash
                    m = HarnessError(f"model {key[:-2]}: {type(e).__name__}: {e}")
                models[key] = m
                self.timed("model", time.monotonic() - t0)
            m = models[key]
            if isinstance(m, HarnessError):
                res.add(Divergence({"role": "harness", "oracle": "model", "verdict": "failed",
                                    "kind": findings.normalise(m.msg, 80), "op": "-", "cls": "-"},
                                   wn, m.msg))
                continue
            self._check_writer(res, wops, fs, wn, w, m, base, wdir, readers)
        t0 = time.monotonic()
        twins.check_twins(self, res, ops, fs)
        self.timed("twins", time.monotonic() - t0)
        return res

    def _cut_known(self, res, ops, fs, wn, w, wcls, base, wdir, readers, wr, m, bad, known):
        """Name each known failure and write the script cut before it, until
        the cut image shows none -> (ops, model, image) for the readers, or
        None when they have nothing to read."""
        while known:
            cut, kind = known
            op = ops[cut]
            det = (f"named exception {kind} from line {op.line}: {op}"
                   + (f"; writer failed: {wr.error}" if wr.error else "")
                   + (f"; first differing result line {ops[bad].line}: {ops[bad]}: expected "
                      f"{m.results[bad]}, got {wr.results[bad] if bad < len(wr.results) else None}"
                      if bad is not None else "; results as expected, the image is not the model's")
                   + f"; readers check the first {cut} ops")
            res.verdicts[wn]["(writer)"] = "differs"
            res.details[wn]["(writer)"] = det
            res.add(Divergence({"role": "writer", "oracle": family(wn), "verdict": "result",
                                "kind": kind, "op": "-", "cls": "-"}, wn, det))
            if readers is not None and not [rn for rn, _ in self.readers if rn in readers]:
                return None
            ops = ops[:cut]
            img = os.path.join(wdir, f"{wn}-cut.img")
            wr = self._write(w, wn, base, img, ops)
            res.images[f"{wn}-cut"] = img
            res.raws[f"{wn}-cut"] = wr.raw
            if wr.error:
                return None
            t0 = time.monotonic()
            m = model_of(wn, base, ops)
            self.timed("model", time.monotonic() - t0)
            bad = first_bad(ops, m, wr, wcls)
            known = wcls.known_failure(Evidence(ops, writer=wn, wr=wr, results=m.results, bad=bad,
                                                fat_bits=fat_bits(fs), image=img, entries=m.entries(),
                                                base=base)) if cut else None
        return ops, m, img

    def _check_writer(self, res, ops, fs, wn, w, m, base, wdir, readers):
        img = os.path.join(wdir, f"{wn}.img")
        wr = self._write(w, wn, base, img, ops)
        res.images[wn] = img
        res.raws[wn] = wr.raw
        res.results[wn] = list(wr.results) if not wr.error else None
        res.verdicts[wn] = {}
        res.details[wn] = {}
        wcls = type(w)
        full = ops                     # the evidence names the whole script, even when cut
        bad = first_bad(ops, m, wr, wcls)
        ev = Evidence(ops, writer=wn, wr=wr, results=m.results, bad=bad, fat_bits=fat_bits(fs),
                      image=img, entries=m.entries(), base=base)
        known = wcls.known_failure(ev)
        if known:
            # a known failure of the writer: one finding, whatever the op and
            # the names; what the writer did from that op on is not the
            # model's, so the readers check the script cut before it (no
            # follow-on reader findings); one the cut script's image shows at
            # an earlier op (a later op hid it: run 3204) is named and cut too
            cut = self._cut_known(res, ops, fs, wn, w, wcls, base, wdir, readers, wr, m, bad, known)
            if cut is None:
                return
            ops, m, img = cut
        elif wr.error:
            res.verdicts[wn]["(writer)"] = "failed"
            res.details[wn]["(writer)"] = wr.error
            last = ops[len(wr.results)] if len(wr.results) < len(ops) else None
            res.add(Divergence({"role": "writer", "oracle": family(wn), "verdict": "failed",
                                "kind": findings.normalise(wr.error, 60),
                                "op": last.kind if last else "-",
                                "cls": name_class(last.args[-1] if last and last.kind == "rename"
                                                  else last.path if last else None)},
                               wn, wr.error))
            return
        elif bad is not None:
            op = ops[bad]
            e, a = m.results[bad], wr.results[bad] if bad < len(wr.results) else None
            cls = name_class(op.path)
            if op.kind == "rename":
                cls = f"{name_class(op.args[0])}>{name_class(op.args[1])}"
            det = f"line {op.line}: {op}: expected {e}, got {a}"
            res.verdicts[wn]["(writer)"] = "differs"
            res.details[wn]["(writer)"] = det
            res.add(Divergence({"role": "writer", "oracle": family(wn), "verdict": "result",
                                "kind": f"{e}->{a}", "op": op.kind, "cls": cls}, wn, det))
        if wn in self.unread:
            return
        self._read_image(res, full, fs, wn, m, img, readers)
        if self.transformers and oracles.entry(wn).medium == "fat":
            self._transform_image(res, full, fs, wn, m, img, readers)

    def _read_image(self, res, ops, fs, wn, m, img, readers):
        used = Counter()
        exp_entries = m.entries()
        wentry = oracles.entry(wn)
        for rn, r in self.readers:
            if (readers is not None and rn not in readers) or not oracles.reads(rn, wn):
                continue
            rcls = type(r)
            t0 = time.monotonic()
            c0 = proc.thread_cpu() + time.thread_time()
            try:
                rr = r.read(img, self.timeout)
            except Exception as ex:
                rr = oracles.ReadResult(rn, error=f"{type(ex).__name__}: {ex}")
            t1 = time.monotonic()
            self.timed(f"read {rn}", t1 - t0, rr.seconds,
                       cpu=proc.thread_cpu() + time.thread_time() - c0)
            with self._lock:
                self.images_checked[rn] += 1
            try:
                self._judge(res, ops, fs, wn, m, img, rn, r, rcls, rr, used, exp_entries, wentry)
            finally:
                self.timed("compare", time.monotonic() - t1)

    def _judge(self, res, ops, fs, wn, m, img, rn, r, rcls, rr, used, exp_entries, wentry,
               key=None, relabel=None):
        """One reader's answer on the image of writer wn (key: the image's
        name in res, when a transformer rewrote it; relabel: how its
        divergences are filed then)."""
        key = key or wn
        hook = getattr(r, "expected_complaints", None)
        if hook:
            rr.complaints = hook(rr.complaints, wentry)
        try:
            if key == wn:
                exp_c = rcls.expectations(wentry, m, img, fat_bits(fs))
            else:
                # a transformer rewrote the short entries: what a checker must
                # say follows from the image as it now is (the core's listing)
                exp_c = rcls.expectations(None, None, img, fat_bits(fs),
                                          core_listing=(twin_listing(img) or {}).values())
            vd = verdict.verdict_for(rr, exp_entries, rn, exp_c, used, wn, image=img,
                                     label=m.expected_label() if m is not None else None)
        except Exception as e:
            msg = f"verdict for {rn}: {type(e).__name__}: {e}"
            res.add(Divergence({"role": "harness", "oracle": rn, "verdict": "failed",
                                "kind": findings.normalise(msg, 80), "op": "-", "cls": "-"},
                               wn, msg))
            return
        d = vd.text()
        res.raws[f"{key}.{rn}"] = rr.raw
        res.verdicts[key][rn] = vd.verdict
        res.details[key][rn] = d
        if vd.verdict != "ok":
            ev = Evidence(ops, writer=wn, reader=rn, rr=rr, verdict=vd.verdict, diff=vd.diff,
                          lines=vd.lines, detail=d, exp_complaints=exp_c, image=img,
                          entries=exp_entries, fat_bits=fat_bits(fs))
            divs = self._reader_divs(ev, rcls, oracles.oracle_class(wn, "writer"))
            for div in (relabel(ev, divs) if relabel else divs):
                res.add(div)

    def _transform_image(self, res, ops, fs, wn, m, img, readers):
        """The transformers' pass on writer wn's image (vfz.check.transform)."""
        transform.transform_image(self, res, ops, fs, wn, m, img, readers)

    def _reader_divs(self, ev, rcls, wcls):
        """The divergences of one reader verdict: a named exception of the
        reader or of the writer that explains it all (one finding each), else
        one per kind of difference."""
        base = {"role": "reader", "oracle": ev.reader, "verdict": ev.verdict}
        for hook in (fat_type_exception, rcls.explain, wcls.explain):
            kinds = hook(ev)
            if not kinds:
                continue
            v = ev.verdict
            if isinstance(kinds, tuple):
                (kinds, v) = kinds
            for kind in ([kinds] if isinstance(kinds, str) else kinds):
                yield Divergence(dict(base, verdict=v, kind=kind, op="-", cls="-"), ev.writer, ev.detail)
            return
        if ev.verdict == "failed":
            yield Divergence(dict(base, kind=findings.normalise(ev.rr.error, 60), op="-", cls="-"),
                             ev.writer, ev.detail)
            return
        if ev.verdict == "differs":
            kind, p = ev.diff.kind()
            yield Divergence(dict(base, kind=kind, op=op_for_path(ev.ops, p), cls=name_class(p)),
                             ev.writer, ev.detail)
            return
        for kind, p in rcls.complaint_kinds(ev):
            yield Divergence(dict(base, kind=kind, op=op_for_path(ev.ops, p), cls=name_class(p)),
                             ev.writer, ev.detail)
