"""mtools' reproducer template (vfz/oracles/repro.py): mmd / mcopy / mmove / mdel /
mrd replay the ops (writer side), mdir -/ -b -a and mtype list the tree
(both sides). The script writes its own mtoolsrc as the oracle does
(codepage 437, mtools_skip_check=1) and runs under LC_ALL=C.UTF-8.

Ops a correct implementation refuses (the expected result is an errno) are
not run: mtools would prompt or do something else, and the bug lies in
what it does with the others. A rename onto an existing entry deletes the
target first (mdel/mrd), as mmove would otherwise move into a directory.

Hostile findings (hostile_body): a crash is `mdir -/ -b -a` (the hostile
campaign's command), a signal the symptom; a sanitizer report ("runtime
error:", "AddressSanitizer") needs a sanitizer build of mtools, named by
MDIR=/path/to/mdir (else CANNOT RUN; hostile_env names the finding's own
when it is on this machine). A canary is the file the finding names
copied out with `mcopy -n`, its contents compared with the canary. A
hostile write's crash or hang (finding.json "ops"): the writer's listing
(mdir), then each op as the differential reproducer runs it, bounded by
timeout; any exit status is an answer, a signal or the limit the symptom.
"""
import json
import os

from vfz import model
from vfz.oracles.repro import CANARY_FN, canary_path, fsck_check, op_data, q

PACKAGES = ["mtools"]
HOSTILE_PACKAGES = ["mtools"]
HOSTILE_STEPS_OPS = ("lists it with `mdir -/ -b -a` as the writer does before its ops, then applies "
                     "`ops.txt` with mmd, mcopy, mmove, mdel and mrd, each bounded by `timeout` (HANG_S "
                     "seconds, default 10): any exit status is an answer, a signal or the limit the symptom")
HOSTILE = "crash (mdir), canary (mcopy), a writer's crash or hang (its listing, then ops.txt as mtools commands)"
NEEDS = [("mdir", "mtools"), ("mtype", "mtools"), ("mmd", "mtools"), ("mcopy", "mtools"),
         ("mmove", "mtools"), ("mdel", "mtools"), ("mrd", "mtools"), ("sha256sum", "coreutils")]
SIDES = ("reader", "writer")
SHA = True
LISTING = True
TOOL = "mdir/mtype"
STEPS = ("(writer bugs) applies the operations with mmd, mcopy, mmove, mdel and mrd, checking "
         "each exit status, then lists the tree with `mdir -/ -b -a` and reads every file with "
         "`mtype`")
EXPECTED = ("the tree a correct implementation holds (Linux 6.1 vfat for the writer side; the "
            "names the writer was given for the reader side), as mdir and mtype should show it: "
            "`d PATH` for a directory, `f PATH SIZE SHA256` for a file. mtools shows a character "
            "outside the BMP as `__` (a known reader limitation), so the writer side expects that "
            "spelling.")

MTOOLSRC = "mtools_skip_check=1\nmtools_no_vfat=0\ndefault_codepage=437\n"

# Knobs (Case.extra):
#   "repeat": N  a nondeterministic bug: after the ops, replay them N times
#                (REPEAT=N overrides) on fresh copies of the image, each run
#                with another environment size (PAD=...: the stack moves),
#                and count the runs whose image fsck.fat -n calls bad (a
#                short name holding NUL bytes, a wrong LFN checksum); the
#                script says how often it showed
#   "check": "dates"  after the ops, mdir shows each touched file's modify
#                date, held against the date Linux stores (clamped to
#                1980..2107: mtools-time-wrap)
#   "check": "fsck"  after the ops, fsck.fat -n reads the image mtools left
#                (damage mdir's listing hides or shows only as another name:
#                an LFN set whose checksum does not match its 8.3 entry, an
#                8.3 name holding NUL bytes); any complaint is a symptom, and
#                the first slots of the root directory are dumped (od) so the
#                11 bytes of each 8.3 name can be read
# Any run: MTOOLS_SAN=/path/to/mtools (a multi-call mtools built with
# -fsanitize=address) makes every mtools command that build; an
# AddressSanitizer report is then a symptom of its own.


