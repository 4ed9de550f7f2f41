"""The short Markdown digest of a report (a CI job summary): new findings, coverage, pace, and the change since the previous run."""
from vfz.report import history


def _delta(cur, prev, unit="", digits=1):
    if cur is None:
        return "-"
    s = f"{cur:.{digits}f}{unit}" if isinstance(cur, float) else f"{cur}{unit}"
    if prev is None:
        return s
    d = cur - prev
    return s + (f" ({d:+.{digits}f}{unit} since the previous run)" if isinstance(d, float)
                else f" ({d:+d} since the previous run)")


def markdown(run, entry, entries, page_name="index.html"):
    rep = entry["report"]
    prev = history.metrics(entries[-1][1]) if entries else {}
    new = [f for f in run["findings"] if f["id"] in set(rep["new_ids"])]
    out = [f"## vfatfuzz report: {run['kind']} {run['path']}", ""]
    out.append(f"**{len(run['findings'])} findings, {len(new)} new** "
               f"(new: not in an earlier run, not a named exception).")
    if new:
        out.append("")
        out.append("| finding | oracle | kind | writer | script |")
        out.append("|---|---|---|---|---|")
        for f in new[:30]:
            ops = (f["ops"] or "").strip().splitlines()
            first = ops[0][:60].replace("|", "\\|") if ops else ""
            out.append(f"| `{f['id']}` | {f['oracle']} | {str(f['kind'])[:60].replace('|', '/')} | "
                       f"{f['writer'] or '-'} | {len(ops)} ops: `{first}` |")
        if len(new) > 30:
            out.append(f"| ... {len(new) - 30} more | | | | |")
    out.append("")
    cov = rep.get("coverage")
    if cov:
        out.append(f"**Core coverage**: lines {_delta(cov['line'], prev.get('line'), ' %', 2)}, "
                   f"branches {_delta(cov['branch'], prev.get('branch'), ' %', 2)}.")
    else:
        out.append("**Core coverage**: not measured.")
    if rep.get("corpus") is not None:
        out.append("")
        out.append(f"**Corpus**: {_delta(rep['corpus'], prev.get('corpus'), ' inputs')}.")
    if run["pace"]:
        out.append("")
        out.append("| oracle | shard | pace (images/min) | bound | pace/bound |")
        out.append("|---|---|---:|---:|---:|")
        for r in run["pace"]:
            ratio = f"{r['pace'] / r['bound']:.2f}" if r["bound"] else "-"
            out.append(f"| {r['oracle']} | {r['shard'] if r['shard'] is not None else '-'} | {r['pace']:.0f} | "
                       f"{r['bound']:.0f} | {ratio} |" if r["bound"] else
                       f"| {r['oracle']} | {r['shard'] if r['shard'] is not None else '-'} | {r['pace']:.0f} | - | - |")
    if entries:
        out.append("")
        out.append(f"Trends over {len(entries) + 1} runs on the page ({page_name}).")
    return "\n".join(out) + "\n"
