"""A finding's recorded detail as a table: the listing differences (vfz.check.verdict's '-'/'+' lines of canonical entries) and the other lines.

finding.json keeps each reader's verdict as text (Verdict.text(): the
ListingDiff's lines, each '- ' or '+ ' and one canonical listing entry as
JSON, docs/listing.md, then complaint and judgement lines). rows() reads
that text back into structured rows, one per path and field:

    {"path", "change": "missing" | "extra" | "changed", "field",
     "expected", "shown"}

and notes() the lines that are not listing entries (complaints, named
exception evidence, errors).
"""
import json


def _entries(text):
    exp, shown, other = {}, {}, []
    for ln in (text or "").splitlines():
        if ln[:2] in ("- ", "+ ") and ln[2:3] == "{":
            try:
                e = json.loads(ln[2:].split(" (ambiguous", 1)[0])
            except ValueError:
                other.append(ln)
                continue
            if isinstance(e, dict) and "path" in e:
                (exp if ln[0] == "-" else shown)[e["path"]] = e
                continue
        other.append(ln)
    return exp, shown, other


def rows(text):
    exp, shown, _ = _entries(text)
    out = []
    for p in sorted(set(exp) | set(shown)):
        a, b = exp.get(p), shown.get(p)
        if b is None:
            out.append({"path": p, "change": "missing", "field": "-", "expected": _brief(a), "shown": ""})
        elif a is None:
            out.append({"path": p, "change": "extra", "field": "-", "expected": "", "shown": _brief(b)})
        else:
            for k in sorted(set(a) | set(b)):
                if k != "path" and a.get(k) != b.get(k):
                    out.append({"path": p, "change": "changed", "field": k,
                                "expected": _val(a.get(k)), "shown": _val(b.get(k))})
    return out


def notes(text):
    return [ln for ln in _entries(text)[2] if ln.strip()]


def _val(v):
    return "(none)" if v is None else json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v


def _brief(e):
    return ", ".join(f"{k}={_val(v)}" for k, v in e.items() if k != "path")
