"""fusefat's reproducer of a hostile write that hangs (vfz/oracles/fusefat/export.py
hostile_body): the volume mounted rw+ as the writer lane mounts it, ops.txt applied
with any answer allowed, and an op fusefat gives no answer within HANG_S seconds is
the symptom (the lane's "fusefat request timeout"). The op that hangs ends the run:
fusefat serves nothing after it."""
from vfz.oracles.repro import Case, posix_ops

# mounted as HOSTILE_WRITE (export.py) mounts it; each op bounded by timeout -s KILL (a
# process waiting on a FUSE request dies of SIGKILL), fusefat's state read from /proc
# when one does not answer
WRITE_HANG = r"""
M="$OUT/mnt"
mkdir -p "$M"
fusefat -f -s -o rw+ "$IMG" "$M" > "$OUT/fusefat.log" 2>&1 &
FPID=$!
i=0
until grep -q " $M fuse" /proc/mounts; do
    i=$((i + 1))
    if [ $i -gt 150 ] || ! kill -0 $FPID 2>/dev/null; then
        cannot "fusefat did not mount the image: $(tail -n 2 "$OUT/fusefat.log")"
    fi
    sleep 0.1
done
trap 'kill -9 $FPID 2>/dev/null; fusermount -u -z "$M" 2>/dev/null' EXIT
REN='rename($ARGV[0], $ARGV[1]) or die "rename: $!\n"'
kstep() {   # N ANY COMMAND...: any answer is allowed; none within HANG_S is the bug
    n=$1; shift 2
    echo "op $n: $*"
    # rename(2) itself, as a program timeout can run
    [ "$1" != ren ] || { shift; set -- perl -e "$REN" "$@"; }
    timeout -s KILL ${HANG_S:-10} "$@" > "$OUT/op$n.txt" 2>&1
    rc=$?
    head -n 5 "$OUT/op$n.txt" | indent
    if [ $rc -eq 137 ]; then
        echo "    no answer within ${HANG_S:-10} s; fusefat: state $(cut -d' ' -f3 /proc/$FPID/stat 2>/dev/null), CPU ticks (user, system) $(cut -d' ' -f14,15 /proc/$FPID/stat 2>/dev/null)"
        bug "op $n: $1: fusefat gave no answer within ${HANG_S:-10} s"
        echo "REPRODUCED: $WHY"
        exit 0
    fi
    echo "    exit $rc"
}
{OPS}
fusermount -u "$M" 2>/dev/null
"""


def hostile_write_hang(info, data):
    """run.sh body of a writer's hang: WRITE_HANG over the finding's ops.txt."""
    from vfz import opscript
    ops = opscript.parse(info["ops"])
    case = Case(impl="fusefat", side="writer", ops=ops, fs="?", image="", results=["any"] * len(ops))
    return WRITE_HANG.replace("{OPS}", posix_ops(case, data))
