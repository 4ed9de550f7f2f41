"""ChaN's FatFs reproducer template (vfz/oracles/repro.py): a Node script. The
reproducer carries the fatfs oracle's own server (vfz/oracles/fatfs:
server.js with package.json and its lock, js-fatfs 0.2.1 = FatFs R0.15 as
WebAssembly); run.sh installs js-fatfs with `npm ci` (or links the
node_modules named by $VFZ_JS_FATFS) and sends the server two requests,
one JSON line each: "apply" (writer side: the ops, FatFs's f_mkdir /
f_open+f_write / f_rename / f_unlink under the POSIX layer the server
documents) and "list" (f_readdir walk, f_open+f_read of every file).
Each op's result is checked against Linux's, and the listing against the
expected tree; the server's complaints (an f_open that fails on a listed
name) are printed.

extra {"direct": true}: the writer side calls FatFs's own API without the
server's POSIX layer (fatfs/direct.js: one FatFs call per op -- f_mkdir,
f_open + f_write + f_close, f_rename, f_unlink -- and its FRESULT), so an op
Linux's VFS refuses before any file system sees it (a directory moved into
its own subtree: EINVAL) reaches FatFs as a caller of FatFs would send it.
FR_OK where Linux refuses, or a failure where Linux succeeds, is a symptom;
then the "list" request shows the tree FatFs left.
"""
import json
import os

PACKAGES = ["nodejs", "npm"]
NEEDS = [("node", "nodejs"), ("npm", "npm")]
SIDES = ("reader", "writer")
SHA = True
LISTING = True
TOOL = "FatFs"
STEPS = ("installs js-fatfs 0.2.1 (FatFs R0.15 in WebAssembly) with `npm ci` and drives it with "
         "`node fatfs/server.js`: for a writer bug an `apply` request (the operations), then a "
         "`list` request (f_readdir over the tree, f_open/f_read of every file)")
EXPECTED = ("the tree a correct implementation holds: `d PATH` for a directory, `f PATH SIZE "
            "SHA256` for a file (a file FatFs lists but cannot read shows without its hash).")
SERVER = os.path.dirname(os.path.abspath(__file__))   # the oracle's own folder: server.js and its lock
FILES = ("server.js", "package.json", "package-lock.json")
DIRS = ("fatfs",)          # the reproducer's files of its own: fatfs/ (the server, the requests)

FORMAT_JS = r"""
const rd = require('fs').readFileSync(process.argv[2], 'utf8').split('\n').filter(Boolean);
for (const line of rd) {
    const a = JSON.parse(line);
    if (a.error) { console.log('error ' + a.error); continue; }
    if (a.results) a.results.forEach((r, i) => console.log('result ' + (i + 1) + ' ' + r + ' ' + ((a.fr && a.fr[i]) || '-')));
    if (a.entries) for (const e of a.entries)
        console.log(e.type === 'dir' ? 'd ' + e.path : 'f ' + e.path + ' ' + e.size + (e.sha256 ? ' ' + e.sha256 : ''));
    if (a.complaints) for (const c of a.complaints) console.log('complaint ' + c);
}
"""


