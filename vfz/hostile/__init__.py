"""Hostile volumes: structure-aware mutations of well-formed volumes (mutate) from seeds (seeds),
given to every reader and transformer (loop, transform), each answer classified (verdict: crash,
hang, trap, canary, overwrite), confirmed, minimised (minimise) and written as a finding (findings).

Layer: a subsystem. May import vfz.check, vfz.oracles, vfz.model and the contracts; never
campaign, export, study, selftest, report or cli.
"""
