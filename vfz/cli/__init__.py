"""The command line: one module per subcommand, and the dispatch (main).

Every module vfz/cli/<name>.py except main is a subcommand <name> (dashes for
underscores): HELP (one line), add_arguments(parser), run(args) -> int.
Engineers add a command by adding a module; nothing else changes.

Layer: the top. cli may import every subsystem (campaign, hostile, export,
study, selftest, report, check), the oracles, the model and the contracts;
nothing imports cli except the entry points (scripts/vfatfuzz, tests, bench)
and cli's own modules.
"""
