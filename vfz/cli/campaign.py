"""vfatfuzz campaign: see vfz/campaign/loop.py.

The README's main-job command: like `test`, it first runs the idempotent
setup (packages, builds, kernel guest), so it works on a fresh machine."""
from vfz.campaign import loop as campaign
from vfz.cli import setup

HELP = "the main job: fuzz + differential campaign over every write mode, findings minimised and kept"


def add_arguments(p):
    campaign.add_arguments(p)
    p.add_argument("--no-setup", action="store_true", help="skip setup (already done)")


def run(args):
    if not args.no_setup and setup.setup() != 0:
        return 2
    return campaign.run_cmd(args)
