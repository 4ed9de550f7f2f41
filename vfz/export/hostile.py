"""Reproducers of hostile-volume findings (vfz/hostile*.py, reports/hostile/)
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

    crash    mtools: `mdir -/ -b -a` (the hostile campaign's command); a
             signal is the symptom; a sanitizer report ("runtime error:",
             "AddressSanitizer") needs a sanitizer build of mtools, named
             by MDIR=/path/to/mdir (else CANNOT RUN)
    hang     the listing of each directory whose cluster chain loops (found
             in the image here, written into run.sh), bounded by a limit
             (HANG_S seconds, default 10): GRUB `grub-fstest IMG ls -la`,
             U-Boot `fatls` typed at qemu-x86 U-Boot's prompt (as
             vfz/export_uboot.py), fusefat a `ls -la` on its mount. A
             listing that does not end in the limit, or that prints more
             than 1 MiB for a directory of a few entries, is the symptom
    canary   the file the finding names read with the tool: fatcat `-x DIR`
             (every file), mtools `mcopy -n`, GRUB `grub-fstest cp`, fusefat
             `cat` on its mount, U-Boot `fatload` + `md.b`; contents equal
             to the canary pattern (bytes placed only past the volume's
             declared end) are the symptom
    overwrite  a transformer's finding (vfz/hostile/transform.py): run.sh appends the
             guard to image.img (the tool gets what the campaign gave it:
             the volume and 64 KiB past it; so do a transformer's crash and
             hang reproducers) and saves the byte ranges it must leave as they are
             (past the declared volume end; fatsort: also its boot sector,
             reserved sectors and FATs), runs the tool's command from the
             evidence, bounded by timeout, and compares them with cmp: a
             changed byte, or a file grown past the declared end, is the
             symptom (how many bytes, the first offset)
    other    a crash or hang whose evidence holds the tool's command line
             ('$ tool ... hostile.img ...'): that command, bounded by timeout

    export_finding(finding_dir, out_dir, run=True) -> {"dir", "status", "result"}
"""
import json
import os
import struct

from vfz import export_uboot, fatimg
from vfz.export import reproducer as export
from vfz.hostile import findings as hf
from vfz.export.reproducer import ExportError, q

PACKAGES = {"fatsort": ["fatsort"], "mtools": ["mtools"], "grub": ["grub-common"], "uboot": ["u-boot-qemu", "qemu-system-x86"],
            "fusefat": ["fusefat", "fuse"], "fatcat": ["fatcat"], "dosfsck": ["dosfstools"],
            "7z": ["7zip", "p7zip-full"], "sleuthkit": ["sleuthkit"]}
CAP = 1 << 20          # bytes of listing output that mean "never ends"


def looping_dirs(img):
    """Paths of the directories whose cluster chain loops (reached first
    by a walk from the root that visits each directory cluster once)."""
    fat = fatimg.Fat(img)
    out, seen = [], set()
    todo = [("", None)]
    while todo and len(seen) < 10000:
        path, cl = todo.pop(0)
        for off, name11, attr, first, size, lfn in _short_entries(fat, cl):
            if not attr & 0x10 or name11[:1] == b"." or first < 2:
                continue
            name = export._lfn_text(fat, lfn) if lfn else fatimg.short_text(name11)
            p = f"{path}/{name}"
            if _loops(fat, first):
                out.append(p)
            elif first not in seen:
                seen.add(first)
                todo.append((p, first))
    return out


def uboot_word(path):
    """path as one word of U-Boot's hush, unquoted: every character but
    letters, digits and / . _ - after a backslash (a name holding a quote
    cannot be typed inside quotes)."""
    export_uboot.typed(path)       # refuses what U-Boot's prompt cannot take at all
    return "".join(c if c.isalnum() and ord(c) < 0x80 or c in "/._-" else "\\" + c for c in path)


def _short_entries(fat, cl):
    try:
        if cl is not None and _loops(fat, cl):
            return []
        return fat.short_entries(cl)
    except (struct.error, IndexError, ValueError):
        return []


