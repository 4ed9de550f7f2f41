"""The npm fatfs package's reproducer template (vfz/oracles/repro.py): a Node script calling the package directly.

run.sh installs the pinned package (fatfs 0.10.8 and its three
dependencies, the oracle's own package.json and package-lock.json) with `npm
ci`, or links the node_modules named by $VFZ_NPM_FATFS, and runs
npm-fatfs/repro.js (repro_js.py) on the image: each op one call of the package's
fs API (fs.mkdir; fs.open 'wx' + fs.write + fs.close; fs.open 'r+' + fs.write
at the offset; fs.truncate; fs.chmod; fs.utimes), its answer against Linux's;
then a fresh instance lists the image (fs.readdir, fs.stat, fs.readFile), and
the script reads the FAT structures the package left: the FAT copies, the
FAT32 FSInfo free count, '..' of the directories in a FAT32 root, FAT
entries holding the package's freed-cluster value, on a FAT32 boot sector
over few clusters the root's entries read through the 32-bit FAT, a fixed
root ending in long-name slots, clusters free after an ENOSPC, files of the
root claiming more bytes than their chain holds. No fsck.fat or mtools is
needed: a maintainer runs it with node alone.

Symptoms: an op answered otherwise than Linux; a throw that escapes the
package (no callback) and an instance that then never answers fs.stat('/')
(PROBE_S, default 2 s; HANG_S, default 10 s, bounds each op's wait); a
listing other than the expected tree; and the image checks of the case's kind (KIND_CHECKS; extra {"check": [names]}
overrides; a kind not listed counts them all), the others printed for the
record. The package has no rename, unlink, rmdir or label: a case holding
one cannot be exported.
"""
import json
import os

from vfz import opscript
from vfz.oracles.jsfatfs.repro_js import REPRO_JS
from vfz.oracles.repro import ExportError, op_data

PACKAGES = ["nodejs"]        # npm: Debian's own package, or bundled with nodesource's nodejs
NEEDS = [("node", "nodejs")]  # npm only when it installs the package (run.sh checks then)
SIDES = ("reader", "writer")
SHA = True
LISTING = True
TOOL = "fatfs (npm)"
STEPS = ("installs the npm package fatfs 0.10.8 (natevw/fatfs; package-lock.json pins it and its "
         "dependencies) with `npm ci` and runs `node npm-fatfs/repro.js`: for a writer bug each operation "
         "is one call of the package's fs API (fs.mkdir, fs.open + fs.write + fs.close, fs.truncate, "
         "fs.chmod, fs.utimes) on the image, its answer checked against Linux's; then a fresh "
         "instance lists the image (fs.readdir, fs.stat, fs.readFile), and the script reads the FAT "
         "copies, the FAT32 FSInfo sector and the directories' '..' entries of the image directly")
EXPECTED = ("the tree a correct implementation holds (Linux 6.1 vfat given the same operations): "
            "`d PATH` for a directory, `f PATH SIZE SHA256` for a file.")
HERE = os.path.dirname(os.path.abspath(__file__))
FILES = ("package.json", "package-lock.json")
DIRS = ("npm-fatfs",)      # not fatfs/: ChaN FatFs's template has that one
OPS = ("mkdir", "create", "write", "truncate", "chattr", "touch")
ALL_CHECKS = ("fats", "fsinfo", "dotdot", "freed", "width", "orphan", "free", "size")
# the image checks whose finding is the symptom of each catalogued bug; the
# others are printed for the record (every volume the package allocates on
# has differing FATs, for one)
KIND_CHECKS = {
    "jsfatfs-one-fat": ("fats",),
    "jsfatfs-fsinfo-stale": ("fsinfo",),
    "jsfatfs-dotdot-root-cluster": ("dotdot",),
    "jsfatfs-truncate-ff00": ("freed",),
    "jsfatfs-name-throws": (),
    "jsfatfs-eoc-ff8": (),
    "jsfatfs-fat32-few-clusters-write": ("width",),
    "jsfatfs-enospc-partial-entry": ("orphan",),
    "jsfatfs-alloc-search-range": ("free",),
    "jsfatfs-enospc-chain-size": ("size",),
}


def shown(case, path):
    return path


