"""Earlier runs' summaries (--history DIR): which of this run's findings are new, and the trends across runs.

A history entry is any *.json file in DIR holding a summary.json: the
campaign's, the merge's, or best the one the report writes (OUT/summary.json:
the workdir's summary with a "report" key: date, label, findings, corpus,
coverage), which the nightly keeps one of per night. Entries are ordered by
their report date, else by file name.

A finding is
    new         not seen in any earlier run of the history (with --history),
                or, without it, one the run itself calls new (a campaign's
                new_findings, a merged night's shards'; a hostile run: one
                not in the repository's reports/hostile/), and not explained
                by a named exception or a catalogued peer bug;
    catalogued  explained: its kind is a named exception (vfz.oracles,
                vfz.model), or a hostile finding the repository already holds
                (reports/hostile/NAME);
    known       seen before and still unexplained.
"""
import json
import os

ORDER = {"new": 0, "known": 1, "catalogued": 2}


def load(dirname):
    """-> [(label, summary dict)] of the history directory, oldest first."""
    if not dirname:
        return []
    if not os.path.isdir(dirname):
        raise ValueError(f"--history {dirname}: no such directory")
    out = []
    for n in sorted(os.listdir(dirname)):
        if not n.endswith(".json") or n.startswith("."):
            continue
        try:
            with open(os.path.join(dirname, n), encoding="utf-8") as f:
                s = json.load(f)
        except (OSError, ValueError):
            continue
        if not isinstance(s, dict):
            continue
        rep = s.get("report") or {}
        out.append((rep.get("label") or n[:-5], rep.get("date") or "", n, s))
    out.sort(key=lambda t: (t[1], t[2]))
    return [(label, s) for label, _, _, s in out]


def findings_of(summ):
    """Every finding id an entry knows of: the report's list, a merge's
    findings, a campaign's new ones."""
    ids = set((summ.get("report") or {}).get("findings") or [])
    ids |= set(summ.get("findings") or []) if isinstance(summ.get("findings"), (dict, list)) else set()
    ids |= set(summ.get("new_findings") or [])
    return ids


def statuses(run, entries):
    """{finding id: new | known | catalogued} (module docstring)."""
    seen = set()
    for _, s in entries:
        seen |= findings_of(s)
    out = {}
    for f in run["findings"]:
        if f["exception"] or f.get("catalogued"):
            out[f["id"]] = "catalogued"
        elif entries:
            out[f["id"]] = "known" if f["id"] in seen else "new"
        elif run["new_ids"] is not None:
            out[f["id"]] = "new" if f["id"] in run["new_ids"] else "known"
        else:
            out[f["id"]] = "new"
    return out


def ordered(run, status):
    """The findings, new first, then known, then catalogued; by id within."""
    return sorted(run["findings"], key=lambda f: (ORDER[status[f["id"]]], f["id"]))


def metrics(summ, run_kind=None):
    """The trend figures of one summary: findings, new, corpus, coverage
    (line and branch percent), pace per oracle (images per minute)."""
    rep = summ.get("report") or {}
    cov = rep.get("coverage") or {}
    pace = dict(rep.get("pace") or {})
    if not pace:
        pipe = summ.get("pipeline") or {}
        pace = dict(pipe.get("pace") or {})
        for sh in summ.get("shards") or []:
            for r, v in ((sh.get("pipeline") or {}).get("pace") or {}).items():
                pace[r] = pace.get(r, 0.0) + v      # a night's shards run side by side
    total = rep.get("total_findings", summ.get("total_findings"))
    new = rep.get("new")
    if new is None:
        new = len(summ.get("new_findings") or [])
    return {"findings": total, "new": new, "corpus": rep.get("corpus"),
            "line": cov.get("line"), "branch": cov.get("branch"), "pace": pace}


def trends(entries, current):
    """[(label, metrics)] of the history and then this run ("this run")."""
    return [(label, metrics(s)) for label, s in entries] + [("this run", current)]
