"""The main job's own detection power (issue 26): `vfatfuzz selftest --mutants N --main-job`.

    vfatfuzz selftest --mutants N --main-job [--budget SECONDS] [--seed S]
                      [--files LIST] [--git REV] [--mutants-tag TAG] [--mutants-out JSONL]

The mutants are the focused mode's (vfz.selftest.mutants): the same
selection (vfz.selftest.mutator.select over the same files, seed and --git
revision draws the same mutants), the same tree and builds
(vfz.selftest.srctree), the same skips (a mutant that does not compile, or
breaks GCC 14's strict rules, is recorded as nocompile; one whose stripped
binary equals the unmutated tree's is equivalent by construction, TCE).

Instead of the focused hunt, each mutant is measured with the README's main
job itself: `scripts/vfatfuzz campaign --minutes BUDGET/60 --seed S --vfat
MUTANT_VFAT --workdir W --fresh --no-setup`, the default campaign otherwise
(default readers, writers, volumes, fuzzer). The reference is the same
campaign once with --vfat at the unmutated tree's build. A mutant is
caught when its run files a finding signature (vfz.findings: the hash that
names <workdir>/findings/<sig>/) the reference run did not file.

The fuzzer part runs on the mutant too: its fuzz_ops is built from the
mutated tree under both fuzz presets (vfz.selftest.srctree.build_fuzz:
fuzz-ubsan fuzzes, fuzz judges, as the README's main job does with
build-fuzz-ubsan/ and build-fuzz/; incremental, ~10-40 s a mutant) and given
to the campaign (--fuzz-bin, --judge-bin); the reference run gets the
unmutated tree's. A fuzzer finding is confirmed by replaying its crash
input with both judges (the mutant's fails with the same violation, the
unmutated one does not). The writer core-asan (core-dual's policy under
the ASan build, a default writer of the main job) runs the mutated tree's
asan preset build (--asan-vfat; the reference the unmutated tree's), so a
memory error the release build survives silently is the mutant's failure.
--no-fuzz-part leaves the fuzzer on the unmutated
repository builds (build-fuzz*/: what the rows before 5 Dec 2026 08:30 UTC
measured, the differential part alone); each row says which (fuzz_part).

One JSON line per mutant goes to --mutants-out (default
build-mutants/TAG/mainjob.jsonl, TAG MAINJOB unless given) as soon as it is
known (done mutants are skipped on a rerun). `python3 -m
vfz.selftest.mainjob report JSONL... [--focused JSONL...]` prints the
Markdown section, the focused mode's verdicts on the same mutants beside.
"""
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter

from vfz import REPO
from vfz.selftest.mutation_report import latest, load_rows
from vfz.selftest.mutator import select
from vfz.selftest.srctree import FAULT_NAME, WORK, Tree, build, build_fuzz, strict_error, stripped

DEFAULT_BUDGET = 120.0
TAG = "MAINJOB"
VFATFUZZ = os.path.join(REPO, "scripts", "vfatfuzz")


def add_arguments(p):
    p.add_argument("--main-job", action="store_true",
                   help="with --mutants: measure each mutant with the main job itself (the default "
                        f"campaign, same seed, --budget seconds, default {DEFAULT_BUDGET:g}) instead of "
                        "the focused hunt (vfz.selftest.mainjob)")
    p.add_argument("--no-fuzz-part", action="store_true",
                   help="with --main-job: the campaign's fuzzer fuzzes the unmutated fuzz_ops "
                        "(build-fuzz*/), so only the differential part meets the mutant")
    p.add_argument("--skip", metavar="IDS",
                   help="with --main-job: mutant ids (comma-separated) passed over without being counted, "
                        "e.g. those judged equivalent by reading the code (reports/mutation.md)")


def usage(msg):
    print(f"vfatfuzz selftest: {msg}", file=sys.stderr)
    return 2


