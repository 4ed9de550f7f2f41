"""What the minimiser makes of a job: a new divergence minimised and filed, or a fuzz_ops crash file made a finding.

Run in the minimiser's thread (vfz.campaign.minworker) on the campaign's
state (camp: the Campaign of vfz.campaign.loop: its deadline, budget,
known signatures and lock).
"""
import os
import time

from vfz import findings, opscript
from vfz.campaign import minimize
from vfz.campaign import minworker
from vfz.campaign.filing import divergence_test, finding_summary, write_full
from vfz.campaign.fuzzer import convert_input
from vfz.campaign.targets import minimize_crash

MIN_LATE = 5.0                         # ... when the time budget is already spent


def divergence_finding(camp, worker, job):
    """A new divergence ("div", d, ops, fs, src): minimised within the
    budget left (hurried when stopped), filed, its journal entry dropped."""
    _, d, ops, fs, src = job
    worker.current = d.sig
    t0 = time.monotonic()
    # minimisation may overrun the budget a little, never by much:
    # past the deadline a finding gets MIN_LATE seconds; stopped: none
    left = camp.deadline - time.monotonic()
    budget = 0.0 if worker.hurry.is_set() else min(camp.args.min_budget, max(MIN_LATE, left))
    test = divergence_test(worker.checker, d, fs)

    def hurried_test(cand):
        if worker.hurry.is_set():        # stopped by a signal: keep the best so far
            raise minimize.BudgetSpent()
        return test(cand)
    mops, stats = minimize.minimize(ops, hurried_test, budget=budget)
    extra = dict(src, seed=camp.seed, minimise_s=round(time.monotonic() - t0, 1), minimise=stats)
    # shown once, not on the next run of the same script: filed all the
    # same (a nondeterministic peer is a finding), labelled for triage
    flaky = stats.get("reproduced") is False
    if flaky:
        extra["flaky"] = True
    write_full(camp.workdir, worker.checker, d, ops, mops, fs, extra)
    minworker.journal_done(camp.workdir, d.sig)
    line = finding_summary(d, mops, fs, flaky)
    with camp.lock:
        camp.new.append((d.sig, line))
    camp.say(f"finding {d.sig}: {line}")


def crash_finding(camp, worker, path):
    """A fuzz_ops crash file: its input minimised (libFuzzer) when it still
    fails the same way, filed with its op-script unless its signature is known."""
    msg = camp.fuzzer.crash_message(path)
    if msg is None:
        camp.say(f"note: {os.path.basename(path)} no longer fails in fuzz_ops; ignored")
        return
    fields = {"role": "fuzz", "oracle": "fuzz_ops", "verdict": "failed",
              "kind": findings.normalise(msg, 80), "op": "-", "cls": "-"}
    h = findings.sig_hash(fields)
    with camp.lock:
        if h in camp.known:
            return
        camp.known.add(h)
    worker.current = h
    try:
        ops, opts, text = convert_input(camp.vfat, path)
    except opscript.OpScriptError as e:
        ops, opts, text = [], "", f"# {e}\n"
    # shrink the input bytes (libFuzzer -minimize_crash); keep the result
    # only if it still fails with the same kind of violation
    mtext, mops = text, ops
    left = camp.deadline - time.monotonic()
    mpath = os.path.join(camp.fuzzer.logs, f"min-{os.path.basename(path)}")
    if not worker.hurry.is_set():
        ok, _ = minimize_crash(path, mpath, min(15.0, camp.args.min_budget, max(MIN_LATE, left)),
                               camp.fuzzer.judge)
        if ok:
            m2 = camp.fuzzer.crash_message(mpath)
            if m2 is not None and findings.normalise(m2, 80) == fields["kind"]:
                try:
                    mops, _, mtext = convert_input(camp.vfat, mpath)
                except opscript.OpScriptError:
                    mtext, mops = text, ops
    summary = f"fuzz_ops violation: {msg[:200]} ({len(mops)} ops)"
    info = {"signature": h, "fields": fields, "summary": summary, "message": msg,
            "crash_file": os.path.basename(path), "apply_options": opts, "seed": camp.seed,
            "ops_orig": len(ops), "ops_min": len(mops), "fuzz_bin": camp.fuzzer.judge,
            "found_after_s": round(time.monotonic() - camp.t0, 1)}
    files = {"ops.txt": mtext, "ops.orig.txt": text}
    with open(path, "rb") as f:
        files_bin = {"crash.bin": f.read()}
    if os.path.isfile(mpath):
        with open(mpath, "rb") as f:
            files_bin["crash.min.bin"] = f.read()
        os.unlink(mpath)
    findings.write_finding(camp.workdir, h, info, files, {}, {}, binary=files_bin)
    with camp.lock:
        camp.new.append((h, summary))
    camp.say(f"finding {h}: {summary}")
