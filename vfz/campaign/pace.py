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
import resource

CORES = 2


def cores():
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or CORES


def tree_cpu(root=None):
    """CPU seconds of this process and all its descendants, live (e.g. the
    kernel VM, the fuzzer) or reaped. root: a child's pid instead: that
    process (its reaped children included) and its live descendants; 0.0
    once it is gone."""
    tck = os.sysconf("SC_CLK_TCK")
    total = 0.0
    if root is None:
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
            ru = resource.getrusage(who)
            total += ru.ru_utime + ru.ru_stime
    parent, cpu = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parent[int(d)] = int(st[1])
        cpu[int(d)] = sum(int(x) for x in st[11:15]) / tck   # utime stime cutime cstime
    me = os.getpid() if root is None else root
    if root is not None:
        total += cpu.get(root, 0.0)
    for pid in cpu:
        p, hops = parent.get(pid), 0
        while p and p != me and hops < 64:
            p, hops = parent.get(p), hops + 1
        if p == me and pid != me:
            total += cpu[pid]
    return total


def report(stage_s, stage_n, own_s, images, wall, ncores=None, cpu_s=None, used_cpu=None,
           fuzzer_cpu=None):
    """stage_s/stage_n/own_s/cpu_s: Counters by stage name ("write core-v1",
    "read mtools", ...); images: {reader: images checked}; wall: the
    seconds the main loop ran (VM boot excluded). -> dict (summary.json).

    The bound: with cpu_s, the oracles' CPU seconds (their tools', the
    VM's, their glue's) over the cores; a call's wall time counts the
    waiting for a core too, which the lanes (and any other load) make
    longer, so the wall-time bound ("bound_wall") flatters the pace when
    lanes run side by side. Without cpu_s, the wall-time bound.

    used_cpu: the CPU seconds the campaign's process tree used while the
    loop ran; "share" = used_cpu / (wall x cores) is how much of the
    machine it got (other jobs on the cores lower it), and
    "pace_vs_bound_at_share" = pace / (bound x share): the pipeline's own
    efficiency, which the machine's other load does not move.

    fuzzer_cpu: the part of used_cpu that the background fuzz_ops took.
    The bound counts the oracles alone, so with the fuzzer beside the lanes
    the pace is also given against the bound over the CPU the fuzzer left
    them ("pace_vs_bound_beside_fuzzer": pace / (bound x (1 - fuzzer
    share))); the fuzzer runs niced so that it takes mostly idle time."""
    ncores = ncores or cores()
    roles = ("write ", "read ")
    own_wall = sum(v for k, v in own_s.items() if k.startswith(roles))
    own_cpu = sum(v for k, v in (cpu_s or {}).items() if k.startswith(roles))
    own_total = own_cpu if cpu_s else own_wall
    stages = {k: {"seconds": round(stage_s[k], 2), "calls": stage_n[k],
                  "ms_per_call": round(1000.0 * stage_s[k] / stage_n[k], 1) if stage_n[k] else None}
              for k in sorted(stage_s)}
    oracles = {}
    for k in sorted(own_s):
        n = stage_n[k]
        c = (cpu_s or {}).get(k)
        oracles[k] = {"own_seconds": round(own_s[k], 2), "calls": n,
                      "ms_per_call": round(1000.0 * own_s[k] / n, 1) if n else None,
                      "per_minute_own": round(60.0 * n / own_s[k], 1) if own_s[k] else None,
                      "cpu_seconds": round(c, 2) if c is not None else None,
                      "cpu_ms_per_call": round(1000.0 * c / n, 1) if c is not None and n else None}
    out = {"cores": ncores, "loop_seconds": round(wall, 1), "own_seconds": round(own_total, 2),
           "own_wall_seconds": round(own_wall, 2), "bound_from": "cpu" if cpu_s else "wall",
           "stages": stages, "oracles": oracles, "pace": {}, "bound": {}, "pace_vs_bound": {},
           "bound_wall": {}}
    for r, n in images.items():
        pace = 60.0 * n / wall if wall > 0 else 0.0
        bound = 60.0 * n / (own_total / ncores) if own_total > 0 else 0.0
        out["pace"][r] = round(pace, 1)
        out["bound"][r] = round(bound, 1)
        out["pace_vs_bound"][r] = round(pace / bound, 3) if bound else None
        out["bound_wall"][r] = round(60.0 * n / (own_wall / ncores), 1) if own_wall > 0 else 0.0
    if used_cpu is not None and wall > 0:
        share = used_cpu / (wall * ncores)
        out["used_cpu_seconds"] = round(used_cpu, 1)
        out["share"] = round(share, 3)
        out["pace_vs_bound_at_share"] = {r: round(v / share, 3) if v and share else None
                                         for r, v in out["pace_vs_bound"].items()}
    if fuzzer_cpu is not None and wall > 0:
        fshare = min(fuzzer_cpu / (wall * ncores), 0.999)
        out["fuzzer_cpu_seconds"] = round(fuzzer_cpu, 1)
        out["fuzzer_share"] = round(fshare, 3)
        out["pace_vs_bound_beside_fuzzer"] = {r: round(v / (1.0 - fshare), 3) if v else None
                                              for r, v in out["pace_vs_bound"].items()}
    return out


def table(rep):
    """Lines for the campaign's summary table."""
    lines = [f"{'stage':<22} {'seconds':>9} {'calls':>7} {'ms/call':>8} {'own s':>8} {'CPU s':>8}"]
    for k, v in rep["stages"].items():
        o = rep["oracles"].get(k, {})
        own, cpu = o.get("own_seconds"), o.get("cpu_seconds")
        lines.append(f"{k:<22} {v['seconds']:>9.2f} {v['calls']:>7} "
                     f"{v['ms_per_call'] if v['ms_per_call'] is not None else '-':>8} "
                     f"{own if own is not None else '':>8} {cpu if cpu is not None else '':>8}")
    for r in rep["pace"]:
        lines.append(f"pace {r}: {rep['pace'][r]:.0f} images/min; bound {rep['bound'][r]:.0f} "
                     f"(oracles' {rep['bound_from']} time {rep['own_seconds']:.1f} s over "
                     f"{rep['cores']} cores; wall-time bound {rep['bound_wall'][r]:.0f}); "
                     f"{rep['pace_vs_bound'][r] or 0:.2f} of it")
    if "share" in rep:
        r0 = next(iter(rep["pace"]), None)
        lines.append(f"the campaign got {rep['share']:.2f} of the {rep['cores']} cores "
                     f"({rep['used_cpu_seconds']:.0f} CPU-s in {rep['loop_seconds']:.0f} s); at that share "
                     f"the pace is {(rep['pace_vs_bound_at_share'].get(r0) or 0):.2f} of the bound")
    if "fuzzer_share" in rep:
        r0 = next(iter(rep["pace"]), None)
        lines.append(f"the fuzzer took {rep['fuzzer_share']:.2f} of the cores "
                     f"({rep['fuzzer_cpu_seconds']:.0f} CPU-s); over the CPU it left, the pace is "
                     f"{(rep['pace_vs_bound_beside_fuzzer'].get(r0) or 0):.2f} of the bound")
    return lines
