"""`vfatfuzz setup` (and the setup half of `vfatfuzz test`): install and build what the harness needs.

setup: install the Debian packages that are missing (dpkg-query first, so a
second run needs no network) and the oracles' own installs (the Node oracles: npm ci, npm_ci),
configure and build the default, asan, fuzz and fuzz-ubsan presets (the
main job runs fuzz_ops), then build the kernel oracles if their build scripts exist.
test: setup, then `ctest --preset default` and `ctest --preset asan -L core`;
prints "N passed, N failed" and exits non-zero on any failure.
"""
import os
import re
import shutil
import subprocess
import sys
import time

from vfz import REPO# noqa: E402

# what builds and runs the harness itself; each oracle's own packages are
# its registry entry's needs (vfz.oracles), added below
BUILD_PACKAGES = ["cmake", "gcc", "clang", "llvm", "libclang-rt-14-dev", "make", "python3-matplotlib",
                  "python3-yaml", "xz-utils", "afl++",
                  # tests/test_report.py renders the report page in headless Chromium
                  "chromium", "xxd",
                  # the hostile campaign signs a stock tool's crash by a gdb run
                  # (vfz/hostile/backtrace.py); out-of-bounds reproducers trace with strace
                  "gdb", "strace"]


def oracle_packages():
    """The Debian packages every registered oracle needs ("npm:" needs are
    the oracle's own install step)."""
    from vfz import oracles
    out = []
    for e in oracles.entries().values():
        out += [n for n in e.needs if not n.startswith("npm:") and n not in out]
    return out


PACKAGES = BUILD_PACKAGES + [p for p in oracle_packages() if p not in BUILD_PACKAGES]
# the presets setup builds: the core and CLI, its asan twin (the suite runs
# the core's tests under it), the fuzz targets (ASan + UBSan: they judge,
# minimise and replay), and fuzz_ops under UBSan alone, which the main job
# fuzzes with (vfz.campaign.fuzzer.fuzz_ops_fast_binary says why)
PRESETS = ("default", "asan", "fuzz", "fuzz-ubsan")
KERNEL_BUILDS = ["vfz/oracles/kernel/build.sh", "vfz/oracles/kernel-nodual/build.sh"]


def log(msg):
    print(f"[vfatfuzz] {msg}", flush=True)


def missing_packages(pkgs=PACKAGES):
    missing = []
    for p in pkgs:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        if r.returncode != 0 or "install ok installed" not in r.stdout:
            missing.append(p)
    return missing


def _sh(argv, cwd=REPO, env=None):
    log("$ " + " ".join(argv))
    e = dict(os.environ)
    if env:
        e.update(env)
    return subprocess.run(argv, cwd=cwd, env=e).returncode


def install(pkgs):
    prefix = []
    if os.geteuid() != 0:
        if shutil.which("sudo"):
            prefix = ["sudo", "-n"]
        else:
            log(f"missing packages {' '.join(pkgs)} and not root (no sudo): install them as root")
            return 1
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    rc = _sh(prefix + ["apt-get", "update"], env=env)
    if rc != 0:
        log("apt-get update failed")
        return rc
    return _sh(prefix + ["apt-get", "install", "-y", "--no-install-recommends"] + pkgs, env=env)


def oracle_installs():
    """Each oracle module's own install step (`install(sh, apt)`, e.g. the
    FatFs oracle's npm ci), in registry order. -> 0 or the first failure."""
    import importlib
    from vfz import oracles
    for m in oracles.MODULES:
        f = getattr(importlib.import_module(m), "install", None)
        if f is not None:
            rc = f(_sh, install)
            if rc != 0:
                log(f"{m}: install step failed")
                return rc
    return 0


def setup(skip_kernel=False):
    t0 = time.monotonic()
    miss = missing_packages()
    if miss:
        log("installing: " + " ".join(miss))
        if install(miss) != 0:
            log("package installation failed")
            return 1
    else:
        log("all Debian packages present")
    if oracle_installs() != 0:
        return 1
    for preset in PRESETS:
        if _sh(["cmake", "--preset", preset]) != 0:
            log(f"cmake configure ({preset}) failed")
            return 1
        if _sh(["cmake", "--build", "--preset", preset, "-j2"]) != 0:
            log(f"build ({preset}) failed")
            return 1
    if not skip_kernel:
        for b in KERNEL_BUILDS:
            path = os.path.join(REPO, b)
            if os.path.exists(path):
                if _sh(["bash", path]) != 0:
                    log(f"{b} failed")
                    return 1
            else:
                log(f"{b} not present; kernel oracle skipped")
    log(f"setup done in {time.monotonic() - t0:.0f}s")
    return 0


_SUMMARY = re.compile(r"(\d+)% tests passed, (\d+) tests? failed out of (\d+)")


def ctest(argv):
    """Run ctest streaming its output; -> (passed, failed, rc)."""
    log("$ " + " ".join(argv))
    p = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         errors="replace")
    passed = failed = None
    for line in p.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        m = _SUMMARY.search(line)
        if m:
            failed = int(m.group(2))
            passed = int(m.group(3)) - failed
    rc = p.wait()
    if passed is None:
        passed, failed = 0, (1 if rc != 0 else 0)
    return passed, failed, rc


def test(skip_setup=False):
    if not skip_setup:
        if setup() != 0:
            print("0 passed, 1 failed (setup)")
            return 1
    tp = tf = 0
    bad = False
    for argv in (["ctest", "--preset", "default"], ["ctest", "--preset", "asan", "-L", "core"]):
        p, f, rc = ctest(argv)
        tp += p
        tf += f
        bad |= rc != 0
    print(f"{tp} passed, {tf} failed")
    return 1 if (tf or bad) else 0


HELP = "install missing Debian packages, configure and build (idempotent)"


def add_arguments(p):
    p.add_argument("--skip-kernel", action="store_true", help="do not build the kernel oracles")


def run(args):
    return setup(skip_kernel=args.skip_kernel)
