"""Detection power measured by automatic mutants of the core (issue 18): `vfatfuzz selftest --mutants`.

    vfatfuzz selftest --mutants N [--seed S] [--budget SECONDS] [--files LIST]
                      [--mutants-out JSONL] [--rerun JSONL] [--unit]

The mutants are vfz.selftest.mutator's (operators ror, aor, cst, neg, del,
swp on the C source lines of core/src); --seed shuffles each file's sites
(printed), and the files are taken in turn until N mutants compiled. A
mutant that does not compile is skipped (counted), and so is one that
breaks a rule GCC 14 enforces (an integer passed for a pointer:
-Werror=int-conversion and kin; GCC 12 only warns).

Each mutant is built as only the vfat CLI by vfz.selftest.builds.build_fault
from a copy of the source tree (vfz.selftest.srctree: build-mutants/TAG/tree/
from git HEAD, one file mutated at a time; build-fault-TAG/, TAG = MUTANT by
default, so each build recompiles one object). A mutant whose stripped
binary equals the unmutated tree's is equivalent by
construction (TCE) and is not hunted. The others are hunted by
vfz.selftest.search.hunt, the planted faults' focused loop: generated and
enriched scripts on FAT12/16/32 written by the core writers of the mutant
build, read by the readers, and a divergence counts only when the
reference build (build/vfat) does not show the same signature. The first
one is minimised. Survivors (with --unit) also run the C unit suites
(tests/unit_*.c) built against the mutant: a survivor that passes them and
stays silent under a long budget (--rerun with a larger --budget) is an
equivalent candidate.

Closing the gaps the first full run's survivors showed (reports/mutation.md):
--twins [LIST] adds the core writers' twins (the kernel writers, Entry.twin)
as writers no reader reads (Checker(unread=)), so vfz.check.twins compares the
mutant's bytes with the kernel's; --sanitize builds every tree with the asan
preset (a sanitizer report or assertion aborts the tool: a failed answer);
--formatters vfat makes the pristine volumes with the mutant's own mkfs;
--tour starts each hunt with vfz.campaign.steer's tours (and, on the mutant's
volumes, a probe of every other FAT type first); the reader vfat-check-own
is the mutant's own checker. --git REV mutates REV's core/src (behind HEAD's
CLI front end), so a later run hunts the same mutants.

One JSON line per mutant goes to --mutants-out (default
build-mutants/TAG/results.jsonl) as soon as it is known, so a run in the
background can be read while it goes on and resumed (same file: done
mutants are skipped). `python3 -m vfz.selftest.mutants report JSONL...` prints the
Markdown report (killed, survivors with their diff, score per file).
"""
import argparse
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter

from vfz import REPO, errors, oracles
from vfz.campaign import loop as campaign
from vfz.check import checker, twins
from vfz.selftest import search
from vfz.selftest.mutation_report import latest, load_rows, render, score_table  # noqa: F401
from vfz.selftest.mutator import Mutant, code_spans, read_src, select, sites, tokens  # noqa: F401
from vfz.selftest.srctree import (FAULT_NAME, STRICT, TREE_FILES, WORK, Tree, build, strict_error,  # noqa: F401
                                  stripped, unit_suites)

SRC = os.path.join(REPO, "core", "src")
DEFAULT_FILES = ["names.c", "namei.c", "dir.c", "fatent.c", "mkfs.c"]

# ---------------------------------------------------------------- running
MUTANT_WRITE_TIMEOUT = 20.0     # a mutant may loop for ever; the core applies a script in < 1 s


