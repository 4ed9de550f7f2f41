"""vfatfuzz selftest [--faults LIST] [--budget SECONDS]: detection power.

For each planted fault (harnesses/FAULTS.md; `#ifdef VFAT_FAULT_<NAME>` in
core/src) configure and build build-fault-<NAME>/ (default preset options
plus -DVFAT_FAULT=NAME; only the vfat CLI), then run a focused campaign
loop against that binary for the time budget: op-scripts from `vfat gen`
(half of them enriched with collision/case/13*k ops, see
vfz.campaign.enrich) on FAT12/16/32, written by the core writers of the
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

from vfz import campaign, diff, findings, opscript
from vfz.proc import run as prun

HELP = "build each planted fault (-DVFAT_FAULT=NAME), run the campaign on it, report what was caught"
REPO = campaign.REPO
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


def build_fault(name):
    """-> (vfat path, None) or (None, error line)."""
    bdir = os.path.join(REPO, f"build-fault-{name}")
    if not os.path.isfile(os.path.join(bdir, "CMakeCache.txt")):
        p = prun(["cmake", "--preset", "default", "-B", bdir, f"-DVFAT_FAULT={name}"],
                 timeout=300, cwd=REPO)
        if p.rc != 0:
            return None, f"configure failed: {(p.errtext or p.text).strip()[-300:]}"
    p = prun(["cmake", "--build", bdir, "-j2", "--target", "vfat"], timeout=900, cwd=REPO)
    if p.rc != 0:
        return None, f"build failed: {(p.errtext or p.text).strip()[-300:]}"
    return os.path.join(bdir, "vfat"), None


def hunt(fault, vfat, ref, args, notes):
    """Search for the fault within the budget -> row dict."""
    row = {"fault": fault, "found": False, "seconds": None, "ops": None, "oracle": None,
           "signature": None, "scripts": 0}
    readers = ref.reader_names
    ck = campaign.Checker(readers, ref.writer_names, vfat=vfat, timeout=30.0, notes=notes)
    try:
        t0 = time.monotonic()
        i = 0
        fsl = campaign.DEFAULT_FS
        while time.monotonic() - t0 < args.budget:
            gseed, nops, fsb = campaign.iter_params(args.seed, i)
            fs = fsl[i % len(fsl)]
            ops = campaign.gen_script(ref_vfat(), gseed, min(nops, 12))
            if i % 2:
                ops = campaign.enrich(ops, random.Random(gseed))
            i += 1
            res = ck.check(ops, fs)
            row["scripts"] += 1
            hit = None
            for d in res.divs.values():
                rr = ref.check(ops, fs, writers=[d.writer],
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
                if d.sig not in ck.check(o, fs, writers=[d.writer], readers=rdr).divs:
                    return False
                return d.sig not in ref.check(o, fs, writers=[d.writer], readers=rdr).divs
            from vfz import minimize
            mops, st = minimize.minimize(ops, test, budget=args.min_budget)
            row["ops"] = len(mops)
            row["script"] = opscript.dump(mops)
            row["minimise_tests"] = st["tests"]
            if args.workdir:
                campaign.write_full(os.path.join(args.workdir, fault), ck, hit, ops, mops, fs,
                                    {"fault": fault, "seconds": row["seconds"]})
            break
    finally:
        ck.close()
    return row


_REF = []


def ref_vfat():
    return _REF[0]


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
    writers = args.writers.split(",") if args.writers else campaign.DEFAULT_WRITERS
    try:
        refck = campaign.Checker(readers, writers, timeout=30.0, notes=notes)
    except (campaign.UsageError, diff.UsageError) as e:
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
            vfat, err = build_fault(f)
            if err:
                rows.append({"fault": f, "found": False, "note": err.splitlines()[-1][:200]})
                print(f"{f}: {err}", flush=True)
                continue
            print(f"{f}: built in {time.monotonic() - t:.0f} s; hunting for {args.budget:g} s", flush=True)
            row = hunt(f, vfat, refck, args, notes)
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
