"""fatsort's reproducer template (vfz/oracles/repro.py), its transformer role as a
"reader" side case: the image another writer made is copied to
"$OUT/after.img" and sorted in place with `fatsort -f` (-f: a file, never
mounted). fatsort must end with status 0 and keep the tree; killed by a
signal is the symptom. When dosfstools is installed, `fsck.fat -n` shows
that the image fatsort was given is valid and what the sort left (for the
record; its verdict is not the symptom). No listing: the script needs no
FAT reader besides fatsort itself. A hostile finding (a crash, a hang, an
overwrite past the volume) replays the command its evidence holds.
"""

PACKAGES = ["fatsort", "dosfstools"]
HOSTILE_PACKAGES = ["fatsort"]
NEEDS = [("fatsort", "fatsort")]
SIDES = ("reader",)
SHA = False
LISTING = False
TOOL = "fatsort"
STEPS = ("sorts a copy of it in place with `fatsort -f after.img` (and, when dosfstools is "
         "installed, checks the image before and after with `fsck.fat -n`)")
EXPECTED = ("the tree the image holds, as Linux, fsck.fat and mtools read it (`d PATH`, `f PATH "
            "SIZE`): fatsort only reorders directory entries, so the sorted image must hold the "
            "same tree, and fatsort must end with status 0.")


def shown(case, path):
    return path


def body(case, data):
    return r"""
FSCK=
command -v fsck.fat >/dev/null 2>&1 && FSCK=fsck.fat
if [ -n "$FSCK" ]; then
    echo "== fsck.fat -n of the image fatsort is given"
    fsck.fat -n "$IMG" 2>&1 | indent
fi
cp "$IMG" "$OUT/after.img" || cannot "cannot copy the image"
echo "== fatsort -f after.img"
fatsort -f "$OUT/after.img" > "$OUT/fatsort.txt" 2>&1
rc=$?
indent < "$OUT/fatsort.txt"
echo "    exit $rc"
if [ $rc -ge 128 ]; then
    bug "fatsort killed by signal $((rc - 128))"
elif [ $rc -ne 0 ]; then
    bug "fatsort ended with status $rc"
fi
if [ -n "$FSCK" ]; then
    echo "== fsck.fat -n of the image fatsort left"
    fsck.fat -n "$OUT/after.img" 2>&1 | indent
fi
"""