def signatures(workdir):
    """{signature hash: signature text} of the findings a campaign filed."""
    out = {}
    d = os.path.join(workdir, "findings")
    if not os.path.isdir(d):
        return out
    for h in sorted(os.listdir(d)):
        p = os.path.join(d, h, "finding.json")
        if h.startswith(".") or not os.path.isfile(p):
            continue
        try:
            with open(p, encoding="utf-8") as f:
                info = json.load(f)
        except ValueError:
            continue
        fl = info.get("fields") or {}
        out[h] = " ".join(f"{k}={fl.get(k, '-')}" for k in ("role", "oracle", "verdict", "kind", "op", "cls"))
    return out


def campaign(vfat, workdir, args, log, fuzz=None, asan=None):
    """One main-job run against VFAT (its ASan build ASAN for core-asan, and fuzz = (fuzzing
    fuzz_ops, judging fuzz_ops) when given) in a fresh WORKDIR -> (exit code, seconds,
    signatures)."""
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    cmd = [VFATFUZZ, "campaign", "--minutes", f"{args.budget / 60:g}", "--seed", str(args.seed),
           "--vfat", vfat, "--workdir", workdir, "--fresh", "--no-setup"]
    if asan:
        cmd += ["--asan-vfat", asan]
    if fuzz:
        cmd += ["--fuzz-bin", fuzz[0], "--judge-bin", fuzz[1]]
    t = time.monotonic()
    with open(log, "w", encoding="utf-8") as lf:
        p = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True)
        try:
            # the budget and the lanes' last scripts; then a SIGTERM cuts the minimisation of
            # what is queued short (written unminimised: the signatures filed are the same,
            # and a mutant that fails every script queues a hundred of them, 5 s each)
            rc = p.wait(timeout=args.budget + FINISH_S)
        except subprocess.TimeoutExpired:
            p.send_signal(15)
            try:
                rc = p.wait(timeout=args.budget * 4 + 600)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 15)
                rc = p.wait()
    return rc, round(time.monotonic() - t, 1), signatures(workdir)


def found_after(workdir, texts):
    """The earliest found_after_s (seconds from the campaign's start, its VM boots included)
    of the findings whose signature text is in texts; None when none says."""
    got = [i.get("found_after_s") for h, t in signatures(workdir).items() if t in texts
           for i in [_finding(workdir, h)] if i.get("found_after_s") is not None]
    return min(got) if got else None


def run_scripts(workdir):
    """The scripts the campaign checked (its summary.json), None when it wrote none."""
    try:
        with open(os.path.join(workdir, "summary.json"), encoding="utf-8") as f:
            return json.load(f).get("scripts")
    except (OSError, ValueError):
        return None


