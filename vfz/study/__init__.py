"""The studies: how often dummy short entries collide (collisions), which checkers and readers
accept the images of each write mode (compat), and what every reader makes of each formatter's
fresh volumes across the geometry classes (formatters); Markdown, CSV and PNG under reports/.

Layer: a subsystem. May import vfz.check, vfz.oracles, vfz.model and the contracts; never
campaign, hostile, export, selftest, report or cli.
"""
