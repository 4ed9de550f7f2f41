"""Building the core with a planted fault or a mutant: the vfat CLI (build_fault) and fuzz_ops (build_fuzz_fault).

A planted fault is `#ifdef VFAT_FAULT_<NAME>` code in core/src, switched on
by -DVFAT_FAULT=NAME; a mutant is a mutated copy of the sources
(vfz.selftest.tree), built the same way under the tag MUTANT.
"""
import os

from vfz import REPO
from vfz.proc import run as prun


def build_fault(name, werror=True, src=REPO, preset="default"):
    """-> (vfat path, None, note) or (None, error line, note). A fault that
    only trips -Werror (an unused helper, say) is built once more without
    it, and the row says so. src: the source tree (vfz.selftest.mutants builds a
    mutated copy); preset: a CMake configure preset (asan: build-fault-
    NAME-asan/, the sanitizers' build of the same sources)."""
    bdir = os.path.join(REPO, f"build-fault-{name}" + ("" if preset == "default" else f"-{preset}"))
    p = prun(["cmake", "--preset", preset, "-B", bdir, f"-DVFAT_FAULT={name}",
              f"-DVFAT_WERROR={'ON' if werror else 'OFF'}"], timeout=300, cwd=src)
    if p.rc != 0:
        return None, f"configure failed: {(p.errtext or p.text).strip()[-300:]}", ""
    p = prun(["cmake", "--build", bdir, "-j2", "--target", "vfat"], timeout=900, cwd=REPO)
    if p.rc != 0:
        out = p.text + p.errtext
        first = next((ln.strip() for ln in out.splitlines() if "error:" in ln), out.strip()[-300:])
        if werror and "-Werror" in out:
            vfat, err, _ = build_fault(name, werror=False, src=src, preset=preset)
            if vfat:
                return vfat, None, f"built without -Werror ({first[:160]})"
        return None, f"build failed: {first[:300]}", ""
    return os.path.join(bdir, "vfat"), None, ""


def build_fuzz_fault(name, preset="fuzz"):
    """fuzz preset + fault: build-fuzzfault-NAME/fuzz/fuzz_ops -> (path, err);
    preset fuzz-ubsan: build-fuzzubsanfault-NAME/fuzz/fuzz_ops."""
    bdir = os.path.join(REPO, f"build-{preset.replace('-', '')}fault-{name}")
    if not os.path.isfile(os.path.join(bdir, "CMakeCache.txt")):
        p = prun(["cmake", "--preset", preset, "-B", bdir, f"-DVFAT_FAULT={name}"], timeout=300, cwd=REPO)
        if p.rc != 0:
            return None, f"fuzz configure failed: {(p.errtext or p.text).strip()[-300:]}"
    p = prun(["cmake", "--build", bdir, "-j2", "--target", "fuzz_ops"], timeout=1800, cwd=REPO)
    if p.rc != 0:
        return None, f"fuzz build failed: {(p.errtext or p.text).strip()[-300:]}"
    return os.path.join(bdir, "fuzz", "fuzz_ops"), None
