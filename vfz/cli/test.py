"""vfatfuzz test: see vfz/cli/setup.py."""
from vfz.cli import setup

HELP = "setup, then the whole test suite (ctest default + asan core); what CI runs"


def add_arguments(p):
    p.add_argument("--no-setup", action="store_true", help="skip setup (already done)")


def run(args):
    return setup.test(skip_setup=args.no_setup)
