"""Reproducer scripts for GRUB's FAT driver (vfz.export.reproducer), reader side:
`grub-fstest IMAGE -- ls -la (loop0)/DIR/` for every directory (lines
"SIZE|DIR  YYYYMMDDhhmmss NAME", a directory's name ending in '/'),
walked recursively by the script. Every path is given with its device:
GRUB reads a path up to its first ')' as a device name. Names and sizes
only (no hash)."""

PACKAGES = ["grub-common"]
NEEDS = [("grub-fstest", "grub-common")]
SIDES = ("reader",)
SHA = False
LISTING = True
TOOL = "grub-fstest"
STEPS = "lists every directory with `grub-fstest IMAGE -- ls -la (loop0)/DIR/`"
EXPECTED = ("the tree the image holds, as Linux, fsck.fat and mtools read it: `d PATH` for a "
            "directory, `f PATH SIZE` for a file.")


def shown(case, path):
    return path


def body(case, data):
    return r"""
GW=0
grub_walk() {   # DIR ("" for the root) SCRATCH: listing lines of DIR and below
    grub-fstest "$IMG" -- ls -la "(loop0)$1/" > "$OUT/ls.txt" 2>> "$OUT/grub.err"
    rc=$?
    { echo "ls (loop0)$1/ -> exit $rc"; indent < "$OUT/ls.txt"; } >> "$OUT/grub.log"
    [ $rc -lt 128 ] || echo "signal $rc $1" >> "$OUT/grub.crash"
    sed -n -e 's/^DIR[[:space:]]*[0-9]\{14\} \(.*\)\/$/d \1/p' \
           -e 's/^\([0-9][0-9]*\)[[:space:]]*[0-9]\{14\} \(.*\)$/f \1 \2/p' "$OUT/ls.txt" \
        > "$2"
    while IFS= read -r l; do
        case "$l" in
            "d ."|"d ..") ;;
            d\ *) n=${l#d }; echo "d $1/$n"; GW=$((GW + 1)); grub_walk "$1/$n" "$OUT/ls.$GW" ;;
            f\ *) r=${l#f }; size=${r%% *}; n=${r#* }; echo "f $1/$n $size" ;;
        esac
    done < "$2"
}
echo "== grub-fstest ls -la, every directory"
: > "$OUT/grub.log"
grub-fstest "$IMG" -- ls -l "(loop0)" 2>&1 | indent
grub_walk "" "$OUT/ls.0" > "$OUT/seen.unsorted"
indent < "$OUT/grub.log"
[ ! -s "$OUT/grub.err" ] || { echo "stderr:"; indent < "$OUT/grub.err"; }
[ ! -f "$OUT/grub.crash" ] || bug "grub-fstest killed by a signal: $(head -n 1 "$OUT/grub.crash")"
"""
