#!/usr/bin/python3
"""Hostile volumes per minute, per reader, in the same run (issue 19).

    nice /usr/bin/python3 bench/bench_hostile.py [--minutes 5] [--seed 1]
        [--oracles LIST] [--workdir DIR] [--timeout 30]

Runs the hostile campaign (vfz/hostile.py: one thread per reader, each
walking the same image sequence at its own pace) with the core's reader
added as the yardstick, then reports per reader: images read, images per
minute of the run's wall clock, mean seconds per image, refusals, verdicts,
and the core's rate over the reader's. Readers share the machine's cores,
so a rate is the reader's under that load, comparable only within one run.
Results: bench/results/hostile.md and hostile.json (and the console).
"""
import argparse
import json
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import hostile  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--oracles", default=None, help="comma-separated readers (default: hostile's, plus core)")
    ap.add_argument("--workdir", default=os.path.join(REPO, "work", "bench-hostile"))
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--min-seconds", type=float, default=60.0)
    ap.add_argument("--asan-peers", default=None, help="OUT of scripts/build-asan-peers.sh")
    a = ap.parse_args()
    names = a.oracles.split(",") if a.oracles else hostile.default_readers()
    if "core" not in names:
        names = ["core"] + names
    args = argparse.Namespace(minutes=a.minutes, seed=a.seed, oracles=names, workdir=a.workdir,
                              timeout=a.timeout, min_seconds=a.min_seconds, seeds=None, replay=None,
                              asan_peers=a.asan_peers)
    print(f"bench_hostile: seed {a.seed}, {a.minutes:g} min, readers {','.join(names)}", flush=True)
    rc = hostile.main(args, lambda s: print(s, flush=True))
    if rc:
        return rc
    with open(os.path.join(os.path.abspath(a.workdir), "stats.json")) as f:
        st = json.load(f)
    wall = st["wall_s"]
    core = st["readers"].get("core", {}).get("images", 0) / wall * 60
    rows = []
    for n, r in st["readers"].items():
        rate = r["images"] / wall * 60
        rows.append({"reader": n, "images": r["images"], "per_min": round(rate, 1),
                     "s_per_image": round(r["seconds"] / r["images"], 2) if r["images"] else None,
                     "refused": r["refused"], "verdicts": r["verdicts"], "error": r["error"],
                     "core_over_reader": round(core / rate, 1) if rate else None})
    load = os.getloadavg()[0]
    md = [f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, seed {a.seed}, "
          f"{wall / 60:.1f} min wall, timeout {a.timeout:g} s, load {load:.1f} on {os.cpu_count()} cores.", "",
          "| reader | images | images/min | s/image | refused | verdicts | core / reader |",
          "|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['reader']} | {r['images']} | {r['per_min']} | {r['s_per_image']} | {r['refused']} | "
                  f"{r['verdicts'] or '-'} | {r['core_over_reader'] or '-'} |"
                  + (f" ({r['error']})" if r["error"] else ""))
    md.append("")
    md.append(f"Findings: {', '.join(st['findings']) or 'none'}")
    out = os.path.join(REPO, "bench", "results")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "hostile.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(out, "hostile.json"), "w") as f:
        json.dump({"seed": a.seed, "wall_s": wall, "load": load, "rows": rows, "findings": st["findings"]}, f,
                  indent=1)
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