DIRECT_JS = r"""
'use strict';
// FatFs's own API, without a POSIX layer: each op of ops.json is one FatFs
// call (or f_open + f_write + f_close), its FRESULT printed as
// "result N FR_... CALL". Usage: node direct.js IMAGE OPS.json
// The image is read into memory, FatFs works on it, and it is written back
// after f_mount(NULL) at the end.
const fs = require('fs');
const path = require('path');
console.log = console.error;            // stdout: the results only
const FRNAMES = ['FR_OK', 'FR_DISK_ERR', 'FR_INT_ERR', 'FR_NOT_READY', 'FR_NO_FILE', 'FR_NO_PATH',
    'FR_INVALID_NAME', 'FR_DENIED', 'FR_EXIST', 'FR_INVALID_OBJECT', 'FR_WRITE_PROTECTED',
    'FR_INVALID_DRIVE', 'FR_NOT_ENABLED', 'FR_NO_FILESYSTEM', 'FR_MKFS_ABORTED', 'FR_TIMEOUT',
    'FR_LOCKED', 'FR_NOT_ENOUGH_CORE', 'FR_TOO_MANY_OPEN_FILES', 'FR_INVALID_PARAMETER'];

async function main() {
    const [image, opsFile] = process.argv.slice(2);
    const F = await import(path.join(__dirname, 'node_modules', 'js-fatfs', 'dist', 'fatfs.js'));
    const img = fs.readFileSync(image);
    const bps = img.readUInt16LE(11);
    const ss = [512, 1024, 2048, 4096].includes(bps) ? bps : 512;
    const disk = {
        initialize: () => 0,
        status: () => 0,
        read(m, pdrv, buff, sector, count) {
            const a = sector * ss, n = count * ss;
            if (a + n > img.length) return F.RES_ERROR;
            m.HEAPU8.set(img.subarray(a, a + n), buff);
            return F.RES_OK;
        },
        write(m, pdrv, buff, sector, count) {
            const a = sector * ss, n = count * ss;
            if (a + n > img.length) return F.RES_ERROR;
            img.set(m.HEAPU8.subarray(buff, buff + n), a);
            return F.RES_OK;
        },
        ioctl(m, pdrv, cmd, buff) {
            if (cmd === F.CTRL_SYNC) return F.RES_OK;
            if (cmd === F.GET_SECTOR_COUNT) { m.setValue(buff, Math.floor(img.length / ss), 'i32'); return F.RES_OK; }
            if (cmd === F.GET_SECTOR_SIZE) { m.setValue(buff, ss, 'i16'); return F.RES_OK; }
            if (cmd === F.GET_BLOCK_SIZE) { m.setValue(buff, 1, 'i32'); return F.RES_OK; }
            return F.RES_PARERR;
        },
    };
    const ff = await F.create({ diskio: disk, codepage: 437 });
    const fatfs = ff.malloc(F.sizeof_FATFS), fil = ff.malloc(F.sizeof_FIL), nw = ff.malloc(8);
    let r = ff.f_mount(fatfs, '', 1);
    if (r !== F.FR_OK) { process.stdout.write('error f_mount ' + FRNAMES[r] + '\n'); process.exit(1); }
    // content byte i of a create or write: (SEED + 31*i) mod 256
    const put = (size, seed) => {
        const buf = ff.malloc(Math.max(size, 1));
        for (let i = 0; i < size; i++) ff.HEAPU8[buf + i] = (seed + 31 * i) % 256;
        const w = ff.f_write(fil, buf, size, nw);
        ff.free(buf);
        return w;
    };
    const ops = JSON.parse(fs.readFileSync(opsFile, 'utf8'));
    ops.forEach(([kind, ...a], i) => {
        let call;
        if (kind === 'mkdir') { call = `f_mkdir("${a[0]}")`; r = ff.f_mkdir(a[0]); }
        else if (kind === 'rename') { call = `f_rename("${a[0]}", "${a[1]}")`; r = ff.f_rename(a[0], a[1]); }
        else if (kind === 'unlink' || kind === 'rmdir') { call = `f_unlink("${a[0]}")`; r = ff.f_unlink(a[0]); }
        else if (kind === 'create' || kind === 'write') {
            const create = kind === 'create';
            call = `f_open("${a[0]}", ${create ? 'FA_WRITE|FA_CREATE_NEW' : 'FA_WRITE'})+f_write+f_close`;
            r = ff.f_open(fil, a[0], create ? F.FA_WRITE | F.FA_CREATE_NEW : F.FA_WRITE);
            if (r === F.FR_OK) {
                if (!create) r = ff.f_lseek(fil, a[1]);
                if (r === F.FR_OK) r = create ? put(a[1], a[2]) : put(a[2], a[3]);
                const c = ff.f_close(fil);
                if (r === F.FR_OK) r = c;
            }
        } else { call = kind; r = -1; }
        process.stdout.write(`result ${i + 1} ${FRNAMES[r] || 'FR_' + r} ${call}\n`);
    });
    ff.f_mount(0, '', 0);
    fs.writeFileSync(image, img);
}
main().catch((e) => { process.stdout.write('error ' + e.message + '\n'); process.exit(3); });
"""


def shown(case, path):
    return path


