"""The report's index page: headline figures, the findings table (new first), the states census and geometry as heat maps, pace beside its bound, coverage per file, trends; and OUT/summary.json for a later run's history.

build(run, out, entries, cov) -> the "report" dict also written into
OUT/summary.json (the workdir's summary with "report": date, label, kind,
findings, new, total_findings, corpus, coverage, pace).
"""
import json
import os
import shutil
import time

from vfz.report import charts, findpage, history
from vfz.report.html import bar, card, esc, heat_table, link, page, pct, table, write

COPY_LIMIT = 4 << 20


def copy_repro(src, out):
    """Copy an exported reproducer's files (small ones) under OUT/repro/NAME
    -> the href of its README.md (or run.sh), relative to OUT."""
    name = os.path.basename(src.rstrip("/"))
    if name == "export":
        name = os.path.basename(os.path.dirname(src.rstrip("/"))) + "-export"
    dst = os.path.join(out, "repro", name)
    if not os.path.isdir(dst):
        os.makedirs(dst)
        for n in sorted(os.listdir(src)):
            p = os.path.join(src, n)
            if os.path.isfile(p) and os.path.getsize(p) <= COPY_LIMIT:
                shutil.copy2(p, dst)
    for n in ("README.md", "run.sh"):
        if os.path.isfile(os.path.join(dst, n)):
            return f"repro/{name}/{n}"
    return None


def findings_section(run, status, out):
    from vfz.report import workdir
    rows = []
    for f in history.ordered(run, status):
        rp = workdir.reproducer(f)
        rhref = copy_repro(rp, out) if rp else None
        href = findpage.write(f, status[f["id"]], out, "../../" + rhref if rhref else None)
        base = os.path.dirname(href)
        script = link(f"{base}/ops.txt", f"{f.get('ops_min') or ''} ops".strip()) \
            if os.path.isfile(os.path.join(out, base, "ops.txt")) else "-"
        verdicts = ", ".join(f"{w}/{r}={v}" for w, vs in f["verdicts"].items() for r, v in vs.items()
                             if v != "ok") or esc(f["verdict"])
        rows.append([f'<span class="tag {status[f["id"]]}">{esc(status[f["id"]])}</span>',
                     link(href, f["id"]), esc(f["oracle"]), esc(f["kind"]),
                     esc(f["writer"] or "-"), script, esc(verdicts),
                     f"<code>{esc(f['exception'])}</code>" if f["exception"] else
                     "peer bug in reports/hostile/" if f.get("catalogued") else "unexplained",
                     link(rhref, "run.sh" if rhref.endswith("run.sh") else "reproducer") if rhref else "-"])
    if not rows:
        return "<h2>Findings</h2><p>None.</p>"
    return ("<h2>Findings</h2><p class=\"muted\">New: not seen in an earlier run (the history's, else the "
            "run's own list) and not explained by a named exception; catalogued: a named exception "
            "or a peer bug already in reports/.</p>"
            + table(["status", "finding", "oracle", "kind", "writer", "script", "verdicts not ok",
                     "explained by", "reproducer"], rows, cls="findings"))


def census_section(run):
    rows = run["census"]
    if not rows:
        return ""
    states = []
    for r in rows:
        states += [s for s in r.get("reached", {}) if s not in states]
    cols = [f"{r['fs']} {r['source']} ({r['scripts']})" for r in rows]
    body = [(st, [(f"{r['reached'].get(st, 0)}", r["reached"].get(st, 0) / r["scripts"] if r["scripts"] else 0.0,
                   f"{r['reached'].get(st, 0)} of {r['scripts']} scripts") for r in rows]) for st in states]
    return ("<h2>States reached</h2><p class=\"muted\">Scripts that reached each state, per volume and "
            "source (scripts in brackets); the shade is the share of that column's scripts.</p>"
            + heat_table("state", cols, body))


def _grid(geo):
    """A geometry table (summary["geometry"]) as (corner, columns, rows):
    {row: {col: n}}, or [{...labels, "reached"|"counts": {col: n}}]."""
    if isinstance(geo, dict) and all(isinstance(v, dict) for v in geo.values()):
        items = list(geo.items())
    elif isinstance(geo, list) and all(isinstance(r, dict) for r in geo):
        items = []
        for r in geo:
            vals = next((v for v in r.values() if isinstance(v, dict)), {})
            items.append((" ".join(str(v) for v in r.values() if not isinstance(v, (dict, list))), vals))
    else:
        return None
    cols = []
    for _, vals in items:
        cols += [c for c in vals if c not in cols]
    return cols, items


def geometry_section(run):
    geo = run["geometry"]
    if geo is None:
        return ("<h2>Geometry</h2><p class=\"muted\">This run's summary has no geometry table "
                "(summary.json key <code>geometry</code>).</p>") if run["kind"] != "hostile" else ""
    g = _grid(geo)
    if not g:
        return f"<h2>Geometry</h2><pre>{esc(json.dumps(geo, indent=1)[:4000])}</pre>"
    cols, items = g
    nums = [v for _, vals in items for v in vals.values() if isinstance(v, (int, float))]
    top = max(nums) if nums else 0
    body = [(str(k), [(str(vals.get(c, "")), (vals.get(c) or 0) / top if top and isinstance(vals.get(c), (int, float))
                       else 0.0, f"{k} {c}") for c in cols]) for k, vals in items]
    return "<h2>Geometry</h2>" + heat_table("geometry", [str(c) for c in cols], body)


