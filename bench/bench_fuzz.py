#!/usr/bin/python3
"""Fuzzing throughput: libFuzzer vs AFL++ exec/s per target, and the campaign's images per oracle.

Measured in the same run:
  libFuzzer   each target (fuzz_ops, fuzz_image, fuzz_names) of the `fuzz`
              preset (libFuzzer + ASan + UBSan, build-fuzz/fuzz/<target>)
              for T seconds, from the committed seeds corpus/<target>/ into
              a fresh scratch corpus, with corpus/<target>.dict and the
              options of <target>.options (max_len, timeout, rss_limit_mb),
              a fixed -seed. Reported: executions, exec/s as libFuzzer
              prints it (stat::average_exec_per_sec, wall clock), executions
              per CPU-second of the fuzzer process (user+sys from wait4) and
              the 1-minute load average at the end of the run. fuzz_ops
              runs with VFAT_FUZZ_OPS_COUNT=1 and prints at exit how many
              ops it applied and checked: checked ops per CPU-second.
              fuzz_ops is then run a second time, built by the `fuzz-ubsan`
              preset (libFuzzer + UBSan, build-fuzz-ubsan/fuzz/fuzz_ops),
              the build the campaign fuzzes with (it replays what it keeps
              under the ASan build): the same figures for it.
  AFL++       the same target of the `afl` preset (afl-clang-fast,
              ASan/UBSan, persistent mode; the CmpLog build <target>.cmplog
              via -c) under afl-fuzz -V T, same seeds, dictionary and seed
              number: execs_done / execs_per_sec from fuzzer_stats, and
              executions per CPU-second of afl-fuzz and its targets.
              Run right after the libFuzzer run of the same target, so the
              two see about the same load; ratio = libFuzzer / AFL++.
  campaign    `vfatfuzz campaign --no-setup --minutes M --seed N` in a fresh
              workdir (default oracles dosfsck, mtools, kernel; writers
              core-dual, core-v1, core-v3, kernel; fuzz_ops on one worker in
              the background): images checked per oracle and per minute of
              campaign wall time, from <workdir>/summary.json. In the main
              loop every reader reads every written image, so that rate is
              the campaign's pace more than the oracle's (minimising a
              finding re-checks only on the oracle that showed it, hence
              unequal counts); the bench therefore also times each oracle's
              read() (and each writer's apply()) inside the same campaign
              process, through a wrapper installed before the campaign
              starts, and reports images per minute of that oracle's own
              time, relative to the fastest oracle.

  /usr/bin/python3 bench/bench_fuzz.py [--quick] [--seconds T] [--minutes M]
        [--seed N] [--targets fuzz_ops,...] [--no-afl] [--no-campaign]
        [--no-build] [--keep] [--out bench/results]   (writes fuzz.md, fuzz.json)

Defaults: T = 30, M = 2 (--quick: T = 10, M = 1); the default run takes
about 6 minutes. The presets it needs (fuzz, afl, and the default build's
vfat for the campaign) are configured and built first (-j2, incremental);
a build that fails is reported, and whatever binary is left is measured
and marked stale. Not a test: nothing is asserted.
"""
import argparse
import configparser
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = ["fuzz_ops", "fuzz_image", "fuzz_names"]
AFL_ENV = {"AFL_SKIP_CPUFREQ": "1", "AFL_NO_UI": "1", "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1",
           # 2 shared cores, usually both busy: do not insist on a free core
           "AFL_NO_AFFINITY": "1",
           # afl-fuzz refuses ASan targets without these two; leaks left at the default
           "ASAN_OPTIONS": "abort_on_error=1:symbolize=0",
           "UBSAN_OPTIONS": "halt_on_error=1:abort_on_error=1:symbolize=0"}


def log(msg):
    print(msg, flush=True)


def load():
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


