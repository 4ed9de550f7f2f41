"""`python3 -m vfz.oracles.fatfs --casefold`: re-measure casefold.json on FatFs itself."""
import json
import sys

from vfz.oracles.fatfs.names import CASEFOLD, candidate_pairs, measure_casefold


def main(argv):
    if argv != ["--casefold"]:
        print("usage: python3 -m vfz.oracles.fatfs --casefold   (re-measure casefold.json)", file=sys.stderr)
        return 2
    same = measure_casefold()
    with open(CASEFOLD, "w", encoding="utf-8") as f:
        what = ("pairs of characters FatFs R0.15 (js-fatfs 0.2.1) folds together in "
                "long names, measured by server.js casefold over candidate_pairs()")
        f.write('{"what": %s,\n "candidates": %d,\n "same": [\n' % (json.dumps(what), len(candidate_pairs())))
        f.write(",\n".join("  " + json.dumps(list(x), ensure_ascii=False) for x in same))
        f.write("\n]}\n")
    print(f"{len(same)} of {len(candidate_pairs())} candidate pairs fold together; wrote {CASEFOLD}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