def pace_section(run, out):
    rows = run["pace"]
    if not rows:
        return ""
    img = charts.pace(rows, os.path.join(out, "img", "pace.png"))
    trs = [[esc(r["oracle"]), esc(r["shard"] if r["shard"] is not None else "-"), f"{r['pace']:.1f}",
            f"{r['bound']:.1f}" if r["bound"] else "-",
            bar(r["pace"] / r["bound"], f"{r['pace'] / r['bound']:.2f}") if r["bound"] else "-"] for r in rows]
    what = "images per minute beside the bound (the oracles' own CPU time over the cores, vfz/campaign/pace.py)" \
        if any(r["bound"] for r in rows) else "images per minute (a hostile run measures no bound)"
    return ("<h2>Pace</h2><p class=\"muted\">" + esc(what) + "</p>"
            + ('<img class="chart" src="img/pace.png" alt="pace per oracle">' if img else "")
            + table(["oracle", "shard", "pace", "bound", "pace / bound"], trs, num=(2, 3)))


def coverage_section(cov, err):
    if cov is None:
        return ("<h2>Core coverage</h2><p class=\"muted\">" +
                (esc(err) if err else "Not measured (run with <code>--coverage</code>).") + "</p>")
    rows = []
    for f in cov["files"]:
        lc, ln = f["lines"]
        bc, bn = f["branches"]
        name = link(f["href"], f["file"]) if f["href"] else esc(f["file"])
        rows.append([name, bar(lc / ln if ln else 0, f"{100.0 * lc / ln:.1f} %" if ln else "-"), f"{lc}/{ln}",
                     bar(bc / bn if bn else 0, f"{100.0 * bc / bn:.1f} %" if bn else "-"), f"{bc}/{bn}"])
    return (f"<h2>Core coverage</h2><p>Lines {pct(cov['line'])}, branches {pct(cov['branch'])}, functions "
            f"{pct(cov['function'])} ({link('coverage/index.html', 'llvm-cov report')}); corpora: "
            f"<code>{esc(' '.join(cov['corpus_dirs']))}</code></p>"
            + table(["file", "lines", "", "branches", ""], rows, num=(2, 4)))


def trends_section(series, out):
    if len(series) < 2:
        return ""
    ok = charts.trends(series, os.path.join(out, "img", "trends.png"))
    rows = [[esc(lab), str(m["findings"] if m["findings"] is not None else "-"), str(m["new"]),
             str(m["corpus"] if m["corpus"] is not None else "-"), pct(m["line"]), pct(m["branch"]),
             esc(", ".join(f"{k} {v:.0f}" for k, v in sorted(m["pace"].items())))] for lab, m in series]
    return ("<h2>Trends</h2>" + ('<img class="chart" src="img/trends.png" alt="trends">' if ok else "")
            + table(["run", "findings", "new", "corpus", "lines", "branches", "pace / min"], rows, num=(1, 2, 3)))


def headline(run, status, cov):
    s = run["summary"]
    cards = [card(len(run["findings"]), "findings"),
             card(sum(1 for v in status.values() if v == "new"), "new")]
    if run["kind"] == "hostile":
        cards.append(card(sum(r.get("images", 0) for r in (s.get("readers") or {}).values()), "volumes read"))
        cards.append(card(f"{(s.get('wall_s') or 0) / 60:.1f} min", "wall time"))
    else:
        scripts = s.get("scripts") if run["kind"] == "campaign" else (s.get("total") or {}).get("scripts")
        secs = s.get("seconds") if run["kind"] == "campaign" else (s.get("total") or {}).get("seconds")
        cards.append(card(scripts if scripts is not None else "-", "scripts"))
        cards.append(card(f"{(secs or 0) / 60:.1f} min", "checking time" + (" (shards summed)"
                                                                            if run["kind"] == "merged" else "")))
    if run["corpus"] is not None:
        cards.append(card(run["corpus"], "corpus inputs"))
    if cov:
        cards.append(card(pct(cov["line"]), "core lines covered"))
        cards.append(card(pct(cov["branch"]), "core branches covered"))
    return '<div class="cards">' + "".join(cards) + "</div>"


def report_entry(run, status, cov):
    pace = {}
    for r in run["pace"]:
        pace[r["oracle"]] = round(pace.get(r["oracle"], 0.0) + r["pace"], 1)
    return {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "label": os.environ.get("VFZ_REPORT_LABEL")
            or time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "kind": run["kind"],
            "findings": sorted(status), "new": sorted(i for i, v in status.items() if v == "new"),
            "total_findings": len(status), "corpus": run["corpus"], "pace": pace,
            "coverage": {k: cov[k] for k in ("line", "branch", "function")} if cov else None}


def build(run, out, entries, cov=None, cov_err=None):
    os.makedirs(out, exist_ok=True)
    status = history.statuses(run, entries)
    rep = report_entry(run, status, cov)
    cur = history.metrics({"report": dict(rep, new=len(rep["new"]))})
    s = run["summary"]
    what = {"campaign": "campaign", "merged": f"merged night ({len(s.get('shards', []))} workdirs)",
            "hostile": "hostile-volume run"}[run["kind"]]
    seed = s.get("seed")
    sub = f"{what} {run['path']}" + (f", seed {seed}" if seed is not None else "") + f"; report of {rep['date']}"
    body = [headline(run, status, cov), findings_section(run, status, out), census_section(run),
            geometry_section(run), pace_section(run, out), coverage_section(cov, cov_err),
            trends_section(history.trends(entries, cur), out)]
    if run["kind"] == "hostile" and s.get("seeds"):
        body.append(f"<h2>Seed volumes</h2><p>{esc(', '.join(s['seeds'][:60]))}</p>")
    write(os.path.join(out, "index.html"), page("vfatfuzz report", sub, "\n".join(b for b in body if b)))
    entry = dict(s, report=dict(rep, new=len(rep["new"]), new_ids=rep["new"]))
    write(os.path.join(out, "summary.json"), json.dumps(entry, indent=1) + "\n")
    return entry
