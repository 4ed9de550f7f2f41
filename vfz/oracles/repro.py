"""The reproducer template contract: what an oracle's exporter is given, and the sh pieces exporters share.

An oracle module declares EXPORTS = {family: "dotted.module"}: its reproducer
template, the module that knows how the tool's own commands replay a case
(docs/oracles.md, "Reproducer templates"). The exporter (vfz/export/) asks
the registry for it (vfz.oracles.exporter) and gives it a Case (an
op-script bug) or a hostile finding's info; it writes run.sh's common
preamble and tail around what the template returns. Everything a template
needs from outside its oracle is here, so that no oracle imports vfz.export
or vfz.check:

    ExportError, Case, Data, op_data, q      the case and its data files
    posix_ops, LIST_MOUNT                     ops as mkdir/dd/rename(2)/rm/rmdir on a
                                              mounted volume, its find/stat/sha256sum listing
    fsck_check                                fsck.fat -n of the image a writer left
    looping_dirs, canary_path, CANARY_FN, CAP hostile findings: looping directories,
                                              the canary file and pattern, the "never ends" cap
"""
import struct
from dataclasses import dataclass, field

from vfz import fatimg, opscript


class ExportError(Exception):
    """The reproducer cannot be written; str() is the one-line reason."""


@dataclass
class Case:
    """What a reproducer reproduces."""
    impl: str                 # the family whose exporter writes it (vfz.oracles.exporters())
    side: str                 # "reader" | "writer"
    ops: list                 # vfz.opscript.Op
    fs: str                   # campaign fs name or spec ("fat16", "fat32:34M:512")
    image: str                # the image the script starts from
    writer: str = None        # who wrote image (reader side)
    title: str = ""
    kind: str = ""            # named exception or finding kind
    reason: str = ""          # a paragraph: what goes wrong
    signature: str = ""
    entries: list = None      # expected canonical listing after the ops
    results: list = None      # expected per-op results (writer side)
    label: str = None         # volume label the image carries (fsck lists it)
    seed: int = None          # the writer's seed (dummies, hex aliases), reader side
    extra: dict = field(default_factory=dict)   # per-implementation knobs
    fat_bits: int = None      # 12, 16 or 32: the FAT width of fs (None: not known)


def q(s):
    """s as one sh word (single quotes)."""
    return "'" + s.replace("'", "'\\''") + "'"


class Data:
    """The contents files of the reproducer (data/<name>.bin; a template may
    add files under a directory of its own, named in its DIRS)."""

    def __init__(self):
        self.files = {}

    def add(self, stem, blob):
        name = f"data/{stem}.bin"
        self.files[name] = blob
        return name


def op_data(data, i, op):
    """data/opN.bin for a create or write: the bytes it puts down."""
    if op.kind == "create":
        return data.add(f"op{i + 1}", opscript.content(op.args[2], op.args[1]))
    if op.kind == "write":
        return data.add(f"op{i + 1}", opscript.content(op.args[3], op.args[2]))
    return None


# ---------------------------------------------------------------- a mounted volume
def posix_ops(case, data):
    """kstep lines for the ops, on the volume mounted at $M: mkdir, a
    create that refuses an existing name, dd, `ren` (rename(2)), rm, rmdir,
    and for the second grammar truncate -s, `setattr` (the FAT attribute
    ioctl) and touch -m / -a; the template defines kstep (N EXPECTED
    COMMAND...), ren and, if its writer does chattr, setattr (PATH BYTE).
    A label op has no POSIX command: it is left out."""
    lines = ['echo "== the operations"\n']
    for i, op in enumerate(case.ops):
        n = i + 1
        want = case.results[i] if case.results and i < len(case.results) else "ok"
        k = op.kind
        p = '"$M"' + q(op.path)
        if k == "mkdir":
            cmd = f"mkdir {p}"
        elif k == "create":
            f = op_data(data, i, op)
            # O_CREAT|O_EXCL as the op means it: refuse an existing name
            cmd = f'sh -c \'[ ! -e "$1" ] && [ ! -L "$1" ] || {{ echo "$1: exists"; exit 1; }}; ' \
                  f'cat "$2" > "$1"\' create {p} "$HERE/{f}"'
        elif k == "write":
            f = op_data(data, i, op)
            if op.args[2] == 0:       # pwrite of 0 bytes: the file must exist, nothing changes
                cmd = f"test -f {p}"
            else:
                cmd = (f'dd if="$HERE/{f}" of={p} bs=1 seek={op.args[1]} conv=notrunc '
                       'status=none')
        elif k == "unlink":
            cmd = f"rm {p}"
        elif k == "rmdir":
            cmd = f"rmdir {p}"
        elif k == "rename":
            cmd = f'ren {p} "$M"{q(op.args[1])}'
        elif k == "truncate":
            cmd = f"truncate -s {op.args[1]} {p}"
        elif k == "chattr":
            cmd = f"setattr {p} {opscript.attr_bits(op.args[1])}"
        elif k == "touch":
            m, a = (_touch_sec(t.sec) for t in op.args[1:3])
            # utimensat: ENOENT for a missing name (touch alone would create it, -c succeed)
            cmd = (f"sh -c '[ -e \"$1\" ] || {{ echo \"$1: not found\"; exit 1; }}; "
                   f"touch -c -m -d @{m} \"$1\" && touch -c -a -d @{a} \"$1\"' touch {p}")
        else:
            continue            # label: Linux writes none
        lines.append(f"kstep {n} {want} {cmd}\n")
    return "".join(lines)