def _loops(fat, c):
    met = set()
    while 2 <= c < fat.clusters + 2:
        if c in met:
            return True
        met.add(c)
        c = fat.get(c)
    return False


KERNEL_OPS = r"""
[ "$(id -u)" = 0 ] || cannot "a loop mount needs root"
command -v dmesg >/dev/null 2>&1 || cannot "dmesg not found (util-linux)"
echo "kernel: $(uname -r)"
M="$OUT/mnt"
mkdir -p "$M"
BEFORE=$(dmesg | wc -l)
mount -t vfat -o loop,{OPTIONS} "$IMG" "$M" 2> "$OUT/mount.err" \
    || cannot "mount failed: $(cat "$OUT/mount.err")"
trap 'umount "$M" 2>/dev/null' EXIT
kstep() {   # N ANY COMMAND...: run it; on a hostile volume any answer is allowed, the kernel log is the test
    n=$1; shift 2
    echo "op $n: $*"
    "$@" > "$OUT/op$n.txt" 2>&1
    rc=$?
    indent < "$OUT/op$n.txt"
    echo "    exit $rc"
}
"""

KERNEL_LOG = r"""
umount "$M" && trap - EXIT
echo "== kernel messages since the mount"
dmesg | tail -n +$((BEFORE + 1)) > "$OUT/dmesg.txt"
indent < "$OUT/dmesg.txt" | head -n 60
if grep -q 'WARNING:\|BUG:\|Oops\|general protection' "$OUT/dmesg.txt"; then
    bug "kernel: $(grep -m 1 'WARNING:\|BUG:\|Oops\|general protection' "$OUT/dmesg.txt" | sed 's/^\[[ 0-9.]*\] //')"
fi
"""


def kernel_ops_body(info, data):
    """A Linux writer's finding: the op-script through the loop mount
    (vfz/export_kernel.py's commands), then the kernel log."""
    from vfz import export_kernel, opscript
    ops = opscript.parse(info["ops"])
    case = export.Case(impl="kernel", side="writer", ops=ops, fs="?", image="",
                       results=["any"] * len(ops))
    lines = export_kernel.ops(case, data).replace("kstep ", "kstep ", -1)
    return (KERNEL_OPS.replace("{OPTIONS}", export_kernel.OPTIONS)
            + export_kernel.KSTEP.split("kstep()")[0] + lines + KERNEL_LOG)


