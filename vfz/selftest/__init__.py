"""The harness's detection power: planted faults and automatic mutants of core/src, each hunted by a
focused campaign loop (hunt) or the main job itself (mutants); reports/mutation.md.

Layer: a subsystem above the campaign. May import vfz.campaign, vfz.check, vfz.oracles,
vfz.model and the contracts; never hostile, export, study, report or cli.
"""
