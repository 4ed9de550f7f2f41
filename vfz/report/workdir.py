"""Read a workdir -- a campaign's, a merged night's (`vfatfuzz merge`) or a hostile run's -- into plain data for the report.

load(path) -> dict:
    kind       "campaign" | "merged" | "hostile"
    path       the workdir
    summary    summary.json (campaign, merged) or stats.json (hostile), or {}
    findings   [finding dicts] (below), sorted by id
    census     [{"fs", "source", "scripts", "reached": {state: n}}] (a merged
               night: the shards' summed), or []
    geometry   summary["geometry"] when the summary has one, else None
    pace       [{"oracle", "shard", "pace", "bound"}] images per minute
               (bound None where the run measured none: a hostile run)
    corpus     number of inputs in <workdir>/corpus, or None
    new_ids    ids the run itself calls new (campaign: new_findings; merged:
               its shards'), or None where it says nothing (hostile)

A finding dict: id (the directory name), dir, role ("campaign" or
"hostile"), summary (one line), oracle, kind, verdict, writer, fs, ops
(text of the minimised script, or None), verdicts ({writer: {oracle:
verdict}}), details ({writer: {oracle: text}}), detail (the one that made
the finding), exception (its named exception, or None), flaky, files (the
names in the directory worth linking) and the hostile fields (message,
evidence, patches, diff text).
"""
import json
import os

from vfz import REPO, findings

LINKED = ("ops.txt", "ops.orig.txt", "summary.txt", "finding.json", "diff.txt", "output.txt",
          "README.md", "crash.bin", "crash.min.bin")


def _json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _text(path, limit=200000):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(limit)
    except OSError:
        return None


def kind_of(path):
    """campaign | merged | hostile, or None for a directory that is none of them."""
    if os.path.isfile(os.path.join(path, "stats.json")):
        return "hostile"
    s = _json(os.path.join(path, "summary.json"))
    if isinstance(s, dict) and "shards" in s:
        return "merged"
    if s is not None or os.path.isdir(os.path.join(path, "findings")) or \
            os.path.isfile(os.path.join(path, "state.json")):
        return "campaign"
    return None


def exception_names():
    """Every named exception of the oracle registry (vfz.oracles) and of vfz.model."""
    from vfz import model, oracles
    return {x.name for x in oracles.exceptions()} | {x.name for x in getattr(model, "EXCEPTIONS", [])}


def _files(d):
    out = [n for n in LINKED if os.path.isfile(os.path.join(d, n))]
    raw = os.path.join(d, "raw")
    if os.path.isdir(raw):
        out += ["raw/" + n for n in sorted(os.listdir(raw)) if not n.startswith(".")]
    return out


def campaign_finding(d, names):
    info = findings.load_finding(d)
    f = info.get("fields", {})
    kind = f.get("kind", "")
    writer = info.get("writer")
    details = info.get("details") or {}
    return {"id": info.get("signature") or os.path.basename(d), "dir": d, "role": "campaign",
            "summary": info.get("summary", ""), "fields": f, "oracle": f.get("oracle"), "kind": kind,
            "verdict": f.get("verdict"), "side": f.get("role"), "writer": writer, "fs": info.get("fs"),
            "ops": _text(os.path.join(d, "ops.txt")), "verdicts": info.get("verdicts") or {},
            "details": details, "detail": info.get("detail", ""),
            "exception": kind if kind in names else None,
            "flaky": bool(info.get("flaky")), "ops_min": info.get("ops_min"),
            "ops_orig": info.get("ops_orig"), "files": _files(d)}


def hostile_finding(d, names):
    info = _json(os.path.join(d, "finding.json")) or {}
    kind = info.get("kind", "")
    return {"id": os.path.basename(d), "dir": d, "role": "hostile",
            "summary": f"{info.get('reader')} {kind}: {info.get('message', '')}",
            "fields": {"oracle": info.get("reader"), "kind": kind}, "oracle": info.get("reader"),
            "kind": kind, "verdict": kind, "side": info.get("role", "reader"), "writer": None, "fs": None,
            "ops": info.get("ops"), "verdicts": {}, "details": {}, "detail": info.get("evidence", ""),
            "exception": kind if kind in names else None, "flaky": bool(info.get("flaky")),
            "message": info.get("message", ""), "signature": info.get("signature"),
            "patches": info.get("patches") or [], "seed_image": info.get("seed_image"),
            "mutators": info.get("mutators") or [], "diff": _text(os.path.join(d, "diff.txt")),
            "output": _text(os.path.join(d, "output.txt"), 20000), "files": _files(d),
            # the repository already holds it: a catalogued peer bug (reports/bugs.md)
            "catalogued": _catalogued(os.path.basename(d), info.get("signature"))}


def _catalogued(name, signature):
    """A hostile finding reports/hostile/ holds: by its directory name, or by its signature
    (a finding re-signed with --resign keeps its old directory name, so a run files the same
    signature under another hash), in reports/hostile/ or its instances/ and unexported/."""
    names, sigs = _hostile_catalogue()
    return name in names or (signature is not None and signature in sigs)


_CATALOGUE = []


