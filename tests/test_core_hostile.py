"""Hostile images: the core must survive any bytes (issue "VFAT core library").

A seeded generator mutates a few well-formed base images (written by the
core and by real mkfs.fat, FAT12/16/32, dual and nodual): bit flips, byte
runs, truncation, absurd or swapped BPB fields, FAT entries that loop or
point out of range, directory slots overwritten with random LFN or short
entries. Each mutant goes through `vfat ls`, `vfat check` and `vfat apply`
of a small op-script, each under a timeout. Required: no sanitizer report,
no signal, no hang, every exit code in {0, 1, 2}, and an exit 2 says why on
stderr. Under the asan preset ($VFAT_BUILD = build-asan) this is the real
test.

  VFZ_HOSTILE_SEED   base seed (default 20261203; printed)
  VFZ_HOSTILE_COUNT  number of mutants (default 1200)
  VFZ_HOSTILE_KEEP   directory to keep failing images in (default
                     /tmp/vfz-hostile-failures)

Mutant i is fully determined by (seed, i): rerun one with
VFZ_HOSTILE_SEED=S VFZ_HOSTILE_ONLY=i.
"""
import json
import os
import random
import shutil
import sys
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util_images as U  # noqa: E402

SEED = int(os.environ.get("VFZ_HOSTILE_SEED", "20261203"))
COUNT = int(os.environ.get("VFZ_HOSTILE_COUNT", "1200"))
ONLY = os.environ.get("VFZ_HOSTILE_ONLY")
TIMEOUT = 20.0   # per command; generous for ASan on a loaded 2-core machine

APPLY_SCRIPT = """mkdir "/hostile dir"
create "/hostile dir/a long file name.txt" 5000 1
create "/SHORT.TXT" 700 2
write "/SHORT.TXT" 4000 100 3
rename "/SHORT.TXT" "/renamed long name"
create "/x" 1 4
unlink "/x"
rmdir "/hostile dir"
"""

APPLY_MODES = (["--names", "nodual"], ["--names", "dual"], ["--names", "nodual", "--dummy", "v3"],
               ["--names", "nodual", "--unique"], ["--names", "dual", "--shortname", "lower"])

# BPB fields: (offset, size)
BPB_FIELDS = {
    "bps": (11, 2), "spc": (13, 1), "reserved": (14, 2), "nfats": (16, 1),
    "rootent": (17, 2), "tot16": (19, 2), "media": (21, 1), "spf16": (22, 2),
    "tot32": (32, 4), "spf32": (36, 4), "extflags": (40, 2), "rootclus": (44, 4),
    "fsinfo": (48, 2), "backup": (50, 2),
}


def absurd(rng, size):
    top = (1 << (8 * size)) - 1
    return rng.choice([0, 1, 2, 3, top, top - 1, top >> 1, (top >> 1) + 1,
                       1 << rng.randrange(8 * size), rng.randrange(top + 1), 512, 4096,
                       0x8000]) & top


