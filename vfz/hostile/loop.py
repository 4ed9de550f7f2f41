"""The hostile-volume campaign (issue 19): mutated volumes to every reader.

    vfatfuzz hostile [--minutes M] [--seed S] [--oracles LIST] [--workdir DIR]
    vfatfuzz hostile --replay FINDING_DIR

Image number i of a run is made from random.Random(f"{seed}:{i}") alone: a
seed image (vfz.hostile.seeds: fuzz_image's corpus, corpus/fuzz_image/ and
any --fuzz-corpus DIR, both of the harness's input forms decoded; the
volumes the differential campaign writes, its pristine mkfs.fat volumes and
what each of its writers (--pool-writers, default the campaign's) leaves
after a `vfat gen` script, N from the run's seed; any --seeds DIR of images,
e.g. a campaign workdir), then 1-4 structure-aware mutations
(vfz.hostile.mutate); one image in four is a canary image.
Every reader (and --writers lane) has its own thread walking i = 0, 1, 2, ... at its own
pace until the deadline, so a slow reader (a VM) does not hold up the others and
every reader's image i is the same volume; image i is made once for all lanes and
each lane's next image is written (a writer's strict reads done) while its tool
works on the one before, and a writer's volume is judged (the strict reads after
the ops, the verdicts) while it works on the next (vfz.hostile.lane); a new signature is confirmed,
minimised and written by the lane's settler thread (vfz.hostile.settler), so the
lane's pace is its tool's (bench/bench_hostile.py: images a minute beside the
own-time bound).

Each answer is classified (vfz.hostile.verdict: crash, hang, trap, canary,
overwrite, out-of-bounds, spread); a refusal is not a finding. Signatures keep
bugs apart: a stock tool's crash is signed by its backtrace (vfz.hostile.backtrace:
the command run again under gdb), an emulated tool's hang or trap by what it
printed last (vfz.hostile.lastwords: U-Boot's console, QEMU's own message, the
kernel's call trace). The user-space readers
and transformers run under the I/O-bounds oracle's preload library, FatFs,
U-Boot and the kernel VM record their own sectors (vfz.hostile.bounds,
docs/iobounds.md; a writer lane's too): a read
or write outside the volume or the image is an out-of-bounds verdict.

Transformers -- tools that rewrite a volume in place: fatsort and fsck.fat -a
(fsck-repair) -- join with --oracles (e.g. --oracles fatsort,fsck-repair;
not in the default set, see below). vfz.hostile.transform drives each as a reader:
it gets the hostile image followed by a 64 KiB guard (bytes past the
declared volume end even when the image has none), and a crash (signal),
hang (time limit) or overwrite (a byte past the declared end changed, or one
of the regions its oracle declares it never writes: fatsort's boot sector,
reserved sectors and FATs, fsck.fat's reserved sectors but the boot, FSINFO and
backup sectors; which ranges, how many bytes) is a verdict. What
fsck.fat -a legitimately repairs (boot sector, backup, FSINFO, FATs,
directories: all inside the volume) is not. Their findings are confirmed,
minimised, written and replayed as a reader's (finding.json "role":
"transformer"). They stay out of the default set: the tools are cheap (0.10-0.17 s
per volume at load ~11, bench/results/hostile-tx.md) but each volume costs the
harness a write, a read back and a compare of up to 34 MiB in this process, at
~50 volumes a minute per transformer, which would take the interpreter from the
ten reader threads' glue; run them apart with --oracles (20 minutes: ~1 000
volumes each). A new signature (reader + kind + normalised
message) is confirmed by a second read, minimised (vfz.hostile.minimise) and
written atomically (vfz.hostile.findings) to <workdir>/findings/<reader>-<kind>-<hash>/:
    finding.json     everything needed to replay (reader, its cfg, timeout,
                     signature, canary pattern, patches with field names)
    seed.img.xz      the seed volume; hostile.img.xz the minimised volume;
                     hostile-full.img.xz the volume as first found
    diff.txt         the byte ranges the minimised volume changes, with the
                     fields they hit and a hexdump of seed vs hostile bytes
    output.txt       the reader's error and raw output
    README.md        what happened, how to replay
Replay: `vfatfuzz hostile --replay DIR` (exit 0 REPRODUCED, 1 NOT REPRODUCED);
`--replay DIR --minimise` minimises it again. --asan-peers OUT reads with the
ASan+UBSan mtools and fsck.fat of scripts/build-asan-peers.sh OUT.
<workdir>/stats.json: per reader images, seconds, refusals, verdicts; the
seed images; the machine's load (1-min average, sampled once a minute) (the
bench reads it: bench/bench_hostile.py).
"""
import glob
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time

