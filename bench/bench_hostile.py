#!/usr/bin/python3
"""Hostile volumes per minute, per reader and writer, beside each one's own-time bound, in the same run.

    nice /usr/bin/python3 bench/bench_hostile.py [--minutes 5] [--seed 1]
        [--oracles LIST] [--writers LIST] [--workdir DIR] [--timeout 30]

Runs the hostile campaign (vfz/hostile/loop.py: one thread per reader, each
walking the same image sequence at its own pace) with the core's reader
added as the yardstick, then reports per reader: images read, images per
minute of the run's wall clock, mean seconds per image, refusals, verdicts,
and the core's rate over the reader's. Readers share the machine's cores,
so a rate is the reader's under that load, comparable only within one run.
Results: bench/results/hostile.md and hostile.json (and the console).

    bench/bench_hostile.py --from-stats WORKDIR/stats.json [--name NAME] [--load TEXT]

renders the figures of a hostile run made apart (e.g. the 30-minute campaign
over all readers, which has no core yardstick) without running anything:
bench/results/NAME.md and NAME.json. The load is the run's own samples
(stats.json "load"), else --load as given (how it was measured).
"""
import argparse
import json
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz.hostile import loop as hostile# noqa: E402


def render(st, name, load_text, asked_seed=None):
    wall = st["wall_s"]
    core = st["readers"].get("core", {}).get("images", 0) / wall * 60
    rows = []
    for n, r in st["readers"].items():
        rate = r["images"] / wall * 60
        # the own-time bound: volumes a minute were the lane's wall all the tool's own time
        bound = r["images"] / r["seconds"] * 60 if r["seconds"] else None
        rows.append({"reader": n, "images": r["images"], "per_min": round(rate, 1),
                     "s_per_image": round(r["seconds"] / r["images"], 2) if r["images"] else None,
                     "bound_per_min": round(bound, 1) if bound else None,
                     "pace": round(rate / bound, 2) if bound else None,
                     "refused": r["refused"], "verdicts": r["verdicts"], "error": r["error"],
                     "core_over_reader": round(core / rate, 1) if rate and core else None})
    md = [f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, seed {st['seed']}, "
          f"{wall / 60:.1f} min wall, timeout {st['timeout']:g} s, load {load_text}.", "",
          "| lane | images | images/min | s/image (own time) | own-time bound /min | pace | refused | verdicts "
          "| core / reader |",
          "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['reader']} | {r['images']} | {r['per_min']} | {r['s_per_image']} | "
                  f"{r['bound_per_min'] or '-'} | {r['pace'] if r['pace'] is not None else '-'} | {r['refused']} | "
                  f"{r['verdicts'] or '-'} | {r['core_over_reader'] or '-'} |"
                  + (f" ({r['error']})" if r["error"] else ""))
    md.append("")
    md.append("Own time: the seconds of the tool's own calls (a writer's: its ops, without the strict "
              "reader's listings around them); own-time bound = 60 / own s per image; pace = images/min over "
              "that bound (the share of the lane's wall the tool had; issue 28 asks >= 0.5). Lanes: "
              "'write:NAME' applies an op-script to each volume.")
    md.append("")
    md.append(f"Findings: {', '.join(st['findings']) or 'none'}")
    out = os.path.join(REPO, "bench", "results")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, name + ".md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump({"seed": st["seed"], "wall_s": wall, "load": load_text, "rows": rows,
                   "findings": st["findings"]}, f, indent=1)
    print("\n".join(md))


def load_text_of(st):
    ld = st.get("load")
    if not ld:
        return None
    return f"{ld['min']:.1f}-{ld['max']:.1f} (mean {ld['mean']:.1f}) on {ld['cores']} cores"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--oracles", default=None, help="comma-separated readers (default: hostile's, plus core; "
                    "'none': the --writers alone)")
    ap.add_argument("--workdir", default=os.path.join(REPO, "work", "bench-hostile"))
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--min-seconds", type=float, default=60.0)
    ap.add_argument("--writers", default=None, help="comma-separated writers, each in a lane of its own")
    ap.add_argument("--asan-peers", default=None, help="OUT of scripts/build-asan-peers.sh")
    ap.add_argument("--from-stats", default=None, help="render this run's stats.json, run nothing")
    ap.add_argument("--name", default="hostile", help="results file name (default hostile)")
    ap.add_argument("--load", default=None, help="with --from-stats: the load, when stats.json has none")
    a = ap.parse_args()
    if a.from_stats:
        try:
            with open(a.from_stats) as f:
                st = json.load(f)
            st["wall_s"], st["readers"]
        except (OSError, ValueError, KeyError) as e:
            print(f"bench_hostile: error: {a.from_stats}: not a hostile run's stats.json ({e})")
            return 2
        lt = load_text_of(st) or a.load
        if not lt:
            print("bench_hostile: error: stats.json has no load samples: give --load")
            return 2
        render(st, a.name, lt)
        return 0
    names = a.oracles.split(",") if a.oracles else hostile.default_readers()
    if names == ["none"]:
        pass                    # the --writers' lanes alone (the campaign's 'none'), no yardstick
    elif "core" not in names:
        names = ["core"] + names
    args = argparse.Namespace(minutes=a.minutes, seed=a.seed, oracles=names, workdir=a.workdir,
                              timeout=a.timeout, min_seconds=a.min_seconds, seeds=None, replay=None,
                              asan_peers=a.asan_peers, writers=a.writers.split(",") if a.writers else None)
    print(f"bench_hostile: seed {a.seed}, {a.minutes:g} min, readers {','.join(names)}", flush=True)
    rc = hostile.main(args, lambda s: print(s, flush=True))
    if rc:
        return rc
    with open(os.path.join(os.path.abspath(a.workdir), "stats.json")) as f:
        st = json.load(f)
    render(st, a.name, load_text_of(st) or f"{os.getloadavg()[0]:.1f} at the end on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
