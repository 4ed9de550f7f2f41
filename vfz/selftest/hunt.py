"""vfatfuzz selftest [--faults LIST] [--budget SECONDS]: detection power.
(With --mutants N: automatic mutants of core/src instead, see vfz.selftest.mutants.)

For each planted fault (harnesses/FAULTS.md; `#ifdef VFAT_FAULT_<NAME>` in
core/src) configure and build build-fault-<NAME>/ (default preset options
plus -DVFAT_FAULT=NAME; only the vfat CLI), then run a focused campaign
loop against that binary for the time budget: op-scripts from `vfat gen`
(half of them enriched with collision/case/13*k ops, see
vfz.campaign.scriptgen.enrich) on FAT12/16/32 (with --fuzz, also the in-process
fuzz_ops target of a fuzz-preset build of the fault, build-fuzzfault-NAME/,
running in the background), written by the core writers of the
fault build, read by the fast readers (dosfsck, mtools, vfat-check by
default). A divergence counts only when the reference build (build/vfat)
does not show the same signature on the same script, so the model's known
gaps never count as detection. The first such divergence is minimised
(same signature on the fault build, absent on the reference build).

Prints a table: fault, found, seconds to first finding, minimised ops,
oracle, signature. Exit 0 when every planted fault was found, 1 if not,
2 when it could not run. Build time is not part of the budget.
"""
import json
import os
import random
import re
import sys
import time

from vfz import REPO, errors, findings, lifeline, opscript
from vfz.campaign import loop as campaign
from vfz.check import checker
from vfz.campaign import filing
from vfz.campaign import fuzzer
from vfz.selftest import mutants
from vfz.campaign import scriptgen
from vfz.proc import run as prun

HELP = "build each planted fault (-DVFAT_FAULT=NAME), run the campaign on it, report what was caught"
REPO = REPO
FAULTS = ["FAT12_PACKING", "SECOND_FAT", "FSINFO", "CHECKSUM", "DUMMY_SPACE", "CLUSTER_LEAK",
          "DOTDOT", "LFN_SLOT_COUNT", "ALIAS_COLLISION", "CASE_CLASH"]
FAST_READERS = ["dosfsck", "mtools", "vfat-check"]


def add_arguments(p):
    p.add_argument("--faults", help=f"comma-separated (default: every fault in harnesses/FAULTS.md, "
                                    f"else {','.join(FAULTS)})")
    p.add_argument("--budget", type=float, default=60.0, help="seconds of search per fault (default 60)")
    p.add_argument("--min-budget", type=float, default=60.0, help="seconds of minimisation per fault")
    p.add_argument("--oracles", help=f"readers (default {','.join(FAST_READERS)})")
    p.add_argument("--writers", help="writers (default core-dual,core-v1,core-v3)")
    p.add_argument("--seed", type=int, default=1, help="seed of the generated scripts (default 1)")
    p.add_argument("--json", help="also write the table as JSON to this file")
    p.add_argument("--workdir", help="keep a finding directory per fault here")
    p.add_argument("--fuzz", action="store_true",
                   help="also build the fuzz preset with each fault (build-fuzzfault-NAME/) and run "
                        "the in-process fuzz_ops target alongside the campaign loop")
    mutants.add_arguments(p)


def listed_faults():
    p = os.path.join(REPO, "harnesses", "FAULTS.md")
    if not os.path.isfile(p):
        return None
    with open(p, encoding="utf-8") as f:
        names = re.findall(r"\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{5,})\b", f.read())
    planted = planted_faults()
    out = [n for n in dict.fromkeys(names) if n in planted or n in FAULTS]
    return out or None


def planted_faults():
    found = set()
    src = os.path.join(REPO, "core", "src")
    for n in os.listdir(src):
        if n.endswith((".c", ".h")):
            with open(os.path.join(src, n), encoding="utf-8", errors="replace") as f:
                found |= set(re.findall(r"VFAT_FAULT_([A-Z0-9_]+)", f.read()))
    return found


def build_fault(name, werror=True, src=REPO, preset="default"):
    """-> (vfat path, None, note) or (None, error line, note). A fault that
    only trips -Werror (an unused helper, say) is built once more without
    it, and the row says so. src: the source tree (vfz.selftest.mutants builds a
    mutated copy); preset: a CMake configure preset (asan: build-fault-
    NAME-asan/, the sanitizers' build of the same sources)."""
    bdir = os.path.join(REPO, f"build-fault-{name}" + ("" if preset == "default" else f"-{preset}"))
    p = prun(["cmake", "--preset", preset, "-B", bdir, f"-DVFAT_FAULT={name}",
              f"-DVFAT_WERROR={'ON' if werror else 'OFF'}"], timeout=300, cwd=src)
    if p.rc != 0:
        return None, f"configure failed: {(p.errtext or p.text).strip()[-300:]}", ""
    p = prun(["cmake", "--build", bdir, "-j2", "--target", "vfat"], timeout=900, cwd=REPO)
    if p.rc != 0:
        out = p.text + p.errtext
        first = next((ln.strip() for ln in out.splitlines() if "error:" in ln), out.strip()[-300:])
        if werror and "-Werror" in out:
            vfat, err, _ = build_fault(name, werror=False, src=src, preset=preset)
            if vfat:
                return vfat, None, f"built without -Werror ({first[:160]})"
        return None, f"build failed: {first[:300]}", ""
    return os.path.join(bdir, "vfat"), None, ""