def body(case, data):
    for n in FILES:
        with open(os.path.join(SERVER, n), "rb") as f:
            data.files[f"fatfs/{n}"] = f.read()
    reqs = []
    direct = case.side == "writer" and (case.extra or {}).get("direct")
    if direct:
        data.files["fatfs/direct.js"] = DIRECT_JS.lstrip().encode()
        data.files["fatfs/ops.json"] = json.dumps([[o.kind, *o.args] for o in case.ops],
                                                  ensure_ascii=False).encode("utf-8", "surrogatepass")
    elif case.side == "writer":
        reqs.append({"id": 1, "op": "apply", "image": "image.img",
                     "ops": [[o.kind, *o.args] for o in case.ops]})
    reqs.append({"id": 2, "op": "list", "image": "image.img"})
    data.files["fatfs/requests.jsonl"] = "".join(
        json.dumps(r, ensure_ascii=False) + "\n" for r in reqs).encode("utf-8", "surrogatepass")
    data.files["fatfs/format.js"] = FORMAT_JS.lstrip().encode()
    want = ""
    if case.side == "writer":
        want = "".join(f"{i + 1} {r}\n" for i, r in enumerate(case.results or []))
    return _setup() + (_direct(want) if direct else "") + _server(want, direct)


def _direct(want):
    """sh: the ops as FatFs calls (direct.js), each FRESULT against Linux's result."""
    return r"""
cp "$HERE/fatfs/direct.js" "$OUT/fatfs/"
echo "== node fatfs/direct.js: the operations as FatFs calls, no POSIX layer"
( cd "$OUT" && node fatfs/direct.js "$IMG" "$HERE/fatfs/ops.json" > direct.txt 2> direct.err )
rc=$?
indent < "$OUT/direct.txt"
[ $rc -lt 128 ] || bug "node fatfs/direct.js killed by signal $((rc - 128))"
[ $rc = 0 ] || cannot "node fatfs/direct.js failed (exit $rc): $(tail -n 2 "$OUT/direct.err")"
cat > "$OUT/want.txt" <<'WANT'
""" + want + r"""WANT
while read -r n w; do
    fr=$(sed -n "s/^result $n \([^ ]*\) .*/\1/p" "$OUT/direct.txt")
    call=$(sed -n "s/^result $n [^ ]* //p" "$OUT/direct.txt")
    if [ "$fr" = FR_OK ] && [ "$w" != ok ]; then
        bug "op $n: $call answers FR_OK where Linux refuses the operation ($w)"
    elif [ "$fr" != FR_OK ] && [ "$w" = ok ]; then
        bug "op $n: $call answers $fr where Linux succeeds"
    fi
done < "$OUT/want.txt"
cp "$IMG" "$OUT/after.img"
if command -v fsck.fat >/dev/null 2>&1; then
    echo "== fsck.fat -n of the image FatFs left (for the record)"
    fsck.fat -n "$OUT/after.img" 2>&1 | indent
fi
"""


def _setup():
    return r"""
mkdir -p "$OUT/fatfs"
cp "$HERE/fatfs/server.js" "$HERE/fatfs/package.json" "$HERE/fatfs/package-lock.json" "$OUT/fatfs/"
if [ -n "${VFZ_JS_FATFS:-}" ] && [ -d "$VFZ_JS_FATFS/js-fatfs" ]; then
    ln -s "$VFZ_JS_FATFS" "$OUT/fatfs/node_modules"
else
    echo "== npm ci (js-fatfs 0.2.1)"
    ( cd "$OUT/fatfs" && npm ci --no-audit --no-fund ) > "$OUT/npm.log" 2>&1 \
        || cannot "npm ci failed: $(tail -n 2 "$OUT/npm.log")"
fi
"""


def _server(want, direct):
    """sh: the server's requests (apply unless direct, list) and their checks."""
    return r"""
echo "== node fatfs/server.js"
( cd "$OUT" && node fatfs/server.js < "$HERE/fatfs/requests.jsonl" > answers.jsonl 2> server.err )
rc=$?
[ $rc -lt 128 ] || bug "node fatfs/server.js killed by signal $((rc - 128))"
node "$HERE/fatfs/format.js" "$OUT/answers.jsonl" > "$OUT/answers.txt" || cannot "cannot read the answers"
grep -v '^[df] ' "$OUT/answers.txt" | indent
grep '^error ' "$OUT/answers.txt" > /dev/null && bug "FatFs failed: $(grep '^error ' "$OUT/answers.txt" | head -n 1)"
grep '^complaint ' "$OUT/answers.txt" > /dev/null && bug "FatFs cannot read what it lists: $(grep '^complaint ' "$OUT/answers.txt" | head -n 1 | cut -c11-)"
""" + ("" if direct else r"""
cat > "$OUT/want.txt" <<'WANT'
""" + want + r"""WANT
while read -r n w; do
    got=$(sed -n "s/^result $n \([^ ]*\) .*/\1/p" "$OUT/answers.txt")
    if [ "$got" != "$w" ]; then
        bug "op $n: FatFs gives $got where Linux gives $w"
    fi
done < "$OUT/want.txt"
""") + r"""grep '^[df] ' "$OUT/answers.txt" > "$OUT/seen.unsorted"
"""


