"""Reproducers of hostile-volume findings (vfz/hostile/, reports/hostile/)
in the format of vfz.export.reproducer: a directory a maintainer runs without
vfatfuzz.

    image.img.xz   the minimised hostile volume
    run.sh         POSIX sh: the tool's own command on the volume, bounded
                   by `timeout`; ends REPRODUCED: why (0) / NOT REPRODUCED
                   (1) / CANNOT RUN: why (2)
    printed.txt    what run.sh printed at export time
    README.md      the bug report: versions, what goes wrong, steps,
                   expected, actual, and a hexdump of the mutated fields
                   (the unmutated seed's bytes beside the hostile ones)

What run.sh does, by the finding's kind and implementation (the hook
vfz.hostile.findings.export_case gives kind, reader, image, hexdump):

    the tool's own body  the oracle's reproducer template says, by its
             hostile_body(info, img, data, regions) hook (vfz/oracles/repro.py:
             a crash, a hang on each looping directory, a canary file read
             with the tool, a writer's ops and the kernel log...); else:
    overwrite  a transformer's finding (vfz/hostile/transform.py): run.sh appends the
             guard to image.img (the tool gets what the campaign gave it:
             the volume and 64 KiB past it; so do a transformer's crash and
             hang reproducers) and saves the byte ranges it must leave as they are
             (past the declared volume end; fatsort: also its boot sector,
             reserved sectors and FATs), runs the tool's command from the
             evidence, bounded by timeout, and compares them with cmp: a
             changed byte, or a file grown past the declared end, is the
             symptom (how many bytes, the first offset)
    out-of-bounds  a user-space tool's (the evidence names its command, '... by
             read in `CMD`'): the command under strace (-f -y), each read, pread,
             write and pwrite of the image followed from lseek; an access of the
             finding's kind that reaches its region (past the declared volume, or
             past the image) is the symptom (vfz/hostile/bounds.py judged the same)
    other    a crash or hang whose evidence holds the tool's command line
             ('$ tool ... hostile.img ...'): that command, bounded by timeout

    export_finding(finding_dir, out_dir, run=True) -> {"dir", "status", "result"}
"""
import json
import lzma
import os
import shutil

from vfz import oracles
from vfz.export import reproducer as export
from vfz.export.report import clip, package_versions, where_run
from vfz.export.script import RESULT, TAIL, last_line, preamble, run_script
from vfz.hostile import findings as hf
from vfz.oracles.repro import Data, ExportError, bounds_command, q, strace_check


def template(impl):
    """The family's reproducer template, or None when it has none."""
    try:
        return oracles.exporter(impl)
    except KeyError:
        return None


def body(info, impl, img, data=None, regions=None):
    """-> (sh body, [(command, package)]) of the finding's run.sh."""
    kind = info["kind"]
    mod = template(impl)
    hook = getattr(mod, "hostile_body", None)
    got = hook(info, img, data, regions) if hook else None
    if got:
        return got
    pkg = (getattr(mod, "HOSTILE_PACKAGES", None) or ["?"])[0]
    cmd = evidence_command(info)
    if kind == "overwrite" and cmd and regions:
        return overwrite_body(cmd, regions), [(cmd.split()[0], pkg), ("timeout", "coreutils"), ("cmp", "diffutils")]
    if kind == "out-of-bounds":
        got = bounds_body(info, img, pkg)
        if got:
            return got
    if kind in ("crash", "hang") and cmd:
        return (GENERIC.replace("{CMD}", cmd).replace("{SHOWN}", q(cmd.replace('"$IMG"', "image.img"))),
                [(cmd.split()[0], pkg), ("timeout", "coreutils")])
    have = "; ".join(f"{fam}: {m.HOSTILE}" for fam, m in ((f, template(f)) for f in oracles.exporters())
                     if hasattr(m, "HOSTILE"))
    raise ExportError(f"no hostile reproducer for a {kind} of {impl} (have: {have}; a transformer's "
                      "overwrite, and a crash or hang whose evidence holds the command)")


