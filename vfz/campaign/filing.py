"""Filing a divergence: its minimisation against a checker and the finding directory it becomes."""
import shutil
import tempfile

from vfz import findings, opscript
from vfz.campaign import minimize
from vfz.check.checker import FS_SPECS
from vfz.check.twins import replay_writers

MIN_BUDGET = 90.0                      # seconds per finding's minimisation (cap)


def summary_line(d, mops, fs):
    return (f"{findings.sig_text(d.fields)} | writer {d.writer} on {fs} | {len(mops)} ops: "
            + "; ".join(str(o) for o in mops[:3])[:200] + (" ..." if len(mops) > 3 else ""))


FLAKY_NOTE = " [flaky: not shown again on replay]"


def finding_summary(d, mops, fs, flaky=False):
    """summary.txt's line, and the campaign's for the finding."""
    return summary_line(d, mops, fs) + (FLAKY_NOTE if flaky else "")


def replay_readers(checker, fields):
    """The readers a divergence needs to show again: its own for a reader's
    (and a harness divergence of a reader); for a transformer's, the reader
    whose view of the transformed image it came from ('uboot:missing'),
    or, for a named exception of the transformer or a failed transform
    (named from the transform alone), every reader -- the name says which
    transformer, not which reader saw it; none for a writer's result."""
    role, oracle, kind = fields["role"], fields["oracle"], fields["kind"]
    if role == "reader" or (role == "harness" and oracle != "model"):
        return [oracle]
    if role == "transformer" and fields["verdict"] != "failed":
        rn = kind.lstrip("+-").split(":", 1)[0]
        if ":" in kind and rn in checker.reader_names:
            return [rn]
        return None
    return []


def divergence_test(checker, d, fs):
    """ops -> bool: does the same signature still appear (same writer/oracle)?"""
    rd = replay_readers(checker, d.fields)
    ws = replay_writers(d.writer, d.fields, checker.writer_names)

    def test(ops):
        r = checker.check(ops, fs, writers=ws, readers=rd)
        return d.sig in r.divs
    return test


def minimize_divergence(checker, d, ops, fs, budget=MIN_BUDGET):
    test = divergence_test(checker, d, fs)
    return minimize.minimize(ops, test, budget=budget)


def write_full(workdir, checker, d, orig_ops, mops, fs, extra):
    """Re-check the minimised script on every oracle and write the finding."""
    wd = tempfile.mkdtemp(prefix="vfz-finding-", dir=checker.tmp)
    try:
        res = checker.check(mops, fs, workdir=wd)
        if d.sig not in res.divs:        # flaky: keep the original script's evidence
            res = checker.check(orig_ops, fs, workdir=wd)
        # a formatter under test that failed made no volume (vfz.check.formatted.format_failed)
        images = {f"before-{fs}.img": checker.pristine_image(fs)} if fs in checker.pristine else {}
        for w, p in res.images.items():
            images[f"after-{w}.img"] = p
        summary = finding_summary(d, mops, fs, extra.get("flaky"))
        info = {"signature": d.sig, "fields": d.fields, "summary": summary,
                "writer": d.writer, "fs": fs, "fs_spec": FS_SPECS.get(fs, fs),
                # the drawn volume's formatter command, as run (replay asks the spec's formatter
                # for the same volume: the same command)
                "fs_argv": checker.format_argv.get(FS_SPECS.get(fs, fs)),
                "writer_seeds": {n: w.seed for n, w in checker.writers if getattr(w, "seed", None) is not None},
                "transformers": [n for n, _ in checker.transformers],
                "ops_orig": len(orig_ops), "ops_min": len(mops), "detail": d.detail[:4000],
                "verdicts": res.verdicts, "details": {w: {o: t[:4000] for o, t in v.items()}
                                                      for w, v in res.details.items()},
                "also": sorted({findings.sig_text(x.fields) for x in res.divs.values()
                                if x.sig != d.sig}), **extra}
        return findings.write_finding(workdir, d.sig, info,
                                      {"ops.txt": opscript.dump(mops), "ops.orig.txt": opscript.dump(orig_ops)},
                                      images, res.raws)
    finally:
        shutil.rmtree(wd, ignore_errors=True)
