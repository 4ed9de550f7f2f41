#!/usr/bin/python3
"""The hostile-volume campaign (vfz/hostile*.py) against real readers.

Cheap: a few reads of fuzz_image's 100 KiB FAT12 seed by fatcat, mtools,
fsck.fat and FatFs. Checks: mutation is a pure function of (seed, image
number) and names its fields; the canary verdict fires for a reader that
returns bytes past the declared volume (fatcat) and not for one that
refuses the cluster (mtools), nor on the pristine seed; a tool killed by
a signal is a crash and one that overruns the limit is a hang, after which
the same reader object reads the next image (FatFs restarts its process);
a refusal is no verdict; a finding is minimised to a subset of its byte
ranges, written whole, and `--replay` reproduces it (and does not on the
seed image).
"""
import argparse
import os
import random
import signal
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import oracles# noqa: E402
from vfz.hostile import loop as hostile
from vfz.hostile import findings as hostile_findings
from vfz.hostile import minimise as hostile_min
from vfz.hostile import seeds as hostile_seeds# noqa: E402
from vfz.hostile import mutate as hm# noqa: E402
from vfz.hostile import verdict as hv# noqa: E402

SEED = os.path.join(REPO, "corpus", "fuzz_image", "fat12-mtools")


def seed_image():
    with open(SEED, "rb") as f:
        return f.read()[16:]


def canary_case():
    d = seed_image()
    L = hm.Layout(d)
    rng = random.Random(7)
    pat = hm.canary_pattern(rng)
    ps, tail = hm.m_canary(L, rng, pat)
    return d, {"seed_name": "corpus:fat12-mtools", "patches": ps, "tail": tail, "kinds": ["canary"],
               "canary": pat, "image": hm.apply(d, ps, tail), "index": 0}