OVERWRITE = r"""
save() {   # START STOP FILE: bytes START..STOP of the image (STOP empty: to its end) into FILE
    if [ -n "$2" ]; then
        tail -c +$(($1 + 1)) "$IMG" | head -c $(($2 - $1)) > "$3"
    else
        tail -c +$(($1 + 1)) "$IMG" > "$3"
    fi
}
{SAVE}
echo "== "{SHOWN}" (limit ${HANG_S:-10} s)"
# the first MiB of its output kept, the rest read and dropped: the tool never dies of SIGPIPE
{ timeout -k 2 ${HANG_S:-10} {CMD} 2>&1; echo $? > "$OUT/rc"; } | { head -c 1048576 > "$OUT/out.txt"; cat > /dev/null; }
rc=$(cat "$OUT/rc")
head -n 30 "$OUT/out.txt" | indent
echo "    exit $rc"
[ "$rc" -lt 124 ] || echo "    (ended by a signal or the time limit: the image is as the tool left it)"
echo "== the bytes it must leave as they are"
check() {   # START STOP N WHAT: region N before and after
    save "$1" "$2" "$OUT/r$3.after"
    a=$(wc -c < "$OUT/r$3.before")
    b=$(wc -c < "$OUT/r$3.after")
    n=$(cmp -l "$OUT/r$3.before" "$OUT/r$3.after" 2>/dev/null | wc -l)
    [ "$b" -le "$a" ] || n=$((n + b - a))
    first=$(cmp "$OUT/r$3.before" "$OUT/r$3.after" 2>/dev/null | sed -n 's/.*differ: [a-z]* \([0-9]*\),.*/\1/p')
    [ -n "$first" ] || first=$((a + 1))
    if [ "$n" -gt 0 ]; then
        echo "    $4 (offset $1..${2:-end}): $n bytes changed, the first at image offset $(($1 + first - 1)); size $a -> $b"
        bug "{TOOL} changed $n bytes $4 (the first at image offset $(($1 + first - 1)))"
    else
        echo "    $4 (offset $1..${2:-end}): unchanged"
    fi
}
{CHECK}"""


def overwrite_body(cmd, regions):
    """sh text: save the protected regions, run cmd, compare (see OVERWRITE)."""
    save = "\n".join(f'save {s} "{"" if e is None else e}" "$OUT/r{i}.before"'
                     for i, (s, e, _) in enumerate(regions))
    check = "\n".join(f'check {s} "{"" if e is None else e}" {i} {q(label)}'
                      for i, (s, e, label) in enumerate(regions))
    return (OVERWRITE.replace("{SAVE}", save).replace("{CHECK}", check + "\n")
            .replace("{TOOL}", cmd.split()[0]).replace("{CMD}", cmd)
            .replace("{SHOWN}", q(cmd.replace('"$IMG"', "image.img"))))


def bounds_body(info, img, pkg):
    """An out-of-bounds finding of a user-space tool: its command under strace, each
    read/pread/write/pwrite of the image followed (lseek moves the offset), and an access
    that reaches past the finding's region (past the declared volume, or past the image)
    is the symptom. None when the evidence names no command (FatFs, U-Boot, a mount)."""
    from vfz.hostile import mutate as hm
    e = oracles.entries().get(info["reader"])
    cmd = bounds_command(info)
    if not cmd or getattr(e, "iotrace", None) != "preload":     # FatFs, U-Boot: their own records
        return None
    parts = info["message"].split(" [")[0].split(" ", 2)           # "fsck.fat read past volume"
    if len(parts) < 3 or parts[1] not in ("read", "write"):
        return None
    op, where = parts[1], parts[2]
    end = hm.declared_end(img) if where == "past volume" else len(img)
    lo = len(img) if where == "past image inside volume" else 0
    sh = (BOUNDS.replace("{CMD}", cmd).replace("{SHOWN}", q(cmd.replace('"$IMG"', "image.img"))).replace("{OP}", op)
          + strace_check(op, where, end or len(img), lo, parts[0]))
    return sh, [(cmd.split()[0].strip("'"), pkg), ("strace", "strace"), ("timeout", "coreutils")]




