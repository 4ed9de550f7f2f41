"""vfatfuzz minimize FINDING|CRASHFILE|OPSCRIPT [--out F] [--sig HASH]

Shrinks the op-script to the smallest one that still shows the same
divergence signature (a finding's own, else --sig, else the first
divergence the script shows) on the writer and oracle that showed it:
delta debugging over op lines, then names, then sizes (vfz.campaign.minimize).
Writes the result to --out (default stdout). Exit 0 minimised, 1 the
script shows no divergence, 2 could not run.
"""
import sys

from vfz import findings, opscript
from vfz.campaign import loop as campaign
from vfz.campaign import filing
from vfz.campaign import fuzzer
from vfz.campaign import targets

HELP = "shrink a finding, crash file or op-script to the smallest op-script that still diverges"


def add_arguments(p):
    targets.common_arguments(p)
    p.add_argument("--out", help="write the minimised op-script here (default stdout)")
    p.add_argument("--sig", help="signature to keep (default: the finding's, else the first divergence)")
    p.add_argument("--budget", type=float, default=120.0, help="seconds (default 120)")


def run(args):
    return targets.run_guarded("minimize", _run, args)


def _run(args):
    vfat = args.vfat or campaign.vfat_default()
    t, ck, notes = targets.open_target(args, vfat)
    try:
        for n in notes:
            print(f"note: {n[:300]}", file=sys.stderr)
        want = args.sig or (t.info["signature"] if t.info else None)
        found = None
        for fs in targets.fs_list(args, t):
            res = ck.check(t.ops, fs)
            if want:
                if want in res.divs:
                    found = (res.divs[want], fs)
            elif res.divs:
                found = (next(iter(res.divs.values())), fs)
            if found:
                break
        if not found and t.crash:
            return _minimize_crash(args, t, vfat)
        if not found:
            print(f"vfatfuzz minimize: {args.target}: "
                  + (f"signature {want} does not reproduce" if want else "no divergence to keep"),
                  file=sys.stderr)
            return 1
        d, fs = found
        print(f"keeping {d.sig}: {findings.sig_text(d.fields)} (writer {d.writer}, {fs}); "
              f"{len(t.ops)} ops", file=sys.stderr)
        mops, st = filing.minimize_divergence(ck, d, t.ops, fs, budget=args.budget)
        if st.get("reproduced") is False:
            print(f"vfatfuzz minimize: {args.target}: signature {d.sig} showed once, then not on "
                  f"the next run of the same script (nondeterministic); nothing minimised",
                  file=sys.stderr)
            return 1
        print(f"minimised to {len(mops)} ops in {st['tests']} tests"
              + (" (budget spent)" if st["timeout"] else ""), file=sys.stderr)
        text = f"# minimised: {findings.sig_text(d.fields)} (writer {d.writer}, {fs})\n" + opscript.dump(mops)
        if args.out:
            with open(args.out, "w", encoding="utf-8") as f:
                f.write(text)
        else:
            sys.stdout.write(text)
        return 0
    finally:
        ck.close()


def _minimize_crash(args, t, vfat):
    """The converted script shows no divergence in the oracles, but the
    crash may still fail in fuzz_ops: shrink the input bytes with
    libFuzzer's -minimize_crash, then convert the result."""
    import os
    import tempfile
    ran, fails, msg = targets.replay_crash(t.crash, args.fuzz_bin or t.fuzz_bin)
    if not ran or not fails:
        print(f"vfatfuzz minimize: {args.target}: no divergence in the oracles and "
              + (msg if not ran else "fuzz_ops passes on it"), file=sys.stderr)
        return 1
    print(f"fuzz_ops still fails ({msg}); shrinking the input with -minimize_crash", file=sys.stderr)
    fd, out = tempfile.mkstemp(prefix="vfz-mincrash-")
    os.close(fd)
    os.unlink(out)
    try:
        ok, why = targets.minimize_crash(t.crash, out, args.budget, args.fuzz_bin or t.fuzz_bin)
        src = out if ok else t.crash
        if not ok:
            print(f"note: {why}; converting the original input", file=sys.stderr)
        mops, opts, text = fuzzer.convert_input(vfat, src)
    finally:
        if os.path.exists(out):
            os.unlink(out)
    print(f"minimised to {len(mops)} ops (from {len(t.ops)})", file=sys.stderr)
    text = f"# minimised crash: {msg}\n" + text
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0