def build_fuzz_fault(name, preset="fuzz"):
    """fuzz preset + fault: build-fuzzfault-NAME/fuzz/fuzz_ops -> (path, err);
    preset fuzz-ubsan: build-fuzzubsanfault-NAME/fuzz/fuzz_ops."""
    bdir = os.path.join(REPO, f"build-{preset.replace('-', '')}fault-{name}")
    if not os.path.isfile(os.path.join(bdir, "CMakeCache.txt")):
        p = prun(["cmake", "--preset", preset, "-B", bdir, f"-DVFAT_FAULT={name}"], timeout=300, cwd=REPO)
        if p.rc != 0:
            return None, f"fuzz configure failed: {(p.errtext or p.text).strip()[-300:]}"
    p = prun(["cmake", "--build", bdir, "-j2", "--target", "fuzz_ops"], timeout=1800, cwd=REPO)
    if p.rc != 0:
        return None, f"fuzz build failed: {(p.errtext or p.text).strip()[-300:]}"
    return os.path.join(bdir, "fuzz", "fuzz_ops"), None


class FaultFuzzer:
    """fuzz_ops of a fault build in the background; crash() -> (path, message)
    of the first crash the reference fuzz_ops does not share."""

    def __init__(self, binary, seconds):
        import subprocess
        import tempfile
        self.dir = tempfile.mkdtemp(prefix="vfz-selftest-fuzz-")
        self.corpus = os.path.join(self.dir, "corpus")
        self.crashes = os.path.join(self.dir, "crashes")
        os.makedirs(self.corpus)
        os.makedirs(self.crashes)
        self.binary = binary
        self.log = open(os.path.join(self.dir, "log"), "wb")
        self.p = lifeline.Popen([binary, self.corpus, f"-max_total_time={max(1, int(seconds))}",
                                 f"-artifact_prefix={self.crashes}/", "-seed=1"],
                                stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
        self.checked = set()

    def crash(self):
        for n in sorted(os.listdir(self.crashes)):
            if n in self.checked:
                continue
            self.checked.add(n)
            path = os.path.join(self.crashes, n)
            ref = fuzzer.fuzz_ops_binary()
            if ref and prun([ref, path], timeout=60).rc != 0:
                continue              # the reference fails too: not the planted fault
            p = prun([self.binary, path], timeout=60)
            msg = fuzzer.crash_line(p.errtext + p.text, p.rc)
            return path, msg
        return None

    def stop(self):
        import shutil
        import signal
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGTERM)
            except OSError:
                pass
        try:
            self.p.wait(timeout=10)
        except Exception:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def hunt(fault, vfat, ref, args, notes, fuzz_bin=None, first=()):
    """Search for the fault within the budget -> row dict. first: [(ops,
    fs)] checked before the generated scripts (vfz.campaign.steer's tour)."""
    row = {"fault": fault, "found": False, "seconds": None, "ops": None, "oracle": None,
           "signature": None, "scripts": 0}
    readers = ref.reader_names
    ck = checker.Checker(readers, ref.writer_names, vfat=vfat, timeout=30.0, notes=notes,
                         formatter=ref.formatter, unread=ref.unread)
    ff = FaultFuzzer(fuzz_bin, args.budget) if fuzz_bin else None
    try:
        t0 = time.monotonic()
        i = 0
        fsl = campaign.DEFAULT_FS
        while time.monotonic() - t0 < args.budget:
            c = ff.crash() if ff else None
            if c:
                ops, _, _ = fuzzer.convert_input(ref_vfat(), c[0])
                row.update(found=True, seconds=round(time.monotonic() - t0, 1), oracle="fuzz_ops",
                           signature=findings.normalise(c[1], 100), ops=len(ops),
                           script=opscript.dump(ops), writer="core-dual", fs="fat16")
                break
            if i < len(first):
                ops, fs = first[i]
            else:
                j = i - len(first)
                gseed, nops, fsb = scriptgen.iter_params(args.seed, j)
                fs = fsl[j % len(fsl)]
                ops = scriptgen.gen_script(ref_vfat(), gseed, min(nops, 12))
                if j % 2:
                    ops = scriptgen.enrich(ops, random.Random(gseed))
            i += 1
            res = ck.check(ops, fs)
            row["scripts"] += 1
            hit = None
            for d in res.divs.values():
                rr = ref.check(ops, fs, writers=div_writers(ref, d),
                               readers=[d.fields["oracle"]] if d.fields["role"] == "reader" else [])
                if d.sig not in rr.divs:
                    hit = d
                    break
            if not hit:
                continue
            row.update(found=True, seconds=round(time.monotonic() - t0, 1),
                       oracle=hit.fields["oracle"], signature=findings.sig_text(hit.fields),
                       writer=hit.writer, fs=fs, ops_orig=len(ops))
            rdr = [hit.fields["oracle"]] if hit.fields["role"] == "reader" else []

            def test(o, d=hit):
                if d.sig not in ck.check(o, fs, writers=div_writers(ck, d), readers=rdr).divs:
                    return False
                return d.sig not in ref.check(o, fs, writers=div_writers(ref, d), readers=rdr).divs
            from vfz.campaign import minimize
            mops, st = minimize.minimize(ops, test, budget=args.min_budget)
            row["ops"] = len(mops)
            row["script"] = opscript.dump(mops)
            row["minimise_tests"] = st["tests"]
            if args.workdir:
                filing.write_full(os.path.join(args.workdir, fault), ck, hit, ops, mops, fs,
                                    {"fault": fault, "seconds": row["seconds"]})
            break
    finally:
        ck.close()
        if ff:
            ff.stop()
    return row