from vfz import oracles
from vfz.hostile import mutate as hm
from vfz.hostile import verdict as hv
from vfz.hostile import minimise as hostile_min
from vfz.hostile import transform as hostile_tx
from vfz.hostile import lane, settler
from vfz import iobounds, proc
from vfz.hostile import backtrace as hbt
from vfz.hostile.seeds import corpus_seeds, campaign_seeds, dir_seeds, layouts  # noqa: F401
from vfz.hostile.findings import reader_cfg, write_finding, replay, reminimise
from vfz.hostile.writes import ops_of as writes_ops

CANARY_SHARE = 0.25
FLAKY_TRIES = 3        # unconfirmed sightings of a signature before it is recorded as flaky


def default_readers():
    """The readers of the implementations apart from the core (Entry.independent), those
    that need no long build unless they are default readers: one per family (the kernel's
    patched variants read as the stock one does)."""
    return [n for n, e in oracles.entries().items()
            if e.reader and e.independent and (not e.builds or "reader" in e.default)
            and e.medium == "fat"]


# ------------------------------------------------------------------ images
def make(layouts_, seed, i):
    """Image i of run seed -> dict(seed_name, patches, tail, kinds, canary, image)."""
    rng = random.Random(f"{seed}:{i}")
    names = sorted(layouts_)
    name = rng.choice(names)
    L = layouts_[name]
    canary = hm.canary_pattern(rng) if rng.random() < CANARY_SHARE else None
    for _ in range(8):
        patches, tail, kinds = hm.mutate(L, rng, canary)
        if tail or any(L.data[p.offset:p.offset + len(p.data)] != p.data[:len(L.data) - p.offset]
                       for p in patches if p.offset < len(L.data)):
            break
    if "canary" not in kinds:
        canary = None
    return Hostile(L.data, {"seed_name": name, "patches": patches, "tail": tail, "kinds": kinds,
                            "canary": canary, "index": i})


class Hostile(dict):
    """Image i of a run (make): its bytes, h["image"], are made on first use (a seed of up to
    34 MiB copied twice per image was most of a fast lane's time); write() puts them in a
    file from the seed and the patches, head(n) gives their first n bytes."""

    def __init__(self, seed, d):
        super().__init__(d)
        self.seed = seed

    def __missing__(self, key):
        if key != "image":
            raise KeyError(key)
        img = self["image"] = hm.apply(self.seed, self["patches"], self["tail"])
        return img

    def head(self, n):
        return self["image"][:n] if "image" in self else hm.apply(self.seed[:n], self["patches"])

    def write(self, path):
        with open(path, "wb") as f:
            if "image" in self:
                f.write(self["image"])
                return
            # the seed's data only, over a file of its size: its zeros stay holes
            f.truncate(len(self.seed))
            view = memoryview(self.seed)
            for a, b in lane.nonzero_runs(self.seed):
                f.seek(a)
                f.write(view[a:b])
            for p in self["patches"]:
                if p.offset < len(self.seed):
                    f.seek(p.offset)
                    f.write(p.data[:len(self.seed) - p.offset])
            f.seek(len(self.seed))
            f.write(self["tail"])