def shown(case, path):
    """Writer side: mdir spells a character outside the BMP '__' even when
    the writer stored it right (reader exception mtools-astral-read), so
    the expected listing does too; reader side: the real names."""
    return model.mtools_shown(path) if case.side == "writer" else path


def _esc(path):
    """mtools globs [ ] * ? \\ in a path: escape them."""
    return "".join("\\" + c if c in "[]*?\\" else c for c in path)


def mpath(path):
    return q("::" + (_esc(path) or "/"))


def mtarget(path):
    """A new entry: the directory part escaped, the leaf literal (mtools
    takes the last component of a target as it is)."""
    comps = [c for c in path.split("/") if c]
    parent = "/" + "/".join(comps[:-1])
    base = "::" + _esc(parent)
    return q(base + ("" if base.endswith("/") else "/") + comps[-1])


COMMON = r"""
printf '%s' {rc} > "$OUT/mtoolsrc"
export MTOOLSRC="$OUT/mtoolsrc" MTOOLS_SKIP_CHECK=1 TZ=UTC0
if [ -n "${{MTOOLS_SAN:-}}" ]; then
    [ -x "$MTOOLS_SAN" ] || cannot "MTOOLS_SAN=$MTOOLS_SAN is not an executable"
    mkdir -p "$OUT/san"
    for c in mmd mcopy mmove mdel mrd mdir mtype; do ln -sf "$MTOOLS_SAN" "$OUT/san/$c"; done
    PATH="$OUT/san:$PATH"
    export ASAN_OPTIONS=detect_leaks=0
    echo "mtools commands from the sanitizer build $MTOOLS_SAN"
fi
cp "$IMG" "$OUT/pristine.img"
step() {{   # N EXPECTED COMMAND...: run one mtools command, check its exit status
    n=$1; want=$2; shift 2
    echo "op $n: $*"
    "$@" > "$OUT/op$n.txt" 2>&1
    rc=$?
    indent < "$OUT/op$n.txt"
    if grep -q 'ERROR: AddressSanitizer' "$OUT/op$n.txt"; then
        bug "op $n: $1: $(grep -m 1 -o 'AddressSanitizer: [a-z-]*' "$OUT/op$n.txt") in $(sed -n '/ERROR: AddressSanitizer/,$p' "$OUT/op$n.txt" | grep -m 1 '#0 ' | sed 's/.* in //; s/ .*\/src\/mtools\// /')"
    fi
    if [ $rc -ge 128 ]; then
        bug "op $n: $1 killed by signal $((rc - 128)) ($(tail -n 1 "$OUT/op$n.txt"))"
    elif [ $rc -ne 0 ] && [ "$want" = ok ]; then
        bug "op $n: $1 failed (exit $rc) where Linux succeeds: $(tail -n 1 "$OUT/op$n.txt")"
    else
        echo "    exit $rc"
    fi
}}
mtools_listing() {{   # IMAGE -> "d PATH" / "f PATH SIZE SHA256" lines
    mdir -i "$1" -/ -b -a ::/ > "$OUT/mdir.txt" 2> "$OUT/mdir.err"
    echo "mdir exit $?: $(head -c 300 "$OUT/mdir.err")" >&2
    while IFS= read -r line; do
        case "$line" in
            ::/) echo "? (an entry mdir prints with an empty name)" ;;
            ::/*/) p=${{line#::}}; echo "d ${{p%/}}" ;;
            ::/*)
                p=${{line#::}}
                e=$(printf '%s' "$p" | sed 's/[][*?\\]/\\&/g')
                if mtype -i "$1" "::$e" > "$OUT/file.bin" 2> "$OUT/mtype.err"; then
                    echo "f $p $(wc -c < "$OUT/file.bin" | tr -d ' ') $(sha256sum < "$OUT/file.bin" | cut -d' ' -f1)"
                else
                    echo "f $p ? (mtype failed: $(head -n 1 "$OUT/mtype.err"))"
                fi ;;
        esac
    done < "$OUT/mdir.txt"
}}
"""