def mutate(base, rng):
    """One mutant of base (bytes) and a description of what was done."""
    img = bytearray(base)
    done = []
    try:
        fat = U.RawFat(bytes(img))
        meta_end = min(len(img), fat.data_off + 16 * fat.csize)
    except Exception:
        fat, meta_end = None, min(len(img), 65536)
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["bits", "bits", "run", "bpb", "bpb", "swap", "fat", "fat",
                           "lfn", "lfn", "short", "dirloop", "truncate"])
        if kind == "bits":
            n = rng.randint(1, 24)
            for _ in range(n):
                off = rng.randrange(meta_end if rng.random() < 0.9 else len(img))
                img[off] ^= 1 << rng.randrange(8)
            done.append(f"bits{n}")
        elif kind == "run":
            off = rng.randrange(meta_end)
            ln = rng.randint(1, 128)
            val = rng.choice([0x00, 0xFF, 0xE5, 0x20, None])
            for k in range(off, min(len(img), off + ln)):
                img[k] = rng.randrange(256) if val is None else val
            done.append(f"run@{off}+{ln}")
        elif kind == "bpb":
            name = rng.choice(list(BPB_FIELDS))
            off, sz = BPB_FIELDS[name]
            img[off:off + sz] = absurd(rng, sz).to_bytes(sz, "little")
            done.append(f"bpb:{name}")
        elif kind == "swap":
            a, b = rng.sample(list(BPB_FIELDS), 2)
            (oa, sa), (ob, sb) = BPB_FIELDS[a], BPB_FIELDS[b]
            va = int.from_bytes(img[oa:oa + sa], "little")
            vb = int.from_bytes(img[ob:ob + sb], "little")
            img[oa:oa + sa] = (vb & ((1 << 8 * sa) - 1)).to_bytes(sa, "little")
            img[ob:ob + sb] = (va & ((1 << 8 * sb) - 1)).to_bytes(sb, "little")
            done.append(f"swap:{a},{b}")
        elif kind == "fat" and fat is not None:
            used = [c for c in range(2, min(fat.nclus + 2, 4096)) if fat.get(c) != 0]
            if not used:
                continue
            c = rng.choice(used)
            v = rng.choice([c, max(2, c - rng.randint(0, 5)), fat.nclus + rng.randint(2, 50),
                            1, 0, rng.choice(used), 0xFF7, 0xFFF7, 0x0FFFFFF7, 0xFFFFFFFF,
                            rng.randrange(1 << 28)])
            set_fat(img, fat, c, v)
            done.append(f"fat[{c}]={v:#x}")
        elif kind in ("lfn", "short") and fat is not None:
            slots = [off for _, ss in fat.walk() for off, _ in ss]
            if not slots:
                continue
            off = rng.choice(slots)
            if kind == "lfn":
                img[off:off + 32] = random_lfn(rng)
            else:
                img[off:off + 32] = random_short(rng, fat)
            done.append(f"{kind}@{off}")
        elif kind == "dirloop" and fat is not None:
            # a subdirectory entry pointing at its own parent, the root, or
            # another directory: a cycle in the tree
            dirs = [(d, off) for d, ss in fat.walk() for off, raw in ss
                    if raw[0] not in (0xE5, 0x2E) and raw[11] != 0x0F and raw[11] & 0x10]
            if not dirs:
                continue
            parent, off = rng.choice(dirs)
            target = rng.choice([parent, fat.root_clus if fat.fat32 else 0, rng.choice(dirs)[0]])
            img[off + 26:off + 28] = (target & 0xFFFF).to_bytes(2, "little")
            if fat.fat32:
                img[off + 20:off + 22] = (target >> 16).to_bytes(2, "little")
            done.append(f"dirloop@{off}->{target}")
        elif kind == "truncate":
            cut = rng.choice([rng.randrange(0, 512), rng.randrange(0, len(img)),
                              len(img) - rng.randint(1, 4096)])
            del img[max(0, cut):]
            done.append(f"truncate{len(img)}")
            break
    return bytes(img), done


def set_fat(img, fat, c, v):
    for k in range(max(1, fat.nfats if fat.nfats < 4 else 1)):
        base = fat.fat_off + k * fat.spf * fat.bps
        if fat.bits == 12:
            o = base + c * 3 // 2
            if o + 1 >= len(img):
                return
            w = img[o] | (img[o + 1] << 8)
            w = ((w & 0x000F) | ((v & 0xFFF) << 4)) if c & 1 else ((w & 0xF000) | (v & 0xFFF))
            img[o], img[o + 1] = w & 0xFF, w >> 8
        elif fat.bits == 16:
            o = base + 2 * c
            if o + 2 <= len(img):
                img[o:o + 2] = (v & 0xFFFF).to_bytes(2, "little")
        else:
            o = base + 4 * c
            if o + 4 <= len(img):
                img[o:o + 4] = (v & 0xFFFFFFFF).to_bytes(4, "little")


