"""Merging campaign workdirs (the shards of `campaign --shard I/N`) into one.

  findings/  every complete finding of every shard, one per signature (the
             directory name): where shards filed the same one, the one with
             the fewest ops (then the first shard given) is kept;
  pending/   divergences a shard journalled but had not minimised (killed),
             unless some shard filed them: a campaign on the merged
             workdir minimises them first;
  corpus/    the shards' fuzz_ops corpora merged by libFuzzer itself
             (`fuzz_ops -merge=1 OUT/corpus SHARD/corpus...`: only inputs
             that add coverage are kept);
  crashes/   the union of the crash files (named by content);
  harvested.txt  the union (corpus entries are named by content too);
  summary.json   per shard (scripts, images, findings, seconds, its pipeline
             pace and states census) and the
             merged totals; which shards filed each finding.
"""
import json
import os
import shutil

from vfz import findings
from vfz.errors import UsageError
from vfz.proc import run


def finding_dirs(workdir):
    """{signature: path} of the complete findings in a workdir."""
    root = findings.findings_dir(workdir)
    out = {}
    if not os.path.isdir(root):
        return out
    for n in sorted(os.listdir(root)):
        p = os.path.join(root, n)
        if n.startswith(".") or not os.path.isdir(p):
            continue
        if findings.well_formed(p) == "":
            out[n] = p
    return out


def _ops_min(path):
    try:
        return int(findings.load_finding(path).get("ops_min", 1 << 30))
    except (ValueError, OSError, TypeError):
        return 1 << 30


def _copytree(src, dst):
    tmp = dst + ".tmp-merge"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp)
    os.rename(tmp, dst)


def merge(dirs, out, fuzz_bin=None, timeout=600.0, corpora=True):
    """Merge the workdirs dirs into out (created). corpora=False leaves the
    corpora alone. -> the summary dict (also out/summary.json)."""
    for d in dirs:
        if not os.path.isdir(d):
            raise UsageError(f"{d}: no such campaign workdir")
    os.makedirs(out, exist_ok=True)
    summ = {"shards": [], "findings": {}, "pending": [], "corpus": None, "crashes": 0}
    # findings: one per signature
    best = {}                                   # sig -> (ops_min, index, path)
    for i, d in enumerate(dirs):
        for sig, p in finding_dirs(d).items():
            summ["findings"].setdefault(sig, []).append(d)
            k = (_ops_min(p), i)
            if sig not in best or k < best[sig][:2]:
                best[sig] = (k[0], i, p)
    fdir = findings.findings_dir(out)
    os.makedirs(fdir, exist_ok=True)
    findings.clean_temp(out)
    for sig, (_, _, p) in sorted(best.items()):
        dst = os.path.join(fdir, sig)
        if os.path.abspath(p) == os.path.abspath(dst):
            continue
        if os.path.isdir(dst):
            if findings.well_formed(dst) == "" and _ops_min(dst) <= _ops_min(p):
                continue
            shutil.rmtree(dst)
        _copytree(p, dst)
    # pending journal entries nobody filed
    pdir = os.path.join(out, "pending")
    for d in dirs:
        src = os.path.join(d, "pending")
        if not os.path.isdir(src):
            continue
        for n in sorted(os.listdir(src)):
            if n.startswith(".") or not n.endswith(".json") or n[:-5] in best:
                continue
            os.makedirs(pdir, exist_ok=True)
            if os.path.abspath(src) != os.path.abspath(pdir):
                shutil.copyfile(os.path.join(src, n), os.path.join(pdir, n))
            if n[:-5] not in summ["pending"]:
                summ["pending"].append(n[:-5])
    # crash files and the harvested list: unions (both named by content)
    cdir = os.path.join(out, "crashes")
    for d in dirs:
        src = os.path.join(d, "crashes")
        if os.path.isdir(src) and os.path.abspath(src) != os.path.abspath(cdir):
            os.makedirs(cdir, exist_ok=True)
            for n in os.listdir(src):
                if not n.startswith(".") and not os.path.exists(os.path.join(cdir, n)):
                    shutil.copyfile(os.path.join(src, n), os.path.join(cdir, n))
    if os.path.isdir(cdir):
        summ["crashes"] = len([n for n in os.listdir(cdir) if not n.startswith(".")])
    seen = set()
    for d in dirs:
        try:
            with open(os.path.join(d, "harvested.txt")) as f:
                seen |= {ln.strip() for ln in f if ln.strip()}
        except OSError:
            pass
    if seen:
        with open(os.path.join(out, "harvested.txt"), "w") as f:
            f.writelines(n + "\n" for n in sorted(seen))
    # corpora: libFuzzer's own merge
    cps = [os.path.join(d, "corpus") for d in dirs
           if os.path.isdir(os.path.join(d, "corpus"))
           and os.path.abspath(os.path.join(d, "corpus")) != os.path.abspath(os.path.join(out, "corpus"))]
    if corpora and cps:
        summ["corpus"] = merge_corpora(cps, os.path.join(out, "corpus"), fuzz_bin, timeout)
    # per-shard summaries
    tot = {"scripts": 0, "seconds": 0.0, "readers": {}, "writers": {}}
    for d in dirs:
        s = {}
        try:
            with open(os.path.join(d, "summary.json")) as f:
                s = json.load(f)
        except (OSError, ValueError):
            pass
        summ["shards"].append({"workdir": d, "shard": s.get("shard"), "seed": s.get("seed"),
                               "scripts": s.get("scripts"), "seconds": s.get("seconds"),
                               "findings": len(finding_dirs(d)),
                               "new_findings": s.get("new_findings", []),
                               # what the report shows per shard (vfz/report)
                               "pipeline": s.get("pipeline"), "census": s.get("census")})
        tot["scripts"] += s.get("scripts") or 0
        tot["seconds"] += s.get("seconds") or 0.0
        for role in ("readers", "writers"):
            for n, v in (s.get(role) or {}).items():
                tot[role][n] = tot[role].get(n, 0) + v
    summ["total"] = tot
    summ["total_findings"] = len(best)
    tmp = os.path.join(out, ".summary.json.merge")
    with open(tmp, "w") as f:
        json.dump(summ, f, indent=1)
    os.replace(tmp, os.path.join(out, "summary.json"))
    return summ


def merge_corpora(corpora, dst, fuzz_bin, timeout):
    """libFuzzer -merge=1 of corpora into dst -> {"inputs": [n per corpus], "kept": n}."""
    from vfz.campaign.fuzzer import fuzz_ops_binary
    b = fuzz_bin or fuzz_ops_binary()
    if not b:
        raise UsageError("build-fuzz/fuzz/fuzz_ops is not built (`vfatfuzz setup` builds it); "
                         "the corpora are merged by libFuzzer (--no-corpus skips them)")
    os.makedirs(dst, exist_ok=True)

    def count(d):
        return len([n for n in os.listdir(d) if not n.startswith(".")])
    before = [count(c) for c in corpora]
    ctl = dst.rstrip("/") + ".merge-control"
    p = run([b, "-merge=1", f"-merge_control_file={ctl}", dst, *corpora], timeout=timeout)
    try:
        os.unlink(ctl)
    except OSError:
        pass
    if p.rc != 0:
        raise UsageError(f"fuzz_ops -merge=1 failed (exit {p.rc}): "
                         f"{(p.errtext or p.error or '').strip().splitlines()[-1:]}")
    return {"inputs": before, "kept": count(dst)}