REPEAT = r"""
echo "== the operations again, $REPEAT times, each on a fresh copy with another environment size"
echo "   (a nondeterministic bug: mtools reads stack bytes it never set)"
command -v fsck.fat >/dev/null 2>&1 || cannot "fsck.fat not found (Debian package dosfstools): needed to judge the repeated runs"
HITS=0
i=1
while [ $i -le $REPEAT ]; do
    cp "$OUT/pristine.img" "$IMG"
    PAD=$(head -c $(( (i * 523) % 8192 )) /dev/zero | tr '\\0' x)
    export PAD
    replay > "$OUT/replay.txt" 2>&1
    if ! fsck.fat -n "$IMG" > "$OUT/fsck.txt" 2>&1; then
        HITS=$((HITS + 1))
        [ $HITS -gt 1 ] || { cp "$IMG" "$OUT/hit.img"; echo "run $i: fsck.fat -n:"; indent < "$OUT/fsck.txt"; }
    fi
    i=$((i + 1))
done
unset PAD
echo "fsck.fat -n complained after $HITS of $REPEAT runs"
[ $HITS -eq 0 ] || bug "$HITS of $REPEAT runs of the same operations left an image fsck.fat calls bad (first kept as hit.img)"
"""


# extra {"check": "fsck"}: fsck.fat -n (vfz.export.reproducer.fsck_check), then the
# root's first slots as od prints them, so the 11 bytes of each 8.3 name
# can be read
ROOT_OD = r"""echo "== the first {n} slots of the root directory (byte {off}), as od prints them"
od -A d -t x1z -v -j {off} -N {size} "$OUT/after.img" | indent
"""


def _root_offset(image):
    """Byte offset of the root directory's first slot."""
    from vfz import fatimg
    with open(image, "rb") as f:
        return fatimg.Fat(f.read()).dir_slots(None)[0]


def _dates(case):
    """The "dates" check: mdir's date of each touched file against Linux's
    (vfz.model.inode.stored_mtime, UTC)."""
    import time
    from vfz.model.inode import stored_mtime
    out = ['echo "== the modify date mdir shows for each touched file, and Linux\'s"\n']
    for op in case.ops:
        if op.kind != "touch":
            continue
        want = time.strftime("%Y-%m-%d", time.gmtime(stored_mtime(op.args[1].sec)))
        out.append(f"d=$(mdir -i \"$IMG\" {mpath(op.path)} 2>&1 | grep -o '[0-9]\\{{4\\}}-[0-9][0-9]-[0-9][0-9]' "
                   "| head -n 1)\n")
        out.append(f'echo "    {op.path}: $d (Linux: {want})"\n')
        out.append(f'[ "$d" = {want} ] || bug {q(op.path)}" dated $d where Linux stores {want} '
                   f'(touch to {op.args[1]})"\n')
    return "".join(out)


def body(case, data):
    out = [COMMON.format(rc=q(MTOOLSRC))]
    if case.side == "writer":
        ops = _ops(case, data)
        out.append(ops)
        out.append('cp "$IMG" "$OUT/after.img"\n')
        if (case.extra or {}).get("check") == "dates":
            out.append(_dates(case))
        if (case.extra or {}).get("check") == "fsck":
            out.append(fsck_check("mtools", show=ROOT_OD.format(n=8, off=_root_offset(case.image),
                                                                size=8 * 32)))
        n = (case.extra or {}).get("repeat")
        if n:
            quiet = "".join(ln.replace("step ", "qstep ", 1) for ln in ops.splitlines(True)
                            if ln.startswith("step ") or ln.startswith("rm -f") or ln.startswith("dd "))
            out.append("qstep() { shift 2; \"$@\" >/dev/null 2>&1; }\nreplay() {\n" + quiet + ":\n}\n")
            out.append(f"REPEAT=${{REPEAT:-{int(n)}}}\n" + REPEAT)
            out.append('cp "$OUT/after.img" "$IMG"\n')
    out.append('echo "== listing: mdir -/ -b -a ::/ and mtype"\n')
    out.append('mtools_listing "$IMG" > "$OUT/seen.unsorted" 2> "$OUT/listing.err"\n')
    out.append('indent < "$OUT/listing.err"\n')
    return "".join(out)