# ---------------------------------------------------------------- hostile findings
HOSTILE = ("out-of-bounds (the list request, after a writer's ops.txt as the apply request: FatFs's "
           "disk-layer records, each with the FatFs call and path that made it), a writer's damage "
           "spread (fsck.fat -n before and after ops.txt as the apply request)")
HOSTILE_PACKAGES = ["nodejs", "npm", "dosfstools"]

# node fatfs/bounds.js ANSWERS IMAGE: the accesses of the server's disk records that end past
# the volume the boot sector declares or past the image, one line each, with the call
BOUNDS_JS = r"""
'use strict';
const fs = require('fs');
const [answers, image] = process.argv.slice(2);
const img = fs.readFileSync(image);
const bps = img.length >= 36 ? img.readUInt16LE(11) : 0;
const tot = img.length >= 36 ? (img.readUInt16LE(19) || img.readUInt32LE(32)) : 0;
const declared = bps && tot ? bps * tot : img.length;
console.log(`declared ${declared} image ${img.length}`);
for (const line of fs.readFileSync(answers, 'utf8').split('\n').filter(Boolean)) {
    const a = JSON.parse(line);
    if (!a.io) continue;
    for (const [kind, sector, count, op, ok] of a.io.rec) {
        const start = sector * a.io.ss, end = (sector + count) * a.io.ss;
        // the first 4 KiB: where a tool reads the boot sector to learn the volume
        if (start < 4096 || end <= Math.min(declared, img.length)) continue;
        const where = end > declared ? 'past the declared volume' : 'past the image, inside the declared volume';
        console.log(`outside ${kind === 'r' ? 'read' : 'write'} of ${count * a.io.ss} bytes at sector ${sector} `
            + `(${ok ? 'done' : 'refused: past the image'}) by disk_${kind === 'r' ? 'read' : 'write'} in `
            + `${a.io.ops[op] || '?'}: ${where}`);
    }
}
"""

BOUNDS = r"""
echo "== node fatfs/server.js: the list request (f_opendir/f_readdir over the tree, f_stat, f_open/f_read of each file), every disk_read/disk_write recorded"
( cd "$OUT" && node fatfs/server.js < "$HERE/fatfs/requests.jsonl" > answers.jsonl 2> server.err )
rc=$?
[ $rc -lt 128 ] || bug "node fatfs/server.js killed by signal $((rc - 128))"
node "$HERE/fatfs/bounds.js" "$OUT/answers.jsonl" "$IMG" > "$OUT/bounds.txt" || cannot "cannot read the answers: $(tail -n 2 "$OUT/server.err")"
head -n 1 "$OUT/bounds.txt" | indent
grep '^outside ' "$OUT/bounds.txt" | head -n 8 | cut -c9- | indent
n=$(grep -c '^outside ' "$OUT/bounds.txt")
[ "$n" -eq 0 ] || bug "FatFs made $n access(es) of the image outside it: $(grep -m 1 '^outside ' "$OUT/bounds.txt" | cut -c9-)"
"""


