"""The harness's detection power: planted faults (hunt) and automatic mutants of core/src (mutants), each
built (builds; a mutant from a copy of the sources, srctree, made by the C mutator, mutator) and hunted
by a focused campaign loop (search); the mutation report (mutation_report, reports/mutation.md).

Layer: a subsystem above the campaign. May import vfz.campaign, vfz.check, vfz.oracles,
vfz.model and the contracts; never hostile, export, study, report or cli.
"""
