#!/usr/bin/python3
"""What vfz.lifeline adds to starting a tool, measured in one run.

    bench/bench_lifeline.py [--n 300] [--json]

Rows (milliseconds, median of N, interleaved so load hits both alike):
  plain       subprocess.Popen(["true"], start_new_session=True) + wait()
  lifeline    lifeline.Popen(["true"]) + wait(): register (a /proc read and
              a pipe write) and release (a pipe write)
  proc.run    vfz.proc.run(["true"]) (lifeline.Popen + communicate + wait4)
and, once per harness process: the first lifeline.Popen (it spawns the
watcher) against the next ones, and the watcher's CPU time and resident
memory once it waits in read(). Not a test: nothing is asserted.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import lifeline, proc# noqa: E402


def ms(fn):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    first = ms(lambda: lifeline.Popen(["true"]).wait())
    second = ms(lambda: lifeline.Popen(["true"]).wait())
    rows = {"plain": [], "lifeline": [], "proc.run": []}
    for _ in range(a.n):
        rows["plain"].append(ms(lambda: subprocess.Popen(["true"], start_new_session=True).wait()))
        rows["lifeline"].append(ms(lambda: lifeline.Popen(["true"]).wait()))
        rows["proc.run"].append(ms(lambda: proc.run(["true"])))
    w = lifeline.watcher_pid()
    time.sleep(0.5)
    with open(f"/proc/{w}/stat") as f:
        st = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    with open(f"/proc/{w}/status") as f:
        rss = next(int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:"))
    out = {"n": a.n, "load": os.getloadavg()[0],
           "median_ms": {k: round(statistics.median(v), 3) for k, v in rows.items()},
           "first_popen_ms": round(first, 2), "second_popen_ms": round(second, 2),
           "watcher_cpu_s": (int(st[11]) + int(st[12])) / tick, "watcher_rss_kb": rss,
           "left_registered": len(lifeline.registered())}
    if a.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:18} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
