"""The main job: the campaign loop (loop), its command line and the roles it picks (options), and what it runs -- the fuzz_ops workers (fuzzer), generated
scripts (scriptgen) and their op patterns sized to the volume (patterns), the volumes drawn per
script (geometry), steered tours and the states census (steer), reader lanes (lanes), filing and
minimising findings (filing, minimize, minworker, newfindings), the workdir state (state), the
progress line (progress), the summary (summary), pace (pace), shards and their merge (shards,
merge), and what a finding or crash file replays as (targets).

Layer: a subsystem. May import vfz.check, vfz.oracles, vfz.model and the contracts; never
another subsystem (hostile, export, study, selftest, report) or cli.
"""