# Damage spread of a hostile write (vfz/hostile/writes.py): fsck.fat -n, a second reader that
# decides the FAT type by the cluster count as Linux does, finds the volume clean before the
# ops and errors after them; the FAT's first entries (as 16-bit words) before and after show
# what FatFs wrote (12-bit entries packed over a FAT16: fatfs-count-edges-write)
SPREAD = r"""
command -v fsck.fat >/dev/null 2>&1 || cannot "fsck.fat not found (Debian package dosfstools)"
bps=$(od -A n -t u2 -j 11 -N 2 "$IMG" | tr -d ' ')
res=$(od -A n -t u2 -j 14 -N 2 "$IMG" | tr -d ' ')
fat() { od -A x -t x2 -j $((bps * res)) -N 48 "$IMG" | head -n 3 | indent; }
echo "== before the ops: fsck.fat -n (the FAT type by the cluster count: FAT12 below 4085 clusters)"
fsck.fat -n "$IMG" > "$OUT/fsck-before.txt" 2>&1
b=$?
tail -n 1 "$OUT/fsck-before.txt" | indent
[ $b -eq 0 ] || cannot "fsck.fat -n finds errors before the ops (exit $b): not this report's volume"
echo "   the FAT's first entries (16-bit words):"
fat
echo "== node fatfs/server.js: the apply request (ops.txt)"
( cd "$OUT" && node fatfs/server.js < "$HERE/fatfs/requests.jsonl" > answers.jsonl 2> server.err )
rc=$?
[ $rc -lt 128 ] || bug "node fatfs/server.js killed by signal $((rc - 128))"
node "$HERE/fatfs/format.js" "$OUT/answers.jsonl" > "$OUT/answers.txt" || cannot "cannot read the answers"
indent < "$OUT/answers.txt"
grep '^error ' "$OUT/answers.txt" > /dev/null && cannot "FatFs refused the volume: $(grep -m 1 '^error ' "$OUT/answers.txt")"
echo "== after the ops: the FAT's first entries, fsck.fat -n"
fat
fsck.fat -n "$IMG" > "$OUT/fsck-after.txt" 2>&1
a=$?
sed 1d "$OUT/fsck-after.txt" | head -n 12 | indent
echo "   the entries no op names that the harness's strict reader (vfat ls) saw change:"
indent < "$HERE/fatfs/spread.txt"
[ $a -eq 0 ] || bug "fsck.fat -n, clean before FatFs's ops, finds errors after them (exit $a): $(sed -n 2p "$OUT/fsck-after.txt")"
"""


def hostile_body(info, img, data, regions):
    """An out-of-bounds finding: the server's list request, its disk records past the
    declared volume or the image named with the FatFs call that made them; a writer's
    damage spread: fsck.fat -n around the apply request (SPREAD); else None."""
    if info["kind"] == "spread" and info.get("ops"):
        return _spread(info, data)
    if info["kind"] != "out-of-bounds":
        return None
    for n in FILES:
        with open(os.path.join(SERVER, n), "rb") as f:
            data.files[f"fatfs/{n}"] = f.read()
    reqs = [{"id": 2, "op": "list", "image": "image.img"}]
    sh = BOUNDS
    if info.get("ops"):
        # a hostile write: the writer's apply request first (ops.txt, each op its own
        # records), then the list request, as the writer lane judged it
        from vfz import opscript
        ops = [[o.kind, *o.args] for o in opscript.parse(info["ops"])]
        reqs.insert(0, {"id": 1, "op": "apply", "image": "image.img", "ops": ops})
        sh = BOUNDS.replace("the list request (", "the apply request (ops.txt), then the list request (")
    data.files["fatfs/requests.jsonl"] = "".join(
        json.dumps(r, ensure_ascii=False) + "\n" for r in reqs).encode("utf-8", "surrogatepass")
    data.files["fatfs/bounds.js"] = BOUNDS_JS.lstrip().encode()
    return _setup() + sh, NEEDS


def _spread(info, data):
    from vfz import opscript
    with open(os.path.join(SERVER, "server.js"), "rb") as f:
        data.files["fatfs/server.js"] = f.read()
    for n in FILES[1:]:
        with open(os.path.join(SERVER, n), "rb") as f:
            data.files[f"fatfs/{n}"] = f.read()
    ops = [[o.kind, *o.args] for o in opscript.parse(info["ops"])]
    req = {"id": 1, "op": "apply", "image": "image.img", "ops": ops}
    data.files["fatfs/requests.jsonl"] = (json.dumps(req, ensure_ascii=False) + "\n").encode(
        "utf-8", "surrogatepass")
    data.files["fatfs/format.js"] = FORMAT_JS.lstrip().encode()
    data.files["fatfs/spread.txt"] = "".join(f"{w} {p!r}\n" for w, p, *_ in (info.get("spread") or ())[:20]) \
        .encode("utf-8", "surrogatepass")
    return _setup() + SPREAD, NEEDS + [("fsck.fat", "dosfstools")]
