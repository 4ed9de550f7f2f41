#!/usr/bin/python3
"""The dosfsck oracle's prediction for v1 images, against the real fsck.fat.

Many v1-dummy images (core-v1: `vfat apply --names nodual --dummy v1`) on
FAT12, FAT16 and FAT32 with 512..4096-byte clusters, made by mkfs.fat (root
volume label) and by `vfat mkfs` (none): directories and files with names of
1..255 characters, interleaved so that directories grow after their
children took clusters (LFN sets then cross into later, non-adjacent
clusters at every slot position), nested subdirectories, files with data,
some files deleted again (free gaps). For every image:

  * the real `fsck.fat -n` output, parsed (oracles.dosfsck.parse_fsck),
    equals the simulation (oracles.dosfsck.FsckSim) complaint for complaint:
    kind, path and message (the dummy's printed bytes aside);
  * expected_complaints(core-v1, the model's dirs, image=...) was computed
    from the image (the image agrees with the model) and equals fsck.fat's
    counts per kind, and its crossings (named exception fsck-v1-lfn-cross)
    are there exactly when fsck.fat's LFN deletion ran over live clusters.

It also checks that the cases it is about really occur: crossings with and
without visible effects, on FAT32 and on FAT12/16 subdirectories.
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest
from collections import Counter

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, REPO)

from vfz import oracles
from vfz.check import checker# noqa: E402
from vfz.oracles import core as core_oracle  # noqa: E402
from vfz.oracles.dosfsck import FsckSim, expected_complaints, parse_fsck  # noqa: E402
from vfz import model, opscript
from vfz.check import diff# noqa: E402

CORE_OK, CORE_WHY = core_oracle.available()

# (mkfs, FAT bits, size, cluster bytes): enough clusters for the FAT type
VOLUMES = [("mkfs.fat", 12, 1 << 20, 512), ("mkfs.fat", 12, 2 << 20, 1024),
           ("mkfs.fat", 12, 4 << 20, 2048), ("mkfs.fat", 12, 8 << 20, 4096),
           ("mkfs.fat", 16, 16 << 20, 512), ("mkfs.fat", 16, 16 << 20, 1024),
           ("mkfs.fat", 16, 32 << 20, 2048), ("mkfs.fat", 16, 64 << 20, 4096),
           ("mkfs.fat", 32, 34 << 20, 512), ("mkfs.fat", 32, 68 << 20, 1024),
           ("mkfs.fat", 32, 136 << 20, 2048), ("mkfs.fat", 32, 272 << 20, 4096),
           ("vfat", 32, 34 << 20, 512)]
SCRIPTS_PER_VOLUME = 22
ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"


def gen_ops(rng, csize):
    """An op-script whose directories grow while their children allocate."""
    lines = []
    base = rng.choice(["", "", "/p", "/p/q"])
    if base:
        lines.append('mkdir "/p"')
        if base == "/p/q":
            lines.append('mkdir "/p/q"')
    dirs = [base]
    files = []
    used = set()
    for i in range(rng.randint(3, 16)):
        parent = dirs[0] if rng.random() < 0.55 else rng.choice(dirs)
        r = rng.random()
        if r < 0.15:
            name = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
                           for _ in range(rng.randint(1, 8)))          # bare 8.3: good
        else:
            n = rng.choice([rng.randint(1, 12), rng.randint(13, 80), rng.randint(80, 255)])
            name = "".join(rng.choice(ALNUM) for _ in range(n))
        if (parent, name.lower()) in used:
            continue
        used.add((parent, name.lower()))
        path = f"{parent}/{name}"
        if rng.random() < 0.45:
            lines.append(f'mkdir "{path}"')
            dirs.append(path)
        else:
            size = rng.choice([0, 0, 17, csize + 3, 3 * csize])
            lines.append(f'create "{path}" {size} {rng.randint(0, 999)}')
            files.append(path)
        if files and rng.random() < 0.08:
            lines.append(f'unlink "{files.pop(rng.randrange(len(files)))}"')
    return "\n".join(lines) + "\n"


def fixed_scripts():
    """The measured layouts: two 100-character directories in /p, the
    second with a subdirectory (the set crosses at slots 11..19 with 512-byte
    clusters), and the same in the root."""
    a, b = "e" * 100, "f" * 100
    return [f'mkdir "/p"\nmkdir "/p/{a}"\nmkdir "/p/{b}"\nmkdir "/p/{b}/a"\n',
            f'mkdir "/{a}"\nmkdir "/{b}"\nmkdir "/{b}/a"\n',
            f'mkdir "/{"d" * 255}"\nmkdir "/{"d" * 255}/a"\n']


def make_volume(tool, bits, size, cl, img):
    if tool == "mkfs.fat":
        diff.mkfs(img, bits, size, cl)
        return
    if os.path.exists(img):
        os.unlink(img)
    p = subprocess.run([core_oracle.available()[1], "mkfs", img, "--fat", str(bits), "--size",
                        str(size), "--cluster", str(cl)], capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(p.stderr)


def key(c):
    # the dummy's bytes print differently (fsck.fat stops at its NUL)
    return (c["kind"], c["path"] or "", "" if c["kind"] == "bad-short-name" else c["message"])


@unittest.skipUnless(CORE_OK, f"build/vfat missing ({CORE_WHY})")
class FsckV1Expectations(unittest.TestCase):
    def test_prediction_equals_fsck(self):
        tmp = tempfile.mkdtemp(prefix="vfz-fsckv1-")
        w = oracles.get_writer("core-v1")
        stats = Counter()
        positions = set()        # (cluster size, slot of the set's first entry in its cluster)
        failures = []
        try:
            for vi, (tool, bits, size, cl) in enumerate(VOLUMES):
                rng = random.Random(1000 + vi)
                scripts = fixed_scripts() + [gen_ops(rng, cl) for _ in range(SCRIPTS_PER_VOLUME)]
                for si, text in enumerate(scripts):
                    ops = opscript.parse(text)
                    img = os.path.join(tmp, "v.img")
                    make_volume(tool, bits, size, cl, img)
                    wr = w.apply(img, ops, 120)
                    self.assertIsNone(wr.error, wr.raw[-2000:])
                    m = model.Model("kernel", "nodual")
                    m.apply(ops)
                    if wr.results != m.results:
                        stats["skipped (writer != model)"] += 1
                        continue
                    p = subprocess.run(["fsck.fat", "-n", img], capture_output=True, text=True,
                                       errors="replace")
                    self.assertIn(p.returncode, (0, 1), p.stdout + p.stderr)
                    real = parse_fsck(p.stdout + "\n" + p.stderr)
                    sim = FsckSim(img).run()
                    exp = expected_complaints("v1", m.dir_stats("win95"), bits, image=img)
                    got = dict(Counter(c["kind"] for c in real))
                    where = f"{tool} FAT{bits} {size >> 20}M cluster {cl}, script {si}:\n{text}"
                    stats["images"] += 1
                    stats[f"images FAT{bits}"] += 1
                    if sorted(map(key, sim.complaints)) != sorted(map(key, real)):
                        failures.append(f"{where}simulated:\n{sim.text}\nfsck.fat:\n{p.stdout}")
                        continue
                    if exp.source != "image" or dict(exp) != got:
                        failures.append(f"{where}expected {dict(exp)} ({exp.source}), fsck.fat "
                                        f"{got}\n{p.stdout}")
                        continue
                    live = [c for c in sim.crossings if c["live"]]
                    self.assertEqual(len(exp.crossings), len(live))
                    for c in sim.crossings:
                        positions.add((cl, (c["from"] - sim.data_start) % cl // 32))
                    stats["sets crossing backwards (no write)"] += len(sim.backward)
                    if sim.crossings:
                        stats["crossing sets"] += len(sim.crossings)
                        stats["images with a crossing"] += 1
                    if live:
                        stats[f"images with a live crossing FAT{bits}"] += 1
                        if "dots-missing" in got or "reclaimed" in got:
                            stats["  ... visible in -n (dots/reclaimed)"] += 1
                        else:
                            stats["  ... invisible in -n (-a would still overwrite)"] += 1
                    if "many-bad-entries" in got:
                        stats["images with many-bad-entries"] += 1
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        stats["distinct crossing positions (cluster size, first slot)"] = len(positions)
        print("\nfsck.fat v1 expectations: " + ", ".join(f"{k} {v}" for k, v in sorted(stats.items())),
              file=sys.stderr)
        self.assertEqual(failures, [], f"{len(failures)} images: prediction != fsck.fat\n" +
                         "\n\n".join(failures[:3]))
        self.assertGreaterEqual(stats["images"], 250)
        self.assertLessEqual(stats["skipped (writer != model)"], stats["images"] // 10)
        # the cases this test is about really occur, in every FAT type
        self.assertGreaterEqual(stats["images with a live crossing FAT32"], 20)
        self.assertGreaterEqual(stats["images with a live crossing FAT16"], 5)
        self.assertGreaterEqual(stats["images with a live crossing FAT12"], 5)
        self.assertGreaterEqual(stats["  ... visible in -n (dots/reclaimed)"], 20)
        self.assertGreaterEqual(stats["images with many-bad-entries"], 20)
        self.assertGreaterEqual(len(positions), 30)

    def test_named_exception_verdict(self):
        """The campaign's path: a crossing that fsck.fat reports exactly as
        predicted is one finding signature, kind fsck-v1-lfn-cross, and the
        repair probe really loses the subdirectory in the gap; the same names
        without the crossing (no subdirectory allocated in between) are ok."""
        from vfz import findings
        a, b = "e" * 100, "f" * 100
        crossing = f'mkdir "/p"\nmkdir "/p/{a}"\nmkdir "/p/{b}"\nmkdir "/p/{b}/a"\n'
        plain = f'mkdir "/p"\ncreate "/p/{a}" 0 0\ncreate "/p/{b}" 0 0\n'
        ck = checker.Checker(["dosfsck"], ["core-v1"])
        try:
            res = ck.check(opscript.parse(crossing), "fat32")
            kinds = [d.fields["kind"] for d in res.divs.values()]
            self.assertEqual(kinds, ["fsck-v1-lfn-cross"], res.details)
            d = next(iter(res.divs.values()))
            self.assertEqual(d.sig, findings.sig_hash({"role": "reader", "oracle": "dosfsck",
                                                       "verdict": "complains",
                                                       "kind": "fsck-v1-lfn-cross",
                                                       "op": "-", "cls": "-"}))
            self.assertIn("named exception fsck-v1-lfn-cross", d.detail)
            res = ck.check(opscript.parse(plain), "fat32")
            self.assertEqual(res.divs, {}, res.details)
            self.assertEqual(res.verdicts["core-v1"]["dosfsck"], "ok")
        finally:
            ck.close()
        # the repair probe: fsck.fat -a frees /p/fff.../a (and /p/eee... loses nothing
        # it had: it was empty)
        from vfz.oracles.dosfsck import DosfsckReader
        tmp = tempfile.mkdtemp(prefix="vfz-fsckv1-")
        try:
            img = os.path.join(tmp, "c.img")
            diff.mkfs(img, 32, 34 << 20, 512)
            self.assertIsNone(oracles.get_writer("core-v1").apply(img, opscript.parse(crossing)).error)
            r = DosfsckReader().read(img, 60)
            self.assertIn(f"/p/{b}/a", r.extra["repair"]["lost"], r.extra["repair"])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