def checks(case):
    """The image checks that count as symptoms."""
    want = (case.extra or {}).get("check")
    if want:
        return tuple([want] if isinstance(want, str) else want)
    if case.side == "reader":
        return ()
    return KIND_CHECKS.get(case.kind, ALL_CHECKS)


def _ops_json(case, data):
    rows = []
    for i, op in enumerate(case.ops if case.side == "writer" else ()):
        if op.kind not in OPS:
            raise ExportError(f"op {i + 1} is {op.kind}: the npm fatfs package has no {op.kind} "
                              f"(it has {', '.join(OPS)})")
        args = [a.sec if isinstance(a, opscript.Time) else a for a in op.args]
        rows.append([op.kind, *args, op_data(data, i, op)])
    return json.dumps(rows, ensure_ascii=True).encode()


def body(case, data):
    for n in FILES:
        with open(os.path.join(HERE, n), "rb") as f:
            data.files[f"npm-fatfs/{n}"] = f.read()
    data.files["npm-fatfs/repro.js"] = REPRO_JS.lstrip().encode()
    data.files["npm-fatfs/ops.json"] = _ops_json(case, data)
    want = "".join(f"{i + 1} {r}\n" for i, r in enumerate(case.results or [])) \
        if case.side == "writer" else ""
    return _SETUP + _RUN.replace("{WANT}", want).replace("{CHECKS}", " ".join(checks(case)))


_SETUP = r"""
mkdir -p "$OUT/npm-fatfs"
cp "$HERE/npm-fatfs/package.json" "$HERE/npm-fatfs/package-lock.json" "$HERE/npm-fatfs/repro.js" "$OUT/npm-fatfs/"
if [ -n "${VFZ_NPM_FATFS:-}" ] && [ -d "$VFZ_NPM_FATFS/fatfs" ]; then
    ln -s "$VFZ_NPM_FATFS" "$OUT/npm-fatfs/node_modules"
else
    need npm npm
    echo "== npm ci (fatfs 0.10.8)"
    ( cd "$OUT/npm-fatfs" && npm ci --no-audit --no-fund ) > "$OUT/npm.log" 2>&1 \
        || cannot "npm ci failed: $(tail -n 2 "$OUT/npm.log")"
fi
echo "fatfs $(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$OUT/npm-fatfs/node_modules/fatfs/package.json" | head -n 1)"
"""

_RUN = r"""
echo "== node npm-fatfs/repro.js: the operations as calls of the package, its listing, the image's FAT structures"
HANG_S=${HANG_S:-10}
export HANG_S
( cd "$OUT" && node npm-fatfs/repro.js "$IMG" "$HERE/npm-fatfs/ops.json" > repro.txt 2> repro.err )
rc=$?
grep -v '^[df] ' "$OUT/repro.txt" | indent
[ $rc -lt 128 ] || bug "node npm-fatfs/repro.js killed by signal $((rc - 128))"
[ $rc = 0 ] || cannot "node npm-fatfs/repro.js failed (exit $rc): $(tail -n 2 "$OUT/repro.err") $(grep '^error ' "$OUT/repro.txt" | head -n 1)"
cp "$IMG" "$OUT/after.img"
grep '^throw ' "$OUT/repro.txt" > "$OUT/throws.txt"
while IFS= read -r line; do
    bug "op $(echo "$line" | cut -d' ' -f2): the package threw outside its callback (the callback is never called): $(echo "$line" | cut -d' ' -f3-)"
done < "$OUT/throws.txt"
grep -q '^stuck ' "$OUT/repro.txt" && bug "after the throw the instance never answers again: $(sed -n 's/^stuck [0-9]* //p' "$OUT/repro.txt") within $(sed -n 's/^stuck \([0-9]*\) .*/\1/p' "$OUT/repro.txt") s"
grep -q '^hang ' "$OUT/repro.txt" && bug "op $(sed -n 's/^hang \([0-9]*\) .*/\1/p' "$OUT/repro.txt"): no callback within $HANG_S s"
cat > "$OUT/want.txt" <<'WANT'
{WANT}WANT
while read -r n w; do
    got=$(sed -n "s/^result $n \([^ ]*\).*/\1/p" "$OUT/repro.txt")
    [ "$got" = NOTRUN ] && continue
    call=$(sed -n "s/^result $n [^ ]* //p" "$OUT/repro.txt")
    [ "$got" = "$w" ] || bug "op $n: $call answers $got where Linux gives $w"
done < "$OUT/want.txt"
for c in {CHECKS}; do
    grep "^symptom $c " "$OUT/repro.txt" > "$OUT/symptom.$c"
    [ -s "$OUT/symptom.$c" ] && bug "$(head -n 1 "$OUT/symptom.$c" | cut -d' ' -f3-)"
done
grep -q '^complaint ' "$OUT/repro.txt" && bug "the package cannot read what it lists: $(grep '^complaint ' "$OUT/repro.txt" | head -n 1 | cut -c11-)"
grep '^[df] ' "$OUT/repro.txt" > "$OUT/seen.unsorted"
"""


