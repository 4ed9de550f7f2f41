"""The repository's cases as `vfatfuzz repro` targets: a regression case (corpus/regressions/NAME), a peer-bug case (corpus/peer-bugs/NAME) and a hostile finding (reports/hostile/NAME, or a hostile run's findings/NAME).

kind_of(path) says which (None: a campaign finding, a crash file or an
op-script, which vfz.campaign.targets handles). replay(kind, args) replays one and
prints what it replayed and what it expected; --export of each goes through
vfz.export.reproducer (export_target).

    regression  ops.txt on expected.json's volume, by its writers (or
                --writers) and read by its readers (or --oracles) through
                the campaign's Checker, each verdict held against
                expected.json (compare(), which tests/test_regressions.py
                uses too). Exit 0 every verdict as expected, 1 one differs
                (the regression is back, or the case needs re-recording),
                2 could not run.
    peer-bug    the committed reproducer reports/bugs/NAME/run.sh (the one
                tests/test_peer_bugs.py runs; written to a scratch
                directory first when there is none), its output held
                against bug.json "expect". Exit 1 the bug still shows (run.sh
                REPRODUCED with every expected symptom), 0 it does not,
                2 could not run.
    hostile     vfz.hostile.findings.replay: the tool reads (or applies its
                ops to) the minimised volume again. Exit 1 the same
                signature again, 0 not, 2 could not run.
"""
import json
import os
import shutil
import sys
import tempfile
import types

from vfz import opscript
from vfz.export import case as export_case
from vfz.export import command as export_command
from vfz.export import script as export_script
from vfz.hostile import findings as hostile_findings
from vfz.check.checker import Checker
from vfz.errors import UsageError

REGRESSION_FILES = ("ops.txt", "expected.json")


def kind_of(path):
    if not os.path.isdir(path):
        return None
    if hostile_findings.is_hostile_finding(path):
        return "hostile"
    if export_command.is_spec(path):
        return "peer-bug"
    if all(os.path.isfile(os.path.join(path, n)) for n in REGRESSION_FILES):
        return "regression"
    return None


def _lists(s):
    return [x for x in (s or "").split(",") if x]


