"""vfatfuzz setup: see vfz/setup.py."""
from vfz import setup

HELP = "install missing Debian packages, configure and build (idempotent)"


def add_arguments(p):
    p.add_argument("--skip-kernel", action="store_true", help="do not build the kernel oracles")


def run(args):
    return setup.setup(skip_kernel=args.skip_kernel)
