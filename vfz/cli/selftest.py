"""`vfatfuzz selftest`: the command line of the harness's detection-power measurement (vfz/selftest/)."""
from vfz.selftest.hunt import HELP, add_arguments, run  # noqa: F401
