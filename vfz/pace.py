"""The campaign's pace against the bound its oracles allow.

Where a script's time goes, per stage (generate, model, write <writer>,
read <reader>, compare, bookkeeping; wall seconds summed over the lanes
that ran them), each oracle's own time (its Timer: the tool call alone),
and the bound: per script, the sum of every writer's and every reader's
own time, spread over the machine's cores (2 here). The pace is each
reader's images over the campaign's checking wall time; the bound the
same images over (own time / cores).
"""
import os

CORES = 2


def cores():
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or CORES


def report(stage_s, stage_n, own_s, images, wall, ncores=None):
    """stage_s/stage_n/own_s: Counters by stage name ("write core-v1",
    "read mtools", ...); images: {reader: images checked}; wall: the
    seconds the main loop ran (VM boot excluded). -> dict (summary.json)."""
    ncores = ncores or cores()
    own_total = sum(v for k, v in own_s.items() if k.startswith(("write ", "read ")))
    stages = {k: {"seconds": round(stage_s[k], 2), "calls": stage_n[k],
                  "ms_per_call": round(1000.0 * stage_s[k] / stage_n[k], 1) if stage_n[k] else None}
              for k in sorted(stage_s)}
    oracles = {}
    for k in sorted(own_s):
        n = stage_n[k]
        oracles[k] = {"own_seconds": round(own_s[k], 2), "calls": n,
                      "ms_per_call": round(1000.0 * own_s[k] / n, 1) if n else None,
                      "per_minute_own": round(60.0 * n / own_s[k], 1) if own_s[k] else None}
    out = {"cores": ncores, "loop_seconds": round(wall, 1), "own_seconds": round(own_total, 2),
           "stages": stages, "oracles": oracles, "pace": {}, "bound": {}, "pace_vs_bound": {}}
    for r, n in images.items():
        pace = 60.0 * n / wall if wall > 0 else 0.0
        bound = 60.0 * n / (own_total / ncores) if own_total > 0 else 0.0
        out["pace"][r] = round(pace, 1)
        out["bound"][r] = round(bound, 1)
        out["pace_vs_bound"][r] = round(pace / bound, 3) if bound else None
    return out


def table(rep):
    """Lines for the campaign's summary table."""
    lines = [f"{'stage':<22} {'seconds':>9} {'calls':>7} {'ms/call':>8} {'own s':>8}"]
    for k, v in rep["stages"].items():
        own = rep["oracles"].get(k, {}).get("own_seconds")
        lines.append(f"{k:<22} {v['seconds']:>9.2f} {v['calls']:>7} "
                     f"{v['ms_per_call'] if v['ms_per_call'] is not None else '-':>8} "
                     f"{own if own is not None else '':>8}")
    for r in rep["pace"]:
        lines.append(f"pace {r}: {rep['pace'][r]:.0f} images/min; bound {rep['bound'][r]:.0f} "
                     f"(own time {rep['own_seconds']:.1f} s over {rep['cores']} cores); "
                     f"{rep['pace_vs_bound'][r] or 0:.2f} of it")
    return lines