# ---------------------------------------------------------------- hostile findings
HOSTILE = "canary (the file the finding names read with fs.readFile: its bytes the canary pattern)"
HOSTILE_PACKAGES = ["nodejs"]

# node npm-fatfs/canary.js IMAGE PATH: the package reads PATH; its bytes in hex (64 KiB at
# most), or "error CODE"
CANARY_JS = r"""
'use strict';
const fs = require('fs');
console.log = console.error;
const fatfs = require('fatfs');
const [image, p] = process.argv.slice(2);
const img = fs.readFileSync(image);
const ss = [512, 1024, 2048, 4096].includes(img.readUInt16LE(11)) ? img.readUInt16LE(11) : 512;
const driver = {
    sectorSize: ss, numSectors: Math.floor(img.length / ss),
    readSectors(i, dest, cb) {
        if (i * ss + dest.length > img.length) return setImmediate(cb, new Error('read past the image'));
        img.copy(dest, 0, i * ss, i * ss + dest.length);
        setImmediate(cb, null);
    },
    writeSectors(i, data, cb) { setImmediate(cb, new Error('read-only')); },
};
const v = fatfs.createFileSystem(driver, { umask: 0, uid: 0, gid: 0 }, (e) => {
    if (e) { process.stdout.write(`error mount ${e.code || e.message}\n`); return; }
    v.readFile(p, (er, data) => {
        if (er) process.stdout.write(`error ${er.code || er.message}\n`);
        else process.stdout.write(`bytes ${data.length} ${data.slice(0, 65536).toString('hex')}\n`);
    });
});
"""

HOSTILE_CANARY = r"""
P={PATH}
echo "== node npm-fatfs/canary.js image.img <the file>: fs.readFile of it"
( cd "$OUT" && timeout -k 2 ${HANG_S:-10} node npm-fatfs/canary.js "$IMG" "$P" > canary.txt 2> canary.err )
rc=$?
[ $rc = 0 ] || cannot "node npm-fatfs/canary.js failed (exit $rc): $(tail -n 2 "$OUT/canary.err")"
read -r what n hx < "$OUT/canary.txt"
if [ "$what" = bytes ]; then
    echo "    $n bytes: $(printf '%s' "$hx" | cut -c1-64)..."
    canary_hex "$hx" && bug "fatfs (npm) fs.readFile returned bytes from past the declared volume end (the canary) for $P"
else
    echo "    $what $n"
fi
"""


def hostile_body(info, img, data, regions):
    """A canary finding: the file it names read with the package (fs.readFile), its
    bytes compared with the canary; else None."""
    from vfz.oracles.repro import CANARY_FN, canary_path, q
    if info["kind"] != "canary":
        return None
    for n in FILES:
        with open(os.path.join(HERE, n), "rb") as f:
            data.files[f"npm-fatfs/{n}"] = f.read()
    data.files["npm-fatfs/canary.js"] = CANARY_JS.lstrip().encode()
    setup = _SETUP.replace('"$HERE/npm-fatfs/repro.js"', '"$HERE/npm-fatfs/canary.js"')
    return (setup + CANARY_FN.replace("{CANARY}", info["canary"])
            + HOSTILE_CANARY.replace("{PATH}", q(canary_path(info)))), NEEDS + [("od", "coreutils")]
