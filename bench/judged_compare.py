#!/usr/bin/python3
"""Two hostile runs' judgements image by image: the same volumes must get the same verdicts.

    /usr/bin/python3 bench/judged_compare.py BEFORE/judged.json AFTER/judged.json

judged.json is bench/profile_hostile.py's (per lane, image index -> [refused,
verdict kinds]). For each lane, the images both runs judged are compared;
prints per lane the images compared, refusals and verdict counts on them, and
every image judged differently. Exit 1 when any differs (a hang or a
timing-bound verdict may differ between runs on a loaded machine: the
differing images are listed to be looked at).
"""
import json
import sys
from collections import Counter


def main():
    if len(sys.argv) != 3:
        print("usage: judged_compare.py BEFORE/judged.json AFTER/judged.json", file=sys.stderr)
        return 2
    try:
        a, b = (json.load(open(p)) for p in sys.argv[1:])
    except (OSError, ValueError) as e:
        print(f"judged_compare: error: {e}", file=sys.stderr)
        return 2
    bad = 0
    for lane in sorted(set(a) | set(b)):
        x, y = a.get(lane, {}), b.get(lane, {})
        common = sorted(set(x) & set(y), key=int)
        diff = [i for i in common if x[i] != y[i]]
        ref = sum(x[i][0] for i in common), sum(y[i][0] for i in common)
        vs = Counter(k for i in common for k in x[i][1]), Counter(k for i in common for k in y[i][1])
        print(f"{lane}: {len(common)} images both judged (before {len(x)}, after {len(y)}); refused "
              f"{ref[0]} / {ref[1]}; verdicts {dict(vs[0]) or '-'} / {dict(vs[1]) or '-'}; "
              f"{len(diff)} judged differently")
        for i in diff[:20]:
            print(f"  image {i}: before {x[i]}, after {y[i]}")
        bad += len(diff)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
