"""Reproducers for maintainers: a finding, regression or hostile case turned into a directory with
the image, the op-script, run.sh and README.md that replay it with the implementation's own tools
(reproducer: the common layout and run.sh skeleton; hostile: hostile-volume cases; vm: running a
reproducer inside the kernel oracle's guest). What each tool's run.sh does is the oracle's own
reproducer template, asked of the registry.

Layer: a subsystem. May import vfz.hostile (its findings' layout), vfz.check, vfz.oracles,
vfz.model and the contracts; never campaign, study, selftest, report or cli.
"""
