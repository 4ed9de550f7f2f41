"""vfatfuzz merge DIR... --out OUT [--fuzz-bin PATH] [--no-corpus] [--json]

Merges campaign workdirs (the shards of `campaign --shard I/N`) into OUT
(vfz/campaign/merge.py): findings deduplicated by signature, pending divergences
kept, corpora merged with libFuzzer -merge=1, crash files and harvested
lists united, one summary (OUT/summary.json, and a table on stdout).
Exit 0 merged, 2 could not (one error line).
"""
import json
import sys

from vfz.campaign import merge
from vfz.errors import UsageError

HELP = "merge the workdirs of campaign shards: findings by signature, corpora by libFuzzer -merge=1"


def add_arguments(p):
    p.add_argument("dirs", nargs="+", metavar="DIR", help="campaign workdirs (shards)")
    p.add_argument("--out", required=True, help="the merged workdir (created)")
    p.add_argument("--fuzz-bin", help="fuzz_ops for -merge=1 (default build-fuzz/fuzz/fuzz_ops)")
    p.add_argument("--no-corpus", action="store_true", help="leave the corpora alone")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def run(args):
    try:
        s = merge.merge(args.dirs, args.out, fuzz_bin=args.fuzz_bin, corpora=not args.no_corpus)
    except (UsageError, OSError) as e:
        print(f"vfatfuzz merge: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(s, indent=1))
        return 0
    print(f"{'shard':<40} {'seed':>11} {'scripts':>8} {'findings':>9} {'new':>4}")
    for sh in s["shards"]:
        print(f"{sh['workdir'][-40:]:<40} {str(sh['seed']):>11} {str(sh['scripts']):>8} "
              f"{sh['findings']:>9} {len(sh['new_findings']):>4}")
    print(f"merged into {args.out}: {s['total_findings']} findings "
          f"({sum(len(v) for v in s['findings'].values())} filed across shards), "
          f"{len(s['pending'])} pending, {s['crashes']} crash files, {s['total']['scripts']} scripts")
    if s["corpus"]:
        print(f"corpus: {sum(s['corpus']['inputs'])} inputs in {len(s['corpus']['inputs'])} corpora "
              f"-> {s['corpus']['kept']} kept by libFuzzer -merge=1")
    for sig, where in sorted(s["findings"].items()):
        print(f"  {sig}  filed by {len(where)} shard(s)")
    return 0