# ------------------------------------------------------------------ builds
def build(preset, bdir, targets, notes):
    """cmake --preset + cmake --build -j2 --target ...; returns a dict
    target -> 'ok' | 'stale' | 'missing: why'."""
    bdir = os.path.join(SRC, bdir)
    why = None
    t0 = time.monotonic()
    cp = subprocess.run(["cmake", "--preset", preset], cwd=SRC, capture_output=True, text=True)
    if cp.returncode != 0:
        why = f"cmake --preset {preset} failed: {last_line(cp.stderr or cp.stdout)}"
    else:
        cp = subprocess.run(["cmake", "--build", bdir, "-j2", "--target", *targets], cwd=SRC,
                            capture_output=True, text=True)
        if cp.returncode != 0:
            errs = [ln for ln in (cp.stdout + cp.stderr).splitlines() if "error" in ln.lower()]
            why = f"cmake --build {os.path.relpath(bdir, SRC)} failed: {(errs or [last_line(cp.stderr)])[0][:200]}"
    if why:
        notes.append(why)
        log(f"  {why}")
    else:
        log(f"  built {preset} ({', '.join(targets)}) in {time.monotonic() - t0:.0f} s")
    return "stale" if why else "ok"


def last_line(text):
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    return lines[-1][:200] if lines else "(no output)"


# ------------------------------------------------------------------ options
def options_for(target):
    """(path of the .options file or None, dict of its [libfuzzer] section)."""
    for d in ("corpus", "harnesses"):
        p = os.path.join(SRC, d, f"{target}.options")
        if os.path.isfile(p):
            cp = configparser.ConfigParser()
            cp.read(p)
            return p, dict(cp["libfuzzer"]) if cp.has_section("libfuzzer") else {}
    return None, {}


def dict_for(target, opts, opts_path):
    p = os.path.join(SRC, "corpus", f"{target}.dict")
    if os.path.isfile(p):
        return p
    if "dict" in opts and opts_path:
        for base in (os.path.dirname(opts_path), os.path.join(SRC, "corpus")):
            q = os.path.join(base, opts["dict"])
            if os.path.isfile(q):
                return q
    return None


