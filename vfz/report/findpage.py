"""The page of one finding: its minimised script, every reader's verdict, its differences as a table, its named exception or "unexplained", its files and reproducer.

write(f, status, out, repro) writes OUT/findings/<id>/index.html beside
copies of the finding's small files (ops.txt, finding.json, raw outputs,
diff.txt, ...: never its images) and returns the page's path relative to
OUT. repro is the reproducer's directory copied under OUT/repro/ (or None).
"""
import os
import shutil

from vfz.report import diffview
from vfz.report.html import esc, link, page, table, write as write_file

COPY_LIMIT = 1 << 20        # a linked file larger than this is left out (an image, a long log)


def exception_text(name):
    """The reason of a named exception, '' when the registry has none by that name."""
    from vfz import model, oracles
    xs = list(oracles.exception(name)) + [x for x in getattr(model, "EXCEPTIONS", []) if x.name == name]
    return "; ".join(f"{x.oracle}: {x.reason}" for x in xs)


def copy_files(f, dst):
    """Copy the finding's small files into dst -> the names copied."""
    out = []
    for n in f["files"]:
        src = os.path.join(f["dir"], n)
        try:
            if os.path.getsize(src) > COPY_LIMIT:
                continue
        except OSError:
            continue
        os.makedirs(os.path.dirname(os.path.join(dst, n)), exist_ok=True)
        shutil.copy(src, os.path.join(dst, n))
        out.append(n)
    return out


def verdict_cell(v):
    return f'<span class="{"ok" if v == "ok" else "bad"}">{esc(v)}</span>'


def verdicts_table(f):
    vs = f["verdicts"]
    if not vs:
        return ""
    readers = []
    for w in vs:
        readers += [r for r in vs[w] if r not in readers]
    rows = [[esc(w) + (" <b>(the finding's)</b>" if w == f["writer"] else "")] +
            [verdict_cell(vs[w][r]) if r in vs[w] else "-" for r in readers] for w in vs]
    return "<h3>Per-reader verdicts (writer &times; reader, minimised script)</h3>" + \
        table(["writer"] + [esc(r) for r in readers], rows)


def diff_tables(f):
    out = []
    for w, per in f["details"].items():
        for r, text in per.items():
            rs = diffview.rows(text)
            ns = diffview.notes(text)
            if not rs and not ns:
                continue
            out.append(f"<h3>{esc(w)} read by {esc(r)}</h3>")
            if rs:
                out.append(table(["path", "change", "field", "expected", "shown"],
                                 [[f"<code>{esc(x['path'])}</code>", esc(x["change"]), esc(x["field"]),
                                   f"<code>{esc(x['expected'])}</code>", f"<code>{esc(x['shown'])}</code>"]
                                  for x in rs]))
            if ns:
                out.append("<pre>" + esc("\n".join(ns[:40])) + "</pre>")
    if not out and f["detail"]:
        out.append(f"<pre>{esc(f['detail'][:6000])}</pre>")
    return "<h2>Differences</h2>" + "".join(out) if out else ""


def hostile_section(f):
    out = []
    if f.get("patches"):
        out.append("<h3>Bytes changed from the seed volume (minimised)</h3>")
        out.append(table(["offset", "length", "field", "bytes"],
                         [[str(p.get("offset")), str(p.get("length")), esc(p.get("field")),
                           f"<code>{esc(p.get('data'))}</code>"] for p in f["patches"]], num=(0, 1)))
    if f.get("seed_image"):
        out.append(f"<p>Seed volume: <code>{esc(f['seed_image'])}</code>; mutators: "
                   f"{esc(', '.join(f.get('mutators') or []))}</p>")
    if f.get("diff"):
        out.append(f"<h3>diff.txt</h3><pre>{esc(f['diff'][:8000])}</pre>")
    return "".join(out)


def write(f, status, out, repro_href):
    rel = os.path.join("findings", f["id"])
    dst = os.path.join(out, rel)
    os.makedirs(dst, exist_ok=True)
    copied = copy_files(f, dst)
    exc = f["exception"]
    body = [f"<p><span class=\"tag {status}\">{esc(status)}</span> <code>{esc(f['summary'][:400])}</code></p>"]
    facts = [("oracle", f["oracle"]), ("kind", f["kind"]), ("verdict", f["verdict"]),
             ("writer", f["writer"]), ("volume", f["fs"]),
             ("script", f"{f.get('ops_min')} ops (first found with {f.get('ops_orig')})"
              if f.get("ops_min") is not None else None),
             ("flaky", "yes: not shown again on replay" if f["flaky"] else None)]
    body.append(table(["", ""], [[esc(k), esc(v)] for k, v in facts if v]))
    if exc:
        body.append(f"<h2>Named exception <code>{esc(exc)}</code></h2><p>{esc(exception_text(exc))}</p>")
    elif f.get("catalogued"):
        body.append(f"<h2>Catalogued peer bug</h2><p>The repository holds this finding as "
                    f"<code>reports/hostile/{esc(f['id'])}</code> (reports/bugs.md).</p>")
    else:
        body.append("<h2>Unexplained</h2><p>No named exception explains it: a bug of the writer or "
                    "of the reader until shown otherwise.</p>")
    if f["ops"] is not None:
        body.append("<h2>Minimised script</h2>" + (link("ops.txt", "ops.txt") if "ops.txt" in copied else "")
                    + f"<pre>{esc(f['ops'][:20000])}</pre>")
    body.append(verdicts_table(f))
    body.append(diff_tables(f))
    if f["role"] == "hostile":
        body.append(hostile_section(f))
    body.append("<h2>Files</h2><ul>" + "".join(f"<li>{link(n, n)}</li>" for n in copied) + "</ul>")
    if repro_href:
        body.append(f"<h2>Reproducer</h2><p>{link(repro_href, 'exported reproducer (run.sh, README.md)')}</p>")
    body.append(f"<p>{link('../../index.html', 'back to the report')}</p>")
    replay = f"vfatfuzz repro {f['dir']}"
    body.append(f"<p class=\"muted\">Replay: <code>{esc(replay)}</code></p>")
    write_file(os.path.join(dst, "index.html"), page(f"finding {f['id']}", f["summary"][:160], "\n".join(body)))
    return os.path.join(rel, "index.html")
