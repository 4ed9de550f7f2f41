"""Reproducers for maintainers: a finding, regression or hostile case turned into a directory with
the image, the op-script, run.sh and README.md that replay it with the implementation's own tools
(case: building the case; script: run.sh around the template's body; report: README.md;
reproducer: writing one; hostile: hostile-volume cases; command: `vfatfuzz repro --export`).
What each tool's run.sh does is the oracle's own reproducer template, asked of the registry
(vfz.oracles.exporter; the contract vfz/oracles/repro.py): nothing here tests an oracle's name.

Layer: a subsystem. May import vfz.hostile (its findings' layout), vfz.check, vfz.oracles,
vfz.model and the contracts; never campaign, study, selftest, report or cli.
"""
