"""What `repro` and `minimize` run on: a finding directory, a fuzz_ops crash file or an op-script."""
import os

from vfz import findings, opscript, oracles
from vfz.check import diff
from vfz.check.checker import Checker, FS_SPECS
from vfz.errors import UsageError
from vfz.campaign.fuzzer import convert_input, crash_line, from_input_supported, fs_from_options, fuzz_ops_binary
from vfz.proc import run

# every independent reader that needs no long build, and the default writers
ALL_READERS = [n for n, e in oracles.entries().items()
               if e.reader and e.independent and (not e.builds or "reader" in e.default)
               and e.medium == "fat"]
REPRO_WRITERS = oracles.names("writer", default=True)


class Target:
    """What repro/minimize were given: a finding directory, a fuzz input
    (crash file) or an op-script."""

    def __init__(self, path, vfat):
        self.path = path
        self.info = None
        self.fuzz_bin = None
        self.crash = None
        self.fs = None
        self.opts = ""
        if os.path.isdir(path):
            if not os.path.isfile(os.path.join(path, "finding.json")):
                raise UsageError(f"{path}: a directory but not a finding (no finding.json), a regression "
                                 "case (ops.txt, expected.json), a peer-bug case (bug.json) or a hostile "
                                 "finding (hostile.img.xz)")
            self.info = findings.load_finding(path)
            self.kind = "finding"
            self.fs = self.info.get("fs")
            self.ops = opscript.load(os.path.join(path, "ops.txt"))
            self.fuzz_bin = self.info.get("fuzz_bin")
            for n in ("crash.min.bin", "crash.bin"):
                if os.path.isfile(os.path.join(path, n)):
                    self.crash = os.path.join(path, n)
                    break
            if self.fs is None:
                self.fs = fs_from_options(self.info.get("apply_options", "")) or None
            return
        if not os.path.isfile(path):
            raise UsageError(f"no such finding, crash file or op-script: {path}")
        with open(path, "rb") as f:
            data = f.read()
        try:
            self.ops = opscript.parse(data.decode("utf-8"))
            self.kind = "op-script"     # parse raised unless every other line is blank or '#'
            return
        except (UnicodeDecodeError, opscript.OpScriptError) as e:
            err = e
        # not an op-script: a fuzz input
        ok, why = from_input_supported(vfat)
        if not ok:
            raise UsageError(f"{path} is not an op-script ({err}) and cannot be converted as a "
                             f"fuzz input: {why}")
        self.kind = "crash file"
        self.crash = path
        self.ops, self.opts, _ = convert_input(vfat, path)
        self.fs = fs_from_options(self.opts)


def replay_crash(path, binary=None):
    """Run fuzz_ops on a crash file when it is built: (ran, still_fails, message)."""
    b = binary or fuzz_ops_binary()
    if not b:
        return False, False, "build-fuzz/fuzz/fuzz_ops not built"
    p = run([b, path], timeout=60)
    return True, p.rc != 0, crash_line(p.errtext + p.text, p.rc)


def common_arguments(p):
    p.add_argument("target", help="finding directory, case directory (corpus/regressions/NAME, "
                                  "corpus/peer-bugs/NAME, reports/hostile/NAME), crash file (fuzz_ops input) "
                                  "or op-script")
    p.add_argument("--oracles", help=f"readers (default: every available one of {','.join(ALL_READERS)})")
    p.add_argument("--writers", help=f"writers (default {','.join(REPRO_WRITERS)} when available, "
                                     "plus the finding's writer)")
    p.add_argument("--fs", help="volumes, comma-separated (default: the finding's, else fat16)")
    p.add_argument("--vfat", help="the vfat binary the core writers run (default build/vfat)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per oracle call")
    p.add_argument("--fuzz-bin", help="fuzz_ops binary for crash files (default build-fuzz/fuzz/fuzz_ops)")


def minimize_crash(path, out, budget, binary=None):
    """libFuzzer's -minimize_crash on a fuzz_ops crash file -> (ok, message)."""
    b = binary or fuzz_ops_binary()
    if not b:
        return False, "build-fuzz/fuzz/fuzz_ops not built"
    p = run([b, "-minimize_crash=1", f"-max_total_time={max(1, int(budget))}",
             f"-exact_artifact_path={out}", path], timeout=budget + 60)
    if not os.path.isfile(out):
        return False, f"fuzz_ops -minimize_crash produced nothing (exit {p.rc})"
    return True, ""


def checker_for(args, target, notes):
    readers = args.oracles.split(",") if args.oracles else list(ALL_READERS)
    writers = args.writers.split(",") if args.writers else list(REPRO_WRITERS)
    if target.info and target.info.get("writer") and target.info["writer"] not in writers:
        writers.append(target.info["writer"])
    if target.info and target.info["fields"].get("role") == "reader" and \
            target.info["fields"]["oracle"] not in readers:
        readers.append(target.info["fields"]["oracle"])
    # the writers' seeds the finding was made with (dummies, fallback aliases)
    seeds = (target.info or {}).get("writer_seeds") or {}
    cfg = {n: {"seed": s} for n, s in seeds.items() if n in writers}
    return Checker(readers, writers, vfat=args.vfat, asan_vfat=getattr(args, "asan_vfat", None),
                   timeout=args.timeout, notes=notes, cfg=cfg,
                   transformers=(target.info or {}).get("transformers") or ())


def fs_list(args, target):
    if args.fs:
        out = args.fs.split(",")
    else:
        out = [target.fs or "fat16"]
    for fs in out:
        diff.parse_fs(FS_SPECS.get(fs, fs))
    return out


def run_guarded(command, fn, args):
    """The run wrapper of the target commands (repro, minimize): bad input
    (a usage error, an unreadable op-script) is one line on stderr and
    exit 2."""
    import sys
    try:
        return fn(args)
    except (UsageError, opscript.OpScriptError) as e:
        print(f"vfatfuzz {command}: {e}", file=sys.stderr)
        return 2


def open_target(args, vfat):
    """-> (Target, Checker, notes) for a repro/minimize command line."""
    t = Target(args.target, vfat)
    notes = []
    return t, checker_for(args, t, notes), notes
