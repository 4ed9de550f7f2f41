#!/usr/bin/python3
"""Kernel oracle throughput: one persistent VM vs one boot per image.

    bench/bench_kernel.py [--images N] [--naive K] [--size KIB] [--writer]

Makes N distinct FAT images (mkfs.fat + mtools: long names, CJK, a
subdirectory, a few KiB of data each), reads all of them with the kernel
reader keeping ONE QEMU guest alive, then with a busybox shell lister in
the same guest (mount, find/stat, sha256sum, umount), then K of them the naive way
(a fresh VM booted and shut down per image), in the same run, and prints
a table with images/s and the ratio. --writer also times the writer
(an 8-op script per image) on the persistent VM.
Env: VFAT_BUILD (guest build in $VFAT_BUILD/kernel, built when missing).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, SRC)

from vfz.oracles import kernel as K  # noqa: E402
from vfz.oracles.kernel.vm import encode_image, s  # noqa: E402
from vfz import opscript# noqa: E402


def make_images(tmp, n, kib):
    rc = os.path.join(tmp, "mtoolsrc")
    with open(rc, "w") as f:
        f.write("mtools_skip_check=1\ndefault_codepage=437\n")
    env = dict(os.environ, MTOOLSRC=rc, MTOOLS_SKIP_CHECK="1", LC_ALL="C.UTF-8")
    base = os.path.join(tmp, "base.img")
    subprocess.run(["mkfs.fat", "-C", base, str(kib)], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["mmd", "-i", base, "::/Sub dir", "::/中文"], check=True, env=env)
    out = []
    for i in range(n):
        img = os.path.join(tmp, f"img{i:04d}.img")
        shutil.copyfile(base, img)
        files = []
        for j in range(3):
            src = os.path.join(tmp, f"c{j}")
            with open(src, "wb") as f:
                f.write(opscript.content(i * 7 + j, 1000 + 997 * ((i + j) % 9)))
            files.append(src)
        subprocess.run(["mcopy", "-i", img, files[0], f"::/file number {i} with a long name.txt"],
                       check=True, env=env)
        subprocess.run(["mcopy", "-i", img, files[1], f"::/Sub dir/N{i}.BIN"], check=True, env=env)
        subprocess.run(["mcopy", "-i", img, files[2], f"::/中文/文件 {i}.dat"], check=True, env=env)
        out.append(img)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=200)
    ap.add_argument("--naive", type=int, default=3)
    ap.add_argument("--size", type=int, default=8192, help="image size in KiB")
    ap.add_argument("--writer", action="store_true")
    a = ap.parse_args()
    if a.images < 1 or a.naive < 1:
        print("bench_kernel: --images and --naive must be >= 1", file=sys.stderr)
        return 2
    build = K.default_build_dir()
    err = K.ensure_build(build)
    if err:
        print(f"bench_kernel: {err}", file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="vfz-kbench-")
    try:
        t0 = time.monotonic()
        imgs = make_images(tmp, a.images, a.size)
        print(f"made {len(imgs)} images of {a.size} KiB in {time.monotonic() - t0:.1f} s")

        # persistent: one VM for the whole batch (boot counted separately)
        r = K.KernelReader(build_dir=build)
        t0 = time.monotonic()
        vm = r.vm()
        boot = time.monotonic() - t0
        t0 = time.monotonic()
        res = r.read_many(imgs)
        pers = time.monotonic() - t0
        bad = [x for x in res if x.error or not x.listing or len(x.listing) != 5]
        nd = K.KernelReader(build_dir=build, drop_caches=False)
        t0 = time.monotonic()
        res_nd = nd.read_many(imgs)
        pers_nd = time.monotonic() - t0
        bad += [x for x in res_nd if x.error or not x.listing or len(x.listing) != 5]
        if bad:
            print(f"bench_kernel: {len(bad)} reads failed: {bad[0].error or bad[0].raw[:300]}",
                  file=sys.stderr)
            return 1

        # peer in the same VM: the lister done by busybox sh (mount, find +
        # stat, sha256sum, umount, drop caches) instead of the agent's walk
        sh = ("mount -t vfat -o ro,%s {dev} /mnt && cd /mnt && "
              "find . -exec stat -c '%%F|%%s|%%n' {{}} + && "
              "find . -type f -exec sha256sum {{}} + ; cd /; umount /mnt; "
              "echo 3 > /proc/sys/vm/drop_caches" % K.DEFAULT_OPTIONS)
        t0 = time.monotonic()
        for img in imgs:
            with open(img, "rb") as f:
                data = f.read()
            (ist, ip), = vm.pipeline([("I", encode_image(data))], 30.0)
            dev = ip.decode().split()[-1]
            (sst, sp), (_, kp) = vm.pipeline([("S", s(sh.format(dev=dev))), ("K", b"")], 30.0)
            out = sp.decode("utf-8", "replace")
            if ist != "o" or not out.startswith("rc=0") or out.count("regular file|") != 3:
                print(f"bench_kernel: shell lister failed: {ip!r} {out[:300]}", file=sys.stderr)
                return 1
        shell = time.monotonic() - t0

        # naive: boot, read one image, power off; K times
        naive_r = K.KernelReader(build_dir=build, persistent=False)
        t0 = time.monotonic()
        for img in imgs[:a.naive]:
            x = naive_r.read(img)
            if x.error or len(x.listing) != 5:
                print(f"bench_kernel: naive read failed: {x.error}", file=sys.stderr)
                return 1
        naive = time.monotonic() - t0

        wtime = None
        if a.writer:
            ops = opscript.parse('mkdir "/bench dir"\ncreate "/bench dir/a long name.txt" 3000 1\n'
                                 'create "/B.TXT" 100 2\nrename "/B.TXT" "/bench dir/b moved.txt"\n'
                                 'write "/bench dir/a long name.txt" 2900 500 3\nmkdir "/x"\n'
                                 'rmdir "/x"\nunlink "/bench dir/b moved.txt"\n')
            w = K.KernelWriter(build_dir=build)
            t0 = time.monotonic()
            for img in imgs:
                wr = w.apply(img, ops)
                if wr.error or wr.results != ["ok"] * 8:
                    print(f"bench_kernel: write failed: {wr.error} {wr.results}", file=sys.stderr)
                    return 1
            wtime = time.monotonic() - t0

        prate = len(imgs) / pers
        nrate = a.naive / naive
        print()
        print(f"{'method':<34}{'images':>8}{'seconds':>10}{'images/s':>10}{'ms/image':>10}")
        print(f"{'persistent VM (1 boot, agent)':<34}{len(imgs):>8}{pers:>10.2f}{prate:>10.1f}"
              f"{1000 / prate:>10.1f}")
        ndrate = len(imgs) / pers_nd
        print(f"{'persistent VM, no drop_caches':<34}{len(imgs):>8}{pers_nd:>10.2f}{ndrate:>10.1f}"
              f"{1000 / ndrate:>10.1f}")
        srate = len(imgs) / shell
        print(f"{'shell lister in the same VM':<34}{len(imgs):>8}{shell:>10.2f}{srate:>10.1f}"
              f"{1000 / srate:>10.1f}")
        print(f"{'naive (boot per image)':<34}{a.naive:>8}{naive:>10.2f}{nrate:>10.2f}"
              f"{1000 / nrate:>10.1f}")
        if wtime is not None:
            wr_ = len(imgs) / wtime
            print(f"{'writer, 8 ops, persistent VM':<34}{len(imgs):>8}{wtime:>10.2f}{wr_:>10.1f}"
                  f"{1000 / wr_:>10.1f}")
        print(f"\nboot of the persistent VM: {boot:.2f} s; "
              f"ratio persistent/naive: {prate / nrate:.1f}x; "
              f"agent/shell lister: {prate / srate:.2f}x")
        K.shutdown_all()
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