BOUNDS = r"""
command -v strace >/dev/null 2>&1 || cannot "strace not found (Debian package strace)"
for k in 0 1 2 3 4 5 6 7 8 9; do mkdir -p "$OUT/dir$k"; done
echo "== strace of "{SHOWN}" (limit ${HANG_S:-10} s): its {OP}s of the image"
timeout -k 2 ${HANG_S:-10} strace -f -y -s 0 -e trace=execve,read,pread64,write,pwrite64,lseek -e signal=none     -o "$OUT/strace.txt" {CMD} > "$OUT/out.txt" 2>&1
echo "    exit $?"
head -n 10 "$OUT/out.txt" | cut -c1-200 | LC_ALL=C tr -c '[:print:]\n' '?' | indent
"""


def evidence_command(info):
    """The tool's command line the finding recorded ('$ tool ... hostile.img ...'),
    as sh text with the image as "$IMG"; None when it has none."""
    import shlex
    for ln in info.get("evidence", "").split("\n"):
        if ln.startswith("$ "):
            try:
                argv = shlex.split(ln[2:])
            except ValueError:
                return None
            if not argv or "/" in argv[0]:
                return None
            out = []
            for a in argv:
                out.append('"$IMG"' if a.endswith("/hostile.img") else q(a) if not a.replace("-", "").replace("/", "").replace(":", "").isalnum() else a)
            return " ".join(out)
    return None


GENERIC = r"""
echo "== "{SHOWN}" (limit ${HANG_S:-10} s)"
# the first MiB of its output kept, the rest read and dropped: the tool never dies of SIGPIPE
{ timeout -k 2 ${HANG_S:-10} {CMD} 2>&1; echo $? > "$OUT/rc"; } | { head -c 1048576 > "$OUT/out.txt"; cat > /dev/null; }
rc=$(cat "$OUT/rc")
head -n 30 "$OUT/out.txt" | indent
echo "    exit $rc"
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    bug "the command did not end within ${HANG_S:-10} s"
elif [ "$rc" -ge 128 ]; then
    bug "killed by signal $((rc - 128))"
fi
"""


def export_finding(path, dirname, run=True, timeout=120):
    """Write the reproducer of the hostile finding PATH into DIRNAME."""
    if not hf.is_hostile_finding(path):
        raise ExportError(f"{path}: not a hostile finding (no finding.json + hostile.img.xz)")
    c = hf.export_case(path)
    with open(os.path.join(path, "finding.json"), encoding="utf-8") as f:
        info = json.load(f)
    impl = c["impl"]
    mod = template(impl)
    data = Data()
    text, needs = body(info, impl, c["image"], data, c.get("regions"))
    sh = preamble(f"{info['reader']}: {info['kind']} on a hostile FAT volume ({info['message']})", needs)
    sh += (c.get("guard") or "") + text + TAIL
    os.makedirs(dirname, exist_ok=True)
    export.write(dirname, "run.sh", sh.encode("utf-8"), mode=0o755)
    export.write(dirname, "image.img.xz", lzma.compress(c["image"], preset=9))
    for name, blob in data.files.items():
        export.write(dirname, name, blob)
    if info.get("ops"):
        export.write(dirname, "ops.txt", info["ops"].encode("utf-8"))
    status, printed = None, ""
    if run:
        env = getattr(mod, "hostile_env", lambda info: {})(info)
        status, printed, work = run_script(dirname, timeout, env=env)
        shutil.rmtree(work, ignore_errors=True)
        if status == 2 and hasattr(mod, "run_elsewhere"):
            there = export.elsewhere(mod, dirname, printed, timeout)
            if there:
                status, printed, _ = there
        export.write(dirname, "printed.txt", printed.encode("utf-8"))
    export.write(dirname, "README.md", report(info, c, impl, status, printed, path).encode("utf-8"))
    return {"dir": dirname, "status": status, "result": last_line(printed)}


