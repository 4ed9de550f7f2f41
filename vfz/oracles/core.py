"""The C core (build/vfat) as a reader (`vfat ls`) and as writers
(`vfat apply`): core-dual, core-v1, core-v3, core-unique, core-asan.

The binary is $VFAT_BUILD/vfat, else <repo>/build/vfat; cfg vfat=PATH
overrides (e.g. the asan build). `vfat apply` prints one JSON object per
op, {"line": N, "op": "create", "result": "ok"|"EEXIST"|...}; the writer
returns those results in op order. A sanitizer's report on its stderr
(vfz.sanitizer) is the writer's error, whatever the exit code.

core-asan is core-dual's policy run by the ASan + UBSan build
(build-asan/vfat; the Checker's asan_vfat for a build under test): a memory
error the release build survives silently (a write one past an array held
through a pointer, which the default preset's bounds traps cannot see) is
its failure. No reader reads its images (Entry.unread); its twin is
core-dual, whose image must be the same bytes (vfz.check.twins).
"""
import json
import os
import tempfile

from vfz.oracles import META_OPS, OPS, Entry, Formatter, Reader, Writer
from vfz import listing, opscript, sanitizer
from vfz.oracles import served
from vfz.proc import run

from vfz import REPO# noqa: E402

MODES = {
    "core-dual": ["--names", "dual"],
    "core-v1": ["--names", "nodual", "--dummy", "v1"],
    "core-v3": ["--names", "nodual", "--dummy", "v3"],
    "core-unique": ["--names", "nodual", "--dummy", "v1", "--unique"],
    "core-asan": ["--names", "dual"],
}
ASAN_BUILD = os.path.join(REPO, "build-asan", "vfat")


def vfat_binary(override=None):
    if override:
        return override
    b = os.environ.get("VFAT_BUILD")
    if b and os.path.exists(os.path.join(b, "vfat")):
        return os.path.join(b, "vfat")
    return os.path.join(REPO, "build", "vfat")


def available(override=None):
    b = vfat_binary(override)
    if os.access(b, os.X_OK):
        return True, b
    return False, f"{b} is not built (run: vfatfuzz setup)"


class CoreReader(Reader):
    # every field of its own listing: a build under test's `vfat ls` (Checker(vfat=BUILD))
    # is held against the reference build's listing of the same image (vfz.check.meta), so
    # a fault only the listing shows (a short-name field left stale, a wrong time decode)
    # is a divergence; with the reference build itself both listings are the same bytes
    shows = ("short", "nt", "attr", "cluster", "lfn", "dummy", "mtime", "atime", "crtime", "crtime_ns")

    def __init__(self, name="core", vfat=None, label=True, served=False, **cfg):
        self.name = name
        self.vfat = vfat
        self.label = label          # False: no `vfat label` run (the hostile writes' strict reads)
        # True: `vfat ls` answered by this thread's `vfat serve` (vfz.oracles.served), the same
        # answer without a process an image (the hostile writes' strict reads)
        self.served = served

    def available(self):
        return available(self.vfat)

    def _read(self, image, timeout, r):
        ok, b = available(self.vfat)
        if not ok:
            r.error = b
        elif not os.path.isfile(image):
            r.error = f"no such image: {image}"
        else:
            p = (served.run if self.served else run)([b, "ls", image], timeout=timeout)
            r.raw = p.raw()
            if p.error or p.rc != 0:
                r.error = p.error or f"vfat ls exit {p.rc}: {p.errtext.strip()[:200]}"
            else:
                r.listing = sorted(listing.loads(p.text), key=lambda e: e["path"])
                for e in r.listing:         # the meta keys (docs/listing.md)
                    if "attr" in e:
                        e["attrs"] = listing.attr_letters(e["attr"])
                lab = run([b, "label", image], timeout=timeout) if self.label else None
                if lab is not None and lab.rc == 0 and not lab.error:
                    r.extra["label"] = json.loads(lab.text)


def is_v1_dummy(short_hex):
    try:
        b = bytes.fromhex(short_hex)
    except (TypeError, ValueError):
        return False
    return len(b) == 11 and b[0] == 0x20 and b[1] == 0 and b[8] == 0x2F and b[9] == 0 and b[10] == 0


