"""vfatfuzz diff: see vfz/check/diff.py."""
from vfz.check import diff

HELP = "readers on one image, or each writer x every reader on one op-script"


def add_arguments(p):
    diff.add_arguments(p)


def run(args):
    return diff.run_cmd(args)
