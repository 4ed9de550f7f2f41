"""Verdicts: one oracle's answer held against the model's expectation, as structured data.

A reader's verdict is ok, differs (its listing is not the expected tree),
complains (a checker's complaints are not the expected ones) or failed (it
could not read). It carries a ListingDiff (missing, extra and changed
entries; names a reader cannot tell apart) and the complaint lines; it is
rendered as text only for people (Verdict.text()).

Named exceptions are the oracles' own (vfz.oracles: each oracle class's
hooks name_exception, result_exception, split_ambiguous, judge); the count
of each one applied goes into `used`.
"""
import json
from dataclasses import dataclass, field

from vfz import listing, oracles
from vfz.check import meta
from vfz.oracles import evidence


@dataclass
class ListingDiff:
    missing: list = field(default_factory=list)     # expected entries the reader does not show
    extra: list = field(default_factory=list)       # entries it shows that are not expected
    changed: list = field(default_factory=list)     # (expected, shown): one path, other fields
    ambiguous: list = field(default_factory=list)   # (sign, path, type) among names the reader
                                                    # cannot tell apart ('-' expected, '+' shown)
    ambiguous_counts: bool = False                  # such names, in other numbers than expected
    label: list = field(default_factory=list)       # (where: "boot" | "root", expected, shown)

    def __bool__(self):
        return bool(self.missing or self.extra or self.changed or self.ambiguous or self.ambiguous_counts
                    or self.label)

    def expected_side(self):
        """path -> expected entry, of every difference ('-' side)."""
        out = {e["path"]: e for e in self.missing}
        out.update({a["path"]: a for a, _ in self.changed})
        return out

    def shown_side(self):
        """path -> shown entry, of every difference ('+' side)."""
        out = {e["path"]: e for e in self.extra}
        out.update({b["path"]: b for _, b in self.changed})
        return out

    def kind(self):
        """(kind, a representative path) of the difference: 'changed:KEYS'
        (an entry shown with other fields), 'renamed' (missing and extra
        entries), 'missing', 'extra', or 'other' (only ambiguous names)."""
        if self.changed:
            a, b = min(self.changed, key=lambda x: x[0]["path"])
            keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            return "changed:" + ",".join(keys), a["path"]
        miss = sorted(e["path"] for e in self.missing)
        extra = sorted(e["path"] for e in self.extra)
        if miss and extra:
            return "renamed", miss[0]
        if miss:
            return "missing", miss[0]
        if extra:
            return "extra", extra[0]
        if self.label:
            return "label:" + ",".join(w for w, _, _ in self.label), None
        return "other", None

    def lines(self):
        out = []
        rows = [(e["path"], e, None) for e in self.missing] + [(e["path"], None, e) for e in self.extra] \
            + [(a["path"], a, b) for a, b in self.changed]
        for _, a, b in sorted(rows, key=lambda r: r[0]):
            if a is not None:
                out.append(f"- {listing.dumps_entry(a)}")
            if b is not None:
                out.append(f"+ {listing.dumps_entry(b)}")
        for sign, p, t in self.ambiguous:
            out.append(f"{sign} {json.dumps({'path': p, 'type': t}, ensure_ascii=False)} "
                       f"(ambiguous for mtools)")
        if self.ambiguous_counts and not self.ambiguous:
            out.append("ambiguous names: counts differ")
        for where, e, a in self.label:
            out.append(f"label ({where}): expected {json.dumps(e)}, shown {json.dumps(a)}")
        return out


def listing_diff(expected, actual, keys=listing.KEYS):
    """ListingDiff of two listings on the canonical keys (and the meta keys
    given in keys)."""
    exp = {e["path"]: {k: e[k] for k in keys if k in e} for e in expected}
    act = {e["path"]: {k: e[k] for k in keys if k in e} for e in actual}
    d = ListingDiff()
    for p in sorted(set(exp) | set(act)):
        a, b = exp.get(p), act.get(p)
        if a == b:
            continue
        if b is None:
            d.missing.append(a)
        elif a is None:
            d.extra.append(b)
        else:
            d.changed.append((a, b))
    return d


@dataclass
class Verdict:
    verdict: str                                    # ok | differs | complains | failed
    diff: ListingDiff = None
    lines: list = field(default_factory=list)       # complaint and judgement lines
    error: str = None

    def text(self):
        if self.error is not None:
            return self.error
        parts = []
        if self.diff:
            parts.append("\n".join(self.diff.lines()))
        return "\n".join(parts + self.lines)


def _components_map(exp_entries, act_entries, hooks, used):
    """Rewrite shown paths to the expected spelling where a named exception
    of one of the hooks (oracle classes) explains the difference, component
    by component."""
    exp_paths = {e["path"] for e in exp_entries}
    by_parent = {}
    for p in exp_paths:
        par, _, leaf = p.rpartition("/")
        by_parent.setdefault(par, []).append(leaf)
    out = []
    for e in act_entries:
        comps = e["path"].split("/")[1:]
        fixed = ""
        for c in comps:
            cand = fixed + "/" + c
            if cand not in exp_paths:
                for leaf in by_parent.get(fixed, []):
                    ex = None
                    if leaf != c:
                        for h in hooks:
                            ex = h.name_exception(leaf, c)
                            if ex:
                                break
                    if ex:
                        used[ex] += 1
                        cand = fixed + "/" + leaf
                        break
            fixed = cand
        e2 = dict(e)
        e2["path"] = fixed
        out.append(e2)
    return out


