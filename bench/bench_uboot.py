#!/usr/bin/python3
"""U-Boot oracle throughput beside the kernel VM, in the same run.

    bench/bench_uboot.py [--images N] [--ops K] [--no-kernel] [--json]

The images: N scripts from `vfat gen --seed i --ops K` (bench_oracles'
set; the campaign's script generator) written by core-dual to fresh
FAT16 16 MiB volumes. Rows, each images per minute of the oracle's own
time (warm-up outside the timing: the VMs boot there):
  uboot reader   one QEMU, images swapped in place (same size)
  uboot fresh    the same reads with a fresh boot per image (Board.kill
                 before each read): what the swap saves
  kernel reader  the kernel VM's read_many (its batch form: bench_oracles')
  kernel read()  the kernel VM, one read() per image (as the campaign calls it)
  uboot writer   the same scripts (renames dropped: U-Boot has none)
                 applied to fresh volumes
  kernel writer  the same renameless scripts
Not a test: nothing is asserted.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from vfz import oracles
from vfz.check import diff# noqa: E402
from bench_oracles import scripts  # noqa: E402


def timed(fn, items):
    t0 = time.monotonic()
    res = [fn(x) for x in items]
    secs = time.monotonic() - t0
    good = sum(1 for r in res if not r.error)
    return {"images": good, "failed": len(res) - good, "seconds": round(secs, 2),
            "per_min": round(60 * good / secs, 1) if secs > 0 else None,
            "errors": sorted({r.error[:120] for r in res if r.error})[:3]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=8)
    ap.add_argument("--ops", type=int, default=40)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--no-kernel", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="vfz-bench-uboot-")
    rows = {}
    try:
        all_ops = scripts(a.images, a.ops)
        images = []
        w = oracles.get_writer("core-dual")
        for i, ops in enumerate(all_ops):
            img = os.path.join(tmp, f"img{i}.img")
            diff.mkfs(img, 16, 16 << 20, 0)
            if not w.apply(img, ops, a.timeout).error:
                images.append(img)
        nr = [[o for o in ops if o.kind != "rename"] for ops in all_ops]

        def fresh(i):
            p = os.path.join(tmp, f"w{i}.img")
            diff.mkfs(p, 16, 16 << 20, 0)
            return p

        readers = ["uboot"] + ([] if a.no_kernel else ["kernel"])
        for n in readers:
            r = oracles.get_reader(n)
            try:
                r.read(images[0], a.timeout)                       # warm-up: boot
                if n == "kernel":
                    t0 = time.monotonic()
                    res = r.read_many(images, a.timeout)
                    secs = time.monotonic() - t0
                    good = sum(1 for x in res if not x.error)
                    rows["kernel reader"] = {"images": good, "failed": len(res) - good,
                                             "seconds": round(secs, 2),
                                             "per_min": round(60 * good / secs, 1)}
                    # one read() per image, as the campaign calls readers
                    rows["kernel read()"] = timed(lambda p: r.read(p, a.timeout), images)
                else:
                    rows["uboot reader"] = timed(lambda p: r.read(p, a.timeout), images)
                    rows["uboot reader"]["boots"] = r.boards.boots()

                    def cold(p):
                        r.board.kill()
                        return r.read(p, a.timeout)
                    rows["uboot fresh"] = timed(cold, images)
            finally:
                r.close()
        writers = ["uboot"] + ([] if a.no_kernel else ["kernel"])
        for n in writers:
            wr = oracles.get_writer(n)
            try:
                wr.apply(fresh(999), nr[0], a.timeout)              # warm-up: boot
                targets = [(fresh(i), ops) for i, ops in enumerate(nr)]
                rows[f"{n} writer"] = timed(lambda t: wr.apply(t[0], t[1], a.timeout), targets)
            finally:
                wr.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for kind in ("reader", "writer"):
        u, k = rows.get(f"uboot {kind}"), rows.get(f"kernel {kind}")
        if u and k and u.get("per_min") and k.get("per_min"):
            u["kernel_over_uboot"] = round(k["per_min"] / u["per_min"], 2)
    if a.json:
        print(json.dumps({"images": len(images), "ops": a.ops, "rows": rows}, indent=1))
    else:
        print(f"{len(images)} images (vfat gen, {a.ops} ops, core-dual), FAT16 16 MiB; load "
              f"{os.getloadavg()[0]:.1f}")
        print(f"{'oracle':<15} {'img/min':>8} {'seconds':>8} failed  kernel/uboot")
        for name, x in rows.items():
            print(f"{name:<15} {x['per_min']!s:>8} {x['seconds']:>8} {x['failed']:>6}  "
                  f"{x.get('kernel_over_uboot', '')}")
            for e in x.get("errors", []):
                print(f"    error: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