def _ops(case, data):
    """The op lines: one step per op the model expects to succeed."""
    m = model.Model("kernel", "dual", root=None)
    lines = ['echo "== the operations"\n']
    for i, op in enumerate(case.ops):
        before = {model.fold(e["path"]): e for e in m.entries()}
        want = case.results[i] if case.results and i < len(case.results) else "ok"
        m.apply_one(op)
        n = i + 1
        if want != "ok":
            lines.append(f"echo {q(f'op {n}: {op} -> {want} (Linux refuses it): not run')}\n")
            continue
        k = op.kind
        if k == "mkdir":
            lines.append(f'step {n} ok mmd -i "$IMG" -D s {mtarget(op.path)}\n')
        elif k == "create":
            f = op_data(data, i, op)
            lines.append(f'step {n} ok mcopy -i "$IMG" -D s "$HERE/{f}" {mtarget(op.path)}\n')
        elif k == "write":
            if op.args[2] == 0:
                lines.append(f"echo 'op {n}: a write of 0 bytes: nothing to do'\n")
                continue
            f = op_data(data, i, op)
            lines.append(f'rm -f "$OUT/w.bin"; mcopy -i "$IMG" -n {mpath(op.path)} "$OUT/w.bin"\n')
            lines.append(f'dd if="$HERE/{f}" of="$OUT/w.bin" bs=1 seek={op.args[1]} conv=notrunc '
                         '2>/dev/null\n')
            lines.append(f'step {n} ok mcopy -i "$IMG" -D o "$OUT/w.bin" {mpath(op.path)}\n')
        elif k == "unlink":
            lines.append(f'step {n} ok mdel -i "$IMG" {mpath(op.path)}\n')
        elif k == "rmdir":
            lines.append(f'step {n} ok mrd -i "$IMG" {mpath(op.path)}\n')
        elif k == "rename":
            src, dst = op.args
            t = before.get(model.fold("/" + "/".join(c for c in dst.split("/") if c)))
            s = before.get(model.fold("/" + "/".join(c for c in src.split("/") if c)))
            if t is not None and t is not s:
                rm = "mrd" if t["type"] == "dir" else "mdel"
                lines.append(f'step {n}a ok {rm} -i "$IMG" {mpath(t["path"])}\n')
            lines.append(f'step {n} ok mmove -i "$IMG" -D s {mpath(src)} {mtarget(dst)}\n')
        else:
            lines += _meta_lines(n, op)
    return "".join(lines)


def _meta_lines(n, op):
    """The second grammar as the mtools writer does it (meta.py): mattrib,
    mcopy -D o of the cut or zero-filled bytes, mcopy -m of a file dated
    MTIME, mlabel (the r/h/s bits a rewrite loses are given back)."""
    k = op.kind
    if k == "chattr":
        flags = " ".join(("+" if c in op.args[1] else "-") + c for c in "rhsa")
        return [f'step {n} ok mattrib -i "$IMG" {flags} {mpath(op.path)}\n']
    if k == "label":
        arg = "-c ::" if op.args[0] == "" else q("::" + op.args[0])
        return [f'step {n} ok mlabel -i "$IMG" {arg}\n']
    get = f'rm -f "$OUT/w.bin"; mcopy -i "$IMG" -n {mpath(op.path)} "$OUT/w.bin"\n'
    if k == "truncate":
        return [get, f'truncate -s {op.args[1]} "$OUT/w.bin"\n',
                f'step {n} ok mcopy -i "$IMG" -D o "$OUT/w.bin" {mpath(op.path)}\n']
    if k == "touch":
        return [get, f'touch -d @{op.args[1].sec} "$OUT/w.bin"\n',
                f'step {n} ok mcopy -i "$IMG" -D o -m "$OUT/w.bin" {mpath(op.path)}\n']
    return [f"echo {q(f'op {n}: {op}: not an mtools command')}\n"]


