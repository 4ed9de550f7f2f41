"""Self-contained reproducers for an implementation's maintainers (issue 17): writing one.

`vfatfuzz repro FINDING --export DIR` (and tests/test_peer_bugs.py, and
reports/bugs/) write one directory a maintainer can run on a stock Linux
box with nothing but the implementation's own tools:

    README.md        the bug report: versions, steps, expected, actual, a
                     hexdump of the directory entries involved
    image.img.xz     the image the script starts from: the fresh volume for
                     a writer bug, the image another writer made for a
                     reader bug (xz; `xz -dc image.img.xz > image.img`)
    ops.txt          the op-script (vfatfuzz's format, for the record)
    run.sh           POSIX sh: unpacks the image into a work directory,
                     replays the ops / runs the reader with the tool's own
                     commands, prints what the tool printed, compares what
                     it sees with expected.txt and ends with one line:
                       REPRODUCED: <why>       exit 0
                       NOT REPRODUCED          exit 1
                       CANNOT RUN: <why>       exit 2 (tool missing, no root...)
    expected.txt     the listing a correct implementation shows (one line
                     an entry: "d /path", "f /path SIZE [SHA256]", sorted
                     bytewise); seen.txt what this machine's tool showed
                     when the reproducer was exported
    printed.txt      everything run.sh printed at export time
    data/            contents of every create/write (byte i of a create =
                     (SEED + 31*i) mod 256): the script needs no vfatfuzz

Which tool replays what is the oracle's own reproducer template, asked of
the registry (vfz.oracles.exporter(family); each oracle module's EXPORTS):
PACKAGES, NEEDS, SIDES, SHA, LISTING, TOOL, STEPS, EXPECTED, shown(case,
path), body(case, data), optional DIRS, default_extra, run_elsewhere and
ELSEWHERE -- the contract is vfz/oracles/repro.py and docs/oracles.md. An
implementation vfatfuzz gains later plugs in by declaring EXPORTS in its
oracle module; until then `export` says which ones it has.

    impl_module(family), export(case, dirname, run=True, timeout=300)
    write(dirname, name, blob, mode), elsewhere(impl, dirname, printed, timeout)
"""
import lzma
import os
import shutil

from vfz import opscript, oracles
from vfz.export.report import report
from vfz.export.script import last_line, listing_lines, run_script, script
from vfz.oracles.repro import Data, ExportError


def impl_module(impl):
    """The reproducer template of family impl (ExportError when it has none)."""
    try:
        return oracles.exporter(impl)
    except KeyError:
        raise ExportError(f"no reproducer exporter for {impl!r} "
                          f"(have: {', '.join(sorted(oracles.exporters()))})") from None


def own_dirs():
    """Subdirectories an export writes: data/ and every template's DIRS."""
    out = ["data"]
    for fam in oracles.exporters():
        out += [d for d in getattr(impl_module(fam), "DIRS", ()) if d not in out]
    return out


def elsewhere(impl, dirname, printed, timeout):
    """run.sh said CANNOT RUN here (Linux: no vfat, no root): run it where
    the oracle runs (impl's run_elsewhere) -> (status, printed, seen text or
    None), or None when there it cannot run either."""
    why = next((ln for ln in printed.split("\n") if ln.startswith("CANNOT RUN")), last_line(printed))
    st2, pr2, seen2 = impl.run_elsewhere(dirname, timeout)
    if st2 == 2:
        return None
    return st2, f"# this host: {why}; run in {impl.ELSEWHERE}\n" + pr2, seen2


def export(case, dirname, run=True, timeout=300):
    """Write the reproducer of case into dirname (created; files in it are
    replaced). run: run it once here and keep what it printed and saw.
    -> {"dir", "status" (0/1/2 or None), "result" (its last line)}."""
    impl = impl_module(case.impl)
    if case.side not in impl.SIDES:
        raise ExportError(f"the {case.impl} exporter reproduces {' and '.join(impl.SIDES)} bugs, "
                          f"not {case.side} bugs")
    for sub in own_dirs():              # files of an earlier export
        if os.path.isdir(os.path.join(dirname, sub)):
            shutil.rmtree(os.path.join(dirname, sub))
    os.makedirs(os.path.join(dirname, "data"), exist_ok=True)
    data = Data()
    text = script(case, impl, data)
    write(dirname, "run.sh", text.encode("utf-8", "surrogatepass"), mode=0o755)
    for name, blob in data.files.items():
        write(dirname, name, blob)
    if not any(n.startswith("data/") for n in data.files):
        os.rmdir(os.path.join(dirname, "data"))
    with open(case.image, "rb") as f:
        write(dirname, "image.img.xz", lzma.compress(f.read(), preset=9))
    write(dirname, "ops.txt", opscript.dump(case.ops).encode("utf-8", "surrogatepass"))
    exp = listing_lines(case, impl)
    write(dirname, "expected.txt", "".join(s + "\n" for s in exp).encode("utf-8", "surrogatepass"))
    status, printed, after = None, "", None
    work = None
    if run:
        status, printed, work = run_script(dirname, timeout)
        seen = os.path.join(work, "seen.txt")
        if os.path.isfile(seen):
            shutil.copyfile(seen, os.path.join(dirname, "seen.txt"))
        elif status == 2 and hasattr(impl, "run_elsewhere"):
            there = elsewhere(impl, dirname, printed, timeout)
            if there:
                status, printed, seen2 = there
                if seen2 is not None:
                    write(dirname, "seen.txt", seen2.encode("utf-8", "surrogateescape"))
        write(dirname, "printed.txt", printed.encode("utf-8"))
        for cand in ("after.img", "repaired.img"):
            if os.path.isfile(os.path.join(work, cand)):
                after = os.path.join(work, cand)
                break
    try:
        readme = report(case, impl, exp, status, printed, after, dirname)
        write(dirname, "README.md", readme.encode("utf-8", "surrogatepass"))
    finally:
        if work:
            shutil.rmtree(work, ignore_errors=True)
    return {"dir": dirname, "status": status, "result": last_line(printed)}


def write(dirname, name, blob, mode=0o644):
    """dirname/name := blob, atomically (a file beside it renamed over it)."""
    p = os.path.join(dirname, name)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p + ".tmp", "wb") as f:
        f.write(blob)
    os.chmod(p + ".tmp", mode)
    os.replace(p + ".tmp", p)
