"""fatcat's reproducer template (vfz/oracles/repro.py), reader side: `fatcat IMAGE
-l /` shows the root as fatcat reads it, then `fatcat IMAGE -x DIR`
extracts every file and directory into a host directory (which must
exist: fatcat 1.1.1 dies by SIGSEGV when it does not). The listing is
made from the extracted tree with find, stat and sha256sum; fatcat writes
each name as the bytes it decoded, which for its long-name decoding are
Latin-1 at best, so the names go through iconv -f latin1 (a long name
whose UTF-16 units fatcat cuts to their low bytes then reads as those
bytes: '日' -> 'åe').

Knob (Case.extra):
  "orphans": N  a nondeterministic hang of the orphan search: after the
                listing, `fatcat IMAGE -o` runs up to N times (ORPHAN_RUNS=N
                overrides), each limited to HANG_S seconds (default 10),
                until one does not end; the first run that ends and every
                one that does not are shown, stderr run-length counted
                (uniq -c: a hung run prints a line per slot it reads past
                the disk), after the first entries of the FAT (FAT[1]) and,
                when installed, fsck.fat -n's verdict

Hostile findings (hostile_body): a canary is `fatcat IMAGE -x DIR` (every
file), bounded by HANG_S seconds; an extracted file holding the canary
pattern is the symptom.
"""

PACKAGES = ["fatcat"]
HOSTILE_PACKAGES = ["fatcat"]
HOSTILE = "canary (-x)"
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
""" + (_orphans(case) if case.extra.get("orphans") else "")


ORPHANS = r"""
echo "== the first FAT's first entries (FAT[0], FAT[1], ...), offset {fat}"
od -A d -t x1 -j {fat} -N 8 "$IMG" | indent
if command -v fsck.fat >/dev/null 2>&1; then
    echo "== fsck.fat -n"
    fsck.fat -n "$IMG" 2>&1 | indent
fi
RUNS=${{ORPHAN_RUNS:-{runs}}}
echo "== fatcat -o (orphan search): up to $RUNS runs, each limited to ${{HANG_S:-10}} s"
i=0
HUNG=0
DONE=0
while [ $i -lt "$RUNS" ]; do
    i=$((i + 1))
    {{ timeout -k 2 "${{HANG_S:-10}}" fatcat "$IMG" -o 2>&1 >"$OUT/o.txt"; echo $? > "$OUT/o.rc"; }} \
        | uniq -c > "$OUT/o.err"
    rc=$(cat "$OUT/o.rc")
    if [ $DONE -eq 0 ] || [ "$rc" -ne 0 ]; then
        echo "-- run $i: exit $rc; stdout:"
        indent < "$OUT/o.txt"
        echo "   stderr (uniq -c: count, line):"
        head -n 20 "$OUT/o.err" | indent
    fi
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        HUNG=$i
        break
    fi
    if [ "$rc" -ge 128 ]; then
        bug "fatcat -o killed by signal $((rc - 128)) in run $i"
        break
    fi
    [ $DONE -gt 0 ] || echo "   (later runs are shown only when they do not end or fail)"
    DONE=$((DONE + 1))
done
if [ $HUNG -gt 0 ]; then
    n=$(awk '/Trying to read outside the disk/ {{ s += $1 }} END {{ print s + 0 }}' "$OUT/o.err")
    bug "fatcat -o did not end within ${{HANG_S:-10}} s in run $HUNG of up to $RUNS ($DONE runs before it ended); it read outside the disk $n times before it was killed"
else
    echo "    all $RUNS runs of fatcat -o ended"
fi
"""


def _orphans(case):
    with open(case.image, "rb") as f:
        b = f.read(512)
    fat = int.from_bytes(b[14:16], "little") * int.from_bytes(b[11:13], "little")
    return ORPHANS.format(fat=fat, runs=int(case.extra["orphans"]))


def hostile_body(info, img, data, regions):
    """A hostile finding's run.sh body and needs, or None (see the docstring)."""
    if info["kind"] == "canary":
        return CANARY.replace("{CANARY}", info["canary"]), [("fatcat", "fatcat"), ("od", "coreutils")]
    return None

CANARY = r"""
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
