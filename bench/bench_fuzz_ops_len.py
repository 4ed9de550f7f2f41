#!/usr/bin/python3
"""fuzz_ops throughput against script length: exec/s and ops checked per CPU-second per -max_len.

fuzz_ops checks the whole image (vfat_check), the changed directories
against the model, and a failed op's untouched image after every op, so
its exec/s falls with the number of ops per input. This measures by how
much, in one run: for each -max_len L (default 32 64 128 256 512 1024
2048; the committed .options use 2048), the `fuzz` preset's fuzz_ops
(libFuzzer + ASan + UBSan) fuzzes for T seconds from the committed seeds
(libFuzzer cuts them to L bytes) into a fresh scratch corpus, with the
target's dictionary and a fixed -seed. Reported per L:
  exec per CPU-second   executions / (user+sys CPU of the fuzzer process);
  ops per input         mean op count of the inputs the run kept (new
                        corpus units, decoded by `vfat gen --from-input`),
                        which are what it mutates and executes;
  ops per CPU-second    the two multiplied: the checked-op rate;
  counted               the same rate as the harness counts it (ops it
                        applied and checked, printed at exit with
                        VFAT_FUZZ_OPS_COUNT=1), and ops per executed input;
  vs L=2048             exec per CPU-second relative to the committed
                        max_len, measured in the same run;
  checks after the last op only
                        exec per CPU-second of fuzz_ops_checklast (the same
                        target built with -DFUZZ_OPS_CHECK_LAST: no
                        vfat_check, content read or failed-op compare
                        after each op, only the listing the model learns
                        aliases from; everything after the last op) at the
                        same L and seed: what the per-op checks cost.
Not a test: nothing is asserted. Writes fuzz_ops_len.md and .json.

  scripts/vfatfuzz bench fuzz_ops_len --no-setup [--quick]
  /usr/bin/python3 bench/bench_fuzz_ops_len.py [--quick] [--seconds T] [--lens 32,64,...]
        [--seed N] [--no-build] [--out bench/results]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_fuzz as bf  # noqa: E402  (shared runners: one definition of how a fuzzer is timed)

SRC = bf.SRC
VFAT = os.path.join(SRC, "build", "vfat")
BIN = os.path.join(SRC, "build-fuzz", "fuzz", "fuzz_ops")
BIN_LAST = os.path.join(SRC, "build-fuzz", "fuzz", "fuzz_ops_checklast")


def ops_of(path):
    """Op count of one fuzz input, from the header vfat gen --from-input
    prints ("# vfat gen --from-input: FAT12, 512-byte clusters, 13 ops");
    None when the input decodes to nothing."""
    cp = subprocess.run([VFAT, "gen", "--from-input", path], capture_output=True)
    if cp.returncode != 0:
        return None
    first = cp.stdout.split(b"\n", 1)[0].decode("utf-8", "replace")
    if not first.endswith(" ops"):
        return None
    try:
        return int(first.rsplit(" ", 2)[1])
    except ValueError:
        return None


def run_len(max_len, seconds, seed, scratch):
    r = bf.run_libfuzzer("fuzz_ops", BIN, seconds, seed, scratch, {"max_len": max_len}, f"-{max_len}")
    corpus = os.path.join(scratch, f"lf-fuzz_ops-{max_len}", "corpus")
    counts = [n for n in (ops_of(os.path.join(corpus, u)) for u in sorted(os.listdir(corpus)))
              if n is not None]
    mean_ops = sum(counts) / len(counts) if counts else None
    epc = r["exec_per_cpu_s"]
    last = bf.run_libfuzzer("fuzz_ops", BIN_LAST, seconds, seed, scratch, {"max_len": max_len},
                            f"-last-{max_len}")
    return {"last_exec_per_cpu_s": last["exec_per_cpu_s"], "last_problem": last["problem"],
            "max_len": max_len, "argv": r["argv"], "execs": r["execs"], "wall_s": r["wall_s"],
            "cpu_s": r["cpu_s"], "exec_per_cpu_s": epc,
            "units": len(counts), "mean_ops": round(mean_ops, 2) if mean_ops is not None else None,
            "ops_per_cpu_s": round(epc * mean_ops) if epc and mean_ops else None,
            "counted_ops_per_input": r.get("ops_per_input"),
            "counted_ops_per_cpu_s": r.get("checked_ops_per_cpu_s"),
            "load1": r["load1"], "problem": r["problem"]}


def num(x):
    return bf.fmt_int(None if x is None else round(x))


def table(rows, seconds):
    ref = next((r for r in rows if r["max_len"] == 2048 and r["exec_per_cpu_s"]), None)
    out = [f"| -max_len | execs in {seconds} s | exec per CPU-s | kept inputs | ops per input (mean) "
           "| ops checked per CPU-s | load | exec/CPU-s vs max_len 2048 "
           "| exec per CPU-s, checks after the last op only | every op checked vs last only "
           "| ops per executed input (counted) | ops checked per CPU-s (counted) |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = (f"{r['exec_per_cpu_s'] / ref['exec_per_cpu_s']:.2f}x"
                 if ref and r["exec_per_cpu_s"] else "-")
        last = r.get("last_exec_per_cpu_s")
        vs_last = f"{r['exec_per_cpu_s'] / last:.2f}x" if last and r["exec_per_cpu_s"] else "-"
        out.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            r["max_len"], bf.fmt_int(r["execs"]), num(r["exec_per_cpu_s"]), r["units"],
            "-" if r["mean_ops"] is None else f"{r['mean_ops']:.1f}",
            num(r["ops_per_cpu_s"]), r["load1"],
            ratio + (f" ({r['problem']})" if r["problem"] else ""),
            num(last) + (f" ({r['last_problem']})" if r.get("last_problem") else ""), vs_last,
            "-" if r.get("counted_ops_per_input") is None else f"{r['counted_ops_per_input']:.1f}",
            num(r.get("counted_ops_per_cpu_s"))))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=None, help="seconds per max_len (default 20)")
    ap.add_argument("--quick", action="store_true", help="8 s per max_len")
    ap.add_argument("--lens", default="32,64,128,256,512,1024,2048")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("--out", default=os.path.join(SRC, "bench", "results"))
    a = ap.parse_args()
    if a.seconds is None:
        a.seconds = 8 if a.quick else 20
    try:
        lens = [int(x) for x in a.lens.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--lens: not a comma-separated list of integers: {a.lens!r}")
    if not lens or any(n < 1 for n in lens) or a.seconds < 1:
        ap.error("--lens needs positive lengths and --seconds a positive number")
    bf.become_subreaper()
    notes = []
    if not a.no_build:
        bf.build("fuzz", "build-fuzz", ["fuzz_ops", "fuzz_ops_checklast"], notes)
        bf.build("default", "build", ["vfat"], notes)
    for p in (BIN, BIN_LAST, VFAT):
        if not os.access(p, os.X_OK):
            print(f"bench_fuzz_ops_len: {os.path.relpath(p, SRC)} is missing (build it or drop --no-build)",
                  file=sys.stderr)
            return 2
    scratch = tempfile.mkdtemp(prefix="vfz-bench-len-")
    rows = []
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    try:
        for n in lens:
            bf.log(f"fuzz_ops and fuzz_ops_checklast -max_len={n}: {a.seconds} s each")
            r = run_len(n, a.seconds, a.seed, scratch)
            bf.log(f"  {num(r['exec_per_cpu_s'])} exec/CPU-s, {r['mean_ops']} ops/input, "
                   f"{num(r['ops_per_cpu_s'])} ops/CPU-s; checks after the last op only: "
                   f"{num(r['last_exec_per_cpu_s'])} exec/CPU-s")
            rows.append(r)
    finally:
        if not a.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    md = [f"# fuzz_ops throughput against script length ({stamp})", "",
          f"`fuzz` preset (libFuzzer + ASan + UBSan), seed {a.seed}, {a.seconds} s per -max_len, "
          "2 cores shared with other jobs; every op checked (vfat_check, model, unchanged image "
          "after a failed op), and the same target with its checks after the last op only "
          "(fuzz_ops_checklast).", "", table(rows, a.seconds), ""]
    md += [f"- {n}" for n in notes]
    md += ["", "Command line of one point (from the repository):", "", "```",
           " ".join(os.path.relpath(x, SRC) if x.startswith(SRC) else x for x in rows[0]["argv"])
           if rows else "", "```", ""]
    os.makedirs(a.out, exist_ok=True)
    for name, text in (("fuzz_ops_len.md", "\n".join(md)),
                       ("fuzz_ops_len.json", json.dumps({"date": stamp, "seconds": a.seconds,
                                                         "seed": a.seed, "rows": rows, "notes": notes},
                                                        indent=1))):
        tmp = os.path.join(a.out, name + ".tmp")
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, os.path.join(a.out, name))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