def _printable(text):
    """Field names hold raw 8.3 bytes: control characters as \\xNN."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def _printable_lines(text):
    return "\n".join(_printable(ln) for ln in text.split("\n"))


EXPECT = {"crash": "the tool lists what it can read of the volume, or refuses it with an error "
                   "message, and exits normally (no signal, no sanitizer report)",
          "hang": "the listing ends (a directory whose cluster chain loops is an error to report, "
                  "or a listing cut at the loop), within a second",
          "trap": "no WARNING, BUG or Oops in the kernel log: the file system reports the "
                  "inconsistency (fat_fs_error) and refuses the operation or goes read-only",
          "canary": "no file contents come from sectors past the volume's declared end (the tool "
                    "refuses the cluster, or returns an error)",
          "overwrite": "the tool changes no byte past the volume's declared end (the next partition "
                       "on a stick), nor a region it never writes on any volume: it rewrites the "
                       "volume inside its bounds, or refuses it with an error message",
          "tx-crash": "the tool rewrites the volume or refuses it with an error message, and exits "
                      "normally (no signal): a tool that dies half-way leaves the volume half rewritten",
          "tx-hang": "the tool ends within a second or two (it rewrites or refuses the volume)"}


def report(info, c, impl, status, printed, path):
    """README.md of a hostile finding's reproducer."""
    mod = template(impl)
    vers = package_versions(getattr(mod, "HOSTILE_PACKAGES", ()))
    L = [f"# {info['reader']}: {info['kind']} on a hostile FAT volume", ""]
    L += [f"Implementation: **{impl}**; vfatfuzz hostile finding `{info['signature']}` "
          f"({os.path.basename(os.path.normpath(path))}).", "", "## Versions", ""]
    L += [f"- {p} {v}" for p, v in vers.items()]
    L += ["", "## What goes wrong", "", f"{info['kind']}: {info['message']}."]
    if info.get("on_seed"):
        L += ["", "It happens on the unmutated seed volume too: a bug on a well-formed volume."]
    L += ["", "Fields the volume changes, against the well-formed volume it was made from: "
          + ("; ".join(dict.fromkeys(", ".join(_printable(f) for f in r["fields"])
                                     for r in info.get("ranges", [])))
             or "(none)") + "."]
    L += ["", "Evidence when found:", "", "```"] + clip(info.get("evidence", "").split("\n"), 30) + ["```"]
    L += ["", "## Steps", "", "    sh run.sh            # or: sh run.sh WORKDIR to keep the work files", "",
          (f"`run.sh` unpacks `image.img.xz` (the minimised volume), {mod.HOSTILE_STEPS_OPS}. "
           "It ends with `REPRODUCED: why` (exit 0), "
           if info.get("ops") and hasattr(mod, "HOSTILE_STEPS_OPS") else
           "`run.sh` unpacks `image.img.xz` (the minimised volume), appends a 64 KiB guard to it (bytes "
           "past the declared volume end, as a next partition would be: 32 fixed bytes repeated) and runs the tool on it, which rewrites it in place, bounded by `timeout` "
           "(HANG_S seconds, default 10)"
           + (", then compares the bytes it must leave as they are with their copies taken before"
              if info["kind"] == "overwrite" else "") + ". It ends with `REPRODUCED: why` (exit 0), "
           if info.get("role") == "transformer" else
           "`run.sh` unpacks `image.img.xz` (the minimised volume) and runs the tool on it, bounded by "
           "`timeout` (HANG_S seconds, default 10). It ends with `REPRODUCED: why` (exit 0), ") +
          "`NOT REPRODUCED` (exit 1) or `CANNOT RUN: why` (exit 2).", "",
          "## Expected", "", EXPECT.get(("tx-" if info.get("role") == "transformer" and info["kind"] in
                                         ("crash", "hang") else "") + info["kind"],
                                        "the tool reads the volume or refuses it cleanly") + ".",
          "", "## Actual", ""]
    if status is None:
        L.append("Not run when exported.")
    else:
        L.append(f"{where_run(printed, mod)}: **{RESULT.get(status, status)}** (`{last_line(printed)}`).")
        L += ["", "What `run.sh` printed (`printed.txt`):", "", "```"]
        L += clip(printed.rstrip("\n").split("\n"), 60) + ["```"]
    L += ["", "## The mutated fields", "",
          "Offset, field, and the bytes of the well-formed seed volume beside the hostile ones:", "",
          "```", _printable_lines(c["hexdump"].rstrip("\n")[:6000]), "```", "",
          "## Files", "", "`image.img.xz` (xz), `run.sh`, `printed.txt`.", ""]
    return "\n".join(L)
