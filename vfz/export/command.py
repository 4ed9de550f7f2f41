"""`vfatfuzz repro TARGET --export DIR`: which reproducer a target becomes (a hostile finding's, a catalogued peer bug's, a finding's, an op-script's) and writing it.

    repro_export(args, target) -> exit status
    hostile_source(path), is_spec(path)
"""
import os
import shutil
import sys
import tempfile

from vfz import errors
from vfz.export import hostile as export_hostile
from vfz.export.case import build_case, case_from_finding, case_from_spec, impl_of, load_spec
from vfz.export.reproducer import export
from vfz.hostile import findings as hostile_findings
from vfz.oracles.repro import ExportError


def is_spec(path):
    return os.path.isfile(os.path.join(path, "bug.json"))


def hostile_source(path):
    """The hostile finding directory PATH stands for: PATH itself
    (reports/hostile/NAME, vfz.hostile.findings), or the one a peer-bug
    case names (bug.json "hostile", relative to the repository); else None."""
    if hostile_findings.is_hostile_finding(path):
        return path
    if is_spec(path):
        h = load_spec(os.path.join(path, "bug.json")).get("hostile")
        if h:
            repo = os.path.abspath(os.path.join(path, "..", "..", ".."))
            return h if os.path.isabs(h) else os.path.join(repo, h)
    return None


def repro_export(args, target):
    """`vfatfuzz repro TARGET --export DIR`: write and run the reproducer
    (target None: args.target is a catalogued peer bug, corpus/peer-bugs/NAME).
    -> exit status: 1 it reproduces (the bug still shows), 0 it does not,
    2 it could not be written or run."""
    hostile = hostile_source(args.target)
    if hostile:
        try:
            res = export_hostile.export_finding(hostile, args.export, run=True,
                                                timeout=max(60.0, args.timeout * 5))
        except ExportError as e:
            print(f"vfatfuzz repro: {e}", file=sys.stderr)
            return 2
        print(f"exported hostile-volume reproducer of {hostile} to {res['dir']}")
        print(f"run.sh here: {res['result'] or '(no output)'}")
        return {0: 1, 1: 0}.get(res["status"], 2)
    work = tempfile.mkdtemp(prefix="vfz-export-")
    try:
        if target is None:
            case = case_from_spec(args.target, work)
        elif target.kind == "finding":
            case = case_from_finding(target.path, work)
        else:
            writers = [w for w in (args.writers or "").split(",") if w]
            readers = [r for r in (args.oracles or "").split(",") if r]
            if len(writers) != 1 or len(readers) > 1:
                raise ExportError("for an op-script or crash file, --export needs --writers W "
                                  "(W's own bug) or --writers W --oracles R (reader R on W's image)")
            fs = (args.fs or target.fs or "fat16").split(",")[0]
            if readers:
                case = build_case(impl_of(readers[0]), "reader", target.ops, fs, work,
                                  writer=writers[0], title=f"{readers[0]} reading {writers[0]}'s image")
            else:
                case = build_case(impl_of(writers[0]), "writer", target.ops, fs, work,
                                  title=f"{writers[0]} applying an op-script")
        res = export(case, args.export, run=True, timeout=max(60.0, args.timeout * 5))
    except (ExportError, errors.UsageError) as e:
        print(f"vfatfuzz repro: {e}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"exported {case.impl} ({case.side}) reproducer to {res['dir']}")
    print(f"run.sh here: {res['result'] or '(no output)'}")
    return {0: 1, 1: 0}.get(res["status"], 2)
