"""The mutants' source tree: a copy of the sources with one file mutated at a time, and its builds.

Tree: build-mutants/TAG/tree/ from git HEAD (or a given revision); build:
its vfat CLI in build-fault-TAG/ (vfz.selftest.builds.build_fault, the
planted faults' builder); build_fuzz: its fuzz_ops under a fuzz preset (the
main job's fuzzer part, vfz.selftest.mainjob); strict_error: a mutant that GCC 14 would not
compile; stripped: the binary compared for equivalence (TCE); unit_suites:
the C unit suites built against the tree.
"""
import os
import re
import shutil
import subprocess
import time

from vfz import REPO
from vfz.selftest.builds import build_fault

WORK = os.path.join(REPO, "build-mutants")
TREE_FILES = ["CMakeLists.txt", "CMakePresets.json"]
FAULT_NAME = "MUTANT"


class Tree:
    """A copy of the sources the vfat CLI and the unit suites build from
    (build-mutants/TAG/tree/), with at most one file mutated at a time."""

    def __init__(self, tag=FAULT_NAME, rev="HEAD", preset="default"):
        self.tag = tag
        self.rev = rev
        self.preset = preset          # "asan": the sanitizers' build (build-fault-TAG-asan/)
        self.root = os.path.join(WORK, tag, "tree")
        self.orig = {}

    @property
    def bdir(self):
        return os.path.join(REPO, f"build-fault-{self.tag}" + ("" if self.preset == "default"
                                                               else f"-{self.preset}"))

    def sync(self):
        """The committed sources (git HEAD, or the revision asked for), not
        the working tree: others edit core/src while a run goes on."""
        old = {}
        for d, _, fs in os.walk(self.root):
            for f in fs:
                p = os.path.join(d, f)
                with open(p, "rb") as fh:
                    old[os.path.relpath(p, self.root)] = (fh.read(), os.stat(p).st_mtime)
        shutil.rmtree(self.root, ignore_errors=True)
        os.makedirs(self.root)
        units = ["tests"]            # the unit suites, and the tests CMakeLists.txt names
        cml = subprocess.run(["git", "-C", REPO, "show", f"{self.rev}:CMakeLists.txt"], capture_output=True,
                             text=True, check=True).stdout
        extra = [f for args in re.findall(r"add_executable\(\w+ ([^)$]*)\)", cml)    # study_collide, ...
                 for f in args.split() if f.endswith(".c")]
        # harnesses/: the fuzz targets (fuzz preset: build_fuzz), the C model, harnesses/iotrace
        extra = ["harnesses"] + [f for f in extra if not f.startswith("harnesses/")]
        arch = subprocess.run(["git", "-C", REPO, "archive", self.rev, *TREE_FILES, "core", *units, *extra],
                              capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", self.root], input=arch.stdout, check=True)
        if self.rev != "HEAD":
            # an earlier core behind today's CLI front end (core/cli: its
            # sparse image I/O; 2a2bfb7's read and rewrote every byte of a
            # 34 MB FAT32 image per call, ~1 s each at our disk's pace)
            arch = subprocess.run(["git", "-C", REPO, "archive", "HEAD", "core/cli"],
                                  capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", self.root], input=arch.stdout, check=True)
        # tar gives the commit's time, older than the objects of an earlier
        # mutant in build-fault-TAG/: a file keeps the time it had in the
        # last tree when its text is the same, else it is dated now
        now = time.time()
        for d, _, fs in os.walk(self.root):
            for f in fs:
                p = os.path.join(d, f)
                with open(p, "rb") as fh:
                    prev = old.get(os.path.relpath(p, self.root))
                    t = prev[1] if prev and prev[0] == fh.read() else now
                os.utime(p, (t, t))
        self.head = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", self.rev],
                                   capture_output=True, text=True).stdout.strip()

    def text(self, f):
        if f not in self.orig:
            with open(os.path.join(self.root, "core", "src", f), encoding="utf-8") as fh:
                self.orig[f] = fh.read()
        return self.orig[f]

    def write(self, f, text):
        p = os.path.join(self.root, "core", "src", f)
        with open(p + ".tmp", "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(p + ".tmp", p)

    def mutate(self, m):
        self.write(m.file, m.apply(self.text(m.file)))

    def restore(self, m):
        self.write(m.file, self.text(m.file))


def build(tree, preset=None):
    """The vfat CLI of the tree as it is, in build-fault-<TAG>/ (the
    planted faults' builder, warnings not fatal: a mutant is a plausible
    bug, not lint; preset asan: build-fault-<TAG>-asan/) -> (path, error)."""
    vfat, err, _ = build_fault(tree.tag, werror=False, src=tree.root, preset=preset or tree.preset)
    return vfat, err


def build_fuzz(tree, preset):
    """fuzz_ops of the tree as it is under a fuzz preset ("fuzz": libFuzzer + ASan + UBSan,
    the campaign's judge; "fuzz-ubsan": the build it fuzzes with), in
    build-fault-<TAG>-<preset>/ (incremental: a mutant recompiles its file) -> (path, error)."""
    bdir = f"{tree.bdir}-{preset}"
    p = subprocess.run(["cmake", "--preset", preset, "-B", bdir, f"-DVFAT_FAULT={tree.tag}", "-DVFAT_WERROR=OFF"],
                       capture_output=True, text=True, errors="replace", timeout=300, cwd=tree.root)
    if p.returncode != 0:
        return None, f"{preset} configure failed: {(p.stderr or p.stdout).strip()[-300:]}"
    p = subprocess.run(["cmake", "--build", bdir, "-j2", "--target", "fuzz_ops"], capture_output=True,
                       text=True, errors="replace", timeout=1800)
    if p.returncode != 0:
        out = p.stdout + p.stderr
        return None, f"{preset} build failed: " + next((ln.strip() for ln in out.splitlines() if "error" in ln),
                                                        out.strip()[-300:])[:300]
    return os.path.join(bdir, "fuzz", "fuzz_ops"), None


STRICT = ["-Werror=int-conversion", "-Werror=incompatible-pointer-types", "-Werror=int-to-pointer-cast",
          "-Werror=implicit-function-declaration", "-Werror=return-type"]


def strict_error(tree, m):
    """The first error of the mutated file under the C rules GCC 14
    enforces by default (an integer passed for a pointer and the like:
    constraint violations GCC 12 only warns about), or None. Such a
    mutant does not compile, it is not a plausible bug."""
    p = subprocess.run(["cc", "-std=c11", "-fsyntax-only", *STRICT,
                        "-I", os.path.join(tree.root, "core", "include"),
                        "-I", os.path.join(tree.root, "core", "src"),
                        os.path.join(tree.root, "core", "src", m.file)],
                       capture_output=True, text=True, errors="replace")
    if p.returncode == 0:
        return None
    return next((ln.strip() for ln in p.stderr.splitlines() if "error" in ln), p.stderr.strip()[:200])


def stripped(vfat, out):
    """A copy of vfat without symbols and debug info (column numbers move
    when a token grows) -> out."""
    p = subprocess.run(["strip", "-o", out, vfat], capture_output=True, text=True, errors="replace")
    if p.returncode != 0:
        raise RuntimeError(f"strip failed: {p.stderr.strip()}")
    return out


def unit_suites(tree):
    """Build and run the C unit suites against the tree -> (ok, detail)."""
    bdir = tree.bdir
    names = sorted(f[:-2] for f in os.listdir(os.path.join(tree.root, "tests"))
                   if f.startswith("unit_") and f.endswith(".c"))
    p = subprocess.run(["cmake", "--build", bdir, "-j2", "--target", *names], capture_output=True,
                       text=True, errors="replace", timeout=900)
    if p.returncode != 0:
        return False, "unit suites do not build: " + next(
            (ln.strip() for ln in (p.stdout + p.stderr).splitlines() if "error" in ln), "?")[:160]
    for n in names:
        try:
            q = subprocess.run([os.path.join(bdir, n)], capture_output=True, text=True, errors="replace",
                               timeout=120)
        except subprocess.TimeoutExpired:
            return False, f"{n}: timeout"
        if q.returncode != 0:
            last = (q.stdout + q.stderr).strip().splitlines()[-1:] or [f"exit {q.returncode}"]
            return False, f"{n}: {last[0][:160]}"
    return True, ", ".join(names) + " pass"