def hostile_body(info, img, data, regions):
    """A hostile finding's run.sh body and needs, or None (see the docstring)."""
    if info.get("ops") and info["kind"] in ("crash", "hang"):
        return hostile_writer(info, data), [("mdir", "mtools"), ("mcopy", "mtools"), ("timeout", "coreutils")]
    if info["kind"] == "out-of-bounds" and not info.get("ops"):
        # the command the trace names, with the oracle's mtoolsrc (mtools_skip_check=1: as
        # the campaign ran it), under strace
        from vfz.oracles.repro import bounds_command, strace_check
        cmd, parts = bounds_command(info), info["message"].split(" [")[0].split(" ", 2)
        if cmd and len(parts) == 3 and parts[1] in ("read", "write"):
            import struct
            bps = struct.unpack_from("<H", img, 11)[0]
            tot = struct.unpack_from("<H", img, 19)[0] or struct.unpack_from("<I", img, 32)[0]
            end = bps * tot if parts[2] == "past volume" and bps and tot else len(img)
            lo = len(img) if parts[2] == "past image inside volume" else 0
            return (COMMON.format(rc=q(MTOOLSRC)) + MBOUNDS.replace("{CMD}", cmd)
                    + strace_check(parts[1], parts[2], end, lo, parts[0])), \
                [(parts[0], "mtools"), ("strace", "strace"), ("timeout", "coreutils")]
    if info.get("ops") and info["kind"] == "out-of-bounds":
        parts = info["message"].split(" [")[0].split(" ", 2)
        if len(parts) == 3 and parts[1] in ("read", "write"):
            return hostile_writer(info, data, traced=(parts[1], parts[2], img)), \
                [("mdir", "mtools"), ("mcopy", "mtools"), ("strace", "strace"), ("timeout", "coreutils")]
    if info["kind"] == "crash" and info["message"].startswith("mcopy "):
        dest = mcopy_dest(info)
        if dest:
            return (COMMON.format(rc=q(MTOOLSRC)) + MCOPY_CRASH.replace("{LEN}", str(len(dest)))
                    .replace("{DEST}", q(dest))), [("mcopy", "mtools"), ("mktemp", "coreutils")]
    if info["kind"] == "crash" and info["message"].split(" ")[0] in OTHER_TOOLS:
        cmd = evidence_argv(info)
        if cmd:
            return (COMMON.format(rc=q(MTOOLSRC)) + TOOL_CRASH.replace("{CMD}", cmd)
                    .replace("{TOOL}", cmd.split()[0])), [(cmd.split()[0], "mtools"), ("timeout", "coreutils")]
    if info["kind"] == "crash":
        san = "runtime error" in info["message"] or "Sanitizer" in info["message"] or \
            "asan" in json.dumps(info.get("cfg", {}))
        return CRASH.replace("{SAN}", "1" if san else "0"), [("mdir", "mtools")]
    if info["kind"] == "canary":
        path = canary_path(info)
        return (CANARY_FN.replace("{CANARY}", info["canary"]) + CANARY.replace("{PATH}", q("::" + _esc(path))),
                [("mcopy", "mtools"), ("od", "coreutils")])
    return None


def hostile_env(info):
    """The environment of the export-time run: the sanitizer mdir the
    finding was made with (MDIR), when it is on this machine."""
    m = (info.get("cfg") or {}).get("mdir")
    return {"MDIR": m} if m and os.access(m, os.X_OK) else {}


def mcopy_dest(info):
    """The directory the reader's `mcopy -s ... ::/* DEST` copied into when it crashed
    (the evidence's command line), or None."""
    for ln in info.get("evidence", "").split("\n"):
        if ln.startswith("$ mcopy ") and " ::/* " in ln:
            return ln.rsplit(" ", 1)[1]
    return None


# mtools commands the reader runs besides mdir and mcopy (vfz/oracles/mtools/reader.py):
# a crash of one of them is that command again, as the evidence recorded it
OTHER_TOOLS = ("minfo", "mattrib", "mtype")


def evidence_argv(info):
    """The evidence's '$ TOOL -i IMAGE ARGS' line as sh text with the image as "$IMG",
    or None."""
    import shlex
    for ln in info.get("evidence", "").split("\n"):
        if ln.startswith("$ "):
            try:
                argv = shlex.split(ln[2:])
            except ValueError:
                return None
            if len(argv) < 3 or argv[1] != "-i" or "/" in argv[0]:
                return None
            return " ".join([argv[0], "-i", '"$IMG"'] + [q(a) for a in argv[3:]])
    return None


