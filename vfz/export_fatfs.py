"""Reproducer scripts for ChaN's FatFs (vfz.export): a Node script. The
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
SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "oracles", "fatfs")
FILES = ("server.js", "package.json", "package-lock.json")

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


def shown(case, path):
    return path


def body(case, data):
    for n in FILES:
        with open(os.path.join(SERVER, n), "rb") as f:
            data.files[f"fatfs/{n}"] = f.read()
    reqs = []
    if case.side == "writer":
        reqs.append({"id": 1, "op": "apply", "image": "image.img",
                     "ops": [[o.kind, *o.args] for o in case.ops]})
    reqs.append({"id": 2, "op": "list", "image": "image.img"})
    data.files["fatfs/requests.jsonl"] = "".join(
        json.dumps(r, ensure_ascii=False) + "\n" for r in reqs).encode("utf-8", "surrogatepass")
    data.files["fatfs/format.js"] = FORMAT_JS.lstrip().encode()
    want = ""
    if case.side == "writer":
        want = "".join(f"{i + 1} {r}\n" for i, r in enumerate(case.results or []))
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
echo "== node fatfs/server.js"
( cd "$OUT" && node fatfs/server.js < "$HERE/fatfs/requests.jsonl" > answers.jsonl 2> server.err )
rc=$?
[ $rc -lt 128 ] || bug "node fatfs/server.js killed by signal $((rc - 128))"
node "$HERE/fatfs/format.js" "$OUT/answers.jsonl" > "$OUT/answers.txt" || cannot "cannot read the answers"
grep -v '^[df] ' "$OUT/answers.txt" | indent
grep '^error ' "$OUT/answers.txt" > /dev/null && bug "FatFs failed: $(grep '^error ' "$OUT/answers.txt" | head -n 1)"
grep '^complaint ' "$OUT/answers.txt" > /dev/null && bug "FatFs cannot read what it lists: $(grep '^complaint ' "$OUT/answers.txt" | head -n 1 | cut -c11-)"
cat > "$OUT/want.txt" <<'WANT'
""" + want + r"""WANT
while read -r n w; do
    got=$(sed -n "s/^result $n \([^ ]*\) .*/\1/p" "$OUT/answers.txt")
    if [ "$got" != "$w" ]; then
        bug "op $n: FatFs gives $got where Linux gives $w"
    fi
done < "$OUT/want.txt"
grep '^[df] ' "$OUT/answers.txt" > "$OUT/seen.unsorted"
"""