def _finding(workdir, h):
    try:
        with open(os.path.join(workdir, "findings", h, "finding.json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


MAX_CONFIRM = 2       # confirmed findings enough for a kill (the first one decides)
MAX_TRIES = 8         # findings re-checked per mutant: two fresh checkers each (a VM boot for a kernel's)
FINISH_S = 60.0       # past the budget: the lanes' last scripts and a little minimisation


def confirm_new(new, workdir, vfat, base, judges=None, asans=(None, None)):
    """The new signatures a fresh checker confirms: the finding's minimised
    script shows the signature with the mutant's build and not with the
    unmutated one (a 2-minute run under load explores a different share of
    the scripts than the reference did, so a signature the reference did
    not reach is not yet the mutant's). A fuzzer finding counts when judges
    (the mutant's judging fuzz_ops, the unmutated one's) are given and its
    crash input fails the mutant's the same way and not the unmutated one;
    without them the fuzzer ran the unmutated fuzz_ops and its findings never
    count. A flaky one (not shown again in its own minimisation) is not tried.
    The cheapest and most direct first (a core writer's own, the own mkfs's,
    a fuzzer crash's, a twin's with its twin writer, a process reader's, a VM
    reader's), at most MAX_TRIES tried; asans: the ASan builds of both for
    core-asan -> (confirmed texts, notes)."""
    from vfz import findings, opscript
    from vfz.check import checker, twins
    from vfz.selftest import search
    conf, notes, tries = [], [], 0
    infos = {h: findings.load_finding(os.path.join(workdir, "findings", h)) for h in new}
    for h in sorted(new, key=lambda h: (_confirm_rank(infos[h]), h)):
        if len(conf) >= MAX_CONFIRM or tries >= MAX_TRIES:
            break
        info, text = infos[h], new[h]
        fl = info["fields"]
        if fl.get("role") == "fuzz" and judges:
            tries += 1
            ok, why = confirm_crash(os.path.join(workdir, "findings", h), fl, judges)
            if ok:
                conf.append(text)
            else:
                notes.append(f"{h}: {why}")
            continue
        own_fmt = fl.get("role") == "formatter" and _under_test(info.get("writer"))
        if (fl.get("role") not in ("reader", "writer") and not own_fmt) or not info.get("writer"):
            notes.append(f"{h}: role {fl.get('role')}, not the mutant's")
            continue
        if info.get("flaky"):
            notes.append(f"{h}: flaky in its own campaign, not tried")
            continue
        tries += 1
        with open(os.path.join(workdir, "findings", h, "ops.txt"), encoding="utf-8") as f:
            ops = opscript.parse(f.read())
        # a formatter's divergence: the fresh volume its mkfs makes, read by the reader that saw it
        rdr = [fl["oracle"]] if fl["role"] == "reader" or (own_fmt and fl["oracle"] in _readers()) else []
        wrt = ["core-dual"] if own_fmt else twins.replay_writers(info["writer"], fl)
        seen = []
        for v, a in zip((vfat, base), asans):
            ck = checker.Checker(rdr or search.FAST_READERS[:1], wrt, vfat=v, timeout=60.0, notes=[],
                                 asan_vfat=a)
            try:
                res = ck.check(ops, info.get("fs_spec") or info["fs"], writers=wrt, readers=rdr)
                seen.append(any(findings.sig_hash(d.fields) == h for d in res.divs.values()))
            finally:
                ck.close()
        if seen == [True, False]:
            conf.append(text)
        else:
            notes.append(f"{h}: {'mutant shows it' if seen[0] else 'mutant does not show it again'}, "
                         f"{'unmutated shows it too' if seen[1] else 'unmutated does not'}")
    return conf, notes


def confirm_crash(fdir, fields, judges):
    """A fuzzer finding's crash input (minimised when kept) on the mutant's judging fuzz_ops
    and on the unmutated one's: (True, "") when only the mutant's fails, with the violation
    the finding names; else (False, why)."""
    from vfz import findings
    from vfz.campaign.fuzzer import crash_line
    from vfz.proc import run as prun
    crash = next((p for p in (os.path.join(fdir, "crash.min.bin"), os.path.join(fdir, "crash.bin"))
                  if os.path.isfile(p)), None)
    if crash is None:
        return False, "no crash input kept"
    got = []
    for judge in judges:
        p = prun([judge, crash], timeout=60)
        got.append(None if p.rc == 0 else findings.normalise(crash_line(p.errtext + p.text, p.rc), 80))
    if got[0] != fields.get("kind"):
        return False, f"the mutant's fuzz_ops gives {got[0]!r} on the crash input"
    if got[1] is not None:
        return False, f"the unmutated fuzz_ops fails too ({got[1]})"
    return True, ""


def _under_test(name):
    from vfz import oracles
    try:
        return bool(name) and oracles.entry(name).under_test
    except KeyError:
        return False


def _confirm_rank(info):
    """Which new findings confirm_new tries first: a core writer's own results or failure,
    the own mkfs's failure, a twin's bytes, a process reader's complaint, a VM reader's."""
    from vfz import oracles
    fl = info.get("fields") or {}
    if fl.get("role") == "writer":
        return 2 if str(fl.get("kind", "")).startswith("twin-") else 0
    if fl.get("role") in ("formatter", "fuzz"):
        return 1
    try:
        return 4 if oracles.entry(fl.get("oracle")).cost == "vm" else 3
    except KeyError:
        return 5


def _readers():
    from vfz import oracles
    return oracles.names("reader")


def run(args):
    if args.mutants is None or args.mutants <= 0:
        return usage("--main-job needs --mutants N (N > 0)")
    if args.budget is None:
        args.budget = DEFAULT_BUDGET
    if args.budget <= 0:
        return usage("--budget must be positive")
    from vfz.selftest.mutants import DEFAULT_FILES, SRC
    files = [f.strip() for f in (args.files or ",".join(DEFAULT_FILES)).split(",") if f.strip()]
    for f in files:
        if not f.endswith(".c") or not os.path.isfile(os.path.join(SRC, f)):
            return usage(f"--files: no core/src/{f}")
    tag = TAG if args.mutants_tag == FAULT_NAME else args.mutants_tag
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*", tag or ""):
        return usage("--mutants-tag: upper-case letters, digits and '_'")
    if subprocess.run(["git", "-C", REPO, "rev-parse", "--verify", "--quiet", f"{args.git}^{{commit}}"],
                      capture_output=True).returncode != 0:
        return usage(f"--git: no commit {args.git}")
    work = os.path.join(WORK, tag)
    out = os.path.abspath(args.mutants_out or os.path.join(work, "mainjob.jsonl"))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    os.makedirs(work, exist_ok=True)
    fuzz_part = not getattr(args, "no_fuzz_part", False)
    print(f"main job: seed {args.seed}, {args.mutants} mutants over {','.join(files)}, campaign of "
          f"{args.budget:g} s each, results in {out}; "
          + ("the fuzzer part fuzzes the mutant's fuzz_ops too" if fuzz_part else
             "the fuzzer part fuzzes the unmutated fuzz_ops, so the detection measured is the "
             "differential part's"), flush=True)
    prior = load_rows(out)
    done = {r["id"] for r in prior if r.get("status") not in ("nocompile", "error")}
    failed = {r["id"] for r in prior if r.get("status") == "nocompile"}
    tree = Tree(tag, args.git)
    tree.sync()
    base, err = build(tree)
    if err:
        return usage(f"the unmutated tree does not build: {err}")
    base_copy = os.path.join(work, "vfat-base")
    shutil.copy2(base, base_copy)
    base_strip = stripped(base_copy, os.path.join(work, "vfat-base.stripped"))
    base_asan, err = build(tree, "asan")
    if err:
        return usage(f"the unmutated tree's asan build fails: {err}")
    shutil.copy2(base_asan, os.path.join(work, "vfat-base-asan"))
    base_asan = os.path.join(work, "vfat-base-asan")
    base_fuzz = None
    if fuzz_part:
        base_fuzz, err = fuzz_builds(tree, work, "base")
        if err:
            return usage(f"the unmutated tree's fuzz_ops does not build: {err}")
    ref_file = os.path.join(work, f"reference-{args.seed}-{args.budget:g}.json")
    ref = json.load(open(ref_file, encoding="utf-8")) if os.path.isfile(ref_file) else None
    if ref is None or ref.get("git") != tree.head or ref.get("fuzz_part", False) != fuzz_part \
            or not ref.get("asan"):
        rc, secs, sigs = campaign(base_copy, os.path.join(work, "ref"), args, os.path.join(work, "ref.log"),
                                  base_fuzz, base_asan)
        ref = {"git": tree.head, "rc": rc, "seconds": secs, "signatures": sigs, "fuzz_part": fuzz_part,
               "asan": True}
        with open(ref_file + ".tmp", "w", encoding="utf-8") as f:
            json.dump(ref, f, indent=1)
        os.replace(ref_file + ".tmp", ref_file)
    print(f"reference run (git {tree.head}, unmutated): exit {ref['rc']}, {ref['seconds']} s, "
          f"{len(ref['signatures'])} signatures", flush=True)
    skip = {x.strip() for x in (getattr(args, "skip", None) or "").split(",") if x.strip()}
    counted = 0
    try:
        for m in select(files, args.seed, {f: tree.text(f) for f in files}):
            if counted >= args.mutants:
                break
            if m.id in failed or m.id in skip:
                continue
            counted += 1
            if m.id in done:
                continue
            row = dict(m.to_dict(), diff=m.diff(tree.text(m.file)), seed=args.seed, budget=args.budget,
                       git=tree.head, mode="main-job", ref_signatures=len(ref["signatures"]))
            try:
                equivalent, mut_fuzz, mut_asan = False, None, None
                tree.mutate(m)
                try:
                    err = strict_error(tree, m)
                    vfat = None if err else build(tree)[0]
                    if not err and vfat is None:
                        err = "does not build"
                    if not err:
                        equivalent = filecmp.cmp(stripped(vfat, os.path.join(work, "vfat-mut.stripped")),
                                                 base_strip, shallow=False)
                    if not err and not equivalent:
                        mut_asan, err = build(tree, "asan")
                        if mut_asan:
                            shutil.copy2(mut_asan, os.path.join(work, "vfat-mut-asan"))
                            mut_asan = os.path.join(work, "vfat-mut-asan")
                    if not err and not equivalent and fuzz_part:
                        mut_fuzz, err = fuzz_builds(tree, work, "mut")
                finally:
                    tree.restore(m)
                if err:
                    counted -= 1
                    row.update(status="nocompile", note=err[:200])
                    _append(out, row)
                    continue
                row["fuzz_part"] = fuzz_part
                if equivalent:
                    row.update(status="equivalent", why="same machine code as the unmutated build (TCE)")
                else:
                    mv = os.path.join(work, "vfat-mut")
                    shutil.copy2(vfat, mv)      # the next mutant's build must not change it under the run
                    wd = os.path.join(work, "runs", m.id.replace(":", "_"))
                    rc, secs, sigs = campaign(mv, wd, args, wd + ".log", mut_fuzz, mut_asan)
                    new = {h: s for h, s in sigs.items() if h not in ref["signatures"]}
                    conf, notes = confirm_new(new, wd, mv, base_copy,
                                              (mut_fuzz[1], base_fuzz[1]) if mut_fuzz else None,
                                              (mut_asan, base_asan))
                    row.update(status="killed" if conf else ("unconfirmed" if new else "survived"), rc=rc,
                               seconds=secs, signatures=len(sigs), new_sigs=sorted(new.values()),
                               confirmed=conf, confirm_notes=notes, found_s=found_after(wd, conf),
                               scripts=run_scripts(wd))
                _append(out, row)
                print(f"[{counted}/{args.mutants}] {m.id} {m.describe()}: {row['status']}"
                      + (f" ({len(row['new_sigs'])} new, {len(row['confirmed'])} confirmed: {row['new_sigs'][0]})"
                         if row.get("new_sigs") else ""), flush=True)
            except Exception as e:       # a harness failure on one mutant is recorded, the run goes on
                row.update(status="error", note=f"{type(e).__name__}: {e}"[:300])
                _append(out, row)
                print(f"{m.id}: error: {row['note']}", flush=True)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
    print()
    print(render(load_rows(out)))
    return 0


def fuzz_builds(tree, work, name):
    """The tree's fuzz_ops under fuzz-ubsan (fuzzing) and fuzz (judging), copied to
    WORK/fuzz-NAME-*: the next mutant's incremental build must not change a binary a
    run is using -> ((fuzzing, judging), None) or (None, error)."""
    got = []
    for preset in ("fuzz-ubsan", "fuzz"):
        b, err = build_fuzz(tree, preset)
        if err:
            return None, err
        dst = os.path.join(work, f"fuzz-{name}-{preset}")
        shutil.copy2(b, dst)
        got.append(dst)
    return tuple(got), None


def _append(path, row):
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(row, ensure_ascii=False) + "\n")


def render(rows, focused=(), goal=0.9):
    """Markdown: the main job's score on its sample, the focused verdicts on the same mutants beside."""
    rows = [r for r in latest(rows) if r["status"] not in ("nocompile", "error")]
    foc = {r["id"]: r for r in latest(list(focused))}
    c = Counter(r["status"] for r in rows)
    live = len(rows) - c["equivalent"]
    budgets = sorted({r.get("budget") for r in rows})
    out = ["## The main job's own score (issue 26)", ""]
    if not rows:
        return "\n".join(out + ["No mutant measured yet.", ""])
    sc = c["killed"] / live if live else 0.0
    out.append(f"A sample of {len(rows)} mutants (seed {', '.join(sorted({str(r['seed']) for r in rows}))}, "
               f"core at git {', '.join(sorted({r['git'] for r in rows}))}), each run through the main job "
               f"(`vfatfuzz campaign`, default campaign, same seed) for {', '.join(f'{b:g}' for b in budgets)} s; "
               f"caught = a finding signature the unmutated reference run did not file, confirmed by a fresh "
               f"checker on its minimised script (the mutant shows it, the unmutated build does not). The fuzzer part "
               f"fuzzes the unmutated fuzz_ops, so this is the differential part's detection.")
    out.append("")
    fk = [foc[r["id"]]["status"] for r in rows if r["id"] in foc and r["status"] != "equivalent"]
    out += ["| mode | mutants | equivalent (TCE) | non-equivalent | caught | new but unconfirmed | score |",
            "|---|---:|---:|---:|---:|---:|---:|",
            f"| main job, {'/'.join(f'{b:g}' for b in budgets)} s | {len(rows)} | {c['equivalent']} | {live} | "
            f"{c['killed']} | {c['unconfirmed']} | {100 * sc:.0f} % |"]
    if fk:
        k = sum(s == "killed" for s in fk)
        out.append(f"| focused hunt, same mutants | {len(fk)} | - | {len(fk)} | {k} | "
                   f"{sum(s == 'unconfirmed' for s in fk)} | {100 * k / len(fk):.0f} % |")
    out += ["", f"Goal (>= {100 * goal:.0f} % of non-equivalent mutants within 2 minutes): "
            + ("**met**" if live and sc >= goal else "**not met**")
            + f" on this sample of {live} non-equivalent mutants.", "",
            "| mutant | change | main job | found at s | scripts | campaign s | new signature (confirmed first) "
            "| focused |", "|---|---|---|---:|---:|---:|---|---|"]
    for r in rows:
        f = foc.get(r["id"])
        out.append(f"| {r['id']} | `{_cell(r['old'].strip()[:30])}` → `{_cell(r['new'].strip()[:30])}` | {r['status']} | "
                   f"{_num(r.get('found_s'))} | {_num(r.get('scripts'))} | "
                   f"{r.get('seconds', '-')} | {_cell((r.get('confirmed') or r.get('new_sigs') or ['-'])[0][:90])} | "
                   f"{(f['status'] + (' ' + str(f.get('seconds')) + ' s' if f.get('seconds') else '')) if f else '-'} |")
    return "\n".join(out) + "\n"


def _num(x):
    return "-" if x is None else f"{x:g}"


def _cell(x):
    return str(x).replace("|", "\\|")


def main(argv):
    if argv[:1] == ["report"] and len(argv) >= 2:
        rows, focused, dst = [], [], None
        for p in argv[1:]:
            if p == "--focused":
                dst = focused
                continue
            if not os.path.isfile(p):
                return usage(f"no file {p}")
            (dst if dst is not None else rows).extend(load_rows(p))
        sys.stdout.write(render(rows, focused))
        return 0
    print("usage: python3 -m vfz.selftest.mainjob report JSONL... [--focused JSONL...]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