def _readme(path):
    try:
        with open(os.path.join(path, "README"), encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


def load_regression(path):
    """-> (ops, expected.json dict) of a regression case."""
    try:
        with open(os.path.join(path, "expected.json"), encoding="utf-8") as f:
            exp = json.load(f)
    except ValueError as e:
        raise UsageError(f"{path}/expected.json: {e}")
    return opscript.load(os.path.join(path, "ops.txt")), exp


def compare(exp, res, writers):
    """expected.json's verdicts against a CheckResult for the writers that
    ran -> (mismatches [(writer, oracle, want, have, detail)], skipped
    ["writer.oracle" not read here])."""
    bad, skipped = [], []
    for w in writers:
        got = res.verdicts[w]
        for o, want in exp["verdicts"][w].items():
            if o == "(writer)":
                have, detail = got.get("(writer)", "ok"), res.details[w].get("(writer)", "")
            elif o in got:
                have, detail = got[o], res.details[w].get(o, "")
            else:
                skipped.append(f"{w}.{o}")
                continue
            if have != want:
                bad.append((w, o, want, have, detail))
    return bad, skipped


def replay_regression(args, path):
    ops, exp = load_regression(path)
    fs = (args.fs or exp["fs"]).split(",")[0]
    writers = _lists(args.writers) or sorted(exp["verdicts"])
    unknown = [w for w in writers if w not in exp["verdicts"]]
    if unknown:
        raise UsageError(f"{path}: expected.json has no verdicts of writer(s) {', '.join(unknown)} "
                         f"(it has {', '.join(sorted(exp['verdicts']))})")
    readers = _lists(args.oracles) or sorted({r for w in writers for r in exp["verdicts"][w] if r != "(writer)"})
    notes = []
    ck = Checker(readers, writers, vfat=args.vfat, timeout=args.timeout, notes=notes)
    try:
        for n in notes:
            print(f"note: {n[:300]}")
        print(f"regression case {path}: {len(ops)} ops on {fs}; writers {','.join(ck.writer_names)}; "
              f"readers {','.join(ck.reader_names)}")
        print(f"guards: {_readme(path)[:400]}")
        run_w = [w for w in writers if w in ck.writer_names]
        if not run_w:
            print(f"result: CANNOT RUN: no writer of the case is available here ({'; '.join(notes)[:300]})")
            return 2
        res = ck.check(ops, fs, writers=run_w)
        bad, skipped = compare(exp, res, run_w)
        wrong = {(w, o) for w, o, *_ in bad}
        print(f"== {fs}: expected (from expected.json) -> got")
        for w in run_w:
            row = []
            for o, want in exp["verdicts"][w].items():
                if f"{w}.{o}" in skipped or (o not in res.verdicts[w] and o != "(writer)"):
                    continue
                have = res.verdicts[w].get(o, "ok")
                row.append(f"{o}={want}" + (f"->{have} <== NOT AS EXPECTED" if (w, o) in wrong else ""))
            print(f"   {w:<12} {'  '.join(row)}")
        for w, o, want, have, detail in bad:
            print(f"-- {w} read by {o}: expected {want}, got {have}")
            print("\n".join("     " + ln for ln in detail.splitlines()[:30]))
        if skipped or set(writers) - set(run_w):
            print(f"not checked (not run here: unavailable, or not in --writers/--oracles): {', '.join(sorted(set(writers) - set(run_w)) + skipped)}")
        print("result: " + (f"NOT AS EXPECTED ({len(bad)} verdict(s))" if bad else "every verdict as expected"))
        return 1 if bad else 0
    finally:
        ck.close()


def replay_peer_bug(args, path):
    spec = export_case.load_spec(os.path.join(path, "bug.json"))
    name = os.path.basename(os.path.abspath(path))
    repo = os.path.abspath(os.path.join(path, "..", "..", ".."))
    committed = os.path.join(repo, "reports", "bugs", name)
    what = ("the hostile volume of " + spec["hostile"]) if spec.get("hostile") else \
        f"{len(opscript.load(os.path.join(path, 'ops.txt')))} ops on {spec.get('fs', 'fat16')}" + \
        (f", written by {spec['writer']}" if spec.get("writer") else "")
    print(f"peer-bug case {path}: {spec['impl']} ({spec['side']} side), {what}")
    print(f"title: {spec.get('title', '')}")
    print(f"expected: run.sh says REPRODUCED and prints {json.dumps(spec.get('expect', []), ensure_ascii=False)}")
    scratch = None
    try:
        if os.path.isfile(os.path.join(committed, "run.sh")):
            rdir = committed
            print(f"replaying the committed reproducer {committed}/run.sh")
        else:
            scratch = tempfile.mkdtemp(prefix="vfz-repro-case-")
            rdir = os.path.join(scratch, name)
            ns = types.SimpleNamespace(target=path, export=rdir, timeout=args.timeout, writers=None,
                                       oracles=None, fs=None)
            print(f"no committed reproducer in {committed}: exporting one to a scratch directory")
            if export_command.repro_export(ns, None) == 2:
                return 2
        status, printed, work = export_script.run_script(rdir, timeout=max(120.0, args.timeout * 5))
        shutil.rmtree(work, ignore_errors=True)
        print("\n".join("   | " + ln for ln in printed.strip().splitlines()[-25:]))
        missing = [s for s in spec.get("expect", []) if s not in printed]
        if status == 2:
            print(f"result: CANNOT RUN ({export_script.last_line(printed)})")
            return 2
        if status == 0 and not missing:
            print("result: STILL SHOWS (REPRODUCED with every expected symptom)")
            return 1
        print("result: does not show" + (f" (missing: {json.dumps(missing, ensure_ascii=False)})" if missing else
                                         f" ({export_script.last_line(printed)})"))
        return 0
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


def replay_hostile(args, path):
    info, _ = hostile_findings.load_finding(path)
    print(f"hostile finding {path}: {info['reader']} reads the minimised volume "
          f"({len(info.get('patches') or [])} byte range(s) changed from seed {info.get('seed_image')})"
          + (" and applies its ops" if info.get("ops") is not None else ""))
    print(f"expected signature: {info['signature']}")
    rc = hostile_findings.replay(path, log=print, timeout=info.get("timeout"))
    print("result: " + {0: "STILL SHOWS", 1: "does not show"}.get(rc, "CANNOT RUN"))
    return {0: 1, 1: 0}.get(rc, 2)


def replay(kind, args):
    fn = {"regression": replay_regression, "peer-bug": replay_peer_bug, "hostile": replay_hostile}[kind]
    sys.stdout.flush()
    return fn(args, args.target)


def export_target(args):
    """The target repro --export gives vfz.export.reproducer for a regression case: its
    ops and volume as an op-script, the writer (and reader) from --writers
    (--oracles), else the first writer and reader whose expected verdict is
    not ok. None for the other kinds (vfz.export.reproducer takes them as they are)."""
    if kind_of(args.target) != "regression":
        return None
    ops, exp = load_regression(args.target)
    if not args.writers:
        bad = [(w, o) for w, vs in sorted(exp["verdicts"].items()) for o, v in sorted(vs.items()) if v != "ok"]
        if not bad:
            raise UsageError(f"{args.target}: every expected verdict is ok, so there is no bug to export: "
                             "give --writers W (W's own) or --writers W --oracles R (R reading W's image)")
        w, o = bad[0]
        args.writers = w
        args.oracles = None if o == "(writer)" else o
        print(f"exporting {w}" + (f" read by {o}" if o != "(writer)" else "") +
              f": expected.json says {exp['verdicts'][w][o]}")
    return types.SimpleNamespace(kind="op-script", path=args.target, ops=ops, fs=exp["fs"], info=None)