def compare_listing(expected, actual, reader_cls, writer_cls, used):
    """ListingDiff of a reader's listing against the expected entries, after
    the reader's and the writer's named exceptions (classes' hooks)."""
    hooks = [h for h in (reader_cls, writer_cls) if h is not None]
    amb = None
    if reader_cls is not None:
        expected, actual, amb = reader_cls.split_ambiguous(expected, actual, used)
    fixed = _components_map(expected, actual, hooks, used)
    # the fields this reader reports (an empty listing shows none: then
    # the expected entries' fields, so that they show up as missing)
    shown = {k for e in (actual or expected) for k in e}
    keys = shown & set(listing.KEYS)
    exp = [{k: v for k, v in e.items() if k in keys} for e in expected]
    act = [{k: v for k, v in e.items() if k in keys} for e in fixed]
    if actual:
        _meta(expected, fixed, exp, act, shown & set(listing.META_KEYS), reader_cls)
    d = listing_diff(exp, act, listing.KEYS + listing.META_KEYS)
    if amb:
        d.ambiguous, d.ambiguous_counts = amb
    return d


def _meta(expected, fixed, exp, act, keys, reader_cls):
    """Add the meta keys (listing.META_KEYS) to the compared entries exp
    and act (parallel to expected and fixed), each only where the expected
    entry of that path has it and the shown entry of that path shows it (a
    reader may show them for files only: the npm fatfs package's fs.stat
    of a directory fails), both sides through the reader's mask (what it
    can show of the value: mdir's minutes)."""
    if not keys:
        return
    mask = reader_cls.meta_mask if reader_cls is not None else (lambda k, v: v)
    shown = {e["path"]: e for e in fixed}
    want = {e["path"]: e for e in expected}
    for e, c in zip(expected, exp):
        for k in keys:
            if k in e and k in shown.get(e["path"], ()):
                c[k] = mask(k, e[k])
    for e, c in zip(fixed, act):
        w = want.get(e["path"])
        for k in keys:
            if w is not None and k in w and k in e:
                c[k] = mask(k, e[k])


def compare_label(expected, shown):
    """[(where, expected, shown)] of the label fields ("boot", "root") a
    reader shows (shown: its ReadResult.extra["label"]) that differ from
    the expected ones (None: no label there)."""
    if expected is None or shown is None:
        return []
    return [(k, expected.get(k), shown[k]) for k in ("boot", "root")
            if k in shown and k in expected and shown[k] != expected[k]]


def compare_results(ops, expected, actual, writer_cls, used):
    """[(op, expected, actual)] of the ops whose results differ, after the
    writer's named exceptions."""
    out = []
    for i, op in enumerate(ops):
        e = expected[i] if i < len(expected) else None
        a = actual[i] if i < len(actual) else None
        if e == a:
            continue
        ex = writer_cls.result_exception(op, e, a) if a is not None and writer_cls is not None else None
        if ex:
            used[ex] += 1
            continue
        out.append((op, e, a))
    return out


def results_text(rows):
    return "\n".join(f"line {op.line}: {op}: expected {e}, got {a}" for op, e, a in rows)


def verdict_for(r, expected_entries, reader, exp_complaints, used, writer=None, label=None, image=None):
    """A ReadResult r of reader (a name) against the expected entries and
    complaints -> Verdict. writer: the name of the writer whose image it is
    (its named exceptions may explain names); label: the expected volume
    label ({"boot", "root"}: vfz.model.inode), compared where the reader
    shows it (r.extra["label"]). image: the image read; a reader that shows
    attributes or times (Reader.shows) whose listing agrees on the canonical
    keys is then held against the core's listing of it on those fields
    (vfz.check.meta)."""
    if r.error:
        return Verdict("failed", error=r.error)
    rcls = oracles.oracle_class(reader, "reader")
    wcls = oracles.oracle_class(writer, "writer") if writer else None
    v = Verdict("ok")
    if r.listing is not None and expected_entries is not None:
        d = compare_listing(expected_entries, r.listing, rcls, wcls, used)
        d.label = compare_label(label, r.extra.get("label"))
        if d:
            v.verdict = "differs"
            v.diff = d
    if v.verdict == "ok" and image is not None and rcls.shows and r.listing:
        changed = meta.meta_changed(rcls, r.listing, evidence.core_listing(image))
        if changed:
            v.verdict = "differs"
            v.diff = ListingDiff(changed=changed)
    bad, lines = rcls.judge(r, exp_complaints, used)
    if bad and v.verdict == "ok":
        v.verdict = "complains"
    v.lines = lines
    return v