def div_writers(ck, d):
    """The writers that show divergence d again: its writer, and for a
    twin byte comparison (vfz.check.twins) the twin it is compared with."""
    ws = [d.writer]
    if d.fields.get("verdict") == "bytes":
        from vfz import oracles
        t = oracles.entry(d.writer).twin
        if t and t in ck.writer_names:
            ws.append(t)
    return ws


_REF = []


def ref_vfat():
    return _REF[0]


def run(args):
    if args.mutants is not None:
        return mutants.run(args)
    if args.budget <= 0:
        print("vfatfuzz selftest: --budget must be positive", file=sys.stderr)
        return 2
    ref = campaign.vfat_default()
    if not os.access(ref, os.X_OK):
        print(f"vfatfuzz selftest: reference build {ref} missing (run: vfatfuzz setup)", file=sys.stderr)
        return 2
    _REF[:] = [ref]
    planted = planted_faults()
    if args.faults:
        faults = [f.strip().upper() for f in args.faults.split(",") if f.strip()]
    else:
        faults = listed_faults() or FAULTS
    notes = []
    readers = args.oracles.split(",") if args.oracles else FAST_READERS
    writers = args.writers.split(",") if args.writers else checker.DEFAULT_WRITERS
    try:
        refck = checker.Checker(readers, writers, timeout=30.0, notes=notes)
    except errors.UsageError as e:
        print(f"vfatfuzz selftest: {e}", file=sys.stderr)
        return 2
    for n in notes:
        print(f"note: {n[:300]}")
    rows = []
    try:
        for f in faults:
            if f not in planted:
                rows.append({"fault": f, "found": False, "note": "not planted in core/src"})
                print(f"{f}: not planted (no VFAT_FAULT_{f} in core/src)", flush=True)
                continue
            t = time.monotonic()
            vfat, err, bnote = build_fault(f)
            if bnote:
                print(f"{f}: note: {bnote}", flush=True)
            if err:
                rows.append({"fault": f, "found": False, "note": err.splitlines()[0][:200]})
                print(f"{f}: {err}", flush=True)
                continue
            fuzz_bin = None
            prebuilt = os.path.join(REPO, f"build-fuzzfault-{f}", "fuzz", "fuzz_ops")
            if not args.fuzz and os.access(prebuilt, os.X_OK):
                fuzz_bin = prebuilt           # built earlier with --fuzz: use it
            if args.fuzz:
                fuzz_bin, ferr = build_fuzz_fault(f)
                if ferr:
                    print(f"{f}: {ferr}; fuzz_ops not used", flush=True)
            print(f"{f}: built in {time.monotonic() - t:.0f} s; hunting for {args.budget:g} s"
                  + (" (with fuzz_ops)" if fuzz_bin else ""), flush=True)
            row = hunt(f, vfat, refck, args, notes, fuzz_bin)
            if bnote:
                row["build_note"] = bnote
            rows.append(row)
            if row["found"]:
                print(f"{f}: found after {row['seconds']} s ({row['scripts']} scripts) by "
                      f"{row['oracle']}, minimised to {row['ops']} ops: {row['signature']}", flush=True)
                for ln in row["script"].splitlines():
                    print(f"    {ln}")
            else:
                print(f"{f}: NOT found in {args.budget:g} s ({row['scripts']} scripts)", flush=True)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
    finally:
        refck.close()
    print()
    print(f"{'fault':<16} {'found':<6} {'seconds':>8} {'min ops':>8}  {'oracle':<11} signature / note")
    for r in rows:
        print(f"{r['fault']:<16} {'yes' if r['found'] else 'no':<6} "
              f"{'' if r.get('seconds') is None else r['seconds']:>8} "
              f"{'' if r.get('ops') is None else r['ops']:>8}  {r.get('oracle') or '-':<11} "
              f"{r.get('signature') or r.get('note') or ''}")
    planted_rows = [r for r in rows if r.get("note") != "not planted in core/src"]
    ok = all(r["found"] for r in planted_rows) and planted_rows
    print(f"{sum(r['found'] for r in rows)}/{len(rows)} faults found"
          + (f" ({len(rows) - len(planted_rows)} not planted)" if len(rows) != len(planted_rows) else ""))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1, ensure_ascii=False)
    return 0 if ok else 1