# touch(1) (coreutils and busybox) takes @SECONDS up to a few hundred years
# ahead; a time past that is given as the first second FAT cannot hold
# (2108-01-01), which every FAT writer clamps like the op's own value. The
# fraction is left out: the modify time is stored to 2 s, the access time
# to the day, both truncated, so it changes no byte.
_TOUCH_MAX = 1 << 34
_FAT_PAST = 4354819200


def _touch_sec(sec):
    return sec if sec < _TOUCH_MAX else _FAT_PAST


LIST_MOUNT = r"""
echo "== listing of the mounted volume"
( cd "$M" && find . -mindepth 1 ) | sed 's/^\.//' | while IFS= read -r p; do
    if [ -d "$M$p" ]; then
        echo "d $p"
    elif [ -f "$M$p" ]; then
        echo "f $p $(stat -c %s "$M$p") $(sha256sum < "$M$p" | cut -d' ' -f1)"
    else
        echo "? $p (cannot stat: $(stat -c %s "$M$p" 2>&1 | tail -n 1))"
    fi
done > "$OUT/seen.unsorted"
"""


# ---------------------------------------------------------------- fsck.fat of what a writer left
FSCK_RUN = r"""
echo "== fsck.fat -n of the image {tool} left{note}"
command -v fsck.fat >/dev/null 2>&1 || cannot "fsck.fat not found (Debian package dosfstools): needed to see this bug"
fsck.fat -n "$OUT/after.img" > "$OUT/fsck.txt" 2>&1
rc=$?
indent < "$OUT/fsck.txt"
echo "    exit $rc"
"""

FSCK_ANY = r"""[ "$rc" = 0 ] || bug "fsck.fat -n on the image {tool} left: $(sed -n '2,3p' "$OUT/fsck.txt" | tr -s ' \n' ' ')"
"""


def fsck_check(tool, note="", show="", verdict=None):
    """sh text of a writer exporter's knob extra {"check": "fsck"} (mtools,
    fusefat, U-Boot): after the tool ran, fsck.fat -n reads the image it
    left ("$OUT/after.img", which the body has copied) for damage the
    tool's own listing cannot show; its output and exit status ($rc) are
    printed. fsck.fat missing: CANNOT RUN.
    tool: the tool's name as the script prints it ("the image TOOL left");
    note: text added to the heading line; show: sh text run after fsck's
    output (more of the image to print: od of the root, mdir);
    verdict: sh text that calls `bug` from $rc and "$OUT/fsck.txt";
    None: any complaint (non-zero exit) is the symptom."""
    head = FSCK_RUN.replace("{tool}", tool).replace("{note}", note)
    return head + show + (FSCK_ANY.replace("{tool}", tool) if verdict is None else verdict)


# ---------------------------------------------------------------- hostile findings
CAP = 1 << 20          # bytes of listing output that mean "never ends"


def lfn_text(fat, offs):
    """The long name of the LFN slots at offs (last slot first, as on disk)."""
    units = b""
    for off in reversed(offs):
        e = fat.b[off:off + 32]
        units += bytes(e[1:11]) + bytes(e[14:26]) + bytes(e[28:32])
    s = units.decode("utf-16-le", "surrogatepass")
    return s.split("\x00", 1)[0]


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
            name = lfn_text(fat, lfn) if lfn else fatimg.short_text(name11)
            p = f"{path}/{name}"
            if _loops(fat, first):
                out.append(p)
            elif first not in seen:
                seen.add(first)
                todo.append((p, first))
    return out


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


