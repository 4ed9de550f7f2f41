"""The Sleuth Kit's reproducer template (vfz/oracles/repro.py), reader side:
`fls -r -p -l IMAGE` lists every allocated entry with its full path and
size (tab-separated); the script drops the virtual entries ($MBR, $FAT1,
$OrphanFiles: v/v, V/V), deleted ones ('*') and the volume label, and
compares names and sizes with the expected tree."""

PACKAGES = ["sleuthkit"]
HOSTILE_PACKAGES = ["sleuthkit"]
NEEDS = [("fls", "sleuthkit")]
SIDES = ("reader",)
SHA = False
LISTING = True
TOOL = "fls"
STEPS = "lists it with `fls -r -p -l`"
EXPECTED = ("the tree the image holds, as Linux, fsck.fat and mtools read it: `d PATH` for a "
            "directory, `f PATH SIZE` for a file.")


def shown(case, path):
    return path


def body(case, data):
    return r"""
echo "== fls -r -p -l"
fls -r -p -l "$IMG" > "$OUT/fls.txt" 2> "$OUT/fls.err"
rc=$?
cut -f 1,2,6 "$OUT/fls.txt" | indent
indent < "$OUT/fls.err"
echo "    exit $rc"
[ $rc -lt 128 ] || bug "fls killed by signal $((rc - 128))"
awk -F '\t' '
    $1 ~ /\*/ || $1 ~ /^[vV]\// { next }
    $2 ~ /\(Volume Label Entry\)$/ { next }
    $1 ~ /^d\/d / { print "d /" $2; next }
    { print "f /" $2 " " $(NF - 2) }' "$OUT/fls.txt" > "$OUT/seen.unsorted"
"""
