"""The core's line and branch coverage by a run's corpus: the coverage preset (built once, then cached in build-coverage/), harnesses/coverage.sh over the seed corpora and the run's, llvm-cov's per-file figures and annotated source.

measure(workdir, out) builds the preset when it is missing or stale (cmake's
own incremental build: a few seconds when nothing changed), runs
harnesses/coverage.sh with fuzz_ops=<workdir>/corpus when the workdir has a
corpus (every fuzz target over corpus/<target>/ as well), reads
`llvm-cov export -summary-only` and copies llvm-cov's HTML (`show
-format=html`: one annotated page per source file) to OUT/coverage/.
-> {"line", "branch", "function" (percent), "files": [{"file", "lines":
[covered, count], "branches": [covered, count], "href"}], "corpus_dirs"}
or raises CoverageError with one line saying why.
"""
import json
import os
import shutil

from vfz import REPO
from vfz.proc import run

TARGETS = ("fuzz_ops", "fuzz_image", "fuzz_names")


class CoverageError(Exception):
    pass


def build_dir():
    return os.environ.get("VFAT_COVERAGE_BUILD") or os.path.join(REPO, "build-coverage")


def _tool(*names):
    for n in names:
        p = shutil.which(n)
        if p:
            return p
    raise CoverageError(f"{names[-1]} not found (Debian's llvm package; `vfatfuzz setup` installs it)")


def ensure_build(log=print):
    """Configure (once) and build the coverage preset; cmake rebuilds only what changed."""
    b = build_dir()
    if not os.path.isfile(os.path.join(b, "CMakeCache.txt")):
        log("coverage: configuring the coverage preset (once; cached in build-coverage/)")
        p = run(["cmake", "--preset", "coverage"], cwd=REPO, timeout=600)
        if p.rc != 0:
            raise CoverageError(f"cmake --preset coverage failed: {(p.errtext or p.text).strip()[-300:]}")
    p = run(["cmake", "--build", b, "-j2"], cwd=REPO, timeout=3600)
    if p.rc != 0:
        raise CoverageError(f"building the coverage preset failed: {(p.errtext or p.text).strip()[-300:]}")
    missing = [t for t in TARGETS if not os.path.isfile(os.path.join(b, "fuzz", t))]
    if missing:
        raise CoverageError(f"the coverage preset built no {', '.join(missing)}")
    return b


def measure(workdir, out, log=print):
    b = ensure_build(log)
    extra = []
    corpus = os.path.join(workdir, "corpus")
    if os.path.isdir(corpus) and os.listdir(corpus):
        extra.append(f"fuzz_ops={os.path.abspath(corpus)}")
    env = dict(os.environ, VFAT_BUILD=b, VFAT_SRC=REPO)
    p = run(["sh", os.path.join(REPO, "harnesses", "coverage.sh"), *extra], env=env, timeout=3600)
    if p.rc != 0:
        raise CoverageError(f"harnesses/coverage.sh failed: {(p.errtext or p.text).strip()[-300:]}")
    o = os.path.join(b, "coverage")
    objs = [os.path.join(b, "fuzz", TARGETS[0])]
    for t in TARGETS[1:]:
        objs += ["-object", os.path.join(b, "fuzz", t)]
    cov = _tool("llvm-cov-14", "llvm-cov")
    p = run([cov, "export", "-summary-only", f"-instr-profile={os.path.join(o, 'all.profdata')}",
             *objs, os.path.join(REPO, "core", "src")], timeout=600)
    if p.rc != 0:
        raise CoverageError(f"llvm-cov export failed: {(p.errtext or '').strip()[-300:]}")
    data = json.loads(p.text)["data"][0]
    dst = os.path.join(out, "coverage")
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    for n in os.listdir(o):
        src = os.path.join(o, n)
        if n in ("index.html", "style.css", "control.js"):
            shutil.copy(src, dst)
        elif n == "coverage" and os.path.isdir(src):
            shutil.copytree(src, os.path.join(dst, "coverage"))
    files = []
    src_root = os.path.join(REPO, "core", "src") + os.sep
    for f in sorted(data["files"], key=lambda f: f["filename"]):
        name = f["filename"]
        rel = name[len(src_root):] if name.startswith(src_root) else os.path.basename(name)
        html = os.path.join("coverage", "coverage", name.lstrip("/") + ".html")
        s = f["summary"]
        files.append({"file": rel, "lines": [s["lines"]["covered"], s["lines"]["count"]],
                      "branches": [s["branches"]["covered"], s["branches"]["count"]],
                      "href": html if os.path.isfile(os.path.join(out, html)) else None})
    t = data["totals"]
    return {"line": round(t["lines"]["percent"], 2), "branch": round(t["branches"]["percent"], 2),
            "function": round(t["functions"]["percent"], 2), "files": files,
            "lines": [t["lines"]["covered"], t["lines"]["count"]],
            "branches": [t["branches"]["covered"], t["branches"]["count"]],
            "corpus_dirs": [f"corpus/{t}" for t in TARGETS] + [e.split("=", 1)[1] for e in extra]}
