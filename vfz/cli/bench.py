"""vfatfuzz bench: run the benchmarks of bench/ and print their tables.

Each bench/bench_*.py measures the project against a peer in the same run
(the core against mcopy, the persistent kernel VM against one boot per
image, the oracles against each other, the fuzz targets' exec/s) and
reports ratios; this command only runs them in turn (or the ones named)
after making sure the builds exist. Benchmarks are never tests.
"""
import glob
import os
import subprocess
import sys

from vfz.cli import setup

HELP = "run the benchmarks (bench/bench_*.py): ratios against peers measured in the same run"


def add_arguments(p):
    p.add_argument("names", nargs="*", help="benchmarks to run (e.g. core kernel oracles); default all")
    p.add_argument("--no-setup", action="store_true", help="skip setup (builds already there)")
    p.add_argument("--quick", action="store_true", help="pass --quick to benchmarks that take it")


def available():
    out = {}
    for path in sorted(glob.glob(os.path.join(setup.REPO, "bench", "bench_*.py"))):
        out[os.path.basename(path)[6:-3]] = path
    return out


def run(args):
    benches = available()
    unknown = [n for n in args.names if n not in benches]
    if unknown:
        sys.stderr.write(f"vfatfuzz bench: unknown benchmark {unknown[0]!r} "
                         f"(known: {', '.join(benches)})\n")
        return 2
    if not args.no_setup and setup.setup() != 0:
        return 2
    env = dict(os.environ, VFAT_BUILD=os.path.join(setup.REPO, "build"))
    rc = 0
    for name in args.names or list(benches):
        path = benches[name]
        argv = ["/usr/bin/python3", path]
        if args.quick:
            with open(path, encoding="utf-8") as f:
                if "--quick" in f.read():
                    argv.append("--quick")
        print(f"== bench {name}: {' '.join(argv)}", flush=True)
        r = subprocess.run(argv, cwd=setup.REPO, env=env)
        if r.returncode != 0:
            print(f"== bench {name} failed (exit {r.returncode})", flush=True)
            rc = 1
    return rc
