"""7-Zip's reproducer template (vfz/oracles/repro.py), reader side: `7z l -slt
-tFAT` lists every entry of the image ("Path = ", "Folder = +|-",
"Size = "); the script turns that into listing lines and compares them
with the expected tree (names and sizes: 7-Zip's listing has no hash).
A hostile finding replays the command its evidence holds (HOSTILE_PACKAGES:
7zip first)."""

PACKAGES = ["p7zip-full", "7zip"]
HOSTILE_PACKAGES = ["7zip", "p7zip-full"]
NEEDS = [("7z", "p7zip-full")]
SIDES = ("reader",)
SHA = False
LISTING = True
TOOL = "7z"
STEPS = "lists it with `7z l -slt -tFAT`"
EXPECTED = ("the tree the image holds, as Linux, fsck.fat and mtools read it: `d PATH` for a "
            "directory, `f PATH SIZE` for a file.")


def shown(case, path):
    return path


def body(case, data):
    return r"""
echo "== 7z l -slt -tFAT"
7z l -slt -tFAT "$IMG" > "$OUT/7z.txt" 2>&1
rc=$?
indent < "$OUT/7z.txt"
echo "    exit $rc"
[ $rc -lt 128 ] || bug "7z killed by signal $((rc - 128))"
# one record per entry after the "----------" line; a blank line ends it
awk 'BEGIN { go = 0 }
     /^----------$/ { go = 1; next }
     !go { next }
     /^Path = / { p = substr($0, 8); next }
     /^Folder = / { f = substr($0, 10); next }
     /^Size = / { s = substr($0, 8); next }
     /^$/ { if (p != "") { if (f == "+") print "d /" p; else print "f /" p " " s }
            p = ""; f = ""; s = "" }
     END { if (p != "") { if (f == "+") print "d /" p; else print "f /" p " " s } }' \
    "$OUT/7z.txt" > "$OUT/seen.unsorted"
"""