TOOL_CRASH = r"""
echo "== "'{CMD}'" (limit ${HANG_S:-10} s)"
timeout -k 2 ${HANG_S:-10} {CMD} > "$OUT/out.txt" 2>&1
rc=$?
head -n 30 "$OUT/out.txt" | cut -c1-300 | indent
echo "    exit $rc"
[ $rc -ne 124 ] || bug "{TOOL} did not end within ${HANG_S:-10} s"
[ $rc -lt 128 ] || [ $rc -eq 137 ] || bug "{TOOL} killed by signal $((rc - 128))$(grep -m 1 -o 'Assertion .*failed' "$OUT/out.txt" | sed 's/^/: /')"
"""


# the reader's copy of the whole tree (vfz/oracles/mtools/reader.py): mcopy builds each
# target path from the destination directory and the long name, so the crash depends on
# the destination's length: a directory named as the oracle's, of the same length
MCOPY_CRASH = r"""
D=$(mktemp -d /tmp/vfz-mtools-x-XXXXXXXX) || cannot "mktemp failed"
echo "== mcopy -i image.img -s -n -p -Q '::/*' $D (limit ${HANG_S:-10} s; the oracle's destination {DEST} had {LEN} characters, this one ${#D})"
timeout -k 2 ${HANG_S:-10} mcopy -i "$IMG" -s -n -p -Q '::/*' "$D" > "$OUT/mcopy.txt" 2>&1
rc=$?
rm -rf "$D"
head -n 20 "$OUT/mcopy.txt" | cut -c1-300 | indent
echo "    exit $rc"
[ $rc -ne 124 ] || bug "mcopy did not end within ${HANG_S:-10} s"
[ $rc -lt 128 ] || [ $rc -eq 137 ] || bug "mcopy killed by signal $((rc - 128))$(grep -q 'stack smashing' "$OUT/mcopy.txt" && echo ' (stack smashing detected)')"
"""


CRASH = r"""
SAN={SAN}
MDIR=${MDIR:-mdir}
if [ "$SAN" = 1 ] && [ "$MDIR" = mdir ]; then
    cannot "this report comes from a sanitizer build of mtools: build mtools with -fsanitize=address,undefined and run MDIR=/path/to/that/mdir sh run.sh"
fi
echo "== $MDIR -i image.img -/ -b -a ::/"
MTOOLS_SKIP_CHECK=1 timeout -k 2 ${HANG_S:-10} "$MDIR" -i "$IMG" -/ -b -a ::/ > "$OUT/mdir.txt" 2>&1
rc=$?
head -n 40 "$OUT/mdir.txt" | indent
echo "    exit $rc"
[ $rc -ne 124 ] || bug "mdir did not end within ${HANG_S:-10} s"
[ $rc -lt 128 ] || [ $rc -eq 137 ] || bug "mdir killed by signal $((rc - 128))"
if grep -q 'runtime error:\|ERROR: AddressSanitizer' "$OUT/mdir.txt"; then
    bug "sanitizer: $(grep -m 1 'runtime error:\|ERROR: AddressSanitizer' "$OUT/mdir.txt")"
fi
"""

CANARY = r"""
P={PATH}
echo "== mcopy -i image.img -n $P file.bin"
rm -f "$OUT/file.bin"
MTOOLS_SKIP_CHECK=1 timeout -k 2 ${HANG_S:-10} mcopy -i "$IMG" -n "$P" "$OUT/file.bin" > "$OUT/err.txt" 2>&1
rc=$?
indent < "$OUT/err.txt"
echo "    exit $rc, $(wc -c < "$OUT/file.bin") bytes"
[ -f "$OUT/file.bin" ] && has_canary "$OUT/file.bin" && bug "mcopy returned bytes from past the declared volume end (the canary) for $P"
"""