# ------------------------------------------------------------------ campaign
class Run:
    def __init__(self, args, log=print):
        self.args = args
        self.log = log
        self.lock = threading.Lock()
        self.sigs = {}                 # signature -> finding dir
        self.stats = {}
        self.unconfirmed = {}          # signature -> reads that did not confirm it
        self.stop = threading.Event()
        self.settlers = {}             # lane -> its settler thread (vfz.hostile.settler)
        self.workdir = os.path.abspath(args.workdir)
        os.makedirs(os.path.join(self.workdir, "findings"), exist_ok=True)
        for f in glob.glob(os.path.join(self.workdir, "findings", "*", "finding.json")):
            try:
                j = json.load(open(f))
                self.sigs[j["signature"]] = os.path.dirname(f)
            except (OSError, ValueError, KeyError):
                pass

    def reader_loop(self, name, layouts_, deadline):
        st = self.stats[name]
        try:
            reader = hostile_tx.tool(name, **reader_cfg(name, getattr(self.args, "asan_peers", None)))
        except Exception as e:
            st["error"] = f"cannot start: {type(e).__name__}: {e}"
            return
        ok, why = reader.available() if hasattr(reader, "available") else (True, "")
        if not ok:
            st["error"] = f"unavailable: {why}"
            return
        tmp = tempfile.mkdtemp(prefix=f"vfz-hostile-{name.replace(':', '-')}-", dir=self.workdir)
        probe = getattr(reader, "reader", reader)   # under the I/O-bounds oracle's Traced
        ahead = lane.Prefetch(self.images, tmp, probe, self.args.timeout)
        # a writer's volume is judged behind it, while it applies the next one's ops
        behind = lane.Behind(name) if hasattr(probe, "read_finish") else None
        bt = proc.crash_hook(hbt.gdb_backtrace)    # a stock tool's crash signed by its stack
        bt.__enter__()
        try:
            while time.monotonic() < deadline and not self.stop.is_set():
                i, h, path, pre = ahead.next()
                try:
                    if h is None:
                        raise pre
                    self.one(name, reader, probe, h, path, pre, st, behind)
                except Exception as e:
                    self.harness_error(name, i, e, st)
        finally:
            bt.__exit__(None, None, None)
            if behind is not None:
                behind.close()          # the last volume judged before its file goes
            ahead.close()
            try:
                reader.close()
            except Exception:
                pass
            shutil.rmtree(tmp, ignore_errors=True)

    def harness_error(self, name, i, e, st):
        # the harness's own failure on one image: logged and counted, the reader goes on
        # with the next image
        msg = f"image {i}: {type(e).__name__}: {e}"
        self.log(f"hostile: {name}: harness error on {msg}")
        with self.lock:
            st["harness_errors"] = st.get("harness_errors", 0) + 1
            st["error"] = st["error"] or f"harness error on {msg}"[:300]

    def one(self, name, reader, probe, h, path, pre, st, behind=None):
        if hasattr(probe, "offsets"):       # a writer: its script goes where the mutation hit
            probe.offsets = [p.offset for p in h["patches"]]
            probe.fixed = None
            probe.pre = pre                 # its strict reads before the ops (lane.Prefetch)
        if behind is None:
            return self.judged(name, reader, h, path, st, reader.read(path, self.args.timeout))
        started = reader.read_start(path, self.args.timeout)

        def judge():
            try:
                rr = reader.read_finish(started, self.args.timeout)
                self.judged(name, reader, h, path, st, rr)
            except Exception as e:
                self.harness_error(name, h["index"], e, st)
        behind.submit(judge)

    def judged(self, name, reader, h, path, st, rr):
        """The verdicts of one answer: counted, and each new signature settled."""
        # the image's bytes only where a verdict reads them: a canary image's, and only when
        # a file read back as the canary (made on demand: a 34 MiB copy per canary image)
        vs = hv.classify(rr, (lambda: h["image"]) if h["canary"] else None, h["canary"], self.args.timeout)
        with self.lock:
            st["images"] += 1
            st["seconds"] += rr.seconds
            st["refused"] += 1 if rr.error and not vs else 0
            for v in vs:
                st["verdicts"][v.kind] = st["verdicts"].get(v.kind, 0) + 1
        for v in vs:
            self.found(name, reader, h, v, rr, path)

    def found(self, name, reader, h, v, rr, path, inline=False):
        """A verdict: a new signature is claimed here and settled (confirmed, minimised,
        written) by the lane's settler thread with an oracle of its own, so the lane goes
        on with the next image (its pace is the tool's, not the minimiser's); inline: here,
        with this reader, at path (tests)."""
        sig = v.signature(name)
        with self.lock:
            if sig in self.sigs:
                st = self.stats[name]
                st["duplicates"] = st.get("duplicates", 0) + 1
                return
            self.sigs[sig] = None          # claimed: other threads skip it
        self.log(f"hostile: {name}: {v.kind}: {v.message} (image {h['index']}, seed {h['seed_name']}, "
                 f"{'+'.join(h['kinds'])})")
        fixed = writes_ops(rr) if (rr.extra or {}).get("writer") else None
        if inline:
            probe = getattr(reader, "reader", reader)
            if hasattr(probe, "offsets"):
                probe.fixed = fixed
            return self.settle(name, reader, h, v, rr, path)
        settler.submit(self, name, (h, v, rr, fixed))

    def settle(self, name, reader, h, v, rr, path):
        h = dict(h, image=h["image"])       # its bytes made, in a plain dict the minimiser may copy
        sig = v.signature(name)
        seed_img = self.layouts[h["seed_name"]].data
        # a hang is confirmed with twice the limit (a reader that was only
        # slow under load answers then), minimised with the limit, and the
        # minimised volume confirmed with twice the limit again
        t = self.args.timeout
        confirm = hostile_min.Checker(reader, name, sig, h["canary"], t * (2 if v.kind == "hang" else 1), path)
        if not confirm(h["image"]):
            with self.lock:
                tries = self.unconfirmed[sig] = self.unconfirmed.get(sig, 0) + 1
                st = self.stats[name]
                st["unconfirmed"] = st.get("unconfirmed", 0) + 1
                if tries < FLAKY_TRIES:
                    # not recorded yet: a later image with this signature
                    # gets its own chance to be confirmed
                    del self.sigs[sig]
            if tries < FLAKY_TRIES:
                self.log(f"hostile: {name}: {v.kind} did not happen again on a second read "
                         f"({tries} of {FLAKY_TRIES} before it is recorded as flaky)")
                return
            self.log(f"hostile: {name}: {v.kind} did not happen again on a second read: recorded as flaky")
            flaky = True
            small = h["image"]
        else:
            flaky = False
            check = hostile_min.Checker(reader, name, sig, h["canary"], t, path)
            if v.kind != "hang" and check(seed_img):
                # the unmutated seed shows it too: a bug of the tool on a
                # well-formed volume, not of the mutation; recorded as such
                self.log(f"hostile: {name}: {v.kind} happens on the seed {h['seed_name']} too")
                h = dict(h, on_seed=True)
            small = hostile_min.minimise(seed_img, h, check, budget_s=self.args.min_seconds)
            if small != h["image"] and v.kind == "hang" and not confirm(small):
                small = h["image"]
            # the output kept is the minimised volume's (the seed's, read
            # last when it showed the verdict too, is not)
            done = [c for c in (confirm, check) if c.last_image == small]
            if not done and check(small):
                done = [check]
            rr = done[0].last if done else rr
        d = write_finding(self.workdir, name, v, rr, h, seed_img, small, self.args, flaky)
        with self.lock:
            self.sigs[sig] = d
        self.log(f"hostile: finding {d} ({len(hm.byte_ranges(seed_img, small))} byte ranges after minimising)")

    def run(self):
        a = self.args
        self.log(f"hostile: seed {a.seed}, {a.minutes:g} min, timeout {a.timeout:g}s per image, "
                 f"workdir {self.workdir}")
        seeds = corpus_seeds(getattr(a, "fuzz_corpus", None) or (), log=self.log, seed=a.seed)
        pool = getattr(a, "pool_writers", None)
        seeds.update(campaign_seeds(a.seed, os.path.join(self.workdir, "seeds"), pool, log=self.log))
        for d in a.seeds or ():
            seeds.update(dir_seeds(d, a.seed, log=self.log))
        self.layouts = layouts(seeds, self.log)
        self.images = lane.Images(make, self.layouts, a.seed)
        if not self.layouts:
            self.log("hostile: error: no usable seed image")
            return 2
        self.log(f"hostile: {len(self.layouts)} seed images: {', '.join(sorted(self.layouts))}")
        self.log(f"hostile: I/O-bounds oracle: {iobounds.library() or 'libvfz_iotrace.so not built: user-space tools untraced'}")
        readers = [] if a.oracles == ["none"] else a.oracles or default_readers()
        names = readers + [hostile_tx.WRITE + w for w in getattr(a, "writers", None) or ()]
        for n in names:
            self.stats[n] = {"images": 0, "seconds": 0.0, "refused": 0, "verdicts": {}, "error": None}
        t0 = time.monotonic()
        deadline = t0 + a.minutes * 60
        threads = [threading.Thread(target=self.reader_loop, args=(n, self.layouts, deadline), daemon=True)
                   for n in names]
        for t in threads:
            t.start()
        loads, next_load = [], t0
        try:
            for t in threads:
                while t.is_alive():
                    t.join(1.0)
                    if time.monotonic() >= next_load:        # the machine's load, once a minute
                        loads.append(round(os.getloadavg()[0], 2))
                        next_load += 60
        except KeyboardInterrupt:
            # each reader ends its current read and closes (its VM, its process)
            self.log("hostile: interrupted: stopping the readers")
            self.stop.set()
            for t in threads:
                t.join(a.timeout * 3 + 10)
        wall = time.monotonic() - t0        # the lanes' wall: what their pace is measured on
        settler.drain(self, self.log)
        out = {"seed": a.seed, "minutes": a.minutes, "wall_s": wall, "timeout": a.timeout,
               "load": {"min": min(loads), "max": max(loads), "mean": round(sum(loads) / len(loads), 2),
                        "cores": os.cpu_count()} if loads else None,
               "seeds": sorted(self.layouts), "readers": self.stats,
               "findings": sorted(os.path.basename(d) for d in self.sigs.values() if d)}
        with open(os.path.join(self.workdir, "stats.json"), "w") as f:
            json.dump(out, f, indent=1)
        for n, st in self.stats.items():
            rate = st["images"] / wall * 60 if wall else 0
            self.log(f"hostile: {n:10s} {st['images']:5d} images {rate:7.1f}/min  refused {st['refused']:5d}  "
                     f"verdicts {st['verdicts'] or '-'}"
                     + (f"  duplicates {st['duplicates']}" if st.get("duplicates") else "")
                     + (f"  unconfirmed {st['unconfirmed']}" if st.get("unconfirmed") else "")
                     + (f"  [{st['error']}]" if st["error"] else ""))
        self.log(f"hostile: {len(out['findings'])} findings in {self.workdir}/findings")
        return 0


def main(args, log=print):
    if args.replay and getattr(args, "minimise", False):
        return reminimise(args.replay, args.min_seconds, log)
    if args.replay:
        return replay(args.replay, log, asan_peers=getattr(args, "asan_peers", None),
                      resign=getattr(args, "resign", False))
    if args.oracles and args.oracles != ["none"]:
        known = oracles.names("reader")
        bad = [n for n in args.oracles if n not in known and not hostile_tx.is_transformer(n)]
        if bad:
            log(f"hostile: error: unknown reader(s) {', '.join(bad)} (readers: {', '.join(known)}; "
                f"transformers: {', '.join(hostile_tx.names())})")
            return 2
    return Run(args, log).run()


if __name__ == "__main__":
    sys.exit("use: scripts/vfatfuzz hostile")
