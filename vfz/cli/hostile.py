"""vfatfuzz hostile: mutated volumes to every reader; see vfz/hostile/loop.py."""
import os
import sys

from vfz.hostile import loop as hostile

HELP = ("hostile volumes (structure-aware mutations) to every reader: crash, hang, trap, reads past the volume; "
        "to transformers (--oracles fatsort,fsck-repair): crash, hang, writes past the volume")


def _list(s):
    return [x for x in s.split(",") if x]


def add_arguments(p):
    p.add_argument("--minutes", type=float, default=10.0, help="wall-clock minutes (default 10)")
    p.add_argument("--seed", type=int, default=None, help="run seed (default: from the clock, printed)")
    p.add_argument("--oracles", type=_list, default=None,
                   help="readers and transformers, comma-separated (default: every reader apart from "
                        "the core, one per kernel family; transformers -- fatsort, fsck-repair -- only "
                        "when named; 'none': no reader, the --writers only)")
    p.add_argument("--writers", type=_list, default=None,
                   help="writers that apply an op-script to each hostile volume (vfz/hostile/writes.py: "
                        "crash, hang, trap, damage spread), e.g. core-dual,kernel,mtools,fusefat,fatfs,uboot")
    p.add_argument("--workdir", default="work/hostile", help="findings/, seeds/, stats.json (default work/hostile)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per image and reader (default 30)")
    p.add_argument("--min-seconds", type=float, default=300.0,
                   help="seconds spent minimising one finding (default 300: at load ~19 on 2 cores, 120 s left "
                        "a 34 MiB FAT32 canary volume at 8 byte ranges where 4 suffice)")
    p.add_argument("--seeds", action="append", metavar="DIR",
                   help="more seed images (*.img, *.img.xz under DIR, e.g. a campaign workdir; repeatable)")
    p.add_argument("--fuzz-corpus", action="append", metavar="DIR",
                   help="a fuzz_image corpus beside corpus/fuzz_image/ (raw harness inputs; repeatable)")
    p.add_argument("--pool-writers", type=_list, default=None,
                   help="writers of the seed pool (default: the campaign's default writers)")
    p.add_argument("--asan-peers", metavar="DIR",
                   help="mtools and fsck.fat built with ASan by scripts/build-asan-peers.sh DIR")
    p.add_argument("--replay", metavar="FINDING", help="replay one finding directory and exit")
    p.add_argument("--minimise", action="store_true",
                   help="with --replay: minimise the finding again (--min-seconds budget) and rewrite it")
    p.add_argument("--resign", action="store_true",
                   help="with --replay: a verdict of the finding's kind whose message extends the recorded one "
                        "(a crash's backtrace frames, a guest's last console lines) becomes its signature")


def run(args):
    if args.seed is None and not args.replay:
        import time
        args.seed = int(time.time()) % 100000
    if args.minutes <= 0 or args.timeout <= 0:
        sys.stderr.write("vfatfuzz hostile: error: --minutes and --timeout must be positive\n")
        return 2

    for d in (args.seeds or []) + (args.fuzz_corpus or []):
        if not os.path.isdir(d):
            sys.stderr.write(f"vfatfuzz hostile: error: {d}: no such directory\n")
            return 2
    if args.writers:
        from vfz import oracles
        bad = [w for w in args.writers if w not in oracles.names("writer")]
        if bad:
            sys.stderr.write(f"vfatfuzz hostile: error: unknown writer(s) {', '.join(bad)}\n")
            return 2
    if args.pool_writers:
        from vfz import oracles
        bad = [w for w in args.pool_writers if w not in oracles.names("writer")]
        if bad:
            sys.stderr.write(f"vfatfuzz hostile: error: unknown writer(s) {', '.join(bad)}\n")
            return 2
    if args.asan_peers and not os.path.isdir(os.path.join(args.asan_peers, "bin")):
        sys.stderr.write(f"vfatfuzz hostile: error: {args.asan_peers}/bin missing "
                         "(run scripts/build-asan-peers.sh first)\n")
        return 2

    def log(s):
        print(s, flush=True)
    return hostile.main(args, log)
