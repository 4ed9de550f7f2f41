#!/usr/bin/python3
"""The campaign's pace against the bound its oracles allow (issue 15).

    scripts/vfatfuzz bench campaign --no-setup [--quick]
    /usr/bin/python3 bench/bench_campaign.py [--quick] [--minutes 2] [--seed 1] [--jobs 1,2]
        [--fuzzer] [--oracles LIST] [--writers LIST] [--out bench/results]

In one run, for each J in --jobs, the default campaign (`vfatfuzz campaign
--no-setup --no-fuzzer --jobs J --seed S --minutes M`, fresh workdir,
niced) and, with --fuzzer, once more as the README runs it (the fuzzer
on). From each campaign's summary.json "pipeline" (vfz/campaign/pace.py):

  pace       images checked per reader per minute of the main loop (the
             kernel VM's boot excluded, the minimiser's work beside it
             included in the wall time but not in the images);
  bound      the same images over the oracles' own CPU seconds (every
             writer's and every reader's: their tools, the VM's QEMU, their
             glue) spread over the cores: the pace the pipeline would reach
             if nothing but the oracles ran and they had the cores;
  bound_wall the same with the oracles' wall time in their calls (what the
             issue's ~1 000 images/min was measured with, serially: side
             by side, and under other load, a call's wall time includes the
             wait for a core, so this bound flatters the pace);
  share      the CPU seconds the campaign's process tree used over
             (loop seconds x cores): how much of the machine it got;
  pace / bound at share = pace / (bound x share): the pipeline's own
             efficiency, which other jobs on the machine do not move;
  fuzzer     with the fuzzer beside the lanes (--fuzzer): the share of the
             cores fuzz_ops took (niced), and the pace over the bound of
             the CPU it left the lanes = pace / bound / (1 - fuzzer share).

Goal (not a test): pace >= 2/3 of the bound. Writes campaign.md and
campaign.json under --out; the load average is recorded beside each run.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
VFATFUZZ = os.path.join(SRC, "scripts", "vfatfuzz")
GOAL = 2.0 / 3.0


def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run_campaign(argv, workdir, minutes):
    cmd = ["nice", "-n", "10", "/usr/bin/python3", VFATFUZZ, "campaign", "--no-setup",
           "--minutes", str(minutes), "--workdir", workdir, *argv]
    t0 = time.monotonic()
    l0 = load()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=minutes * 60 + 900)
    row = {"command": " ".join(cmd[3:]), "rc": p.returncode, "wall": round(time.monotonic() - t0, 1),
           "load_before": l0, "load_after": load()}
    try:
        with open(os.path.join(workdir, "summary.json")) as f:
            row["summary"] = json.load(f)
    except (OSError, ValueError) as e:
        row["error"] = f"no summary.json ({e}); stderr: {p.stderr.strip()[-300:]}"
    return row


def fmt(x, nd=0):
    if x is None:
        return "-"
    return f"{x:,.{nd}f}".replace(",", " ")


def render(rows, args):
    out = ["# bench_campaign: the campaign's pace against its oracles' bound", "",
           f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {args.minutes} min per campaign, "
           f"seed {args.seed}, cores {rows[0]['summary']['pipeline']['cores'] if rows and 'summary' in rows[0] else '?'}", "",
           "| campaign | load | scripts | reader | images | pace /min | bound /min (CPU) | pace / bound "
           "| bound /min (wall) | share of cores | pace / bound at share | fuzzer share "
           "| pace / bound beside the fuzzer |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "summary" not in r:
            out.append(f"| `{r['command']}` | | | | | {r.get('error', '')} | | | | | | | |")
            continue
        s, pl = r["summary"], r["summary"]["pipeline"]
        for rd, n in s["readers"].items():
            out.append(f"| `--jobs {pl.get('lanes')}`{' + fuzzer' if r.get('fuzzer') else ''} | "
                       f"{r['load_before']:.1f}-{r['load_after']:.1f} | {s['scripts']} | {rd} | {n} | "
                       f"{fmt(pl['pace'][rd])} | {fmt(pl['bound'][rd])} | "
                       f"{fmt(pl['pace_vs_bound'][rd], 2)} | {fmt(pl['bound_wall'][rd])} | "
                       f"{fmt(pl.get('share'), 2)} | {fmt((pl.get('pace_vs_bound_at_share') or {}).get(rd), 2)} | "
                       f"{fmt(pl.get('fuzzer_share'), 2) if 'fuzzer_share' in pl else '-'} | "
                       f"{fmt((pl.get('pace_vs_bound_beside_fuzzer') or {}).get(rd), 2) if 'fuzzer_share' in pl else '-'} |")
    out += ["", f"Goal: pace >= {GOAL:.2f} of the bound.", "",
            "Each oracle's own time (per call, ms) and where a script's time goes:", ""]
    for r in rows:
        if "summary" not in r:
            continue
        pl = r["summary"]["pipeline"]
        out += [f"`{r['command']}` (loop {pl['loop_seconds']} s, minimiser "
                f"{(pl.get('minimiser') or {}).get('seconds', 0)} s beside it):", "",
                "| stage | wall s (all lanes) | calls | ms/call | own wall ms/call | own CPU ms/call | "
                "images/min of its own CPU |", "|---|---|---|---|---|---|---|"]
        for k, v in pl["stages"].items():
            o = pl["oracles"].get(k, {})
            c = o.get("cpu_seconds")
            per_min = 60.0 * v["calls"] / c if c else None
            out.append(f"| {k} | {v['seconds']:.2f} | {v['calls']} | {fmt(v['ms_per_call'], 1)} | "
                       f"{fmt(o.get('ms_per_call'), 1)} | {fmt(o.get('cpu_ms_per_call'), 1)} | {fmt(per_min)} |")
        out.append("")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=2.0)
    ap.add_argument("--quick", action="store_true", help="1 minute per campaign")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", default="1,2", help="check lanes to compare (default 1,2)")
    ap.add_argument("--fuzzer", action="store_true", help="also the README's campaign (fuzzer on)")
    ap.add_argument("--oracles")
    ap.add_argument("--writers")
    ap.add_argument("--out", default=os.path.join(SRC, "bench", "results"))
    ap.add_argument("--keep", action="store_true", help="keep the workdirs")
    args = ap.parse_args()
    if args.quick:
        args.minutes = 1.0
    print(f"bench_campaign: seed {args.seed}, {args.minutes} min per campaign", file=sys.stderr)
    tmp = tempfile.mkdtemp(prefix="vfz-bench-campaign-")
    extra = []
    if args.oracles:
        extra += ["--oracles", args.oracles]
    if args.writers:
        extra += ["--writers", args.writers]
    rows = []
    try:
        for j in [int(x) for x in args.jobs.split(",")]:
            wd = os.path.join(tmp, f"jobs{j}")
            r = run_campaign(["--seed", str(args.seed), "--no-fuzzer", "--jobs", str(j), *extra],
                             wd, args.minutes)
            rows.append(r)
            print(f"  --jobs {j}: rc {r['rc']}, {r.get('summary', {}).get('scripts')} scripts",
                  file=sys.stderr)
        if args.fuzzer:
            wd = os.path.join(tmp, "fuzzer")
            r = run_campaign(["--seed", str(args.seed), *extra], wd, args.minutes)
            r["fuzzer"] = True
            rows.append(r)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(args.out, exist_ok=True)
    md = render(rows, args)
    with open(os.path.join(args.out, "campaign.md"), "w") as f:
        f.write(md)
    with open(os.path.join(args.out, "campaign.json"), "w") as f:
        json.dump({"args": vars(args), "runs": rows}, f, indent=1)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
