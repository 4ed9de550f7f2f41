"""HTML and CSS primitives of the report: escaping, tables, heat-map colours, the page frame."""
import html
import os

CSS = """
body { font: 14px/1.45 "DejaVu Sans", Arial, sans-serif; margin: 0; color: #1d2330; background: #fbfbfd; }
header { background: #21314d; color: #fff; padding: 14px 28px; }
header h1 { margin: 0; font-size: 22px; }
header p { margin: 4px 0 0; color: #c9d3e6; }
main { padding: 8px 28px 40px; max-width: 1400px; }
h2 { border-bottom: 2px solid #d5dbe7; padding-bottom: 3px; margin-top: 28px; font-size: 18px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
table { border-collapse: collapse; margin: 6px 0 12px; background: #fff; }
th, td { border: 1px solid #d5dbe7; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #eef1f7; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.heat { text-align: center; min-width: 58px; font-variant-numeric: tabular-nums; }
p code, td code { word-break: break-word; overflow-wrap: anywhere; }
code, pre { font-family: "DejaVu Sans Mono", monospace; font-size: 12.5px; }
pre { background: #f3f5f9; border: 1px solid #d5dbe7; padding: 8px; overflow-x: auto; white-space: pre-wrap;
      word-break: break-all; }
.tag { display: inline-block; border-radius: 3px; padding: 0 6px; font-size: 12px; font-weight: 600; }
.new { background: #d93f3f; color: #fff; }
.known { background: #e8c547; color: #1d2330; }
.catalogued { background: #8aa1c4; color: #fff; }
.ok { color: #22793a; font-weight: 600; }
.bad { color: #b3261e; font-weight: 600; }
.muted { color: #6b7385; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 14px 0; }
.card { background: #fff; border: 1px solid #d5dbe7; border-radius: 6px; padding: 8px 14px; min-width: 120px; }
.card b { display: block; font-size: 22px; }
img.chart { max-width: 100%; border: 1px solid #d5dbe7; background: #fff; }
.bar { display: inline-block; height: 10px; background: #4a78c2; vertical-align: middle; }
.barbg { display: inline-block; width: 120px; height: 10px; background: #e3e7ef; vertical-align: middle; }
"""


def esc(s):
    return html.escape("" if s is None else str(s), quote=True)


def link(href, text):
    return f'<a href="{esc(href)}">{esc(text)}</a>'


def page(title, subtitle, body):
    """A whole HTML document: the CSS inline, no script."""
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{CSS}</style></head>\n<body>"
            f"<header><h1>{esc(title)}</h1><p>{esc(subtitle)}</p></header>\n<main>\n{body}\n</main></body></html>\n")


def table(head, rows, num=(), cls=""):
    """head: column titles; rows: lists of cells already HTML (use esc);
    num: indexes of right-aligned numeric columns."""
    out = [f'<table class="{esc(cls)}"><thead><tr>']
    out += [f'<th class="num">{h}</th>' if i in num else f"<th>{h}</th>" for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for r in rows:
        out.append("<tr>" + "".join(f'<td class="num">{c}</td>' if i in num else f"<td>{c}</td>"
                                    for i, c in enumerate(r)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def heat_colour(frac):
    """Background of a heat-map cell: white (0) to deep blue (1)."""
    f = min(1.0, max(0.0, frac))
    lo, hi = (255, 255, 255), (33, 84, 166)
    r, g, b = (round(a + (c - a) * f) for a, c in zip(lo, hi))
    return f"#{r:02x}{g:02x}{b:02x}"


def heat_cell(text, frac, title=""):
    fg = "#fff" if frac > 0.55 else "#1d2330"
    t = f' title="{esc(title)}"' if title else ""
    return f'<td class="heat" style="background:{heat_colour(frac)};color:{fg}"{t}>{esc(text)}</td>'


def heat_table(corner, cols, rows):
    """rows: [(row title, [(text, frac, title) per column])] -> a heat map table."""
    out = ["<table><thead><tr>", f"<th>{esc(corner)}</th>"]
    out += [f"<th>{esc(c)}</th>" for c in cols]
    out.append("</tr></thead><tbody>")
    for title, cells in rows:
        out.append(f"<tr><th>{esc(title)}</th>" + "".join(heat_cell(*c) for c in cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def bar(frac, text=""):
    """A small inline bar (a proportion) with its text."""
    w = round(120 * min(1.0, max(0.0, frac)))
    return f'<span class="barbg"><span class="bar" style="width:{w}px"></span></span> {esc(text)}'


def card(value, label):
    return f'<div class="card"><b>{esc(value)}</b>{esc(label)}</div>'


def write(path, text):
    """Atomic write of a text file (a killed run never leaves half a page)."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def pct(x, digits=1):
    return "-" if x is None else f"{x:.{digits}f} %"
