"""vfatfuzz campaign: see vfz/campaign.py."""
from vfz import campaign

HELP = "the main job: fuzz + differential campaign over every write mode, findings minimised and kept"


def add_arguments(p):
    campaign.add_arguments(p)


def run(args):
    return campaign.run_cmd(args)
