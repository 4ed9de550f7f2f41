#!/usr/bin/python3
"""Images checked per second by each reader, over the same set of images.

    bench/bench_oracles.py [--images N] [--ops K] [--readers LIST] [--writer W]
                           [--writers LIST] [--json]

The images: N op-scripts from `vfat gen --seed i --ops K` (the core's
generator, every name class) applied by one writer (core-dual by default;
mtools when build/vfat is missing) to fresh FAT16 volumes. Every reader
then reads every image (the kernel oracle through read_many, its batch
form); a read is counted only when the reader did not fail. Output: one
row per reader with images/s, seconds per image and the ratio to the
fastest reader measured in the same run (and images/min). --writers also
times each listed writer applying every script to a fresh copy of the
empty volume (apply() only; rows "(writer W)", ratio to the fastest
writer). Not a test: nothing is asserted.
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

from vfz import oracles# noqa: E402
from vfz.oracles import core as core_oracle  # noqa: E402
from vfz import opscript
from vfz.check import diff# noqa: E402
from vfz.proc import run  # noqa: E402

DEFAULT_READERS = ["dosfsck", "mtools", "7z", "grub", "core", "kernel", "sleuthkit", "fatcat", "fusefat",
                   "fatfs"]


def scripts(n, k):
    ok, vfat = core_oracle.available()
    out = []
    for i in range(n):
        if ok:
            p = run([vfat, "gen", "--seed", str(i + 1), "--ops", str(k)], timeout=60)
            if p.rc == 0:
                out.append(opscript.parse(p.text))
                continue
        # fallback without the core: a fixed tree, varied by i
        text = f'mkdir "/d{i}"\n' + "".join(
            f'create "/d{i}/file number {j}.txt" {j * 97 % 5000} {j}\n' for j in range(k // 2))
        out.append(opscript.parse(text))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=8)
    ap.add_argument("--ops", type=int, default=40)
    ap.add_argument("--readers", default=",".join(DEFAULT_READERS))
    ap.add_argument("--writer", default=None)
    ap.add_argument("--writers", default="", help="writers to time as well (apply() per script)")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    writer = a.writer or ("core-dual" if core_oracle.available()[0] else "mtools")
    names = [x for x in a.readers.split(",") if x]
    tmp = tempfile.mkdtemp(prefix="vfz-bench-")
    rows = []
    try:
        images = []
        w = oracles.get_writer(writer)
        for i, ops in enumerate(scripts(a.images, a.ops)):
            img = os.path.join(tmp, f"img{i}.img")
            diff.mkfs(img, 16, 16 << 20, 0)
            wr = w.apply(img, ops, a.timeout)
            if wr.error:
                print(f"writer {writer} failed on image {i}: {wr.error}", file=sys.stderr)
                continue
            images.append(img)
        w.close()
        if not images:
            print("no images could be written", file=sys.stderr)
            return 2
        all_scripts = scripts(a.images, a.ops)
        empty = os.path.join(tmp, "empty.img")
        diff.mkfs(empty, 16, 16 << 20, 0)
        for n in [x for x in a.writers.split(",") if x]:
            try:
                wo = oracles.get_writer(n)
            except Exception as e:
                rows.append({"reader": f"(writer {n})", "error": f"{type(e).__name__}: {e}", "writer": True})
                continue
            try:
                secs, good, bad = 0.0, 0, 0
                for i, ops in enumerate([all_scripts[0]] + all_scripts):   # the first: warm-up
                    img = os.path.join(tmp, f"w-{n}.img")
                    shutil.copyfile(empty, img)
                    t0 = time.monotonic()
                    wr = wo.apply(img, ops, a.timeout)
                    if i == 0:
                        continue
                    secs += time.monotonic() - t0
                    good, bad = (good + 1, bad) if not wr.error else (good, bad + 1)
                rows.append({"reader": f"(writer {n})", "writer": True, "images": good, "failed": bad,
                             "seconds": round(secs, 3),
                             "images_per_s": round(good / secs, 2) if secs > 0 else None,
                             "s_per_image": round(secs / max(1, good + bad), 4)})
            finally:
                wo.close()
        for n in names:
            try:
                r = oracles.get_reader(n)
            except Exception as e:
                rows.append({"reader": n, "error": f"{type(e).__name__}: {e}"})
                continue
            try:
                # warm-up outside the timing (the kernel VM boots here)
                r.read(images[0], a.timeout)
                t0 = time.monotonic()
                res = r.read_many(images, a.timeout)
                secs = time.monotonic() - t0
                good = sum(1 for x in res if not x.error)
                rows.append({"reader": n, "images": good, "failed": len(res) - good,
                             "seconds": round(secs, 3),
                             "images_per_s": round(good / secs, 2) if secs > 0 else None,
                             "s_per_image": round(secs / max(1, len(res)), 4)})
            finally:
                r.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for kind in (False, True):
        best = max((x["images_per_s"] or 0 for x in rows
                    if "images_per_s" in x and bool(x.get("writer")) == kind), default=0)
        for x in rows:
            if x.get("images_per_s") and best and bool(x.get("writer")) == kind:
                x["ratio_to_fastest"] = round(x["images_per_s"] / best, 3)
    for x in rows:
        if x.get("images_per_s"):
            x["images_per_min"] = round(x["images_per_s"] * 60)
    if a.json:
        print(json.dumps({"writer": writer, "images": len(images), "rows": rows}, indent=1))
    else:
        print(f"{len(images)} images written by {writer} ({a.ops} ops each), FAT16 16 MiB")
        print(f"{'reader':<18} {'images/s':>9} {'images/min':>10} {'s/image':>9} {'x fastest':>9}  failed")
        for x in rows:
            if "error" in x:
                print(f"{x['reader']:<18} unavailable: {x['error']}")
                continue
            print(f"{x['reader']:<18} {x['images_per_s']:>9} {x.get('images_per_min', '-'):>10} "
                  f"{x['s_per_image']:>9} {x.get('ratio_to_fastest', '-'):>9}  {x['failed']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
