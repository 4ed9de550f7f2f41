"""dosfstools' fsck.fat reproducer template (vfz/oracles/repro.py), reader side.

The script runs `fsck.fat -n -l` (read-only check) on the image, then
`fsck.fat -a -w -l` (automatic repair) on a copy, then `fsck.fat -n -l`
on the repaired copy, which lists every file and directory that is left.
Symptoms, each a `bug` line:
  * the repair lost entries: fewer files and directories are left than
    the image held (a rename of a bad 8.3 name keeps the entry; only its
    long name goes). The lost ones are listed by the checker's own -l.
  * complaints on an image the other implementations read as expected,
    when the case says its writer makes valid images (extra
    "complaints": true: a Linux-written image; false for the patch's v1
    dummies, which fsck.fat rightly calls bad 8.3 names): default_extra
    sets it from the writer's registry entry when the case leaves it out.
"""
from vfz import oracles
from vfz.oracles.repro import q

PACKAGES = ["dosfstools"]
HOSTILE_PACKAGES = ["dosfstools"]
NEEDS = [("fsck.fat", "dosfstools")]
SIDES = ("reader",)
SHA = False
LISTING = False
TOOL = "fsck.fat"
STEPS = ("runs `fsck.fat -n -l` on it, repairs a copy with `fsck.fat -a -w -l`, and lists what the "
         "repair left with `fsck.fat -n -l`")
EXPECTED = ("the tree the image holds (every other implementation reads it so; `d PATH` for a "
            "directory, `f PATH SIZE` for a file). A repair may rename an entry whose 8.3 name "
            "it finds bad (and drop its long name) but must keep it: after `fsck.fat -a` the same "
            "number of files and directories is expected.")


def shown(case, path):
    return path


def default_extra(extra, writer):
    """The knobs a case leaves out (extra, changed in place). "complaints":
    whether fsck.fat -n complaining is itself a symptom -- yes on an image
    whose 8.3 entries are meant to be valid (Linux's aliases, a tool's
    own), no on the seed patch's v1 dummies, which fsck.fat rightly calls
    bad 8.3 names."""
    if "complaints" not in extra and writer:
        try:
            shorts = oracles.entry(writer).shorts
        except Exception:
            shorts = "v1"
        extra["complaints"] = shorts != "v1"


def body(case, data):
    n = len(case.entries or [])
    complaints = bool(case.extra.get("complaints"))
    label = case.label or ""
    return f"""
echo "== fsck.fat -n -l (check only)"
fsck.fat -n -l "$IMG" > "$OUT/fsck-n.txt" 2>&1
rc=$?
indent < "$OUT/fsck-n.txt"
echo "    exit $rc"
[ $rc -lt 128 ] || bug "fsck.fat -n killed by signal $((rc - 128))"
if [ {str(complaints).lower()} = true ] && [ $rc -ne 0 ]; then
    bug "fsck.fat -n finds problems on an image Linux, mtools and the other readers read as written: $(grep -v -e '^fsck.fat ' -e '^Checking file ' -e '^Leaving filesystem' -e 'files, .* clusters$' "$OUT/fsck-n.txt" | head -n 2 | tr '\\n' ' ')"
fi
cp "$IMG" "$OUT/repaired.img"
echo "== fsck.fat -a -w -l (automatic repair) on a copy"
fsck.fat -a -w -l "$OUT/repaired.img" > "$OUT/fsck-a.txt" 2>&1
rc=$?
indent < "$OUT/fsck-a.txt"
echo "    exit $rc"
[ $rc -lt 128 ] || bug "fsck.fat -a killed by signal $((rc - 128))"
echo "== fsck.fat -n -l on the repaired copy"
fsck.fat -n -l "$OUT/repaired.img" > "$OUT/fsck-after.txt" 2>&1
indent < "$OUT/fsck-after.txt"
# what is left: every listed path but the root, the volume label and the
# chains the repair recovered into FSCKnnnn.REC files
sed -n 's/^Checking file //p' "$OUT/fsck-after.txt" | sed 's/ ([^()]*)$//' \\
    | grep -v -x -e / -e {q('/' + label) if label else "''"} | grep -v '^/FSCK[0-9]*\\.REC$' \\
    | LC_ALL=C sort > "$OUT/seen.txt"
left=$(wc -l < "$OUT/seen.txt" | tr -d ' ')
echo "== files and directories: {n} in the image, $left after the repair"
if [ "$left" -lt {n} ]; then
    bug "fsck.fat -a destroyed $(({n} - left)) of the {n} files and directories (see seen.txt: what is left)"
fi
"""
