#!/usr/bin/python3
"""The hostile campaign's VM verdicts (vfz/hostile/verdict.py) on real
guests: the stock 6.1 kernel in QEMU and U-Boot 2023.01 in QEMU.

No fake guest output: each verdict comes from a real volume or a real
signal to the real QEMU.
  - kernel, a real hostile volume (FAT32, FAT[3] = 3: a directory whose
    chain loops, reports/hostile/grub-hang-c0086ebc1f): the stock driver
    prints "FAT-fs (loop0): error, fat_get_cluster: detected the cluster
    chain loop"; the record reaches the verdict code through the oracle's
    kmsg and is no verdict (the driver refused the loop: correct
    behaviour), nor is the partial listing;
  - kernel, QEMU killed (SIGKILL) while the guest holds a request: a trap
    ("kernel VM died"), and the same reader object reads the next volume
    in a fresh VM;
  - kernel, a real WARNING: two directory entries (/P1, /P2) that share
    one cluster (a cross-linked directory: one patched cluster field).
    /P2's inode counts its links when first looked up (2: "." and "..");
    three directories made through /P1 land in the shared cluster, and
    moving them out through /P2 drops /P2's count 2 -> 1 -> 0 -> WARNING in
    drop_nlink (vfat_rename; the stock 6.1.192 guards only rmdir against
    it). The writer's kernel messages give the trap verdict; the same ops
    on the volume before the patch give none;
  - U-Boot, the same loop volume (reports/hostile/uboot-hang-66d1939cf4):
    fatls never returns to the prompt, so after the per-image limit the
    answer is a hang signed by what fatls printed last ("U-Boot no prompt
    during fatls after: ./ | ../"; the board is killed); a FAT16 volume whose
    root holds 2 entries (reports/hostile/uboot-hang-14744cac8e) hangs the
    same command with QEMU's own last words, another signature;
  - U-Boot, two directories whose cluster is 0 (the root again: each holds
    itself and the other): every fatls answers and the walk is cut by the
    image's time limit, which is no hang (the glue's budget);
  - U-Boot, QEMU gone while fatls runs (it runs with -no-reboot, so a
    guest reset ends QEMU the same way): a trap ("QEMU exited during
    fatls after: ./ | ../": the command and its last words, not its path,
    so one bug is one signature), then
    the next volume boots a fresh board and reads right.
"""
import lzma
import os
import struct
import subprocess
import shutil
import signal
import sys
import tempfile
import threading
import time
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import oracles, opscript# noqa: E402
from vfz.hostile import verdict as hv# noqa: E402
from vfz.fatimg import Fat  # noqa: E402

LOOP_FAT32 = os.path.join(REPO, "reports", "hostile", "grub-hang-c0086ebc1f")
LOOP_UBOOT = os.path.join(REPO, "reports", "hostile", "uboot-hang-66d1939cf4")
ROOT2_UBOOT = os.path.join(REPO, "reports", "hostile", "uboot-hang-14744cac8e")
VFAT = os.path.join(os.environ.get("VFAT_BUILD") or os.path.join(REPO, "build"), "vfat")
# /P2 is looked up first (its links counted: 2), the directories are made
# through /P1, each is moved out through /P2 (the same-name rename first
# moves the cached dentry from /P1 to /P2, so the lookup does not ESTALE)
CROSS_OPS = ('create "/P2/f" 1 1\n' + "".join(f'mkdir "/P1/{d}"\n' for d in "ABC")
             + "".join(f'rename "/P2/{d}" "/P2/{d}"\nrename "/P2/{d}" "/{d}"\n' for d in "ABC"))


def cross_linked_dirs(tmp):
    """(volume with /P1 and /P2, the same with /P2's cluster field set to
    /P1's cluster): FAT16 4 MiB by the core."""
    base = os.path.join(tmp, "dirs.img")
    ops = os.path.join(tmp, "dirs.txt")
    with open(ops, "w") as f:
        f.write('mkdir "/P1"\nmkdir "/P2"\n')
    subprocess.run([VFAT, "mkfs", base, "--size", "4M", "--fat", "16"], check=True, capture_output=True)
    subprocess.run([VFAT, "apply", base, ops, "--names", "dual"], check=True, capture_output=True)
    with open(base, "rb") as f:
        seed = f.read()
    ents = {name: (off, cl) for off, name, attr, cl, size, lfns in Fat(seed).short_entries(None)}
    (_, p1_cl), (p2_off, p2_cl) = ents[b"P1         "], ents[b"P2         "]
    assert p1_cl != p2_cl
    bad = bytearray(seed)
    struct.pack_into("<H", bad, p2_off + 26, p1_cl)
    return seed, bytes(bad)


