"""Subcommand dispatch for scripts/vfatfuzz: every other module of vfz/cli/ is a subcommand."""
import argparse
import importlib
import pkgutil
import sys

import vfz.cli


class _Parser(argparse.ArgumentParser):
    """Bad flags: one clear error line and exit 2 (no usage dump)."""

    def error(self, message):
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(2)


def _commands():
    cmds = {}
    for mi in pkgutil.iter_modules(vfz.cli.__path__):
        if mi.name != "main" and not mi.name.startswith("_"):
            cmds[mi.name.replace("_", "-")] = mi.name
    return cmds


def build_parser():
    """The whole command line: (parser, {command: module}). Also used by
    tests that check command lines written elsewhere (the nightly
    workflow) against the real flags."""
    cmds = _commands()
    parser = _Parser(prog="vfatfuzz", description="Fuzzing and differential testing of VFAT writers.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    mods = {}
    for name in sorted(cmds):
        try:
            mod = importlib.import_module("vfz.cli." + cmds[name])
        except Exception as e:  # a broken module must not break the others
            sys.stderr.write(f"vfatfuzz: warning: command {name} unavailable: {type(e).__name__}: {e}\n")
            continue
        sp = sub.add_parser(name, help=getattr(mod, "HELP", ""), description=getattr(mod, "HELP", ""))
        mod.add_arguments(sp)
        mods[name] = mod
    return parser, mods


def main(argv):
    parser, mods = build_parser()
    if not argv:
        parser.print_help(sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if args.command not in mods:
        parser.error(f"unknown command {args.command!r}")
    try:
        return int(mods[args.command].run(args) or 0)
    except KeyboardInterrupt:
        sys.stderr.write("vfatfuzz: interrupted\n")
        return 130
    except BrokenPipeError:
        return 1