# ------------------------------------------------------------------ processes
def become_subreaper():
    """Orphans of a measured process (AFL++'s persistent-mode target when its
    fork server goes first) are re-parented to this process, so that the
    reaping below counts their CPU time. Linux prctl(PR_SET_CHILD_SUBREAPER)."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def my_children():
    me = str(os.getpid())
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    st = f.read()
            except OSError:
                continue
            if st[st.rindex(")") + 2:].split()[1] == me:
                out.append(int(d))
    return out


def reap_orphans(wait_s=5.0):
    """Reap every remaining descendant (re-parented orphans). Those still
    alive after wait_s (afl-fuzz 4.04c leaves its CmpLog fork server
    behind, idle) are killed: they are ours. -> number killed."""
    t0 = time.monotonic()
    killed = set()
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return len(killed)
        if pid:
            continue
        if time.monotonic() - t0 > wait_s:
            left = my_children()
            if not left:
                return len(killed)
            for c in left:
                try:
                    os.kill(c, signal.SIGKILL if time.monotonic() - t0 > wait_s + 2 else signal.SIGTERM)
                    killed.add(c)
                except ProcessLookupError:
                    pass
        time.sleep(0.05)


def cpu_children():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_measured(argv, cwd, logpath, limit, env=None):
    """Run argv with output to logpath; kill its process group after limit
    seconds. -> (exit status or None if killed, wall s, CPU s (user+sys)
    of it and all its descendants: RUSAGE_CHILDREN delta, orphans reaped
    as subreaper)."""
    reap_orphans(0)
    c0 = cpu_children()
    with open(logpath, "wb") as lf:
        p = subprocess.Popen(argv, cwd=cwd, stdout=lf, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    t0 = time.monotonic()
    killed = False
    try:
        while True:
            pid, status = os.waitpid(p.pid, os.WNOHANG)
            if pid == p.pid:
                break
            if time.monotonic() - t0 > limit and not killed:
                killed = True
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                    time.sleep(2)
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
    except BaseException:          # Ctrl-C: stop what we started, then give up
        try:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(p.pid, signal.SIGKILL)
        reap_orphans(1.0)
        raise
    p.returncode = 0   # reaped here; keep Popen from waiting again
    wall = time.monotonic() - t0
    n = reap_orphans(1.0)
    if n:
        log(f"  ({n} leftover descendant process(es) of it killed)")
    code = os.waitstatus_to_exitcode(status)
    return (None if killed else code), wall, cpu_children() - c0


def run_libfuzzer(target, binary, seconds, seed, scratch, overrides=None, tag=""):
    """T seconds of libFuzzer from the committed seeds into a fresh corpus
    <scratch>/lf-<target><tag>/corpus. overrides: libFuzzer options that
    replace the .options file's (e.g. {"max_len": 64})."""
    opts_path, opts = options_for(target)
    dic = dict_for(target, opts, opts_path)
    opts.update({k: str(v) for k, v in (overrides or {}).items()})
    work = os.path.join(scratch, f"lf-{target}{tag}")
    corpus = os.path.join(work, "corpus")
    os.makedirs(corpus)
    argv = [binary, f"-seed={seed}", f"-max_total_time={seconds}", "-print_final_stats=1",
            f"-artifact_prefix={work}/"]
    if dic:
        argv.append(f"-dict={dic}")
    for k, v in sorted(opts.items()):
        if k != "dict":
            argv.append(f"-{k}={v}")
    argv += [corpus, os.path.join(SRC, "corpus", target)]
    logpath = os.path.join(work, "log")
    # fuzz_ops counts the ops it applied and checked and prints them at exit
    env = dict(os.environ, VFAT_FUZZ_OPS_COUNT="1") if target == "fuzz_ops" else None
    code, wall, cpu = run_measured(argv, work, logpath, seconds + 60, env=env)
    with open(logpath, "rb") as f:
        out = f.read().decode("utf-8", "replace")
    counted = re.search(r"fuzz_ops: (\d+) inputs, (\d+) ops applied, (\d+) checked after the op", out)

    def stat(name):
        m = re.search(rf"stat::{name}:\s*(\d+)", out)
        return int(m.group(1)) if m else None
    execs = stat("number_of_executed_units")
    if execs is None:           # no final stats (crash, kill): the last status line
        ms = re.findall(r"#(\d+)\s+\w+\s.*?exec/s: (\d+)", out)
        execs = int(ms[-1][0]) if ms else 0
    eps = stat("average_exec_per_sec")
    problem = None
    if code is None:
        problem = f"killed after {wall:.0f} s"
    elif code != 0:
        m = re.search(r"(==\d+==ERROR: .*|SUMMARY: .*|deadly signal|ALARM: .*|out-of-memory.*)", out)
        problem = f"exit {code}: {m.group(1)[:160] if m else last_line(out)}"
    return {"engine": "libFuzzer", "argv": argv, "execs": execs, "exec_per_s": eps,
            "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "exec_per_cpu_s": round(execs / cpu, 1) if cpu > 0 else None,
            "new_units": stat("new_units_added"), "peak_rss_mb": stat("peak_rss_mb"),
            "load1": load(), "problem": problem,
            "checked_ops": int(counted.group(3)) if counted else None,
            "ops_per_input": round(int(counted.group(2)) / int(counted.group(1)), 2)
            if counted and int(counted.group(1)) else None,
            "checked_ops_per_cpu_s": round(int(counted.group(3)) / cpu) if counted and cpu > 0 else None}


def run_afl(target, binary, cmplog, seconds, seed, scratch):
    opts_path, opts = options_for(target)
    dic = dict_for(target, opts, opts_path)
    work = os.path.join(scratch, f"afl-{target}")
    os.makedirs(work)
    out_dir = os.path.join(work, "out")
    argv = ["afl-fuzz", "-i", os.path.join(SRC, "corpus", target), "-o", out_dir,
            "-s", str(seed), "-V", str(seconds), "-m", "none"]
    if dic:
        argv += ["-x", dic]
    if cmplog:
        argv += ["-c", cmplog]
    argv += ["--", binary]
    env = dict(os.environ, **AFL_ENV)
    logpath = os.path.join(work, "log")
    code, wall, cpu = run_measured(argv, work, logpath, seconds + 60, env=env)
    stats = {}
    try:
        with open(os.path.join(out_dir, "default", "fuzzer_stats")) as f:
            for ln in f:
                k, _, v = ln.partition(":")
                stats[k.strip()] = v.strip()
    except OSError:
        pass
    problem = None
    if code is None:
        problem = f"killed after {wall:.0f} s"
    elif code != 0 or not stats:
        with open(logpath, "rb") as f:
            text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", f.read().decode("utf-8", "replace"))
        m = re.search(r"PROGRAM ABORT : (.*)", text)
        problem = f"exit {code}: {m.group(1).strip()[:200] if m else last_line(text)}"
    execs = int(stats["execs_done"]) if "execs_done" in stats else None
    eps = float(stats["execs_per_sec"]) if "execs_per_sec" in stats else None
    return {"engine": "AFL++", "argv": argv, "env": AFL_ENV, "execs": execs, "exec_per_s": eps,
            "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "exec_per_cpu_s": round(execs / cpu, 1) if execs and cpu > 0 else None,
            "corpus_count": int(stats.get("corpus_count", 0) or 0) or None,
            "saved_crashes": int(stats.get("saved_crashes", 0) or 0),
            "saved_hangs": int(stats.get("saved_hangs", 0) or 0),
            "stability": stats.get("stability"), "load1": load(), "problem": problem}


