#!/usr/bin/python3
"""The kernel VM's I/O-bounds trace: images a minute with and without it.

    bench/bench_kernel_trace.py [--images N] [--rounds R] [--writer]

Makes N distinct FAT images (bench_kernel.make_images), then reads them all
R times with the kernel reader untraced (the image over the channel into
the guest's tmpfs) and traced (the image on the drive QEMU logs,
vfz/oracles/kernel/trace.py), alternating the two per round in the same
pooled VM, so both see the same load. Prints, per mode, images a minute
(wall), QEMU's CPU seconds an image (less sensitive to the other jobs on
the machine), the trace records an image, and the ratio. --writer does the
same for the writer (an 8-op script per image, on copies).
Env: VFAT_BUILD (guest build in $VFAT_BUILD/kernel).
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, SRC)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_kernel import make_images  # noqa: E402
from vfz import opscript  # noqa: E402
from vfz.oracles import kernel as K  # noqa: E402

OPS = opscript.parse('mkdir "/new"\ncreate "/new/a.txt" 3000 1\ncreate "/b.bin" 20000 2\n'
                     'write "/b.bin" 100 500 3\nrename "/b.bin" "/new/c.bin"\nmkdir "/new/d"\n'
                     'unlink "/new/a.txt"\nrmdir "/new/d"\n')


def one_pass(oracle, images, writer, tmp):
    vm = oracle.vm()
    cpu0, t0, records, errors = vm.cpu_seconds(), time.monotonic(), 0, 0
    for img in images:
        if writer:
            dst = os.path.join(tmp, "w.img")
            shutil.copyfile(img, dst)
            r = oracle.apply(dst, OPS)
            trace = oracle.last_iotrace
        else:
            r = oracle.read(img)
            trace = r.extra.get("iotrace")
        errors += bool(r.error)
        records += len(trace.accesses) if trace else 0
    return time.monotonic() - t0, (vm.cpu_seconds() or 0) - (cpu0 or 0), records, errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--writer", action="store_true")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="vfz-bench-ktrace-")
    try:
        images = make_images(tmp, a.images, 8192)
        cls = K.KernelWriter if a.writer else K.KernelReader
        modes = {"untraced": cls(), "traced": cls(iotrace=True)}
        modes["untraced"].vm()                      # the boot is not measured
        tot = {m: [0.0, 0.0, 0, 0, 0] for m in modes}
        print(f"load average at start: {os.getloadavg()}")
        for rnd in range(a.rounds):
            for m in (modes if rnd % 2 == 0 else dict(reversed(list(modes.items())))):
                wall, cpu, rec, err = one_pass(modes[m], images, a.writer, tmp)
                t = tot[m]
                t[0] += wall
                t[1] += cpu
                t[2] += rec
                t[3] += err
                t[4] += len(images)
        print(f"load average at end: {os.getloadavg()}")
        print(f"\n{'writer' if a.writer else 'reader'}, {a.images} images x {a.rounds} rounds\n")
        print("| mode | images/min (wall) | QEMU CPU s/image | trace records/image | errors |")
        print("|---|---|---|---|---|")
        for m, (wall, cpu, rec, err, n) in tot.items():
            print(f"| {m} | {60 * n / wall:.0f} | {cpu / n:.4f} | {rec / n:.1f} | {err} |")
        u, t = tot["untraced"], tot["traced"]
        print(f"\ntraced/untraced: wall per image {t[0] / u[0]:.2f}x, QEMU CPU per image {t[1] / u[1]:.2f}x")
    finally:
        K.shutdown_all()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
