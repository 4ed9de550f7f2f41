"""Detection power against the planted faults: `vfatfuzz selftest [--faults LIST] [--budget SECONDS]`.
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
default): the hunt, vfz.selftest.search. A divergence counts only when the
reference build (build/vfat) does not show the same signature on the same
script, so the model's known gaps never count as detection. The first such divergence is minimised
(same signature on the fault build, absent on the reference build).

Prints a table: fault, found, seconds to first finding, minimised ops,
oracle, signature. Exit 0 when every planted fault was found, 1 if not,
2 when it could not run. Build time is not part of the budget.
"""
import json
import os
import re
import sys
import time

from vfz import REPO, errors
from vfz.campaign import loop as campaign
from vfz.check import checker
from vfz.selftest.builds import build_fault, build_fuzz_fault  # noqa: F401 (imported from here)
from vfz.selftest.search import FAST_READERS, FaultFuzzer, _REF, div_writers, hunt, ref_vfat  # noqa: F401

HELP = "build each planted fault (-DVFAT_FAULT=NAME), run the campaign on it, report what was caught"
REPO = REPO
FAULTS = ["FAT12_PACKING", "SECOND_FAT", "FSINFO", "CHECKSUM", "DUMMY_SPACE", "CLUSTER_LEAK",
          "DOTDOT", "LFN_SLOT_COUNT", "ALIAS_COLLISION", "CASE_CLASH"]


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


def run(args):
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