def _hostile_catalogue():
    """-> ({directory names}, {signatures}) of reports/hostile/ and its subdirectories, read once."""
    if not _CATALOGUE:
        root = os.path.join(REPO, "reports", "hostile")
        dirs = [os.path.join(root, n) for n in _listdir(root)]
        dirs += [os.path.join(d, n) for d in dirs if not os.path.isfile(os.path.join(d, "finding.json"))
                 for n in _listdir(d)]
        found = [d for d in dirs if os.path.isfile(os.path.join(d, "finding.json"))]
        sigs = {(_json(os.path.join(d, "finding.json")) or {}).get("signature") for d in found}
        _CATALOGUE.append(({os.path.basename(d) for d in found}, sigs - {None}))
    return _CATALOGUE[0]


def _listdir(d):
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def load_findings(path, kind):
    root = os.path.join(path, "findings")
    if not os.path.isdir(root):
        return []
    names = exception_names()
    out = []
    for n in sorted(os.listdir(root)):
        d = os.path.join(root, n)
        if n.startswith(".") or not os.path.isdir(d):
            continue
        if kind == "hostile":
            if os.path.isfile(os.path.join(d, "finding.json")):
                out.append(hostile_finding(d, names))
        elif findings.well_formed(d) == "":
            out.append(campaign_finding(d, names))
    return out


def census_of(summary, kind):
    """The states census; a merged night's is its shards' summed per (fs, source)."""
    if kind != "merged":
        return list(summary.get("census") or [])
    tot = {}
    for sh in summary.get("shards", []):
        for row in sh.get("census") or []:
            key = (row["fs"], row["source"])
            t = tot.setdefault(key, {"fs": row["fs"], "source": row["source"], "scripts": 0, "reached": {}})
            t["scripts"] += row.get("scripts", 0)
            for st, n in row.get("reached", {}).items():
                t["reached"][st] = t["reached"].get(st, 0) + n
    return [tot[k] for k in sorted(tot)]


def pace_of(summary, kind):
    out = []
    if kind == "hostile":
        for r, st in sorted((summary.get("readers") or {}).items()):
            wall = summary.get("wall_s") or 0
            out.append({"oracle": r, "shard": None, "bound": None,
                        "pace": round(st.get("images", 0) * 60.0 / wall, 1) if wall else 0.0})
        return out
    pipes = [(None, summary.get("pipeline"))] if kind == "campaign" else \
        [(_shard(sh), sh.get("pipeline")) for sh in summary.get("shards", [])]
    for shard, p in pipes:
        if not p:
            continue
        for r in sorted(p.get("pace", {})):
            out.append({"oracle": r, "shard": shard, "pace": p["pace"][r], "bound": p.get("bound", {}).get(r)})
    return out


def _shard(sh):
    """A shard's name: I/N (campaign --shard), else its workdir's name."""
    s = sh.get("shard")
    if isinstance(s, list) and len(s) == 2:
        return f"{s[0]}/{s[1]}"
    return os.path.basename(str(sh.get("workdir", "")).rstrip("/")) or "?"


def corpus_size(path):
    d = os.path.join(path, "corpus")
    if not os.path.isdir(d):
        return None
    return len([n for n in os.listdir(d) if not n.startswith(".")])


def new_ids(summary, kind):
    if kind == "campaign":
        return set(summary.get("new_findings") or [])
    if kind == "merged":
        return {h for sh in summary.get("shards", []) for h in sh.get("new_findings") or []}
    return None


def load(path):
    kind = kind_of(path)
    if kind is None:
        raise ValueError(f"{path}: not a campaign, merged or hostile workdir "
                         "(no summary.json, stats.json, state.json or findings/)")
    summ = _json(os.path.join(path, "stats.json" if kind == "hostile" else "summary.json")) or {}
    return {"kind": kind, "path": path, "summary": summ, "findings": load_findings(path, kind),
            "census": census_of(summ, kind), "geometry": summ.get("geometry"),
            "pace": pace_of(summ, kind), "corpus": corpus_size(path), "new_ids": new_ids(summ, kind)}


def reproducer(f):
    """The directory of the exported reproducer of a finding, or None: one
    written beside it (`vfatfuzz repro FINDING --export FINDING/export`),
    else the catalogued one (reports/bugs/NAME) of the peer bug whose case
    (corpus/peer-bugs/NAME/bug.json) names this finding's named exception
    (same implementation family) or this hostile finding."""
    own = os.path.join(f["dir"], "export")
    if os.path.isfile(os.path.join(own, "run.sh")):
        return own
    cases = os.path.join(REPO, "corpus", "peer-bugs")
    if not os.path.isdir(cases):
        return None
    for n in sorted(os.listdir(cases)):
        spec = _json(os.path.join(cases, n, "bug.json"))
        if not isinstance(spec, dict):
            continue
        hit = (f["role"] == "hostile" and os.path.basename(spec.get("hostile") or "") == f["id"]) or \
              (f["exception"] and spec.get("kind") == f["exception"] and
               _family(f["oracle"]) in (spec.get("impl"), _family(spec.get("impl"))))
        if hit and os.path.isfile(os.path.join(REPO, "reports", "bugs", n, "run.sh")):
            return os.path.join(REPO, "reports", "bugs", n)
    return None


def _family(name):
    from vfz import oracles
    e = oracles.entries().get(name)
    return e.family if e else name
