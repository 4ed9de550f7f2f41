#!/usr/bin/python3
"""Core benchmark: N long-named files created in ONE directory, then looked up.

Measured in the same run, on the same names:
  core        bench_create (C, in memory): N x (create + 10-byte write), then
              N x vfat_stat; dual and nodual
  core-cli    `vfat apply` of an op-script with the N creates (includes
              reading/writing the 64 MiB image)
  mtools      ONE `mcopy -i IMG f1 ... fN ::/dir/` of N 10-byte host files
              into a fresh core-made image (capped by --cap seconds: mtools
              is super-linear; a capped run is reported as "> cap")

Reported: seconds, microseconds per file, and the ratio mtools / core.
How the core's cost grows with directory size shows in the us/file
column (flat = linear total cost).

  /usr/bin/python3 bench/bench_core.py [--n 500,1000,2000,10000] [--cap 120]
        [--build build] [--out bench/results]   (writes core.md and core.json)
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def name(i):
    return f"long file name number {i:06d}.txt"


def run_timed(argv, timeout, env=None):
    t0 = time.monotonic()
    try:
        cp = subprocess.run(argv, capture_output=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - t0
    return cp, time.monotonic() - t0


def bench_core(build, n, mode):
    cp = subprocess.run([os.path.join(build, "bench_create"), str(n), "--names", mode],
                        capture_output=True, text=True, check=True)
    return json.loads(cp.stdout)


def bench_core_cli(build, n, tmp):
    img = os.path.join(tmp, "cli.img")
    ops = os.path.join(tmp, "cli.ops")
    vfat = os.path.join(build, "vfat")
    subprocess.run([vfat, "mkfs", img, "--size", "64M"], check=True)
    with open(ops, "w") as f:
        f.write('mkdir "/dir"\n')
        for i in range(n):
            f.write(f'create "/dir/{name(i)}" 10 7\n')
    cp, dt = run_timed([vfat, "apply", img, ops, "--names", "dual"], 600)
    if cp is None or cp.returncode != 0:
        raise SystemExit(f"vfat apply failed for n={n}")
    bad = [l for l in cp.stdout.decode().splitlines() if '"ok"' not in l]
    if bad:
        raise SystemExit(f"vfat apply: {len(bad)} ops failed, e.g. {bad[0]}")
    os.unlink(img)
    return dt


def bench_mtools(build, n, tmp, cap):
    host = os.path.join(tmp, f"host{n}")
    os.makedirs(host)
    data = bytes((7 + 31 * i) % 256 for i in range(10))
    files = []
    for i in range(n):
        p = os.path.join(host, name(i))
        with open(p, "wb") as f:
            f.write(data)
        files.append(p)
    img = os.path.join(tmp, "mt.img")
    subprocess.run([os.path.join(build, "vfat"), "mkfs", img, "--size", "64M"], check=True)
    rc = os.path.join(tmp, "mtoolsrc")
    with open(rc, "w") as f:
        f.write("mtools_skip_check=1\ndefault_codepage=437\n")
    env = dict(os.environ, MTOOLSRC=rc, LC_ALL="C.UTF-8")
    subprocess.run(["mmd", "-i", img, "::/dir"], check=True, env=env)
    cp, dt = run_timed(["mcopy", "-i", img, *files, "::/dir/"], cap, env=env)
    shutil.rmtree(host)
    if cp is None:
        return None, dt
    if cp.returncode != 0:
        raise SystemExit(f"mcopy failed (n={n}): {cp.stderr.decode(errors='replace')[:300]}")
    # sanity: everything arrived
    ls = subprocess.run(["mdir", "-i", img, "-b", "::/dir"], capture_output=True, env=env)
    got = sum(1 for l in ls.stdout.decode("utf-8", "replace").splitlines() if l.strip())
    os.unlink(img)
    if got != n:
        raise SystemExit(f"mcopy: {got} of {n} files in the image")
    return dt, dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", default="500,1000,2000,10000")
    ap.add_argument("--cap", type=float, default=120.0, help="seconds allowed per mtools run")
    ap.add_argument("--build", default=os.environ.get("VFAT_BUILD", os.path.join(SRC, "build")))
    ap.add_argument("--out", default=os.path.join(SRC, "bench", "results"))
    ap.add_argument("--no-mtools", action="store_true")
    a = ap.parse_args()
    for exe in ("bench_create", "vfat"):
        if not os.access(os.path.join(a.build, exe), os.X_OK):
            sys.exit(f"bench_core: {a.build}/{exe} missing: cmake --build {a.build} --target {exe}")
    if not a.no_mtools and not shutil.which("mcopy"):
        sys.exit("bench_core: mcopy not found (apt-get install mtools, or --no-mtools)")
    ns = [int(x) for x in a.n.split(",")]
    rows = []
    tmp = tempfile.mkdtemp(prefix="vfz-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        for n in ns:
            dual = bench_core(a.build, n, "dual")
            nodual = bench_core(a.build, n, "nodual")
            cli = bench_core_cli(a.build, n, tmp)
            mt, mt_elapsed = (None, 0.0) if a.no_mtools else bench_mtools(a.build, n, tmp, a.cap)
            row = {"n": n, "core_dual": dual, "core_nodual": nodual, "core_cli_s": cli,
                   "mtools_s": mt, "mtools_capped": mt is None and not a.no_mtools,
                   "mtools_elapsed_s": mt_elapsed, "cap_s": a.cap}
            rows.append(row)
            mts = f"{mt:.2f}s" if mt is not None else (f"> {a.cap:g}s (capped)" if not a.no_mtools else "-")
            print(f"n={n}: core dual create {dual['create_s']:.4f}s ({dual['create_us_per_file']:.1f} us/file), "
                  f"lookup {dual['lookup_s']:.4f}s; nodual create {nodual['create_s']:.4f}s; "
                  f"core CLI {cli:.2f}s; mtools {mts}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    lines = ["| N | core create (dual) | us/file | core lookup | us/file | core create (nodual) | "
             "core CLI apply | mtools mcopy (1 process) | mtools / core create | mtools / core CLI |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        d, nd = r["core_dual"], r["core_nodual"]
        if r["mtools_s"] is not None:
            mt = f"{r['mtools_s']:.2f} s"
            ratio = f"{r['mtools_s'] / max(d['create_s'], 1e-9):,.0f}x"
            ratio2 = f"{r['mtools_s'] / r['core_cli_s']:,.1f}x"
        elif r["mtools_capped"]:
            mt = f"> {r['cap_s']:g} s (capped)"
            ratio = f"> {r['cap_s'] / max(d['create_s'], 1e-9):,.0f}x"
            ratio2 = f"> {r['cap_s'] / r['core_cli_s']:,.1f}x"
        else:
            mt = ratio = ratio2 = "-"
        lines.append(f"| {r['n']} | {d['create_s']:.4f} s | {d['create_us_per_file']:.1f} | "
                     f"{d['lookup_s']:.4f} s | {d['lookup_us_per_file']:.1f} | {nd['create_s']:.4f} s | "
                     f"{r['core_cli_s']:.2f} s | {mt} | {ratio} | {ratio2} |")
    table = "\n".join(lines)
    print()
    print(table)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "core.json"), "w") as f:
        json.dump({"rows": rows, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, f, indent=1)
    with open(os.path.join(a.out, "core.md"), "w") as f:
        f.write(f"# Core benchmark ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n\n"
                f"mtools runs capped at {a.cap:g} s each.\n\n{table}\n")


if __name__ == "__main__":
    main()