def add_arguments(p):
    p.add_argument("--mutants", type=int, metavar="N",
                   help="instead of the planted faults: N compiling mutants of core/src (vfz.selftest.mutants)")
    p.add_argument("--files", help=f"with --mutants: core/src files to mutate (default "
                                   f"{','.join(DEFAULT_FILES)})")
    p.add_argument("--mutants-out", help="with --mutants: JSON lines, one per mutant, appended "
                                         "(default build-mutants/TAG/results.jsonl; done mutants are skipped)")
    p.add_argument("--rerun", help="with --mutants: hunt again only the survivors of this JSONL "
                                   "(same seed and files)")
    p.add_argument("--mutants-tag", default=FAULT_NAME, metavar="TAG",
                   help="with --mutants: work in build-mutants/TAG/ and build-fault-TAG/ (default "
                        f"{FAULT_NAME}; two runs at once need two tags)")
    p.add_argument("--formatters", help="with --mutants: who makes the pristine volumes, the budget "
                                        "shared in turn: mkfs.fat (default), vfat (the mutant's own "
                                        "`vfat mkfs`), or both: mkfs.fat,vfat")
    p.add_argument("--shard", default="0/1", metavar="I/N",
                   help="with --mutants: take only the I-th of every N mutants of the sequence and "
                        "N/M of the count (N processes, each with its own --mutants-tag and output, "
                        "share one run; the union is the sample of a single process)")
    p.add_argument("--tour", action="store_true",
                   help="with --mutants: each hunt starts with vfz.campaign.steer's tour (near-full volume, "
                        "allocation wrapping into a freed hole, dirs to and from the root, a deep "
                        "tree, every name class; FAT12 on the first formatter, FAT16 on the second)")
    p.add_argument("--unit", action="store_true",
                   help="with --mutants: run the C unit suites on each survivor")
    p.add_argument("--twins", nargs="?", const="all", metavar="LIST",
                   help="with --mutants: the core writers' twins (Entry.twin: the kernel writers, one "
                        "persistent QEMU guest per module set for the whole run) write every script "
                        "too, unread, for the twin byte comparison (vfz.check.twins); LIST: only these "
                        "twins (e.g. kernel: core-dual's)")
    p.add_argument("--sanitize", action="store_true",
                   help="with --mutants: build the unmutated tree and each mutant with the asan "
                        "preset only (clang -O0, ASan+UBSan+LSan, directory index cross-checked): "
                        "a memory error or leak of a writer or of `vfat ls` is a failed answer")
    p.add_argument("--git", default="HEAD", metavar="REV",
                   help="with --mutants: mutate core/src as committed in REV (default HEAD; an "
                        "earlier run's revision draws the same mutants with the same seed); the vfat "
                        "CLI front end (core/cli) stays HEAD's")


def confirm(h, vfat, base, readers, writers, formatter="mkfs.fat", unread=()):
    """A kill seen by the hunt, checked once more on fresh checkers (no
    state shared with the long-lived reference checker): the minimised
    script must show the signature on the mutant and not on the
    unmutated build -> (confirmed, note)."""
    from vfz import findings, opscript
    ops = opscript.parse(h["script"])
    fields = h["fields"]                # the divergence's own fields (search.hunt)
    rdr = [fields["oracle"]] if fields["role"] == "reader" else []
    want = findings.sig_text(fields)
    seen = []
    for v in (vfat, base):
        ck = checker.Checker(readers, writers, vfat=v, timeout=30.0, notes=[], unread=unread,
                             formatter=formatter)
        try:
            ws = twins.replay_writers(h["writer"], fields, ck.writer_names)
            res = ck.check(ops, h["fs"], writers=ws, readers=rdr)
            seen.append(any(findings.sig_text(d.fields) == want for d in res.divs.values()))
        finally:
            ck.close()
    if not seen[0]:
        return False, "the mutant does not show the signature again on a fresh checker"
    if seen[1]:
        return False, "a fresh checker shows the same signature on the unmutated build"
    return True, ""


