"""vfatfuzz report WORKDIR [--out DIR] [--history DIR] [--coverage] [--digest FILE]

A static page of a campaign, merged or hostile workdir (vfz/report/,
docs/report.md): DIR/index.html and what it links, DIR/summary.json for a
later --history. Exit 0 written, 2 could not (one error line).
"""
import os
import sys

HELP = "a static HTML page of a workdir: findings (new first), states, pace, coverage, trends"


def add_arguments(p):
    p.add_argument("workdir", help="a campaign, merged (vfatfuzz merge) or hostile workdir")
    p.add_argument("--out", help="the page's directory (default WORKDIR/report)")
    p.add_argument("--history", metavar="DIR",
                   help="earlier runs' summary.json files (the OUT/summary.json of their reports, or "
                        "their workdirs' summary.json): which findings are new, and trends")
    p.add_argument("--coverage", action="store_true",
                   help="measure the core's line and branch coverage by the corpora (builds the coverage "
                        "preset once into build-coverage/, then reuses it)")
    p.add_argument("--digest", metavar="FILE", help="also write a short Markdown digest to FILE "
                                                      "(e.g. $GITHUB_STEP_SUMMARY; appended)")


def run(args):
    from vfz.report import coverage, digest, history, page, workdir
    try:
        r = workdir.load(args.workdir)
        entries = history.load(args.history)
    except ValueError as e:
        print(f"vfatfuzz report: {e}", file=sys.stderr)
        return 2
    out = args.out or os.path.join(args.workdir, "report")
    cov, err = None, None
    if args.coverage:
        try:
            cov = coverage.measure(args.workdir, out, log=lambda s: print(s, file=sys.stderr))
        except coverage.CoverageError as e:
            err = f"coverage not measured: {e}"
            print(f"vfatfuzz report: {err}", file=sys.stderr)
    try:
        entry = page.build(r, out, entries, cov, err)
        if args.digest:
            with open(args.digest, "a", encoding="utf-8") as f:
                f.write(digest.markdown(r, entry, entries))
    except OSError as e:
        print(f"vfatfuzz report: {e}", file=sys.stderr)
        return 2
    rep = entry["report"]
    print(f"report of {args.workdir} ({r['kind']}): {len(r['findings'])} findings, {rep['new']} new"
          + (f", core lines {cov['line']:.1f} %, branches {cov['branch']:.1f} %" if cov else "")
          + f" -> {os.path.join(out, 'index.html')}")
    return 0