def random_lfn(rng):
    e = bytearray(32)
    e[0] = rng.choice([rng.randint(1, 20), 0x40 | rng.randint(1, 20), rng.randrange(256)])
    e[11] = 0x0F
    e[12] = rng.choice([0, rng.randrange(256)])
    e[13] = rng.randrange(256)   # checksum
    units = [rng.choice([0x0000, 0xFFFF, 0x0041, 0x00E9, 0xD83D, 0xDE00, 0xDC00, 0x002F,
                         0x002A, 0x0001, rng.randrange(0x10000)]) for _ in range(13)]
    pos = [1, 3, 5, 7, 9, 14, 16, 18, 20, 22, 24, 28, 30]
    for p, u in zip(pos, units):
        e[p:p + 2] = u.to_bytes(2, "little")
    if rng.random() < 0.8:
        e[26:28] = b"\0\0"
    return bytes(e)


def random_short(rng, fat):
    e = bytearray(rng.randbytes(32))
    if rng.random() < 0.5:
        e[0:11] = rng.choice([b".          ", b"..         ", b" \x00\x01\x02\x03\x04\x05\x06/\x00\x00",
                              b"FILE    TXT", b"\xe5ELETED   ", b"\x05IGMA     "])
    e[11] = rng.choice([0x10, 0x20, 0x08, 0x0F, 0x00, 0x16, rng.randrange(256)])
    clus = rng.choice([0, 1, 2, fat.nclus + 1, fat.nclus + 2, 0xFFFF, rng.randrange(1 << 28)])
    e[26:28] = (clus & 0xFFFF).to_bytes(2, "little")
    e[20:22] = ((clus >> 16) & 0xFFFF).to_bytes(2, "little")
    e[28:32] = rng.choice([0, 1, 0xFFFFFFFF, rng.randrange(1 << 32)]).to_bytes(4, "little")
    return bytes(e)


def build_bases(tmp):
    """Well-formed images to mutate: [(name, bytes)]."""
    bases = []
    gen = U.core_gen(5, 40)

    def core(name, fs, mode, script, size=None, fat=None, cluster=None):
        img = os.path.join(tmp, name)
        U.core_mkfs(img, fs, size=size, fat=fat, cluster=cluster)
        U.core_apply(img, script, mode, seed=3)
        with open(img, "rb") as f:
            bases.append((name, f.read()))

    core("fat12-dual.img", "fat12", "dual", gen, size="512K")
    core("fat12-v1.img", "fat12", "v1", gen + APPLY_SCRIPT.replace("rmdir", "# rmdir"), size="256K")
    core("fat16-v3.img", "fat16", "v3", gen, size="5M", fat="16", cluster="512")
    # FAT32 small enough to mutate quickly: real mkfs.fat accepts it (with a
    # warning), the core reads FAT32 by its BPB as Linux does
    img = os.path.join(tmp, "fat32-mkfs.img")
    U.mkfs_fat(img, 2048, "-F", "32", "-s", "1", "-S", "512")
    U.core_apply(img, gen, "dual", seed=3)
    with open(img, "rb") as f:
        bases.append(("fat32-mkfs.img", f.read()))
    img = os.path.join(tmp, "fat12-mkfs-4k.img")
    U.mkfs_fat(img, 1024, "-F", "12", "-S", "4096", "-s", "1", "-r", "128")
    U.core_apply(img, gen, "v1", seed=3)
    with open(img, "rb") as f:
        bases.append(("fat12-mkfs-4k.img", f.read()))
    return bases


