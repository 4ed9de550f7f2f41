"""vfatfuzz repro FINDING|CASE|CRASHFILE|OPSCRIPT: replay on every oracle.

A CASE (a regression case, a peer-bug case, a hostile finding) is replayed
by vfz/export/cases.py, which says what it replayed, what it expected and its exit
status.

Prints each writer x reader verdict and every divergence with its
signature. Exit 1 if it still diverges (for a finding: its own signature
reappears; for a crash file: fuzz_ops still fails on it, or any
divergence), 0 if not, 2 if it could not run.
"""
import signal
import sys

from vfz import findings, opscript
from vfz.campaign import loop as campaign
from vfz.campaign import targets

HELP = ("replay a finding, a case (corpus/regressions/NAME, corpus/peer-bugs/NAME, reports/hostile/NAME), "
        "a crash file or an op-script and print the divergence")


def add_arguments(p):
    targets.common_arguments(p)
    p.add_argument("--save-case", metavar="DIR",
                   help="write DIR (e.g. corpus/regressions/NAME) with ops.txt, expected.json "
                        "(the verdicts seen now, per writer and oracle) and README")
    p.add_argument("--note", default="", help="the README line of --save-case")
    p.add_argument("--export", metavar="DIR",
                   help="instead of replaying on every oracle, write DIR: a reproducer the "
                        "implementation's maintainers run without vfatfuzz (image, op-script, "
                        "run.sh with the tool's own commands, README.md as a bug report; "
                        "vfz.export.reproducer), and run it once here. A finding says which implementation; "
                        "for an op-script give --writers W (W's own bug) or --writers W "
                        "--oracles R (reader R on W's image). Exit 1 if it reproduces, 0 if not")


def run(args):
    return targets.run_guarded("repro", _run, args)


def _run(args):
    from vfz.export import cases# regression, peer-bug and hostile cases (vfz/export/cases.py)
    vfat = args.vfat or campaign.vfat_default()
    if args.export:
        from vfz.export import command as export
        hostile = export.hostile_source(args.target)
        t = None if hostile or export.is_spec(args.target) else \
            (cases.export_target(args) or targets.Target(args.target, vfat))
        return export.repro_export(args, t)
    if cases.kind_of(args.target):
        return cases.replay(cases.kind_of(args.target), args)
    t, ck, notes = targets.open_target(args, vfat)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(130))
    try:
        for n in notes:
            print(f"note: {n[:300]}")
        print(f"{t.kind} {args.target}: {len(t.ops)} ops; writers {','.join(ck.writer_names)}; "
              f"readers {','.join(ck.reader_names)}")
        want = t.info["signature"] if t.info and t.info["fields"].get("role") != "fuzz" else None
        if want:
            print(f"expected signature {want}: {findings.sig_text(t.info['fields'])}")
        diverges = False
        seen = False
        fsl = targets.fs_list(args, t)
        for fs in fsl:
            res = ck.check(t.ops, fs)
            if args.save_case:
                save_case(args.save_case, t, fs, res, args.note or (t.info or {}).get("summary", ""))
            print(f"== {fs}")
            for w, vs in res.verdicts.items():
                row = "  ".join(f"{o}={v}" for o, v in vs.items())
                print(f"   {w:<12} {row}")
            for d in res.divs.values():
                mark = "  <== the finding" if d.sig == want else ""
                print(f"-- divergence {d.sig}: {findings.sig_text(d.fields)} (writer {d.writer}){mark}")
                print("\n".join("     " + ln for ln in d.detail.splitlines()[:30]))
                seen |= d.sig == want
            diverges |= bool(res.divs)
        if t.crash:
            ran, fails, msg = targets.replay_crash(t.crash, args.fuzz_bin or t.fuzz_bin)
            if ran:
                print(f"fuzz_ops on {t.crash}: {'still fails: ' + msg if fails else 'passes'}")
                diverges |= fails
                seen |= fails
            else:
                print(f"note: {msg}; crash replayed through the oracles only")
        if want is not None or (t.crash and t.info):
            still = seen
        else:
            still = diverges
        print("result: " + ("STILL DIVERGES" if still else "no divergence"))
        return 1 if still else 0
    finally:
        ck.close()


def expected_verdicts(res):
    """{writer: {"(writer)": verdict, reader: verdict}} of one check."""
    out = {}
    for w, vs in res.verdicts.items():
        d = {"(writer)": vs.get("(writer)", "ok")}
        d.update({o: v for o, v in vs.items() if o != "(writer)"})
        out[w] = d
    return out


def save_case(dirname, t, fs, res, note):
    """A regression case: ops.txt + expected.json + README (one line)."""
    import json
    import os
    os.makedirs(dirname, exist_ok=True)
    p = os.path.join(dirname, "ops.txt")
    same = False
    if os.path.isfile(p):
        try:
            same = opscript.dump(opscript.load(p)) == opscript.dump(t.ops)
        except opscript.OpScriptError:
            same = False
    if not same:                      # keep a hand-made script's comments
        with open(p, "w", encoding="utf-8") as f:
            f.write(opscript.dump(t.ops))
    with open(os.path.join(dirname, "expected.json"), "w", encoding="utf-8") as f:
        json.dump({"fs": fs, "verdicts": expected_verdicts(res)}, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(dirname, "README"), "w", encoding="utf-8") as f:
        f.write((note or "regression case").replace("\n", " ") + "\n")
    print(f"saved regression case {dirname} ({fs})")