class T(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="vfz-test-hostile-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def path(self, name, data):
        p = os.path.join(self.tmp, name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def test_mutation_is_seeded_and_named(self):
        ls = hostile.layouts({"s": seed_image()})
        a = [hostile.make(ls, 5, i)["image"] for i in range(20)]
        b = [hostile.make(ls, 5, i)["image"] for i in range(20)]
        c = [hostile.make(ls, 6, i)["image"] for i in range(20)]
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)
        for i in range(40):
            h = hostile.make(ls, 5, i)
            self.assertNotEqual(h["image"], ls["s"].data)
            for off, n in hm.byte_ranges(ls["s"].data, h["image"]):
                self.assertNotEqual(hostile_findings.field_names(h["patches"], off, n), ["?"], (i, off))

    def test_image_files_are_the_images(self):
        # a lane writes the seed's non-zero runs over a file of its size (holes for its
        # zeros), the patches and the tail: the same bytes as the image made whole, on a
        # sparse 2 MiB seed with the fuzz seed's data at its start and at its end
        d = seed_image()
        big = d + bytes((1 << 21) - 2 * len(d)) + d
        ls = hostile.layouts({"s": d})
        for i in range(30):
            h = hostile.make(ls, 9, i)
            p = os.path.join(self.tmp, "w.img")
            h.write(p)
            with open(p, "rb") as f:
                self.assertEqual(f.read(), h["image"], i)
        h = hostile.Hostile(big, {"patches": [hm.Patch(5000, b"\x01\x02", "x")], "tail": b"T" * 700})
        h.write(p)
        with open(p, "rb") as f:
            self.assertEqual(f.read(), hm.apply(big, h["patches"], h["tail"]))

    def test_canary_verdict(self):
        d, h = canary_case()
        img = self.path("canary.img", h["image"])
        seed = self.path("seed.img", d)
        for name, hit in (("fatcat", True), ("mtools", False)):
            r = oracles.get_reader(name)
            try:
                rr = r.read(img, 30)
                self.assertEqual(bool(hv.canary_hits(rr, h["image"], h["canary"])), hit, (name, rr.listing))
                # the campaign hands the image as a function, called only on a hit
                made = []
                got = hv.canary_hits(rr, lambda: made.append(1) or h["image"], h["canary"])
                self.assertEqual((bool(got), bool(made)), (hit, hit), name)
                rs = r.read(seed, 30)
                self.assertEqual(hv.classify(rs, d, h["canary"], 30), [], name)
            finally:
                r.close()
        # the same contents inside the declared volume are not a hit
        inside = bytearray(h["image"])
        inside[19:21] = d[19:21]
        r = oracles.get_reader("fatcat")
        rr = r.read(self.path("inside.img", bytes(inside)), 30)
        self.assertEqual(hv.canary_hits(rr, bytes(inside), h["canary"]), [])

    def test_crash_hang_refusal(self):
        img = self.path("seed2.img", seed_image())
        crash = oracles.get_reader("dosfsck", fsck=["sh", "-c", "kill -SEGV $$", "sh"], repair=False)
        v = hv.classify(crash.read(img, 20), timeout=20)
        self.assertEqual([x.kind for x in v], ["crash"])
        self.assertIn("SIGSEGV", v[0].message)
        slow = oracles.get_reader("dosfsck", fsck=["sh", "-c", "sleep 20", "sh"], repair=False)
        v = hv.classify(slow.read(img, 1), timeout=1)
        self.assertEqual([x.kind for x in v], ["hang"])
        real = oracles.get_reader("mtools")
        refused = self.path("refused.img", b"\0" * 65536)
        rr = real.read(refused, 20)
        self.assertTrue(rr.error)                 # mtools refuses it: no verdict
        self.assertEqual(hv.classify(rr, timeout=20), [])

    def test_fatfs_hang_then_restart(self):
        r = oracles.get_reader("fatfs")
        ok, why = r.available()
        if not ok:
            self.skipTest(why)
        img = self.path("seed3.img", seed_image())
        try:
            r.read(img, 60)                        # started
            # A stopped process is a FatFs that never answers. (A 1-ms
            # timeout was not: a warm server lists this image in ~5 ms,
            # and CI once saw it answer in time three times running.)
            os.kill(r.server.proc.pid, signal.SIGSTOP)
            rr = r.read(img, 1)
            kinds = [x.kind for x in hv.classify(rr, timeout=1)]
            self.assertEqual(kinds, ["hang"], (rr.error, rr.seconds))
            self.assertIsNone(r.server.proc)       # the hung process was killed
            rr = r.read(img, 60)                   # a fresh process answers
            self.assertIsNone(rr.error)
            self.assertTrue(rr.listing)
        finally:
            r.close()

    def test_minimise_write_replay(self):
        d, h = canary_case()
        r = oracles.get_reader("fatcat")
        v = hv.classify(r.read(self.path("c.img", h["image"]), 30), h["image"], h["canary"], 30)
        self.assertEqual([x.kind for x in v], ["canary"])
        sig = v[0].signature("fatcat")
        ck = hostile_min.Checker(r, "fatcat", sig, h["canary"], 30, os.path.join(self.tmp, "m.img"))
        small = hostile_min.minimise(d, h, ck, budget_s=120, max_reads=25)
        before = hm.byte_ranges(d, h["image"])
        after = hm.byte_ranges(d, small)
        self.assertLess(len(after), len(before))
        for off, n in after:
            self.assertTrue(any(o <= off and off + n <= o + m for o, m in before), (off, n))
        work = os.path.join(self.tmp, "work")
        os.makedirs(os.path.join(work, "findings"))
        args = argparse.Namespace(seed=0, timeout=30.0)
        fd = hostile_findings.write_finding(work, "fatcat", v[0], ck.last, h, d, small, args)
        self.assertEqual(sorted(os.listdir(os.path.join(work, "findings"))), [os.path.basename(fd)])
        for f in ("finding.json", "seed.img.xz", "hostile.img.xz", "diff.txt", "output.txt", "README.md"):
            self.assertTrue(os.path.getsize(os.path.join(fd, f)) > 0, f)
        with open(os.path.join(fd, "diff.txt")) as f:
            self.assertIn("bpb.total_sectors16=canary", f.read())
        p = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "vfatfuzz"), "hostile",
                            "--replay", fd], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("REPRODUCED", p.stdout)
        case = hostile_findings.export_case(fd)
        self.assertEqual((case["impl"], case["kind"]), ("fatcat", "canary"))
        # the seed volume does not reproduce it
        import lzma
        with open(os.path.join(fd, "hostile.img.xz"), "wb") as f:
            f.write(lzma.compress(d))
        self.assertEqual(hostile_findings.replay(fd, log=lambda s: None), 1)

    def test_fuzz_image_patch_inputs(self):
        # a patch-form input (byte 0 bit 7) decodes to the harness's template
        # with the records written over it: the core's checker finds the
        # damage the fuzzer made, and the bare template is clean
        vfat = os.path.join(REPO, "build", "vfat")
        seeds = hostile_seeds.corpus_seeds(())
        with open(os.path.join(REPO, "corpus", "fuzz_image", "patch-fat16-fat"), "rb") as f:
            raw = f.read()
        self.assertTrue(raw[0] & 0x80)
        img = seeds["corpus:patch-fat16-fat"]
        tmpl = hostile_seeds.template(raw[0] & 3)
        self.assertEqual(len(img), len(tmpl))
        self.assertEqual(len(tmpl), 4200 * 512 + 65536)     # vfat_fuzz_image_size(16, 512)
        changed = hm.byte_ranges(tmpl, img)
        self.assertTrue(changed)
        scale = 4 << ((raw[0] >> 2) & 7)
        recs, i = [], 16
        while i + 3 <= len(raw):
            recs.append((int.from_bytes(raw[i:i + 2], "little") * scale, raw[i + 2]))
            i += 3 + raw[i + 2]
        for off, n in changed:
            self.assertTrue(any(o <= off and off + n <= o + m for o, m in recs), (off, n, recs))
        p_t, p_i = self.path("tmpl.img", tmpl), self.path("patched.img", img)
        self.assertEqual(subprocess.run([vfat, "check", p_t], capture_output=True).returncode, 0)
        self.assertNotEqual(subprocess.run([vfat, "check", p_i], capture_output=True).returncode, 0)
        # whole-image inputs are the bytes after the header
        with open(os.path.join(REPO, "corpus", "fuzz_image", "fat12-mtools"), "rb") as f:
            self.assertEqual(seeds["corpus:fat12-mtools"], f.read()[16:])
        # a grown corpus: identical volumes once (also against corpus/fuzz_image/)
        grown = os.path.join(self.tmp, "grown")
        os.makedirs(grown)
        other = bytearray(raw)
        other[-1] ^= 0xFF
        for k, data in enumerate((raw, raw, bytes(other), bytes(other))):
            with open(os.path.join(grown, f"in{k}"), "wb") as f:
                f.write(data)
        more = hostile_seeds.corpus_seeds([grown], log=lambda s: None)
        self.assertEqual(len([n for n in more if n.startswith("fuzz:grown:")]), 1)
        self.assertEqual(len(more), len(seeds) + 1)

    def test_campaign_pool_and_dir_seeds(self):
        cache = os.path.join(self.tmp, "pool")
        pool = hostile_seeds.campaign_seeds(3, cache, ["core-v1", "mtools"], log=lambda s: None)
        for fs in ("fat12", "fat16", "fat32"):
            base = pool[f"pristine:{fs}"]
            self.assertEqual(base[510:512], b"\x55\xaa")
            for w in ("core-v1", "mtools"):
                name = next(n for n in pool if n.startswith(f"{w}:{fs}-gen"))
                self.assertEqual(len(pool[name]), len(base))
                self.assertNotEqual(pool[name], base, name)          # the writer wrote the script
                self.assertGreater(len(hm.Layout(pool[name]).chains), len(hm.Layout(base).chains), name)
        # a second run with the same seed reuses the cache: same bytes
        self.assertEqual(hostile_seeds.campaign_seeds(3, cache, ["core-v1", "mtools"], log=lambda s: None), pool)
        # a directory of images: valid ones once each, others left out
        d = os.path.join(self.tmp, "imgs")
        os.makedirs(os.path.join(d, "findings", "a"))
        one, two = pool["core-v1:fat12-gen30"], pool["mtools:fat12-gen30"]
        for rel, data in (("findings/a/after-x.img", one), ("findings/a/after-y.img", one),
                          ("b.img", two), ("junk.img", b"\0" * 4096), ("notes.txt", one)):
            with open(os.path.join(d, rel), "wb") as f:
                f.write(data)
        got = hostile_seeds.dir_seeds(d, 0, log=lambda s: None)
        self.assertEqual(sorted(got.values()), sorted([one, two]))

    def test_flaky_then_confirmed(self):
        # a tool that dies by SIGSEGV only on every other call: the campaign
        # does not record the first unconfirmed sightings (a later image
        # gets its own chance), records a confirmed one minimised, and keeps
        # the minimised volume's output, not the seed's
        d, h = canary_case()
        work = os.path.join(self.tmp, "flaky")
        flip = os.path.join(self.tmp, "flip")
        tool = ["sh", "-c", f'if [ -e {flip} ]; then rm {flip}; kill -SEGV $$; else : > {flip}; fi; '
                            'exec fsck.fat "$@"', "sh"]
        args = argparse.Namespace(seed=0, timeout=20.0, min_seconds=60.0, workdir=work, asan_peers=None)
        run = hostile.Run(args, log=lambda s: None)
        run.layouts = {"s": hm.Layout(d)}
        run.stats["dosfsck"] = {"images": 0, "seconds": 0.0, "refused": 0, "verdicts": {}, "error": None}
        h = dict(h, seed_name="s")
        r = oracles.get_reader("dosfsck", fsck=tool, repair=False)
        path = os.path.join(self.tmp, "flaky.img")
        for k in range(hostile.FLAKY_TRIES - 1):
            # the sighting's own call crashed; the confirming call does not
            open(flip, "w").close()
            rr = r.read(self.path("f0.img", h["image"]), 20)
            v = hv.classify(rr, timeout=20)
            self.assertEqual([x.kind for x in v], ["crash"])
            run.found("dosfsck", r, h, v[0], rr, path, inline=True)
            self.assertEqual(os.listdir(os.path.join(work, "findings")), [], k)
            self.assertNotIn(v[0].signature("dosfsck"), run.sigs)
        # now every call crashes: confirmed, on the seed too, written once
        always = oracles.get_reader("dosfsck", fsck=["sh", "-c", "kill -SEGV $$", "sh"], repair=False)
        rr = always.read(self.path("f1.img", h["image"]), 20)
        v = hv.classify(rr, timeout=20)
        run.found("dosfsck", always, h, v[0], rr, path, inline=True)
        fds = os.listdir(os.path.join(work, "findings"))
        self.assertEqual(len(fds), 1)
        import json
        with open(os.path.join(work, "findings", fds[0], "finding.json")) as f:
            info = json.load(f)
        self.assertFalse(info["flaky"])
        self.assertTrue(info["on_seed"])
        self.assertEqual(info["ranges"], [])          # minimised down to the seed itself

    def test_bad_reader_name(self):
        p = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "vfatfuzz"), "hostile",
                            "--oracles", "nosuch", "--minutes", "0.1", "--workdir", os.path.join(self.tmp, "w")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stdout.strip().splitlines()), 1, p.stdout)
        self.assertIn("unknown reader", p.stdout)


if __name__ == "__main__":
    unittest.main()
