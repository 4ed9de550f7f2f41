#!/usr/bin/python3
"""The harness's own cost per volume in hostile lanes: cProfile per lane thread, counts per volume.

    nice /usr/bin/python3 bench/profile_hostile.py [--minutes 3] [--seed 2805]
        [--oracles fatfs] [--writers fatfs] [--clock cpu|wall] [--top 25] [--workdir DIR]

Runs the hostile campaign (vfz.hostile.loop) as bench/bench_hostile.py does,
with a profiler of its own in every lane thread, every lane's prefetch
thread and every writer lane's judge thread (cProfile, with the thread's
CPU clock by default: the harness's CPU is what a fast tool's lane waits
for on a loaded machine; --clock wall counts its waits too). Prints per thread the functions with the most time,
with calls and milliseconds per volume of that lane, beside the lane's own
time per volume (the tool's calls, stats.json "seconds"), and writes WORKDIR/judged.json:
per lane, each image's judgement (refused, verdict kinds), so that two runs
of one seed over one seed cache (WORKDIR/seeds) -- before and after a change
-- compare image by image (bench/judged_compare.py). Not a test.
"""
import argparse
import json
import cProfile
import io
import os
import pstats
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz.hostile import lane, loop  # noqa: E402

PROFILES = {}          # label -> {thread name: cProfile.Profile} (a lane's prefetch has workers)
JUDGED = {}            # lane -> {image index: [refused 0|1, sorted verdict kinds]}
_LOCK = threading.Lock()


def profiler(label, clock):
    """This thread's profiler under label (one per thread: a profiler follows one stack)."""
    with _LOCK:
        return PROFILES.setdefault(label, {}).setdefault(threading.current_thread().name,
                                                         cProfile.Profile(clock))


def profiled(label_of, fn, clock):
    def run(*args, **kw):
        p = profiler(label_of(args), clock)
        p.enable()
        try:
            return fn(*args, **kw)
        finally:
            p.disable()
    return run


def judging(fn):
    """Run.judged (Run.one before it, which judged in the lane's thread), recording each
    image's judgement (refused, verdict kinds) from the lane's counters around it: the same
    on the old code and the new, to compare them image by image."""
    def run(self, name, *args):
        h, st = (args[1], args[3]) if fn.__name__ == "judged" else (args[2], args[5])
        with self.lock:
            r0, v0 = st["refused"], dict(st["verdicts"])
        try:
            return fn(self, name, *args)
        finally:
            with self.lock:
                kinds = sorted(k for k, n in st["verdicts"].items() for _ in range(n - v0.get(k, 0)))
                JUDGED.setdefault(name, {})[h["index"]] = [st["refused"] - r0, kinds]
    return run


def profiled_submit(submit, clock):
    """lane.Behind.submit with each judging profiled in the judge thread, under 'judge LANE'."""
    def run(self, fn):
        label = "judge " + self.name.replace(":", "-")

        def judged():
            p = profiler(label, clock)
            p.enable()
            try:
                return fn()
            finally:
                p.disable()
        return submit(self, judged)
    return run


def patch(clock):
    if hasattr(lane, "Behind"):
        lane.Behind.submit = profiled_submit(lane.Behind.submit, clock)
    if hasattr(loop.Run, "judged"):
        loop.Run.judged = judging(loop.Run.judged)
    else:
        loop.Run.one = judging(loop.Run.one)
    loop.Run.reader_loop = profiled(lambda a: a[1], loop.Run.reader_loop, clock)
    # the prefetch's label: its tmpdir names the lane (vfz-hostile-NAME-xxxx)
    lane.Prefetch._prepare = profiled(
        lambda a: "prefetch " + os.path.basename(a[0].tmp)[len("vfz-hostile-"):].rsplit("-", 1)[0],
        lane.Prefetch._prepare, clock)


def report(stats, top):
    wall = stats["wall_s"]
    for label, ps in sorted(PROFILES.items()):
        ps = list(ps.values())
        lane_name = label.split(" ", 1)[-1]
        st = stats["readers"].get(lane_name) or next(
            (v for k, v in stats["readers"].items() if k.replace(":", "-") == lane_name), None)
        n = max(1, (st or {}).get("images", 0))
        own = (st or {}).get("seconds", 0.0) / n
        s = pstats.Stats(*ps)
        total = s.total_tt
        print(f"\n== {label}: {n} volumes in {wall:.0f} s; profiled {total / n * 1000:.1f} ms a volume; "
              f"tool's own {own * 1000:.1f} ms a volume")
        print(f"{'ms/vol tot':>10} {'ms/vol cum':>10} {'calls/vol':>9}  function")
        rows = sorted(s.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
        for (fn, line, name), (cc, nc, tt, ct, _) in rows:
            where = f"{os.path.relpath(fn, REPO) if fn.startswith(REPO) else os.path.basename(fn)}:{line}"
            print(f"{tt / n * 1000:10.2f} {ct / n * 1000:10.2f} {nc / n:9.1f}  {name} ({where})")
        out = io.StringIO()
        pstats.Stats(*ps, stream=out).sort_stats("cumulative").print_stats(top)
        with open(os.path.join(stats["workdir"], f"profile-{label.replace(' ', '-').replace(':', '-')}.txt"),
                  "w") as f:
            f.write(out.getvalue())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=3.0)
    ap.add_argument("--seed", type=int, default=2805)
    ap.add_argument("--oracles", default="fatfs")
    ap.add_argument("--writers", default="fatfs")
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--workdir", default=os.path.join(REPO, "work", "profile-hostile"))
    a = ap.parse_args()
    clock = time.thread_time if a.clock == "cpu" else time.perf_counter
    patch(clock)
    args = argparse.Namespace(minutes=a.minutes, seed=a.seed, oracles=a.oracles.split(","), workdir=a.workdir,
                              timeout=30.0, min_seconds=60.0, seeds=None, replay=None, asan_peers=None,
                              writers=a.writers.split(",") if a.writers else None)
    print(f"profile_hostile: seed {a.seed}, {a.minutes:g} min, lanes {a.oracles} + writers {a.writers}, "
          f"clock {a.clock}, load {os.getloadavg()[0]:.1f}", flush=True)
    rc = loop.main(args, lambda s: print(s, flush=True))
    if rc:
        return rc

    with open(os.path.join(os.path.abspath(a.workdir), "stats.json")) as f:
        st = json.load(f)
    st["workdir"] = os.path.abspath(a.workdir)
    report(st, a.top)
    with open(os.path.join(st["workdir"], "judged.json"), "w") as f:
        json.dump(JUDGED, f)
    print(f"\nprofile_hostile: load at the end {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
