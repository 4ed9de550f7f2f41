"""The campaign's command line (`vfatfuzz campaign`'s options) and what it selects: the readers and writers, the fuzz_ops binaries.

A writer whose images are of a medium of its own (kernel-vvfat: the host
directory vvfat wrote back, Entry.medium "dir") brings the reader of that
medium, whether --oracles names it or not: no other reader reads those
images, so without it the writer's trees would never be compared with the
model (`vfatfuzz diff` adds it the same way when --oracles is not given).
"""
import os

from vfz import oracles
from vfz.campaign import pace
from vfz.campaign.filing import MIN_BUDGET
from vfz.campaign.fuzzer import fuzz_ops_binary, fuzz_ops_fast_binary
from vfz.check.checker import DEFAULT_READERS, DEFAULT_WRITERS, OPTIONAL_WRITERS, OWN_READERS, OWN_WRITERS
from vfz.errors import UsageError

DEFAULT_FS = ["fat12", "fat16", "fat32"]


def roles(a):
    """(readers, writers) of the run: the lists given or the defaults, and
    the readers of the writers' own media appended (unknown names are left
    for the Checker to refuse)."""
    readers = a.oracles.split(",") if a.oracles else list(DEFAULT_READERS) + OWN_READERS
    writers = a.writers.split(",") if a.writers else list(DEFAULT_WRITERS) + OPTIONAL_WRITERS + OWN_WRITERS
    known = [w for w in writers if w in oracles.entries()]
    readers += [n for n in oracles.media_readers(known) if n not in readers]
    return readers, writers


def fuzz_binaries(a):
    """(the binary that fuzzes, the one that judges and replays) or (None,
    None) with --no-fuzzer: the fuzz-ubsan build fuzzes, the ASan build
    judges (fuzz_ops_fast_binary says why); a --fuzz-bin does both itself."""
    if a.fuzz_bin and not os.access(a.fuzz_bin, os.X_OK):
        raise UsageError(f"--fuzz-bin {a.fuzz_bin} is not an executable")
    if a.judge_bin and not os.access(a.judge_bin, os.X_OK):
        raise UsageError(f"--judge-bin {a.judge_bin} is not an executable")
    if a.no_fuzzer:
        return None, None
    fb = a.fuzz_bin or fuzz_ops_fast_binary()
    judge = a.judge_bin or a.fuzz_bin or fuzz_ops_binary()
    if not fb or not judge:
        miss = "build-fuzz-ubsan/fuzz/fuzz_ops" if not fb else "build-fuzz/fuzz/fuzz_ops"
        raise UsageError(f"{miss} is not built (`vfatfuzz setup` builds it); "
                         "--no-fuzzer runs generated scripts only")
    return fb, judge


def add_arguments(p):
    p.add_argument("--minutes", type=float, default=10.0, help="time budget (default 10)")
    p.add_argument("--seed", type=int, help="campaign seed (default: resume the workdir's, else random)")
    p.add_argument("--oracles", help=f"readers (default {','.join(DEFAULT_READERS + OWN_READERS)}; also vfat-check; "
                                     "a writer of its own medium, kernel-vvfat, brings its reader)")
    p.add_argument("--writers", help=f"writers (default {','.join(DEFAULT_WRITERS + OWN_WRITERS)} + the "
                                     "kernel writers when available)")
    p.add_argument("--transformers", help="transformers applied to each writer's image, whose readers must "
                                          "then see the same tree (e.g. fatsort,fsck-repair; default none)")
    p.add_argument("--jobs", type=int, default=pace.cores(),
                   help=f"check lanes: scripts checked at once (default: the cores, {pace.cores()})")
    p.add_argument("--fuzz-jobs", type=int, default=1, help="fuzz_ops workers (default 1)")
    p.add_argument("--fuzz-nice", type=int, default=10, metavar="N",
                   help="niceness of the fuzz_ops workers (default 10: the check lanes come "
                        "first, the fuzzer takes the idle time; 0 = as the lanes)")
    p.add_argument("--shard", help="I/N: run shard I of N (disjoint generated scripts and fuzzer "
                                   "seeds; give each shard its own workdir; merge with vfatfuzz merge)")
    p.add_argument("--workdir", default="campaign", help="findings, corpus and state (default ./campaign)")
    p.add_argument("--fs", help=f"volumes, comma-separated (default {','.join(DEFAULT_FS)}, and half the scripts "
                                "on volumes drawn by geometry: vfz/campaign/geometry.py; a --fs list turns "
                                "the drawing off)")
    p.add_argument("--formatters", help="formatters the geometry draws from, comma-separated (default: every "
                                        "registered one; 'none' keeps the classic volumes only)")
    p.add_argument("--names", help="name classes for vfat gen (default all)")
    p.add_argument("--vfat", help="the vfat binary the core writers run (default build/vfat)")
    p.add_argument("--asan-vfat", help="the ASan build of that binary, which writer core-asan runs (default "
                                       "build-asan/vfat without --vfat; with --vfat and without this, "
                                       "core-asan is skipped)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per oracle call")
    p.add_argument("--min-budget", type=float, default=MIN_BUDGET,
                   help=f"seconds of minimisation per finding (default {MIN_BUDGET:g})")
    p.add_argument("--no-fuzzer", action="store_true", help="generated scripts only")
    p.add_argument("--fresh", action="store_true",
                   help="ignore the workdir's state (seeds, iterations); findings are kept")
    p.add_argument("--fuzz-bin", help="the fuzz_ops binary to fuzz and judge crashes with (default: fuzz with "
                        "build-fuzz-ubsan/fuzz/fuzz_ops and replay what it keeps under build-fuzz/fuzz/fuzz_ops, "
                        "the ASan build)")
    p.add_argument("--judge-bin", help="the fuzz_ops binary that replays every corpus entry the fuzzing build "
                   "keeps and judges, minimises and records crash files (default build-fuzz/fuzz/fuzz_ops, "
                   "or the --fuzz-bin when one is given)")