# A hostile write (vfz/hostile/writes.py): the writer lists the volume with mdir before it
# decides each op's outcome, then runs the op's command; on a damaged volume any exit
# status is an answer, a signal or the time limit is the symptom
HSTEP = r"""
step() {   # N WANT COMMAND...: any exit status is an answer; a signal or the limit is the bug
    n=$1; shift 2
    echo "op $n: $*"
    timeout -k 2 ${HANG_S:-10} "$@" > "$OUT/op$n.txt" 2>&1
    rc=$?
    head -n 20 "$OUT/op$n.txt" | indent
    echo "    exit $rc"
    [ $rc -ne 124 ] || bug "op $n: $1 did not end within ${HANG_S:-10} s"
    [ $rc -lt 128 ] || [ $rc -eq 137 ] || bug "op $n: $1 killed by signal $((rc - 128))"
}
echo "== the writer's listing before the ops: mdir -/ -b -a ::/"
timeout -k 2 ${HANG_S:-10} mdir -i "$IMG" -/ -b -a ::/ > "$OUT/mdir0.txt" 2>&1
rc=$?
head -n 20 "$OUT/mdir0.txt" | indent
echo "    exit $rc"
[ $rc -ne 124 ] || bug "mdir did not end within ${HANG_S:-10} s"
[ $rc -lt 128 ] || [ $rc -eq 137 ] || bug "mdir killed by signal $((rc - 128))"
"""


def hostile_writer(info, data, traced=None):
    """run.sh body of a hostile write's crash or hang: the listing the writer starts
    with, then each op of ops.txt as an mtools command (HSTEP); traced=(op, region,
    image): an out-of-bounds finding, every command under strace and its accesses of
    the image reaching the region the symptom (vfz.oracles.repro.strace_check)."""
    from vfz import opscript
    from vfz.oracles.repro import Case, strace_check
    import struct
    ops = opscript.parse(info["ops"])
    case = Case(impl="mtools", side="writer", ops=ops, fs="?", image="", results=["ok"] * len(ops))
    # a write's copy of the file before it: its complaints are no answer of the op's
    ops_sh = _ops(case, data).replace('"$OUT/w.bin"\n', '"$OUT/w.bin" 2>/dev/null\n')
    if traced is None:
        return COMMON.format(rc=q(MTOOLSRC)) + HSTEP + ops_sh
    # and under strace too: the writer's reads of the file it rewrites are its accesses
    ops_sh = ops_sh.replace('rm -f "$OUT/w.bin"; mcopy -i', 'rm -f "$OUT/w.bin"; straced mcopy -i')
    op, where, img = traced
    bps = struct.unpack_from("<H", img, 11)[0]
    tot = struct.unpack_from("<H", img, 19)[0] or struct.unpack_from("<I", img, 32)[0]
    end = bps * tot if where == "past volume" and bps and tot else len(img)
    lo = len(img) if where == "past image inside volume" else 0
    trace = ('command -v strace >/dev/null 2>&1 || cannot "strace not found (Debian package strace)"\n'
             'K=0\nstraced() {   # COMMAND...: under strace, its log appended to $OUT/strace.txt\n'
             '    K=$((K + 1))\n'
             '    strace -f -y -s 0 -e trace=execve,read,pread64,write,pwrite64,lseek -e signal=none '
             '-o "$OUT/strace.$K.txt" "$@"; rc=$?\n'
             '    cat "$OUT/strace.$K.txt" >> "$OUT/strace.txt"\n    return $rc\n}\n: > "$OUT/strace.txt"\n')
    steps = HSTEP.replace('timeout -k 2 ${HANG_S:-10} "$@"', 'straced timeout -k 2 ${HANG_S:-10} "$@"') \
        .replace("timeout -k 2 ${HANG_S:-10} mdir", "straced timeout -k 2 ${HANG_S:-10} mdir")
    return (COMMON.format(rc=q(MTOOLSRC)) + trace + steps + ops_sh
            + f'echo "== the image\'s {op}s past its {where.split()[-1]} (strace)"\n'
            + strace_check(op, where, end, lo, info["message"].split()[0]))


MBOUNDS = r"""
command -v strace >/dev/null 2>&1 || cannot "strace not found (Debian package strace)"
for k in 0 1 2 3 4 5 6 7 8 9; do mkdir -p "$OUT/dir$k"; done
echo "== under strace: "{CMD}
timeout -k 2 ${HANG_S:-10} strace -f -y -s 0 -e trace=execve,read,pread64,write,pwrite64,lseek -e signal=none \
    -o "$OUT/strace.txt" {CMD} > "$OUT/out.txt" 2>&1
echo "    exit $?"
head -n 10 "$OUT/out.txt" | cut -c1-200 | indent
"""
