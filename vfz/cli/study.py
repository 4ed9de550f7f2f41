"""vfatfuzz study collisions|compat: the two studies (reports/ holds a full run).

    vfatfuzz study collisions [--out DIR] [--seed N] [--size small|default|full]
    vfatfuzz study compat     [--out DIR] [--seed N] [--size small|default|full]
    vfatfuzz study formatters [--out DIR] [--seed N] [--size small|default]
                              [--formatters LIST] [--readers LIST]

collisions: dummy short-entry collision rates on real directories written by
the core vs the analytic values, and what a collision costs (fsck.fat,
mtools, kernel): collisions.md/.csv/.png/.json.
compat: every checker and reader x write style x name class, plus the dummy
byte variants: compat.md/.csv and compat/cases/*.ops.
formatters: every reader reads each formatter's fresh volumes across the geometry classes
(vfz/study/formatters.py): formatters-sweep.md/.csv.
Default size takes a few minutes; full is what reports/ holds.
"""
import os
import signal
import sys
import time

HELP = "the two studies: collision rates, compatibility matrix (Markdown, CSV, PNG)"
from vfz import REPO# noqa: E402


def add_arguments(p):
    p.add_argument("which", choices=["collisions", "compat", "formatters"], help="which study")
    p.add_argument("--out", default=os.path.join(REPO, "reports"), help="output directory (default reports/)")
    p.add_argument("--seed", type=int, default=1, help="base seed (default 1)")
    p.add_argument("--size", choices=["small", "default", "full"], default="default",
                   help="small (tests), default (a few minutes), full (reports/)")
    p.add_argument("--no-kernel", action="store_true", help="skip the kernel oracles (QEMU)")
    p.add_argument("--formatters", help="formatters: which to sweep, comma-separated (default: every one)")
    p.add_argument("--readers", help="formatters: the readers, comma-separated (default: every available "
                                     "one, one VM per family)")


class _Progress:
    def __init__(self):
        self.t0 = time.monotonic()
        self.last = 0.0

    def __call__(self, msg, force=False):
        now = time.monotonic()
        if force or now - self.last >= 2.0:
            self.last = now
            sys.stderr.write(f"[{now - self.t0:6.0f}s] {msg}\n")
            sys.stderr.flush()


def _names(text, role):
    """A comma-separated list of registered names of role (None: not given); a bad name is a
    UsageError."""
    if not text:
        return None
    from vfz import oracles
    from vfz.errors import UsageError
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in oracles.names(role)]
    if bad:
        raise UsageError(f"unknown {role}(s) {', '.join(bad)} (known: {', '.join(oracles.names(role))})")
    return names


def run(args):
    if args.seed < 0:
        sys.stderr.write("vfatfuzz study: --seed must be >= 0\n")
        return 2
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        sys.stderr.write(f"vfatfuzz study: cannot create {args.out}: {e.strerror}\n")
        return 2
    # a terminated study still powers its kernel VMs off (atexit in oracles.kernel)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    prog = _Progress()
    try:
        if args.which == "collisions":
            from vfz.study import collisions as m
            m.run_study(args.out, args.seed, args.size, prog, with_kernel=not args.no_kernel)
            files = ["collisions.md", "collisions.csv", "collisions.png"]
        elif args.which == "formatters":
            from vfz.study import formatters as m
            from vfz.errors import UsageError
            try:
                fmts, rds = _names(args.formatters, "formatter"), _names(args.readers, "reader")
            except UsageError as e:
                sys.stderr.write(f"vfatfuzz study: {e}\n")
                return 2
            m.run_study(args.out, args.seed, args.size, prog, with_kernel=not args.no_kernel,
                        formatters=fmts, readers=rds)
            files = ["formatters-sweep.md", "formatters-sweep.csv"]
        else:
            from vfz.study import compat as m
            m.run_study(args.out, args.seed, args.size, prog, with_kernel=not args.no_kernel)
            files = ["compat.md", "compat.csv"]
    except RuntimeError as e:
        sys.stderr.write(f"vfatfuzz study {args.which}: {e}\n")
        return 1
    prog("done: " + ", ".join(os.path.join(args.out, f) for f in files), force=True)
    return 0
