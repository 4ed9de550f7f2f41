"""Collision study: how often do two dummy short entries in one directory
come out equal, measured on REAL directories written by the core, next to
the analytic values; and what a collision costs with fsck.fat, mtools and
the kernel.

Measurement (build/study_collide, scripts/study_collide.c): each trial is a
fresh volume, mkdir /d, then N_max entries with 13-character long names (one
LFN slot + one short entry each, so 32 767 of them fill the 65 536 slots a
directory may have, "." and ".." included), read back with vfat_readdir.
The driver reports, per trial, after how many creations the first
duplicate short entry appeared. The directory of the first n entries of a
trial IS a directory of n entries, so every trial gives one Bernoulli
sample for every size n <= N_max (points of one series are therefore
correlated with each other; each point on its own is an honest binomial
estimate). Intervals: Wilson score, 95 %.

The analytic values and the projections that check the dummies' distribution
at small n: vfz.study.analytic; what a collision costs: vfz.study.cost; the
report: vfz.study.collisions_report.
"""
import csv
import json
import os
import shutil
import subprocess
import tempfile
import time

from vfz.study.analytic import (NMAX, V1_SUM_P2, birthday, p_collide_exact, p_digits, uniformity,  # noqa: F401
                                v1_collide, v1_proj_probs, v3_proj_probs, v3_sum_p2, v3_uniform_space,
                                wilson)
from vfz.study.collisions_report import plot, write_md
from vfz.study.cost import make_forced, make_natural, measure_cost
from vfz.study.tools import driver_path, tool_versions, vfat_ls, vfat_path  # noqa: F401

SIZES = [10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 32767]
# trials per series at each --size: (v1 files, v3 files, v3 dirs, v1 unique, v3 unique)
TRIALS = {
    "small": {"v1": 40, "v3": 10, "v3-dirs": 5, "unique": 5, "v3-unique": 5},
    "default": {"v1": 300, "v3": 200, "v3-dirs": 50, "unique": 50, "v3-unique": 30},
    "full": {"v1": 3000, "v3": 5000, "v3-dirs": 800, "unique": 400, "v3-unique": 200},
}
SERIES = {
    # name: (driver args, label)
    "v1": (["--dummy", "v1"], "v1 (30 random bits), files"),
    "v3": (["--dummy", "v3"], "v3, files (same extension)"),
    "v3-dirs": (["--dummy", "v3", "--dirs"], "v3, directories"),
    "unique": (["--dummy", "v1", "--unique"], "v1 --unique, files"),
    "v3-unique": (["--dummy", "v3", "--unique"], "v3 --unique, files"),
}
SEED_STRIDE = 1 << 20  # trial t of series i uses seed base*2^24 + i*2^20 + t


# ------------------------------------------------------------------ driver
def run_series(name, trials, seed, nmax=NMAX, progress=None):
    """-> list of (seed, first, proj, pairs)."""
    args, _ = SERIES[name]
    idx = list(SERIES).index(name)
    base = seed * (1 << 24) + idx * SEED_STRIDE
    out = []
    chunk = max(1, min(50, trials))
    t0 = time.monotonic()
    done = 0
    while done < trials:
        k = min(chunk, trials - done)
        p = subprocess.run([driver_path(), *args, "--n", str(nmax), "--trials", str(k),
                            "--seed", str(base + done)], capture_output=True, text=True, timeout=3600)
        if p.returncode != 0:
            raise RuntimeError(f"study_collide {name}: {p.stderr.strip() or p.returncode}")
        for line in p.stdout.splitlines():
            f = line.split()
            if f[0] != "trial":
                continue
            if int(f[5]) != nmax:
                raise RuntimeError(f"study_collide {name}: read back {f[5]} entries, wanted {nmax}")
            out.append((int(f[1]), int(f[2]), int(f[3]), int(f[4]), int(f[6]), int(f[7])))
        done += k
        if progress:
            progress(f"collisions: {name}: {done}/{trials} trials of {nmax} entries, "
                     f"{sum(1 for r in out if r[1])} with a duplicate, {time.monotonic() - t0:.0f}s")
    return out



