"""The two studies: how often dummy short entries collide (collisions), and which checkers and
readers accept the images of each write mode (compat); Markdown, CSV and PNG under reports/.

Layer: a subsystem. May import vfz.check, vfz.oracles, vfz.model and the contracts; never
campaign, hostile, export, selftest, report or cli.
"""
