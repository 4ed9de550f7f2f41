#!/usr/bin/python3
"""Compare two verdict snapshots (scripts/verdict_snapshot.py's .jsonl files)
on the scripts both hold: every verdict cell and every finding signature."""
import json, sys
def load(p):
    out = {}
    for ln in open(p):
        r = json.loads(ln); out[r["seed"]] = r
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
common = sorted(set(a) & set(b))
vd = sd = 0; ndiv = 0; cells = 0
for s in common:
    x, y = a[s], b[s]
    for w in x["verdicts"]:
        for r, v in x["verdicts"][w].items():
            cells += 1
            if y["verdicts"].get(w, {}).get(r) != v:
                vd += 1; print("verdict", s, w, r, v, y["verdicts"].get(w, {}).get(r))
    sx = {(h, w) for h, w, f in x["sigs"]}; sy = {(h, w) for h, w, f in y["sigs"]}
    ndiv += len(sx)
    if sx != sy:
        sd += 1; print("sigs", s, sorted(sx - sy)[:3], sorted(sy - sx)[:3])
print(f"{len(common)} scripts in both; {cells} verdict cells, {vd} differ; {ndiv} signatures before, scripts with other signatures: {sd}")
