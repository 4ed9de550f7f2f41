"""`vfatfuzz selftest`: the command line of the harness's detection-power measurement (vfz/selftest/).

The planted faults (vfz.selftest.hunt) by default; with --mutants N,
automatic mutants of core/src (vfz.selftest.mutants) instead.
"""
from vfz.selftest import hunt, mutants
from vfz.selftest.hunt import HELP  # noqa: F401


def add_arguments(p):
    hunt.add_arguments(p)
    mutants.add_arguments(p)


def run(args):
    if args.mutants is not None:
        return mutants.run(args)
    return hunt.run(args)