def run(args):
    from vfz.check import diff
    if args.mutants <= 0 or args.budget <= 0:
        print("vfatfuzz selftest: --mutants and --budget must be positive", file=sys.stderr)
        return 2
    files = [f.strip() for f in (args.files or ",".join(DEFAULT_FILES)).split(",") if f.strip()]
    for f in files:
        if not os.path.isfile(os.path.join(SRC, f)) or not f.endswith(".c"):
            print(f"vfatfuzz selftest: --files: no core/src/{f}", file=sys.stderr)
            return 2
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*", args.mutants_tag or ""):
        print("vfatfuzz selftest: --mutants-tag: upper-case letters, digits and '_'", file=sys.stderr)
        return 2
    work = os.path.join(WORK, args.mutants_tag)
    out = os.path.abspath(args.mutants_out or os.path.join(work, "results.jsonl"))
    shard = re.fullmatch(r"(\d+)/(\d+)", args.shard or "")
    if not shard or int(shard.group(1)) >= int(shard.group(2)):
        print("vfatfuzz selftest: --shard: I/N with 0 <= I < N", file=sys.stderr)
        return 2
    shard_i, shard_n = int(shard.group(1)), int(shard.group(2))
    if subprocess.run(["git", "-C", REPO, "rev-parse", "--verify", "--quiet", f"{args.git}^{{commit}}"],
                      capture_output=True).returncode != 0:
        print(f"vfatfuzz selftest: --git: no commit {args.git}", file=sys.stderr)
        return 2
    writers = args.writers.split(",") if args.writers else list(checker.DEFAULT_WRITERS)
    unread = []
    if args.twins:
        from vfz import oracles
        unread = [t for t in dict.fromkeys(oracles.entry(w).twin for w in writers) if t and t not in writers]
        if args.twins != "all":
            want = [t.strip() for t in args.twins.split(",") if t.strip()]
            bad = [t for t in want if t not in unread]
            if bad:
                print(f"vfatfuzz selftest: --twins: {','.join(bad)} is no twin of the writers "
                      f"(twins: {','.join(unread)})", file=sys.stderr)
                return 2
            unread = want
        writers = writers + unread
    if args.sanitize:
        # a sanitizer report aborts the tool: the writer (or `vfat ls`) failed
        os.environ["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=1:allocator_may_return_null=1"
        os.environ["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1:abort_on_error=1"
    rerun = None
    if args.rerun:
        if not os.path.isfile(args.rerun):
            print(f"vfatfuzz selftest: --rerun: no file {args.rerun}", file=sys.stderr)
            return 2
        rerun = {(r["file"], r["line"], r["col"], r["new"]) for r in load_rows(args.rerun)
                 if r.get("status") in ("survived", "unconfirmed")}
    print(f"mutants: seed {args.seed}, {args.mutants} over {','.join(files)}, budget {args.budget:g} s, "
          f"results in {out}", flush=True)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    prior = load_rows(out)
    done = {r["id"] for r in prior if r.get("status") != "nocompile"}
    failed = {r["id"] for r in prior if r.get("status") == "nocompile"}
    diff.WRITE_TIMEOUT = MUTANT_WRITE_TIMEOUT
    # --sanitize: the asan preset builds every tree (clang, -O0): what
    # compiles is what gcc's -fsyntax-only (strict_error) and clang accept
    tree = Tree(args.mutants_tag, args.git, "asan" if args.sanitize else "default")
    tree.sync()
    t = time.monotonic()
    base, err = build(tree)
    if err:
        print(f"vfatfuzz selftest: the unmutated tree does not build: {err}", file=sys.stderr)
        return 2
    base_copy = os.path.join(work, "vfat-base")
    shutil.copy2(base, base_copy)
    base_strip = stripped(base_copy, os.path.join(work, "vfat-base.stripped"))
    print(f"unmutated tree (git {tree.head}) built in {time.monotonic() - t:.0f} s", flush=True)
    ref = campaign.vfat_default()
    search._REF[:] = [ref]
    notes = []
    readers = args.oracles.split(",") if args.oracles else search.FAST_READERS
    formatters = [f.strip() for f in (args.formatters or "mkfs.fat").split(",") if f.strip()]
    refcks = []
    try:
        # the reference writers are the unmutated tree's, so a change made
        # to core/src by someone else during the run is never a detection;
        # one reference checker per formatter of the pristine volumes
        for fmt in formatters:
            refcks.append(checker.Checker(readers, writers, vfat=base_copy, timeout=30.0, notes=notes,
                                          unread=unread, formatter=fmt))
    except errors.UsageError as e:
        print(f"vfatfuzz selftest: {e}", file=sys.stderr)
        for ck in refcks:
            ck.close()
        return 2
    refck = refcks[0]
    for n in notes:
        print(f"note: {n[:300]}")
    print(f"readers {','.join(refck.reader_names)}; writers {','.join(refck.writer_names)}"
          + (f" ({','.join(unread)} unread: twins)" if unread else "")
          + f"; volumes by {' then '.join(formatters)} ({args.budget / len(formatters):g} s each)"
          + (f"; core of git {tree.head}" + ("; asan builds" if args.sanitize else "")), flush=True)
    config = {"twins": sorted(set(refck.writer_names) & set(unread)), "sanitize": bool(args.sanitize),
              "tour": bool(args.tour), "writers": refck.writer_names}
    t = time.monotonic()
    for ck in refcks:
        # the VMs boot and the pristine volumes are made before any budget runs
        from vfz.campaign import steer
        for fs in campaign.DEFAULT_FS:
            ck.check(steer.probe(), fs)
    print(f"warm-up (pristine volumes{', VM boots' if unread else ''}) {time.monotonic() - t:.0f} s",
          flush=True)
    tours = None
    if args.tour:
        from vfz.campaign import steer
        # small volumes: the FAT32 tour writes ~30 MB, minutes per check at load 25
        picks = [["fat12", "fat16"]] if len(refcks) == 1 else [["fat12"], ["fat16"]] * 5
        tours = []
        for ck, fss in zip(refcks, picks):
            t = [(steer.tour(*steer.volume_free(ck.pristine_image(fs))), fs) for fs in fss]
            if _under_test(ck):
                # the mutant's mkfs on every FAT type first: a short script each
                t = [(steer.probe(), fs) for fs in campaign.DEFAULT_FS if fs not in fss] + t
            tours.append(t)
    counted = skipped = 0
    want = len(rerun) if rerun is not None else args.mutants
    if shard_n > 1 and rerun is None:
        want = (want + shard_n - 1 - shard_i) // shard_n
    try:
        for k, m in enumerate(select(files, args.seed, {f: tree.text(f) for f in files})):
            if counted >= want and rerun is None:
                break
            if k % shard_n != shard_i:
                continue
            if rerun is not None and m.key not in rerun:
                continue
            if rerun is None and m.id in done:
                counted += 1
                continue
            if rerun is None and m.id in failed:
                continue
            row = dict(m.to_dict(), diff=m.diff(tree.text(m.file)), seed=args.seed, budget=args.budget,
                       git=tree.head, readers=refck.reader_names, formatters=formatters, **config)
            try:
                tree.mutate(m)
                t = time.monotonic()
                try:
                    err = strict_error(tree, m)
                    vfat = None
                    if not err:
                        vfat, err = build(tree)
                finally:
                    tree.restore(m)
                row["build_s"] = round(time.monotonic() - t, 1)
                if err:
                    skipped += 1
                    row.update(status="nocompile", note=err[:200])
                    _append(out, row)
                    continue
                counted += 1
                if filecmp.cmp(stripped(vfat, os.path.join(work, "vfat-mut.stripped")), base_strip,
                               shallow=False):
                    row.update(status="equivalent", why="same machine code as the unmutated build (TCE)")
                else:
                    h, fmt = hunt(m, vfat, refcks, args, notes, tours)
                    row.update({k: h.get(k) for k in ("seconds", "ops", "oracle", "signature", "scripts",
                                                      "writer", "fs", "ops_orig", "script")})
                    row["status"] = "killed" if h["found"] else "survived"
                    if h["found"]:
                        row["formatter"] = fmt
                    if h["found"] and h.get("script") and (h.get("fields") or {}).get("role") == "reader":
                        # a writer's result or crash is the mutant's own; a
                        # reader's verdict is checked again on fresh checkers
                        ok, why = confirm(h, vfat, base_copy, refck.reader_names, refck.writer_names, fmt,
                                          unread)
                        if not ok:
                            row.update(status="unconfirmed", note=why)
                    if not h["found"] and args.unit:
                        tree.mutate(m)
                        try:
                            row["unit_ok"], row["unit"] = unit_suites(tree)
                        finally:
                            tree.restore(m)
                _append(out, row)
                print(f"[{counted}/{want}] {m.id} {m.describe()}: {row['status']}"
                      + (f" after {row['seconds']} s by {row['oracle']} ({row['ops']} ops): {row['signature']}"
                         if row["status"] == "killed" else "")
                      + (f" (unit: {row['unit']})" if "unit" in row else ""), flush=True)
            except Exception as e:       # a harness failure on one mutant is recorded, the run goes on
                row.update(status="error", note=f"{type(e).__name__}: {e}"[:300])
                _append(out, row)
                print(f"{m.id}: error: {row['note']}", flush=True)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
    finally:
        for ck in refcks:
            ck.close()
    rows = [r for r in load_rows(out) if r.get("seed") == args.seed]
    print()
    print(score_table(rows))
    print(f"{skipped} mutants did not compile (skipped)")
    return 0


def hunt(m, vfat, refcks, args, notes, tours=None):
    """search.hunt once per reference checker (formatter of the
    pristine volumes), the budget shared equally -> (row, formatter); the
    seconds of a kill count from the start of the first share."""
    share = argparse.Namespace(**dict(vars(args), budget=args.budget / len(refcks)))
    spent, scripts, h = 0.0, 0, None
    for k, ck in enumerate(refcks):
        t = time.monotonic()
        try:
            h = search.hunt(m.id, vfat, ck, share, notes, first=tours[k] if tours else ())
        except errors.UsageError as e:
            if not _under_test(ck) or "vfat mkfs failed" not in str(e):
                raise
            for fs in campaign.DEFAULT_FS:      # the unmutated build formats them all
                ck.pristine_image(fs)
            return ({"found": True, "seconds": round(spent + time.monotonic() - t, 1), "ops": 0,
                     "oracle": "vfat mkfs", "scripts": scripts, "script": "", "writer": None, "fs": None,
                     "signature": "role=writer oracle=core verdict=failed kind=" + mkfs_failure(str(e))}, "vfat")
        scripts += h.get("scripts") or 0
        if h["found"]:
            h["seconds"] = round(h["seconds"] + spent, 1)
            h["scripts"] = scripts
            return h, getattr(ck, "formatter", "mkfs.fat")
        spent += time.monotonic() - t
    h["scripts"] = scripts
    return h, None


def mkfs_failure(msg):
    """The kind of a failed `vfat mkfs` (a sanitizer's report is long)."""
    if "Sanitizer" in msg or "runtime error" in msg:
        return "vfat mkfs failed: sanitizer report"
    return msg[:100]


def _append(path, row):
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(row, ensure_ascii=False) + "\n")


def main(argv):
    if len(argv) >= 2 and argv[0] == "report":
        rows = []
        for p in argv[1:]:
            if not os.path.isfile(p):
                print(f"vfz.selftest.mutants: no file {p}", file=sys.stderr)
                return 2
            rows += load_rows(p)
        sys.stdout.write(render(rows))
        return 0
    if len(argv) >= 1 and argv[0] == "sites":
        for f in argv[1:] or DEFAULT_FILES:
            ss = sites(f, read_src(f))
            print(f, len(ss), dict(Counter(m.op for m in ss)))
        return 0
    print("usage: python3 -m vfz.selftest.mutants report JSONL... | sites [FILE...]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


def _under_test(ck):
    """The checker's volumes are made by the build under test's own mkfs (a mutant's)."""
    return oracles.entry(ck.formatter).under_test