class CoreWriter(Writer):
    glue = "core"
    def __init__(self, name="core-dual", vfat=None, seed=1, extra_args=(), **cfg):
        if name not in MODES:
            raise KeyError(f"unknown core writer {name!r}")
        self.name = name
        # core-asan: the ASan build unless the Checker names one (its asan_vfat)
        self.vfat = vfat or (ASAN_BUILD if name == "core-asan" else None)
        self.seed = seed
        self.extra_args = list(extra_args)

    def available(self):
        return available(self.vfat)


    def _apply(self, image, ops, timeout, w):
        ok, b = available(self.vfat)
        if not ok:
            w.error = b
            return
        with tempfile.NamedTemporaryFile("w", suffix=".ops", encoding="utf-8", delete=False) as f:
            f.write(opscript.dump(ops))
            script = f.name
        try:
            p = run([b, "apply", image, script, *MODES[self.name], "--seed", str(self.seed),
                     *self.extra_args], timeout=timeout)
        finally:
            os.unlink(script)
        w.raw = p.raw()
        res = []
        for line in p.text.split("\n"):     # not splitlines(): a path may hold U+2028
            try:
                o = json.loads(line)
            except ValueError:
                continue
            if isinstance(o, dict) and "result" in o:
                res.append(o["result"])
        w.results = res
        san = sanitizer.report_line(p.errtext)
        if san:
            w.error = f"vfat apply: {san}"
        elif p.error:
            w.error = f"vfat apply: {p.error}"
        elif p.rc not in (0, 1) or len(res) != len(ops):
            w.error = (f"vfat apply exit {p.rc}, {len(res)} results for {len(ops)} ops: "
                       f"{p.errtext.strip()[:200]}")


# ---------------------------------------------------------------- registry
_W = "vfz.oracles.core:CoreWriter"
class VfatFormatter(Formatter):
    """`vfat mkfs` of the build under test: its formatting is checked by every reader too."""
    accepts = frozenset({"cluster", "sector", "fats", "reserved", "root"})

    def __init__(self, name="vfat", vfat=None, **_):
        self.name, self.vfat = name, vfat

    def _format(self, image, geo, timeout, r):
        argv = [vfat_binary(self.vfat), "mkfs", image, "--size", str(geo.size), "--fat", str(geo.fat)]
        for flag, val in (("--cluster", geo.cluster), ("--sector", geo.sector), ("--fats", geo.fats),
                          ("--reserved", geo.reserved), ("--root-entries", geo.root)):
            if val:
                argv += [flag, str(val)]
        r.argv = argv
        p = run(argv, timeout=timeout)
        r.raw = p.text + p.errtext
        if p.rc != 0:
            r.error = f"vfat mkfs failed: {(p.errtext or p.text or p.error or '').strip()[-200:]}"


_ALL = OPS | META_OPS | {"write-offset"}   # the core's writers do both grammars

ENTRIES = [
    Entry("core", "core", reader="vfz.oracles.core:CoreReader", cost="process", independent=False,
          under_test=True),
    Entry("vfat", "core", formatter="vfz.oracles.core:VfatFormatter", label="vfat mkfs", independent=False,
          under_test=True),
    Entry("core-dual", "core", writer=_W, names="dual", shorts="alias", default=("writer",),
          twin="kernel", under_test=True, supports=_ALL),
    Entry("core-v1", "core", writer=_W, shorts="v1", seeded=True, default=("writer",),
          twin="kernel-nodual", under_test=True, supports=_ALL),
    Entry("core-v3", "core", writer=_W, shorts="v3", shortname="winnt", seeded=True,
          default=("writer",), twin="kernel-nodual-v3", under_test=True, supports=_ALL),
    Entry("core-unique", "core", writer=_W, shorts="v1", unique=True, seeded=True, under_test=True, supports=_ALL),
    Entry("core-asan", "core", writer=_W, names="dual", shorts="alias", twin="core-dual", under_test=True,
          supports=_ALL, unread=True, sanitized=True, label="core-dual (ASan build)"),
]
