"""formatters-sweep.md: the formatter sweep's figures (vfz.study.formatters), per formatter and
per reader, with every named exception applied and every finding's detail."""
import collections

from vfz import oracles


def write_md(path, formatters, readers, volumes, rows, notes, seed, size):
    L = ["# Formatter sweep", "",
         f"`vfatfuzz study formatters --formatters {','.join(formatters)} --seed {seed}"
         + (f" --size {size}" if size != "default" else "") + "`: every reader reads each "
         "formatter's fresh volume, judged by the campaign's formatted-volume check "
         "(vfz/check/formatted.py; vfz/study/formatters.py says how the geometries are planned).", ""]
    L += ["## Volumes", "", "| formatter | planned | made | not made | made per class |", "|---|---|---|---|---|"]
    for f in formatters:
        vs = [v for v in volumes if v[0] == f]
        made = [v for v in vs if v[5] is not None]
        per = collections.Counter(v[1] for v in made)
        L.append(f"| `{f}` | {len(vs)} | {len(made)} | {len(vs) - len(made)} | "
                 + ", ".join(f"{k} {n}" for k, n in sorted(per.items())) + " |")
    L += ["", "Not made, by reason (the formatter's refusal, a count it never reaches with that "
          "layout, or over the 64 MiB cap):", ""]
    why = collections.Counter((v[0], _reason(v[3])) for v in volumes if v[5] is None)
    L += [f"- `{f}`: {n} x {w}" for (f, w), n in sorted(why.items())] or ["- none"]
    L += ["", "## Readers", "", "| reader | " + " | ".join(f"`{f}` read / ok / named / findings" for f in formatters)
          + " |", "|---|" + "---|" * len(formatters)]
    for rn in readers:
        cells = []
        for f in formatters:
            c = collections.Counter(r[4] for r in rows if r[0] == f and r[3] == rn)
            cells.append(f"{sum(c.values())} / {c['ok']} / {c['named']} / {c['finding']}")
        L.append(f"| `{rn}` | " + " | ".join(cells) + " |")
    names = collections.Counter(n for r in rows for n in r[5])
    L += ["", "## Named", ""]
    for n, k in sorted(names.items()):
        xs = oracles.exception(n)
        L.append(f"- `{n}` ({k} answers): " + (xs[0].reason if xs else "(not in the registry)"))
    if not names:
        L.append("- none")
    L += ["", "## Findings", ""]
    fs = [r for r in rows if r[4] == "finding"]
    for r in fs:
        L.append(f"- `{r[0]}` `{r[2]}` ({r[1]}), `{r[3]}`: {r[6][:400]}")
    if not fs:
        L.append("- none")
    if notes:
        L += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    L += ["", "Made volumes, the layout read back from each boot sector:", "",
          "| formatter | spec | class | FAT | clusters | sector | cluster | FATs | reserved | root |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for f, cls, spec, _, _, m in volumes:
        if m:
            L.append(f"| `{f}` | `{spec}` | {cls} | {m['fat']} | {m['clusters']} | {m['sector']} | "
                     f"{m['cluster']} | {m['fats']} | {m['reserved']} | {m['root']} |")
    with open(path, "w") as fh:
        fh.write("\n".join(L) + "\n")


def _reason(why):
    """A refusal without its spec: one line per kind of reason."""
    return (why or "").split(" (")[0][:120]