def body(info, impl, img, data=None, regions=None):
    kind = info["kind"]
    if info.get("ops") and impl == "kernel":
        return kernel_ops_body(info, data), [("mount", "mount"), ("dmesg", "util-linux")]
    if kind == "crash" and impl == "mtools":
        san = "runtime error" in info["message"] or "Sanitizer" in info["message"] or \
            "asan" in json.dumps(info.get("cfg", {}))
        return MTOOLS.replace("{SAN}", "1" if san else "0"), [("mdir", "mtools")]
    if kind == "canary" and impl == "fatcat":
        return FATCAT.replace("{CANARY}", info["canary"]), [("fatcat", "fatcat"), ("od", "coreutils")]
    if kind == "hang":
        dirs = looping_dirs(img) or ["/"]
        words = " ".join(q(d) for d in dirs)
        if impl == "grub":
            return HANG_GRUB.replace("{DIRS}", words), [("grub-fstest", "grub-common"), ("timeout", "coreutils")]
        if impl == "fusefat":
            return HANG_FUSEFAT.replace("{DIRS}", words), [("fusefat", "fusefat"), ("fusermount", "fuse"),
                                                         ("timeout", "coreutils")]
        if impl == "uboot":
            words = " ".join(q(uboot_word(d)) for d in dirs)
            body = export_uboot.CONSOLE.replace("{XFER}", "") + HANG_UBOOT.replace("{DIRS}", words)
            return body, export_uboot.NEEDS
    if kind == "canary" and impl in ("mtools", "grub", "fusefat", "uboot"):
        path = canary_path(info)
        head = CANARY_FN.replace("{CANARY}", info["canary"])
        if impl == "mtools":
            return head + CANARY_MTOOLS.replace("{PATH}", q(export_mtools_path(path))), \
                [("mcopy", "mtools"), ("od", "coreutils")]
        if impl == "grub":
            return head + CANARY_GRUB.replace("{PATH}", q(path)), \
                [("grub-fstest", "grub-common"), ("od", "coreutils")]
        if impl == "fusefat":
            return head + CANARY_FUSEFAT.replace("{PATH}", q(path)), \
                [("fusefat", "fusefat"), ("fusermount", "fuse"), ("od", "coreutils")]
        body = (export_uboot.CONSOLE.replace("{XFER}", "") + head
                + CANARY_UBOOT.replace("{PATH}", q(uboot_word(path))))
        return body, export_uboot.NEEDS + [("od", "coreutils")]
    cmd = evidence_command(info)
    if kind == "overwrite" and cmd and regions:
        return overwrite_body(cmd, regions), [(cmd.split()[0], PACKAGES.get(impl, ["?"])[0]),
                                              ("timeout", "coreutils"), ("cmp", "diffutils")]
    if kind in ("crash", "hang") and cmd:
        return (GENERIC.replace("{CMD}", cmd).replace("{SHOWN}", q(cmd.replace('"$IMG"', "image.img"))),
                [(cmd.split()[0], PACKAGES.get(impl, ["?"])[0]), ("timeout", "coreutils")])
    raise ExportError(f"no hostile reproducer for a {kind} of {impl} (have: mtools crash, canaries of "
                      "fatcat/mtools/GRUB/fusefat/U-Boot, GRUB/U-Boot/fusefat hangs, a transformer's "
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


def canary_path(info):
    for ln in info.get("evidence", "").split("\n"):
        if ln.startswith("canary contents: /"):
            return ln[len("canary contents: "):]
    raise ExportError("a canary finding whose evidence names no file")


def export_mtools_path(path):
    """::PATH for mtype, mtools' glob characters escaped."""
    return "::" + "".join("\\" + c if c in "[]*?\\" else c for c in path)


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


MTOOLS = r"""
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

FATCAT = r"""
CANARY={CANARY}
echo "== fatcat image.img -x DIR"
X="$OUT/x"
rm -rf "$X"
mkdir -p "$X"
timeout -k 2 ${HANG_S:-10} fatcat "$IMG" -x "$X" > "$OUT/x.txt" 2>&1
rc=$?
grep -a '^Extracting' "$OUT/x.txt" | sed "s|$X||" | indent
echo "    exit $rc"
[ $rc -lt 128 ] || bug "fatcat -x killed by signal $((rc - 128))"
[ $rc -ne 124 ] || bug "fatcat -x did not end within ${HANG_S:-10} s"
find "$X" -type f | while IFS= read -r f; do
    if od -An -v -tx1 "$f" | tr -d ' \n' | grep -q "$CANARY"; then
        echo "${f#$X}"
    fi
done > "$OUT/canary.txt"
if [ -s "$OUT/canary.txt" ]; then
    echo "files holding the canary (bytes that lie only past the volume's declared end):"
    indent < "$OUT/canary.txt"
    bug "fatcat returned contents from past the declared volume end: $(head -n 1 "$OUT/canary.txt")"
fi
"""

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

CANARY_FN = r"""
CANARY={CANARY}
canary_hex() {   # HEX: are these bytes the canary (the pattern, repeated), bytes found only past the volume's declared end?
    n=$((${#1} / 2))
    [ "$n" -gt 0 ] || return 1
    want=$(i=0; while [ $i -lt $(( (n + 31) / 32 )) ]; do printf %s "$CANARY"; i=$((i + 1)); done | cut -c1-$((2 * n)))
    [ "$1" = "$want" ]
}
has_canary() {   # FILE
    canary_hex "$(od -An -v -tx1 "$1" | tr -d ' \n')"
}
"""

CANARY_MTOOLS = r"""
P={PATH}
echo "== mcopy -i image.img -n $P file.bin"
rm -f "$OUT/file.bin"
MTOOLS_SKIP_CHECK=1 timeout -k 2 ${HANG_S:-10} mcopy -i "$IMG" -n "$P" "$OUT/file.bin" > "$OUT/err.txt" 2>&1
rc=$?
indent < "$OUT/err.txt"
echo "    exit $rc, $(wc -c < "$OUT/file.bin") bytes"
[ -f "$OUT/file.bin" ] && has_canary "$OUT/file.bin" && bug "mcopy returned bytes from past the declared volume end (the canary) for $P"
"""

CANARY_GRUB = r"""
P={PATH}
echo "== grub-fstest image.img -- cp '(loop0)$P' file.bin"
timeout -k 2 ${HANG_S:-10} grub-fstest "$IMG" -- cp "(loop0)$P" "$OUT/file.bin" > "$OUT/err.txt" 2>&1
rc=$?
indent < "$OUT/err.txt"
echo "    exit $rc, $(wc -c < "$OUT/file.bin" 2>/dev/null || echo 0) bytes"
[ -f "$OUT/file.bin" ] && has_canary "$OUT/file.bin" && bug "GRUB read bytes from past the declared volume end (the canary) for $P"
"""

CANARY_FUSEFAT = r"""
P={PATH}
M="$OUT/mnt"
mkdir -p "$M"
fusefat -f -s -o ro "$IMG" "$M" > "$OUT/fusefat.log" 2>&1 &
FPID=$!
i=0
until grep -q " $M fuse" /proc/mounts; do
    i=$((i + 1))
    if [ $i -gt 100 ] || ! kill -0 $FPID 2>/dev/null; then
        cannot "fusefat did not mount the image: $(tail -n 2 "$OUT/fusefat.log")"
    fi
    sleep 0.1
done
trap 'kill -9 $FPID 2>/dev/null; fusermount -u -z "$M" 2>/dev/null' EXIT
echo "== cat on the fusefat mount: $P"
timeout -k 2 ${HANG_S:-10} cat "$M$P" > "$OUT/file.bin" 2> "$OUT/err.txt"
rc=$?
indent < "$OUT/err.txt"
echo "    exit $rc, $(wc -c < "$OUT/file.bin") bytes"
has_canary "$OUT/file.bin" && bug "fusefat returned bytes from past the declared volume end (the canary) for $P"
fusermount -u "$M" 2>/dev/null
"""

CANARY_UBOOT = r"""
P={PATH}
echo "== U-Boot: fatload virtio 0:0 0x02000000 $P; md.b the bytes it read"
ucmd "fatload virtio 0:0 0x02000000 $P"
indent < "$OUT/cmd.txt"
n=$(sed -n 's/^\([0-9][0-9]*\) bytes read.*/\1/p' "$OUT/cmd.txt" | tail -n 1)
if [ "$URC" = 0 ] && [ -n "$n" ]; then
    [ "$n" -le 65536 ] || n=65536
    ucmd "md.b 0x02000000 $(printf '%x' "$n")"
    hx=$(tr -d '\r' < "$OUT/cmd.txt" | sed -n 's/^[0-9a-f]*: \(\([0-9a-f][0-9a-f] \)*\).*/\1/p' | tr -d ' \n')
    echo "    $n bytes read, $((${#hx} / 2)) dumped: $(printf '%s' "$hx" | cut -c1-64)..."
    canary_hex "$hx" && bug "U-Boot fatload read bytes from past the declared volume end (the canary) for $P"
else
    echo "    fatload: \$? $URC"
fi
kill $QPID 2>/dev/null
wait $QPID 2>/dev/null
trap - EXIT
"""

HANG_GRUB = r"""
for d in {DIRS}; do
    echo "== grub-fstest image.img -- ls -la '(loop0)$d/' (limit ${HANG_S:-10} s, 1 MiB of output)"
    { timeout -k 2 ${HANG_S:-10} grub-fstest "$IMG" -- ls -la "(loop0)$d/" 2>&1; echo $? > "$OUT/rc"; } \
        | head -c """ + str(CAP) + r""" > "$OUT/ls.txt"
    rc=$(cat "$OUT/rc")
    n=$(wc -c < "$OUT/ls.txt")
    head -c 300 "$OUT/ls.txt" | indent
    echo
    echo "    exit $rc, $n bytes of output"
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        bug "grub-fstest ls of $d did not end within ${HANG_S:-10} s"
    elif [ "$n" -ge """ + str(CAP) + r""" ]; then
        bug "grub-fstest ls of $d printed more than 1 MiB (endless listing)"
    fi
done
"""

HANG_FUSEFAT = r"""
M="$OUT/mnt"
mkdir -p "$M"
fusefat -f -s -o ro "$IMG" "$M" > "$OUT/fusefat.log" 2>&1 &
FPID=$!
i=0
until grep -q " $M fuse" /proc/mounts; do
    i=$((i + 1))
    if [ $i -gt 100 ] || ! kill -0 $FPID 2>/dev/null; then
        cannot "fusefat did not mount the image: $(tail -n 2 "$OUT/fusefat.log")"
    fi
    sleep 0.1
done
trap 'kill -9 $FPID 2>/dev/null; fusermount -u -z "$M" 2>/dev/null' EXIT
for d in {DIRS}; do
    echo "== ls -la on the fusefat mount: $d (limit ${HANG_S:-10} s)"
    ls -la "$M$d/" > "$OUT/ls.txt" 2>&1 &
    LPID=$!
    end=$(($(date +%s) + ${HANG_S:-10}))
    while kill -0 $LPID 2>/dev/null && [ "$(date +%s)" -le $end ]; do
        sleep 0.2
    done
    if kill -0 $LPID 2>/dev/null; then
        # ls waits in the kernel for fusefat's answer: only ending fusefat frees it
        st=$(ps -o stat=,time= -p $FPID 2>/dev/null)
        kill -9 $FPID 2>/dev/null
        fusermount -u -z "$M" 2>/dev/null
        kill -9 $LPID 2>/dev/null
        wait $LPID 2>/dev/null
        bug "readdir of $d on the fusefat mount did not end within ${HANG_S:-10} s (fusefat state, CPU time: $st)"
        break
    fi
    wait $LPID
    rc=$?
    head -c 300 "$OUT/ls.txt" | indent
    echo "    exit $rc"
    kill -0 $FPID 2>/dev/null || { bug "fusefat died: $(tail -n 1 "$OUT/fusefat.log")"; break; }
done
"""

HANG_UBOOT = r"""
for d in {DIRS}; do
    echo "== U-Boot: fatls virtio 0:0 $d (limit ${HANG_S:-10} s)"
    N=$((N + 1))
    printf 'fatls virtio 0:0 %s; echo "@@V""FZ%d" $?\n' "$d" $N >&3
    end=$(($(date +%s) + ${HANG_S:-10}))
    while ! grep -q "@@VFZ$N " "$OUT/console.log" && kill -0 $QPID 2>/dev/null \
            && [ "$(date +%s)" -le $end ]; do
        sleep 0.2
    done
    if grep -q "@@VFZ$N " "$OUT/console.log"; then
        echo "    fatls returned"
    elif ! kill -0 $QPID 2>/dev/null; then
        cannot "QEMU ended: $(tail -n 3 "$OUT/console.log")"
    else
        tr -d '\r' < "$OUT/console.log" | tail -n 6 | indent
        bug "U-Boot fatls of $d did not return to the prompt within ${HANG_S:-10} s"
        break
    fi
done
kill $QPID 2>/dev/null
wait $QPID 2>/dev/null
trap - EXIT
"""


def export_finding(path, dirname, run=True, timeout=120):
    """Write the reproducer of the hostile finding PATH into DIRNAME."""
    if not hf.is_hostile_finding(path):
        raise ExportError(f"{path}: not a hostile finding (no finding.json + hostile.img.xz)")
    c = hf.export_case(path)
    with open(os.path.join(path, "finding.json"), encoding="utf-8") as f:
        info = json.load(f)
    impl = c["impl"]
    data = export.Data()
    text, needs = body(info, impl, c["image"], data, c.get("regions"))
    title = f"{info['reader']}: {info['kind']} on a hostile FAT volume ({info['message']})"
    sh = export.PREAMBLE.format(title=title.replace("\n", " "),
                                tools=", ".join(sorted({p for _, p in needs})),
                                needs="\n".join(f"need {a} {b}" for a, b in needs))
    sh += (c.get("guard") or "") + text + export.TAIL
    os.makedirs(dirname, exist_ok=True)
    import lzma
    export._write(dirname, "run.sh", sh.encode("utf-8"), mode=0o755)
    export._write(dirname, "image.img.xz", lzma.compress(c["image"], preset=9))
    for name, blob in data.files.items():
        export._write(dirname, name, blob)
    if info.get("ops"):
        export._write(dirname, "ops.txt", info["ops"].encode("utf-8"))
    status, printed = None, ""
    if run:
        env_mdir = _sanitizer_mdir(info)
        old = os.environ.get("MDIR")
        if env_mdir:
            os.environ["MDIR"] = env_mdir
        try:
            status, printed, work = export.run_script(dirname, timeout)
        finally:
            if env_mdir:
                if old is None:
                    os.environ.pop("MDIR", None)
                else:
                    os.environ["MDIR"] = old
        import shutil
        shutil.rmtree(work, ignore_errors=True)
        if status == 2 and impl == "kernel":
            # no vfat here: the kernel oracle's guest, as vfz.export_kernel does
            from vfz import export_kernel
            why = next((ln for ln in printed.split("\n") if ln.startswith("CANNOT RUN")), "")
            st2, pr2, _ = export_kernel.run_elsewhere(dirname, timeout)
            if st2 != 2:
                status, printed = st2, f"# this host: {why}; run in {export_kernel.ELSEWHERE}\n" + pr2
        export._write(dirname, "printed.txt", printed.encode("utf-8"))
    export._write(dirname, "README.md", report(info, c, impl, status, printed, path).encode("utf-8"))
    return {"dir": dirname, "status": status, "result": export.last_line(printed)}


def _sanitizer_mdir(info):
    """The sanitizer mdir a finding was made with, when it is on this machine."""
    m = (info.get("cfg") or {}).get("mdir")
    return m if m and os.access(m, os.X_OK) else None


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
    vers = export.package_versions(PACKAGES.get(impl, []))
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
    L += ["", "Evidence when found:", "", "```"] + export._clip(info.get("evidence", "").split("\n"), 30) + ["```"]
    L += ["", "## Steps", "", "    sh run.sh            # or: sh run.sh WORKDIR to keep the work files", "",
          ("`run.sh` unpacks `image.img.xz` (the minimised volume), mounts it with `mount -o loop` "
           "(root needed), applies `ops.txt` with mkdir, dd, rename(2), rm and rmdir, and reads the "
           "kernel log (dmesg) for WARNING, BUG or Oops. It ends with `REPRODUCED: why` (exit 0), "
           if info.get("ops") and impl == "kernel" else
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
        where = "On the exporting machine"
        if printed.startswith("# this host: "):
            where += ", in the kernel oracle's QEMU guest (this host has no vfat)"
        L.append(f"{where}: **{export.RESULT.get(status, status)}** "
                 f"(`{export.last_line(printed)}`).")
        L += ["", "What `run.sh` printed (`printed.txt`):", "", "```"]
        L += export._clip(printed.rstrip("\n").split("\n"), 60) + ["```"]
    L += ["", "## The mutated fields", "",
          "Offset, field, and the bytes of the well-formed seed volume beside the hostile ones:", "",
          "```", _printable_lines(c["hexdump"].rstrip("\n")[:6000]), "```", "",
          "## Files", "", "`image.img.xz` (xz), `run.sh`, `printed.txt`.", ""]
    return "\n".join(L)
