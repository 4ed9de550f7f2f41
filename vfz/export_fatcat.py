"""Reproducer scripts for fatcat (vfz.export), reader side: `fatcat IMAGE
-l /` shows the root as fatcat reads it, then `fatcat IMAGE -x DIR`
extracts every file and directory into a host directory (which must
exist: fatcat 1.1.1 dies by SIGSEGV when it does not). The listing is
made from the extracted tree with find, stat and sha256sum; fatcat writes
each name as the bytes it decoded, which for its long-name decoding are
Latin-1 at best, so the names go through iconv -f latin1 (a long name
whose UTF-16 units fatcat cuts to their low bytes then reads as those
bytes: '日' -> 'åe')."""

PACKAGES = ["fatcat"]
NEEDS = [("fatcat", "fatcat"), ("iconv", "libc-bin"), ("sha256sum", "coreutils"), ("find", "findutils")]
SIDES = ("reader",)
SHA = True
LISTING = True
TOOL = "fatcat"
STEPS = ("lists its root with `fatcat IMAGE -l /`, extracts the whole tree with `fatcat IMAGE -x "
         "DIR` and lists the extracted tree with find, stat and sha256sum (names as fatcat wrote "
         "them, read as Latin-1)")
EXPECTED = ("the tree the image holds, as Linux, fsck.fat and mtools read it: `d PATH` for a "
            "directory, `f PATH SIZE SHA256` for a file.")


def shown(case, path):
    return path


def body(case, data):
    return r"""
echo "== fatcat -l /"
fatcat "$IMG" -l / > "$OUT/l.txt" 2>&1
rc=$?
indent < "$OUT/l.txt" | iconv -f latin1 -t utf-8
echo "    exit $rc"
[ $rc -lt 128 ] || bug "fatcat -l / killed by signal $((rc - 128))"
echo "== fatcat -x"
X="$OUT/x"
rm -rf "$X"
mkdir -p "$X"
fatcat "$IMG" -x "$X" > "$OUT/x.txt" 2>&1
rc=$?
grep -a '^Extracting' "$OUT/x.txt" | sed "s|$X||" | indent | iconv -f latin1 -t utf-8
echo "    exit $rc"
[ $rc -lt 128 ] || bug "fatcat -x killed by signal $((rc - 128))"
( cd "$X" && find . -mindepth 1 ) | sed 's/^\.//' | while IFS= read -r p; do
    if [ -d "$X$p" ]; then
        echo "d $p"
    else
        echo "f $p $(stat -c %s "$X$p") $(sha256sum < "$X$p" | cut -d' ' -f1)"
    fi
done | iconv -f latin1 -t utf-8 > "$OUT/seen.unsorted"
"""
