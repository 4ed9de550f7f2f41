"""The mutation report: a run's JSON lines (load_rows) as a score table per file and as Markdown (render).

One JSON line per mutant (vfz.selftest.mutants writes them); a later line
of the same mutant (a rerun) supersedes the earlier ones.
"""
import json
import os
from collections import Counter, OrderedDict


def load_rows(path):
    rows = []
    if path and os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            for ln in f:
                ln = ln.strip()
                if ln:
                    rows.append(json.loads(ln))
    return rows



def latest(rows):
    """The last row per mutant id (a rerun supersedes)."""
    d = OrderedDict()
    for r in rows:
        d[r["id"]] = r
    return list(d.values())


def score_table(rows, budget=None):
    rows = [r for r in latest(rows) if r["status"] not in ("nocompile", "error")]
    per = OrderedDict()
    for r in rows:
        per.setdefault(r["file"], Counter())[r["status"]] += 1
    lines = ["| file | mutants | equivalent (TCE) | killed | survived | unconfirmed kill | score |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    tot = Counter()
    for f, c in list(per.items()) + [("all", None)]:
        if c is None:
            c = tot
        else:
            tot.update(c)
        n = sum(c.values())
        live = n - c["equivalent"]
        sc = f"{100.0 * c['killed'] / live:.0f} %" if live else "-"
        lines.append(f"| {f} | {n} | {c['equivalent']} | {c['killed']} | {c['survived']} | "
                     f"{c['unconfirmed']} | {sc} |")
    return "\n".join(lines)


def _cell(x):
    return str(x).replace("|", "\\|").replace("\n", " ")


def render(rows, title="Mutation score of the core"):
    """Markdown: score per file, kills by oracle, killed, survivors with diffs."""
    rows = latest(rows)
    comp = [r for r in rows if r["status"] != "nocompile"]
    killed = [r for r in comp if r["status"] == "killed"]
    surv = [r for r in comp if r["status"] in ("survived", "unconfirmed")]
    eq = [r for r in comp if r["status"] == "equivalent"]
    out = [f"## {title}", ""]
    seeds = sorted({r.get("seed") for r in rows})
    budgets = sorted({r.get("budget") for r in comp})
    readers = sorted({",".join(r.get("readers") or []) for r in comp})
    out.append(f"Seed {', '.join(map(str, seeds))}; budget {', '.join(map(str, budgets))} s per mutant; "
               f"core at git {', '.join(sorted({r.get('git', '?') for r in rows}))}; readers "
               f"{'; '.join(readers)}; {len(comp)} compiled mutants, "
               f"{len(rows) - len(comp)} did not compile (skipped).")
    out += ["", score_table(rows), ""]
    ops = Counter(r["op"] for r in comp)
    kops = Counter(r["op"] for r in killed)
    out.append("Per operator (killed/compiled): " + ", ".join(f"{o} {kops[o]}/{ops[o]}" for o in sorted(ops)))
    by = Counter(r.get("oracle") for r in killed)
    out.append("Killed by: " + ", ".join(f"{o} {n}" for o, n in by.most_common()))
    if killed:
        secs = sorted(r["seconds"] for r in killed)
        out.append(f"Seconds to the kill: median {secs[len(secs) // 2]}, max {secs[-1]}; minimised ops: "
                   f"median {sorted(r['ops'] or 0 for r in killed)[len(killed) // 2]}")
    out += ["", "### Killed", "", "| mutant | change | oracle | s | scripts | min ops | signature |",
            "|---|---|---|---:|---:|---:|---|"]
    for r in killed:
        out.append(f"| {r['id']} | {_cell(r['old'].strip()[:30])} → {_cell(r['new'].strip()[:30])} | "
                   f"{r['oracle']} | {r['seconds']} | {r.get('scripts')} | {r['ops']} | "
                   f"{_cell((r.get('signature') or '')[:110])} |")
    out += ["", "### Survivors", ""]
    for r in surv:
        out.append(f"- **{r['id']}** ({r['status']}{'; ' + r['note'] if r.get('note') else ''}; "
                   f"{r.get('scripts')} scripts"
                   + (f"; unit suites: {r['unit']}" if "unit" in r else "") + ")")
        out.append("")
        out.append("  ```diff")
        out += ["  " + ln for ln in r["diff"].splitlines()]
        out.append("  ```")
    if eq:
        out += ["", "### Equivalent by construction (same machine code)", ""]
        out += [f"- {r['id']}: {_cell(r['old'].strip())} → {_cell(r['new'].strip())}" for r in eq]
    return "\n".join(out) + "\n"