# ------------------------------------------------------------------ campaign
def campaign_child(timings_path, argv):
    """Run `vfatfuzz <argv>` in this process with every reader's read() and
    every writer's apply() timed; write the timings to timings_path."""
    for p in (os.path.join(SRC, "scripts"), SRC):
        sys.path.insert(0, p)
    from vfz.campaign import loop as C
    from vfz.cli.main import main
    acc = {"readers": {}, "writers": {}}

    def timed(kind, name, fn):
        slot = acc[kind].setdefault(name, {"calls": 0, "seconds": 0.0})

        def wrapper(*a, **kw):
            t0 = time.monotonic()
            try:
                return fn(*a, **kw)
            finally:
                slot["calls"] += 1
                slot["seconds"] += time.monotonic() - t0
        return wrapper

    orig_init = C.Checker.__init__

    def init(self, *a, **kw):
        orig_init(self, *a, **kw)
        for n, o in self.readers:
            o.read = timed("readers", n, o.read)
        for n, o in self.writers:
            o.apply = timed("writers", n, o.apply)
    C.Checker.__init__ = init
    try:
        rc = main(argv)
    finally:
        with open(timings_path, "w") as f:
            json.dump(acc, f, indent=1)
    return rc


def run_campaign(minutes, seed, scratch):
    wd = os.path.join(scratch, "campaign")
    timings = os.path.join(scratch, "campaign-timings.json")
    cargv = ["campaign", "--no-setup", "--minutes", f"{minutes:g}", "--workdir", wd,
             "--seed", str(seed)]
    argv = ["/usr/bin/python3", os.path.abspath(__file__), "--campaign-child", timings, "--", *cargv]
    logpath = os.path.join(scratch, "campaign.log")
    l0 = load()
    code, wall, cpu = run_measured(argv, SRC, logpath, minutes * 60 + 240)
    res = {"command": "scripts/vfatfuzz " + " ".join(cargv), "exit": code, "wall_s": round(wall, 1),
           "load1_start": l0, "load1": load(), "summary": None, "timings": None, "notes": []}
    with open(logpath, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    res["notes"] = [ln.strip() for ln in text.splitlines()
                    if ln.startswith(("note:", "kernel oracle not available", "vfatfuzz campaign:"))][:5]
    res["findings"] = [ln[len("finding "):].strip()[:240] for ln in text.splitlines()
                       if ln.startswith("finding ")]
    try:
        with open(os.path.join(wd, "summary.json")) as f:
            res["summary"] = json.load(f)
    except (OSError, ValueError):
        res["notes"].append(f"no summary.json (exit {code}): {last_line(text)}")
    try:
        with open(timings) as f:
            res["timings"] = json.load(f)
    except (OSError, ValueError):
        pass
    return res


# ------------------------------------------------------------------ tables
def fmt_int(x):
    return "-" if x is None else f"{x:,}".replace(",", " ")


def fmt_rate(x):
    if x is None:
        return "-"
    return fmt_int(int(round(x))) if x >= 100 else f"{x:.1f}"


def fmt_f(x, digits, suffix=""):
    return "-" if x is None else f"{x:.{digits}f}{suffix}"


def target_table(rows, seconds):
    lines = [f"| target | libFuzzer execs in {seconds} s | libFuzzer exec/s (wall) | libFuzzer exec per CPU-s | load | "
             f"AFL++ execs in {seconds} s | AFL++ exec/s (wall) | AFL++ exec per CPU-s | load | "
             "libFuzzer / AFL++ (wall) | libFuzzer / AFL++ (per CPU-s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lf, afl = r["libfuzzer"], r["afl"]
        cells = [r["target"] + (" (stale build)" if r.get("stale") else "")]
        for e in (lf, afl):
            if e.get("missing"):
                cells += [e["missing"], "-", "-", "-"]
            else:
                mark = " (!)" if e.get("problem") else ""
                cells += [fmt_int(e["execs"]) + mark, fmt_rate(e["exec_per_s"]),
                          fmt_rate(e["exec_per_cpu_s"]), "-" if e["load1"] is None else f"{e['load1']:.1f}"]
        if lf.get("exec_per_s") and afl.get("exec_per_s"):
            cells.append(f"{lf['exec_per_s'] / afl['exec_per_s']:.2f}x")
        else:
            cells.append("-")
        if lf.get("exec_per_cpu_s") and afl.get("exec_per_cpu_s"):
            cells.append(f"{lf['exec_per_cpu_s'] / afl['exec_per_cpu_s']:.2f}x")
        else:
            cells.append("-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def checked_ops_line(rows):
    """fuzz_ops' checked-op rate under libFuzzer, as the harness counted it
    (issue 15's figure: ops applied and checked per CPU-second at the
    committed max_len, goal >= 150 000)."""
    out = []
    for r in rows:
        lf = r.get("libfuzzer") or {}
        ub = r.get("libfuzzer_ubsan") or {}
        if r["target"] != "fuzz_ops":
            continue
        if ub.get("checked_ops"):
            out.append(f"fuzz_ops under libFuzzer, fuzz-ubsan build (what the campaign fuzzes with): "
                       f"{fmt_int(ub['checked_ops'])} ops applied and checked in {ub['cpu_s']} CPU-s "
                       f"(counted by the harness; {ub['ops_per_input']} ops per input), "
                       f"**{fmt_int(ub['checked_ops_per_cpu_s'])} checked ops per CPU-second** "
                       f"(goal >= 150 000); {fmt_rate(ub['exec_per_s'])} exec/s, load {ub['load1']}.")
        if lf.get("checked_ops"):
            out.append(f"fuzz_ops under libFuzzer, fuzz build (ASan + UBSan: replays the campaign's corpus, "
                       f"judges crashes): {fmt_int(lf['checked_ops'])} ops applied and checked in "
                       f"{lf['cpu_s']} CPU-s ({lf['ops_per_input']} ops per input), "
                       f"**{fmt_int(lf['checked_ops_per_cpu_s'])} checked ops per CPU-second**"
                       + (f"; ASan's cost per checked op: {ub['checked_ops_per_cpu_s'] / lf['checked_ops_per_cpu_s']:.2f}x."
                          if ub.get("checked_ops_per_cpu_s") and lf.get("checked_ops_per_cpu_s") else "."))
    return "\n\n".join(out)


def oracle_rows(camp):
    s = camp.get("summary") or {}
    t = (camp.get("timings") or {}).get("readers", {})
    rows = []
    for n, checked in (s.get("readers") or {}).items():
        tm = t.get(n, {})
        busy = tm.get("calls", 0) * 60.0 / tm["seconds"] if tm.get("seconds") else None
        rows.append({"oracle": n, "images": checked,
                     "images_per_min_wall": (s.get("images_per_minute") or {}).get(n),
                     "read_calls": tm.get("calls"), "read_s": round(tm.get("seconds", 0.0), 2),
                     "s_per_image": round(tm["seconds"] / tm["calls"], 3) if tm.get("calls") else None,
                     "images_per_min_own": round(busy, 1) if busy else None})
    fastest = max((r for r in rows if r["images_per_min_own"]), key=lambda r: r["images_per_min_own"],
                  default=None)
    for r in rows:
        r["vs_fastest"] = (round(r["images_per_min_own"] / fastest["images_per_min_own"], 3)
                           if fastest and r["images_per_min_own"] else None)
    return rows, (fastest["oracle"] if fastest else None)


def oracle_table(rows, camp):
    s = camp.get("summary") or {}
    el = s.get("seconds")
    lines = [f"| oracle | images checked in {el if el is not None else '?'} s | images/min (campaign wall) | "
             "read() calls | s in read() | s per image | images/min of the oracle's own time | vs fastest |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['oracle']} | {fmt_int(r['images'])} | {fmt_rate(r['images_per_min_wall'])} | "
                     f"{fmt_int(r['read_calls'])} | {r['read_s']:.1f} | "
                     f"{fmt_f(r['s_per_image'], 3)} | {fmt_rate(r['images_per_min_own'])} | "
                     f"{fmt_f(r['vs_fastest'], 2, 'x')} |")
    w = (camp.get("timings") or {}).get("writers", {})
    for n, c in (s.get("writers") or {}).items():
        tm = w.get(n, {})
        own = tm.get("calls", 0) * 60.0 / tm["seconds"] if tm.get("seconds") else None
        lines.append(f"| (writer {n}) | {fmt_int(c)} written | "
                     f"{fmt_rate(c * 60.0 / el) if el else '-'} | {fmt_int(tm.get('calls'))} | "
                     f"{tm.get('seconds', 0.0):.1f} | "
                     f"{fmt_f(tm['seconds'] / tm['calls'] if tm.get('calls') else None, 3)} | "
                     f"{fmt_rate(own)} | |")
    return "\n".join(lines)


# ------------------------------------------------------------------ main
def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--campaign-child":
        rest = sys.argv[3:]
        if rest[:1] == ["--"]:
            rest = rest[1:]
        return campaign_child(sys.argv[2], rest)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])

    def usage_error(msg):
        print(f"bench_fuzz: {msg}", file=sys.stderr)
        sys.exit(2)
    ap.error = usage_error          # one line, no usage dump
    ap.add_argument("--quick", action="store_true", help="T = 10 s per target and engine, M = 1 minute")
    ap.add_argument("--seconds", type=int, default=None, help="seconds per target and engine (default 30)")
    ap.add_argument("--minutes", type=float, default=None, help="campaign minutes (default 2)")
    ap.add_argument("--seed", type=int, default=1, help="-seed of libFuzzer, -s of afl-fuzz, campaign --seed")
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--no-afl", action="store_true")
    ap.add_argument("--no-campaign", action="store_true")
    ap.add_argument("--no-build", action="store_true", help="measure the binaries already built")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("--out", default=os.path.join(SRC, "bench", "results"))
    a = ap.parse_args()
    seconds = a.seconds if a.seconds is not None else (10 if a.quick else 30)
    minutes = a.minutes if a.minutes is not None else (1 if a.quick else 2)
    targets = [t for t in a.targets.split(",") if t]
    bad = [t for t in targets if t not in TARGETS]
    if bad or seconds < 1 or minutes <= 0 or a.seed < 1:
        print(f"bench_fuzz: bad arguments (targets from {', '.join(TARGETS)}; "
              f"--seconds >= 1, --minutes > 0, --seed >= 1)", file=sys.stderr)
        return 2
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    log(f"bench_fuzz: {len(targets)} targets x {seconds} s x 2 engines, campaign {minutes:g} min, "
        f"seed {a.seed}; {os.cpu_count()} cores, load {load()} ({when})")
    notes = []

    def on_term(signum, frame):
        raise KeyboardInterrupt()
    signal.signal(signal.SIGTERM, on_term)      # stop the fuzzers we started, too
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if not become_subreaper():
        notes.append("prctl(PR_SET_CHILD_SUBREAPER) failed: CPU of orphaned AFL++ targets may be missing")

    # builds ---------------------------------------------------------------
    state = {"fuzz": "ok", "fuzz-ubsan": "ok", "afl": "ok", "default": "ok"}
    afl_missing = None
    if not a.no_afl:
        if not shutil.which("afl-fuzz"):
            afl_missing = "afl-fuzz not installed"
        elif not shutil.which("afl-clang-fast") and not a.no_build:
            afl_missing = "afl-clang-fast not installed"
    if not a.no_build:
        log("building (-j2, incremental) ...")
        state["fuzz"] = build("fuzz", "build-fuzz", TARGETS, notes)
        if "fuzz_ops" in targets:
            state["fuzz-ubsan"] = build("fuzz-ubsan", "build-fuzz-ubsan", ["fuzz_ops"], notes)
        if not a.no_afl and not afl_missing:
            state["afl"] = build("afl", "build-afl", TARGETS + [t + "_cmplog" for t in TARGETS], notes)
        if not a.no_campaign:
            state["default"] = build("default", "build", ["vfat"], notes)

    scratch = tempfile.mkdtemp(prefix="vfz-fuzzbench-")
    rows = []
    camp = None
    try:
        for t in targets:
            row = {"target": t}
            lbin = os.path.join(SRC, "build-fuzz", "fuzz", t)
            if not os.access(lbin, os.X_OK):
                row["libfuzzer"] = {"missing": "not built (cmake --preset fuzz)"}
            else:
                row["stale"] = state["fuzz"] == "stale"
                log(f"libFuzzer {t}: {seconds} s ...")
                row["libfuzzer"] = run_libfuzzer(t, lbin, seconds, a.seed, scratch)
                e = row["libfuzzer"]
                log(f"  {fmt_int(e['execs'])} execs, {e['exec_per_s']} exec/s (wall), "
                    f"{e['exec_per_cpu_s']} per CPU-s, load {e['load1']}"
                    + (f"; {e['problem']}" if e["problem"] else ""))
            abin = os.path.join(SRC, "build-afl", "fuzz", t)
            cmplog = abin + ".cmplog"
            if a.no_afl:
                row["afl"] = {"missing": "not run (--no-afl)"}
            elif afl_missing:
                row["afl"] = {"missing": afl_missing}
            elif not os.access(abin, os.X_OK):
                row["afl"] = {"missing": "not built (cmake --preset afl)"}
            else:
                if state["afl"] == "stale":
                    row["stale"] = True
                log(f"AFL++ {t}: {seconds} s ...")
                row["afl"] = run_afl(t, abin, cmplog if os.access(cmplog, os.X_OK) else None,
                                     seconds, a.seed, scratch)
                e = row["afl"]
                if not os.access(cmplog, os.X_OK):
                    e["problem"] = (e["problem"] + "; " if e["problem"] else "") + "no CmpLog binary"
                log(f"  {fmt_int(e['execs'])} execs, {e['exec_per_s']} exec/s (wall), "
                    f"{e['exec_per_cpu_s']} per CPU-s, load {e['load1']}"
                    + (f"; {e['problem']}" if e["problem"] else ""))
            ubin = os.path.join(SRC, "build-fuzz-ubsan", "fuzz", t)
            if t == "fuzz_ops" and os.access(ubin, os.X_OK):
                log(f"libFuzzer {t} (fuzz-ubsan build): {seconds} s ...")
                row["libfuzzer_ubsan"] = e = run_libfuzzer(t, ubin, seconds, a.seed, scratch, tag="-ubsan")
                e["stale"] = state["fuzz-ubsan"] == "stale"
                log(f"  {fmt_int(e['execs'])} execs, {e['exec_per_s']} exec/s (wall), "
                    f"{e['exec_per_cpu_s']} per CPU-s, load {e['load1']}"
                    + (f"; {e['problem']}" if e["problem"] else ""))
                if e["problem"]:
                    notes.append(f"{t} libfuzzer (fuzz-ubsan): {e['problem']}")
            for eng in ("libfuzzer", "afl"):
                p = row[eng].get("problem")
                if p:
                    notes.append(f"{t} {eng}: {p}")
            rows.append(row)
        if not a.no_campaign:
            vfat = os.path.join(SRC, "build", "vfat")
            if not os.access(vfat, os.X_OK):
                camp = {"missing": "build/vfat not built (cmake --preset default)"}
                notes.append(camp["missing"])
            else:
                log(f"campaign: {minutes:g} min ...")
                camp = run_campaign(minutes, a.seed, scratch)
                s = camp.get("summary") or {}
                log(f"  {s.get('scripts')} scripts, readers {s.get('readers')}, "
                    f"fuzz_ops {fmt_rate(s.get('fuzz_execs_per_s'))} exec/s, exit {camp['exit']}")
                notes += [f"campaign: {n}" for n in camp["notes"]]
    finally:
        if a.keep:
            log(f"scratch kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)

    # report ---------------------------------------------------------------
    table = target_table(rows, seconds)
    ops_line = checked_ops_line(rows)
    if ops_line:
        table += "\n\n" + ops_line
    otable, fastest, orows = "", None, []
    if camp and not camp.get("missing"):
        orows, fastest = oracle_rows(camp)
        otable = oracle_table(orows, camp)
    print()
    print(table)
    if otable:
        print()
        print(otable)
    if notes:
        print()
        for n in notes:
            print(f"note: {n}")

    seeds_line = (f"seed {a.seed} (libFuzzer -seed, afl-fuzz -s, campaign --seed); "
                  f"{seconds} s per target and engine; {os.cpu_count()} cores shared with other jobs")
    md = [f"# Fuzzing benchmark ({when})", "", seeds_line + ".", "",
          "## Fuzz targets: libFuzzer (fuzz preset) vs AFL++ (afl preset, CmpLog)", "", table, ""]
    if otable:
        s = camp["summary"]
        md += ["## Campaign: images checked per oracle", "",
               f"`{camp['command'].replace(scratch, '$SCRATCH')}` (wall {camp['wall_s']} s incl. start-up; load {camp['load1_start']} "
               f"-> {camp['load1']}; {s.get('scripts')} scripts; background fuzz_ops "
               f"{fmt_rate(s.get('fuzz_execs_per_s'))} exec/s"
               + (f", {s['asan_replay']['replayed']} of its corpus entries replayed under ASan "
                  f"in {s['asan_replay']['cpu_seconds']} CPU-s, {s['asan_replay']['failed']} failed"
                  if s.get("asan_replay") else "")
               + f"; {len(s.get('new_findings') or [])} new findings "
               f"in the fresh workdir).", "",
               otable, "",
               *(["New findings of this campaign (fresh workdir, so known ones count as new; "
                  "minimising them is part of the campaign's time):", ""]
                 + [f"- {x}" for x in camp.get("findings", [])] + [""] if camp.get("findings") else []),
               "In the campaign's main loop every reader reads every written image, so the "
               "wall-clock images/min mostly show the campaign's pace (set by the slowest oracle, "
               "the writers, and minimisation of new findings, which re-checks only on the oracle "
               "that showed the divergence). The own-time column divides the read() calls by the "
               "seconds spent in that oracle's read() (writers: apply())"
               + (f"; fastest oracle: {fastest}." if fastest else "."), ""]
    elif camp and camp.get("missing"):
        md += [f"Campaign not run: {camp['missing']}.", ""]
    if notes:
        md += ["Notes:", ""] + [f"- {n}" for n in notes] + [""]
    cmds = []
    for r in rows:
        for eng in ("libfuzzer", "libfuzzer_ubsan", "afl"):
            e = r.get(eng) or {}
            if e.get("argv"):
                env = " ".join(f"{k}={v}" for k, v in e.get("env", {}).items())
                cmds.append(((env + " ") if env else "") + " ".join(e["argv"]).replace(scratch, "$SCRATCH")
                            .replace(SRC + "/", ""))
    if cmds:
        md += ["Command lines (run from the repository; $SCRATCH = a fresh temporary directory):", "",
               "```"] + cmds + ["```", ""]
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "fuzz.md"), "w") as f:
        f.write("\n".join(md))
    with open(os.path.join(a.out, "fuzz.json"), "w") as f:
        json.dump({"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "seed": a.seed,
                   "seconds": seconds, "minutes": minutes, "cores": os.cpu_count(), "builds": state,
                   "targets": rows, "campaign": camp, "oracles": orows, "fastest_oracle": fastest,
                   "notes": notes}, f, indent=1)
    log(f"\nwritten: {os.path.relpath(os.path.join(a.out, 'fuzz.md'), SRC)}, fuzz.json")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("bench_fuzz: interrupted (the fuzzers it started were stopped)", file=sys.stderr)
        sys.exit(130)