def run_one(vfat, work, idx, name, data, apply_ops):
    """Run ls/check/apply on one mutant; [] or a list of problem strings."""
    img = os.path.join(work, f"m{idx}.img")
    with open(img, "wb") as f:
        f.write(data)
    problems = []
    for argv in ([vfat, "ls", img], [vfat, "check", img],
                 [vfat, "apply", img, apply_ops, *APPLY_MODES[idx % len(APPLY_MODES)],
                  "--seed", str(idx)]):
        cp = U.run(argv, timeout=TIMEOUT)
        err = cp.stderr.decode("utf-8", "replace")
        cmd = argv[1]
        if cp.timed_out:
            problems.append(f"{cmd}: hang (timeout {TIMEOUT:g}s)")
        elif cp.returncode < 0:
            problems.append(f"{cmd}: killed by signal {-cp.returncode}\n{err[-3000:]}")
        elif U.SANITIZER_RE.search(err):
            problems.append(f"{cmd}: sanitizer report (exit {cp.returncode})\n{err[-3000:]}")
        elif cp.returncode not in (0, 1, 2):
            problems.append(f"{cmd}: exit {cp.returncode}\n{err[-2000:]}")
        elif cp.returncode == 2 and not err.strip():
            problems.append(f"{cmd}: exit 2 without a message on stderr")
        elif cp.returncode == 1 and cmd != "check":
            problems.append(f"{cmd}: exit 1 (only check may exit 1)")
        elif cp.returncode == 0 and cmd in ("ls", "apply"):
            # what it printed must still be well-formed JSON lines
            try:
                for line in cp.stdout.decode("utf-8").splitlines():
                    json.loads(line)
            except (UnicodeDecodeError, ValueError) as e:
                problems.append(f"{cmd}: exit 0 but output is not JSON lines: {e}")
    os.unlink(img)
    return problems


class HostileImagesTest(unittest.TestCase):
    def test_regression_ls_empty_root(self):
        """Minimal case found by the mutants: `vfat ls` of an image whose
        root directory is empty called qsort(NULL, 0, ...) in cmd_ls
        (core/cli/vfat.c), undefined behaviour that UBSan reports."""
        tmp = U.tmpdir("vfz-hostile-empty-")
        try:
            img = os.path.join(tmp, "empty.img")
            U.core_mkfs(img, "fat12")
            cp = U.run([U.vfat_bin(), "ls", img], timeout=TIMEOUT)
            err = cp.stderr.decode("utf-8", "replace")
            self.assertFalse(U.SANITIZER_RE.search(err), err)
            self.assertEqual((cp.returncode, cp.stdout), (0, b""), err)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_mutants(self):
        vfat = U.vfat_bin()
        U.require("mkfs.fat")
        tmp = U.tmpdir("vfz-hostile-")
        keep = os.environ.get("VFZ_HOSTILE_KEEP") or "/tmp/vfz-hostile-failures"
        try:
            bases = build_bases(tmp)
            ops = os.path.join(tmp, "apply.ops")
            with open(ops, "w") as f:
                f.write(APPLY_SCRIPT)
            idxs = [int(ONLY)] if ONLY else list(range(COUNT))
            print(f"\nhostile: seed {SEED}, {len(idxs)} mutants of {len(bases)} bases, "
                  f"vfat {vfat} (rerun: VFZ_HOSTILE_SEED={SEED} VFZ_HOSTILE_ONLY=i)", flush=True)

            def job(i):
                rng = random.Random(SEED * 1000003 + i)
                name, base = bases[rng.randrange(len(bases))]
                data, what = mutate(base, rng)
                return i, name, what, data, run_one(vfat, tmp, i, name, data, ops)

            t0 = time.monotonic()
            failures = []
            last = t0
            with ThreadPoolExecutor(max_workers=2) as ex:
                for n, (i, name, what, data, probs) in enumerate(ex.map(job, idxs), 1):
                    if probs:
                        os.makedirs(keep, exist_ok=True)
                        path = os.path.join(keep, f"mutant-{SEED}-{i}.img")
                        with open(path, "wb") as f:
                            f.write(data)
                        failures.append(f"mutant {i} ({name}: {' '.join(what)}) -> {path}\n  "
                                        + "\n  ".join(probs))
                    now = time.monotonic()
                    if now - last > 10:
                        print(f"hostile: {n}/{len(idxs)} in {now - t0:.0f}s, "
                              f"{len(failures)} failing", flush=True)
                        last = now
            dt = time.monotonic() - t0
            print(f"hostile: {len(idxs)} mutants x 3 commands in {dt:.1f}s "
                  f"({1000 * dt / max(1, len(idxs)):.1f} ms/mutant), {len(failures)} failing", flush=True)
            self.assertEqual(failures, [], "\n".join(failures[:20]))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