# ------------------------------------------------------------------ report
def run_study(out, seed, size, progress, with_kernel=True):
    os.makedirs(out, exist_ok=True)
    if not os.access(driver_path(), os.X_OK):
        raise RuntimeError(f"{driver_path()} is not built (cmake --build build --target study_collide)")
    t0 = time.monotonic()
    trials = TRIALS[size]
    data = {}
    for name in SERIES:
        data[name] = run_series(name, trials[name], seed, progress=progress)
    progress("collisions: analytic values")
    s3f, rse_f = v3_sum_p2(False, seed=seed + 1)
    s3d, rse_d = v3_sum_p2(True, seed=seed + 2)
    proj = {"v1": v1_proj_probs(), "v3": v3_proj_probs(False), "v3-dirs": v3_proj_probs(True),
            "unique": v1_proj_probs(), "v3-unique": v3_proj_probs(False)}
    analytic = {
        "v1": lambda n: v1_collide(n),
        "v3": lambda n: birthday(n, s3f),
        "v3-dirs": lambda n: birthday(n, s3d),
        "unique": lambda n: 0.0,
        "v3-unique": lambda n: 0.0,
    }
    rows = []
    for name, trs in data.items():
        for n in SIZES:
            k = sum(1 for t in trs if 0 < t[1] <= n)
            kp = sum(1 for t in trs if 0 < t[2] <= n)
            lo, hi = wilson(k, len(trs))
            plo, phi = wilson(kp, len(trs))
            pproj = p_collide_exact(n, proj[name]) if n <= 400 else 1.0
            rows.append({"series": name, "n": n, "trials": len(trs), "collided": k,
                         "measured": k / len(trs), "ci_low": lo, "ci_high": hi,
                         "analytic": analytic[name](n),
                         "proj_collided": kp, "proj_measured": kp / len(trs),
                         "proj_ci_low": plo, "proj_ci_high": phi, "proj_analytic": pproj})
    with open(os.path.join(out, "collisions.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})

    # pair counts: expected C(N,2) * sum p^2 per trial
    pairs = {}
    for name, trs in data.items():
        sp2 = {"v1": V1_SUM_P2, "v3": s3f, "v3-dirs": s3d}.get(name, 0.0)
        pairs[name] = (sum(t[3] for t in trs), len(trs) * NMAX * (NMAX - 1) / 2 * sp2)

    unif = uniformity(data)

    # cost of a collision
    progress("collisions: cost of a collision (fsck.fat, mtools, kernel)")
    readers = [("mtools", None)]
    from vfz.oracles.mtools import MtoolsReader
    readers = [("mtools", MtoolsReader())]
    if with_kernel:
        from vfz import oracles
        for kn in ("kernel", "kernel-nodual"):
            try:
                r = oracles.get_reader(kn)
                av = r.available() if hasattr(r, "available") else True
                if isinstance(av, tuple):
                    av = av[0]
                if av:
                    readers.append((kn, r))
            except Exception:
                pass
    tmp = tempfile.mkdtemp(prefix="vfz-coll-")
    costs = []
    try:
        for mode in ("v1", "v3"):
            img = make_forced(tmp, mode, seed)
            costs.append((f"forced {mode}: 3 files, the 2nd's dummy overwritten with the 1st's",
                          measure_cost(img, readers)))
        for mode in ("v1", "v3"):
            nat = sorted((t[1], t[0]) for t in data[mode] if t[1])
            if not nat:
                continue
            first, s = nat[0]
            img, ops, keep = make_natural(tmp, s, first, mode)
            where = "not kept (large); regenerate with the replay line below"
            if first <= 5000:
                name = f"collisions-natural-{mode}.ops"
                shutil.copyfile(ops, os.path.join(out, name))
                where = f"op-script: {name}"
            costs.append((f"natural {mode}: seed {s}, the first {first} creations of that trial, then "
                          f"all files unlinked but the two sharing a dummy ({keep[0]}, {keep[1]}); "
                          f"{where} (replay: `build/study_collide --dummy {mode} --n {first} --seed {s}` "
                          f"builds the full directory)", measure_cost(img, readers)))
    finally:
        for _, r in readers:
            try:
                r.close()
            except Exception:
                pass
        shutil.rmtree(tmp, ignore_errors=True)

    vers = tool_versions()
    plot_ok = plot(os.path.join(out, "collisions.png"), rows, analytic, s3f, s3d)
    write_md(os.path.join(out, "collisions.md"), rows, data, pairs, costs, vers, seed, size,
             (s3f, rse_f, s3d, rse_d), plot_ok, time.monotonic() - t0, unif)
    with open(os.path.join(out, "collisions.json"), "w") as f:
        json.dump({"seed": seed, "size": size, "trials": {k: len(v) for k, v in data.items()},
                   "v3_sum_p2": {"files": s3f, "files_rse": rse_f, "dirs": s3d, "dirs_rse": rse_d},
                   "pairs": pairs, "uniformity": unif, "costs": costs, "versions": vers,
                   "seeds": {k: {"first": v[0][0], "last": v[-1][0]} for k, v in data.items()},
                   "collided_trials": {k: [[t[0], t[1], t[3]] for t in v if t[1]]
                                       for k, v in data.items()}}, f, indent=1)
    return rows