def unpack(d, name):
    with open(os.path.join(d, name), "rb") as f:
        return lzma.decompress(f.read())


def qemu_children():
    """pids of this process's QEMU children (the oracles start them)."""
    out = []
    me = os.getpid()
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                st = f.read()
        except OSError:
            continue
        comm = st[st.index("(") + 1:st.rindex(")")]
        ppid = int(st[st.rindex(")") + 2:].split()[1])
        if ppid == me and comm.startswith("qemu-system"):
            out.append(int(p))
    return out


def held_elsewhere(lock):
    """Whether another thread holds lock (an RLock: no locked() before 3.13)."""
    if lock.acquire(blocking=False):
        lock.release()
        return False
    return True


def read_in_thread(reader, path, timeout):
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("rr", reader.read(path, timeout)), daemon=True)
    t.start()
    return t, box


class T(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="vfz-test-htraps-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def path(self, name, data):
        p = os.path.join(self.tmp, name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def reader(self, name, **cfg):
        r = oracles.get_reader(name, **cfg)
        ok, why = r.available() if hasattr(r, "available") else (True, "")
        if not ok:
            self.skipTest(why)
        self.addCleanup(r.close)
        return r

    def test_kernel(self):
        loop = unpack(LOOP_FAT32, "hostile.img.xz")
        seed = unpack(LOOP_FAT32, "seed.img.xz")
        p_loop, p_seed = self.path("k-loop.img", loop), self.path("k-seed.img", seed)
        r = self.reader("kernel")
        rr = r.read(p_loop, 60)
        kmsg = rr.extra.get("kmsg") or []
        self.assertTrue(any("FAT-fs (loop" in m and "cluster chain loop" in m for m in kmsg), kmsg)
        self.assertIsNone(rr.error)
        self.assertEqual(hv.classify(rr, loop, None, 60), [])
        # QEMU dies while the guest holds a request (the agent's test hook
        # keeps it busy for 20 s, so the kill lands mid-request)
        slow = self.reader("kernel", hang_ms=20000)
        vm = slow.vm()                        # the pooled VM both readers use, booted
        self.assertIn(vm.proc.pid, qemu_children())
        t, box = read_in_thread(slow, p_seed, 60)
        # the request is in flight while the reader holds the VM's lock (it
        # sends its frames under it): a barrier, not a guess at the time
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not held_elsewhere(vm.lock) and t.is_alive():
            time.sleep(0.05)
        self.assertTrue(held_elsewhere(vm.lock), "the read never took the VM")
        time.sleep(0.5)                       # its frames written (the guest busy for 20 s)
        self.assertTrue(t.is_alive(), box.get("rr") and box["rr"].error)
        os.kill(vm.proc.pid, signal.SIGKILL)
        t.join(60)
        rr = box["rr"]
        vs = hv.classify(rr, seed, None, 60)
        self.assertEqual([(v.kind, v.message) for v in vs], [("trap", "kernel VM died")], rr.error)
        # the same reader object reads the next volume in a fresh VM
        slow.hang_ms = 0
        rr = slow.read(p_seed, 60)
        self.assertIsNone(rr.error)
        self.assertTrue(rr.listing)
        self.assertEqual(hv.classify(rr, seed, None, 60), [])

    def test_kernel_warning(self):
        seed, bad = cross_linked_dirs(self.tmp)
        ops = opscript.parse(CROSS_OPS)
        w = oracles.get_writer("kernel")
        self.addCleanup(w.close)
        got = {}
        for name, img in (("seed", seed), ("cross", bad)):
            p = self.path(f"w-{name}.img", img)
            wr = w.apply(p, ops, 120)
            got[name] = (wr, hv.classify(wr, timeout=120))
        wr, vs = got["cross"]
        self.assertIsNone(wr.error)
        self.assertEqual(wr.results, ["ok"] * len(ops), wr.raw[-2000:])
        self.assertEqual([v.kind for v in vs], ["trap"], wr.raw[-3000:])
        self.assertIn("WARNING", vs[0].message)
        self.assertIn("drop_nlink", vs[0].message)
        # signed by the call trace's first sure frames, not only the WARNING's line
        self.assertIn("< vfat_rename <", vs[0].message)
        # the well-formed volume: /P2's own directories, every op ok, no verdict
        wr, vs = got["seed"]
        self.assertIsNone(wr.error)
        self.assertEqual(vs, [], wr.raw[-2000:])
        self.assertIn("\n[kmsg]\n", wr.raw)        # its messages were read, and hold no trap

    def test_uboot(self):
        loop = unpack(LOOP_UBOOT, "hostile.img.xz")
        seed = unpack(LOOP_UBOOT, "seed.img.xz")
        p_loop, p_seed = self.path("u-loop.img", loop), self.path("u-seed.img", seed)
        r = self.reader("uboot")
        ok = r.read(p_seed, 120)
        self.assertIsNone(ok.error)
        self.assertTrue(ok.listing)
        # directories that hold themselves (two clusters set to 0: U-Boot lists the root for
        # each, so the tree doubles at every level): every fatls answers, the walk goes on
        # until the reader's cap of 4096 directories or, on a loaded machine, the image's
        # limit (in a round trip or between two): the glue's budget, no hang
        # (uboot-hang-a50d5e7c75). Unloaded, the cap comes first (3.5 s); at load 15-19
        # the limit did (31-35 s)
        own = bytearray(seed)
        for off in [e[0] for e in Fat(seed).short_entries(None)][:2]:
            own[off + 20:off + 22] = own[off + 26:off + 28] = b"\0\0"
        rr = r.read(self.path("u-own.img", bytes(own)), 10)
        if rr.error:
            self.assertIn("time limit", rr.error, "the walk ended on another error")
        else:
            self.assertIn("more than 4096 directories (a loop?)", rr.complaints,
                          "the walk ended before the cap and the limit")
        self.assertEqual(hv.classify(rr, bytes(own), None, 10), [], rr.error)
        # a real volume: fatls of the looping directory never gives the prompt back
        rr = r.read(p_loop, 8)
        vs = hv.classify(rr, loop, None, 8)
        # signed by what fatls printed last: the loop's "./" and "../" over and over
        self.assertEqual([(v.kind, v.message) for v in vs],
                         [("hang", "U-Boot no prompt during fatls after: ./ | ../")], rr.error)
        self.assertIn("./", rr.raw)
        # a second hang of the same command, another bug: a FAT16 root of 2 entries (one
        # patched BPB field) has U-Boot ask virtio for a zero-sized read, which QEMU refuses
        # ("zero sized buffers are not allowed") and U-Boot waits forever. Its own signature:
        # before, both were "U-Boot no prompt" and the second hid behind the first
        small = unpack(ROOT2_UBOOT, "hostile.img.xz")
        rr = r.read(self.path("u-root2.img", small), 8)
        vs2 = hv.classify(rr, small, None, 8)
        self.assertEqual([v.kind for v in vs2], ["hang"], rr.error)
        self.assertIn("zero sized buffers are not allowed", vs2[0].message)
        self.assertNotEqual(vs2[0].signature("uboot"), vs[0].signature("uboot"))
        # QEMU gone while fatls runs: the same path a guest reset takes (-no-reboot)
        t, box = read_in_thread(r, p_loop, 120)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and t.is_alive():
            b = r.board
            if b is not None and b.proc is not None and b.log.count(b"../") >= 5:
                os.kill(b.proc.pid, signal.SIGKILL)
                break
            time.sleep(0.2)
        t.join(60)
        rr = box["rr"]
        vs = hv.classify(rr, loop, None, 120)
        # the signature names the command, not its path (one bug, one finding)
        self.assertEqual([(v.kind, v.message) for v in vs],
                         [("trap", "QEMU exited during fatls after: ./ | ../")], rr.error)
        # the next volume boots a fresh board and reads right
        rr = r.read(p_seed, 120)
        self.assertIsNone(rr.error)
        self.assertEqual(sorted(e["path"] for e in rr.listing), sorted(e["path"] for e in ok.listing))


if __name__ == "__main__":
    unittest.main()