def canary_path(info):
    """The file a canary finding names (its evidence's 'canary contents: /PATH')."""
    for ln in info.get("evidence", "").split("\n"):
        if ln.startswith("canary contents: /"):
            return ln[len("canary contents: "):]
    raise ExportError("a canary finding whose evidence names no file")


# sh: CANARY (the finding's pattern, hex) and the tests canary_hex HEX /
# has_canary FILE; a template's canary body follows it
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


# The strace side of an out-of-bounds reproducer (vfz/export/hostile.py, and the templates
# of tools run as a mount): "$OUT/strace.txt" of `strace -f -y -s 0 -e
# trace=execve,read,pread64,write,pwrite64,lseek`; each access of the image followed (lseek and
# read/write move a descriptor's offset), those of kind OP reaching past END (and LO) listed;
# any is the symptom
STRACE_CHECK = r"""
# the image's offset per process and descriptor, moved by lseek and by read/write
awk -v img="$(basename "$IMG")" -v op={OP} -v end={END} -v lo={LO} -v from={FROM} -v prog={PROG} '
$2 ~ /^execve\(/ && $0 ~ /\) = 0/ { p = $2; sub(/^execve\("/, "", p); sub(/".*/, "", p); sub(/.*\//, "", p); name[$1] = p; next }
index($0, img ">") == 0 { next }
prog != "" && name[$1] != "" && name[$1] != prog { next }
{
    pid = $1; call = $2; sub(/\(.*/, "", call)
    fd = $2; sub(/^[a-z0-9]*\(/, "", fd); sub(/<.*/, "", fd)
    key = pid ":" fd
    ret = $0; sub(/.*\) = /, "", ret); sub(/ .*/, "", ret)
    if (call == "lseek") { if (ret + 0 >= 0) pos[key] = ret + 0; next }
    args = $0; sub(/\) = .*/, "", args); n = split(args, a, ", ")
    if (call == "pread64" || call == "pwrite64") { cnt = a[n - 1] + 0; off = a[n] + 0 }
    else { cnt = a[n] + 0; off = pos[key] + 0; if (ret + 0 > 0) pos[key] += ret }
    kind = (call ~ /read/) ? "read" : "write"
    if (kind == op && off + cnt > end && off + cnt > lo && off >= from) {
        printf "%s of %d bytes at offset %d (0x%x) by %s: returned %s\n", kind, cnt, off, off, call, ret
    }
}' "$OUT/strace.txt" > "$OUT/outside.txt"
n=$(wc -l < "$OUT/outside.txt")
head -n 8 "$OUT/outside.txt" | indent
[ "$n" -eq 0 ] || bug "$n {OP}(s) of the image reach {WHERE} (its end: byte {END})"
"""


def strace_check(op, where, end, lo=0, prog="", start=0):
    """sh text: the accesses of kind op ("read"/"write") in $OUT/strace.txt that reach
    past byte end (and lo) and start at byte start or after, by the program prog when
    given (strace traced execve too: a process is named by what it executed), the bug
    when there is one; where names the region."""
    return (STRACE_CHECK.replace("{OP}", op).replace("{END}", str(end)).replace("{LO}", str(lo))
            .replace("{FROM}", str(start))
            .replace("{WHERE}", where).replace("{PROG}", q(prog)))


def bounds_command(info):
    """The command an out-of-bounds finding's accesses came from ('... by read in `CMD`',
    the image shown as IMAGE: vfz.iobounds) as sh text with the image as "$IMG" and any
    other absolute path under "$OUT"; None when the evidence names none."""
    import re
    import shlex
    m = re.search(r" by \w+ in `([^`]+)`", info.get("evidence", ""))
    if not m:
        return None
    try:
        argv = shlex.split(m.group(1))
    except ValueError:
        return None
    if not argv or "/" in argv[0]:
        return None
    out = []
    for k, a in enumerate(argv):
        base = a.rstrip("/").rsplit("/", 1)[-1]
        # a temporary directory the oracle made (mkdtemp: vfz-..., tmp...) stays a directory
        # ("$OUT/dirK", made by the reproducer), any other path a file to be written
        out.append('"$IMG"' if a == "IMAGE" else
                   (f'"$OUT/dir{k}"' if re.match(r"(vfz-|tmp)[\w-]*$", base) else f'"$OUT/arg{k}"')
                   if a.startswith("/") else q(a))
    return " ".join(out)
