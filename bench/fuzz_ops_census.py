#!/usr/bin/python3
"""The states a fuzz_ops corpus reached: each input is decoded with the CLI
(vfat gen --from-input: its geometry's template image and its op-script),
applied by the core with the input's options (vfat apply), and the written
image and per-op results go through the campaign's census
(vfz.campaign.steer.census: near-full, alloc-wrap, reuse-after-unlink, ...;
the first three successful unlinks/rmdirs are cut for reuse-after-unlink).

    bench/fuzz_ops_census.py CORPUS_DIR [--build DIR] [--limit N]

Prints one JSON object: inputs read, per geometry (tiny FAT12 or not) the
inputs, ops answered ENOSPC, and how many inputs reached each state.
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, SRC)

from vfz import opscript  # noqa: E402
from vfz.campaign.steer import STATES, census  # noqa: E402


def apply(vfat, base, script, opts, img):
    """Apply script (op-script text) to a copy of base at img -> per-op results."""
    shutil.copyfile(base, img)
    # raw name bytes that are not UTF-8 round-trip (surrogateescape)
    with open(img + ".ops", "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(script)
    p = subprocess.run([vfat, "apply", img, img + ".ops"] + opts, capture_output=True, text=True,
                       errors="surrogateescape")
    res = []
    for ln in p.stdout.splitlines():
        try:
            o = json.loads(ln)
        except ValueError:
            continue
        if isinstance(o, dict) and "result" in o:
            res.append(o["result"])
    return res


def one(vfat, path, tmp):
    """-> (tiny, results, states) of one corpus input, or None when it decodes to no op.
    A script the Python parser refuses (raw names that are not UTF-8) still
    gets the image states; its op-based ones (dir moves, the second
    grammar's) are not counted."""
    base = os.path.join(tmp, "base.img")
    p = subprocess.run([vfat, "gen", "--from-input", path, "--image", base],
                       capture_output=True, text=True, errors="surrogateescape")
    if p.returncode:
        return None
    lines = p.stdout.splitlines()
    head = [ln for ln in lines if ln.startswith("#")]
    body = [ln for ln in lines if ln and not ln.startswith("#")]
    opts = next((ln.split(":", 1)[1].split() for ln in head if ln.startswith("# apply-options:")), [])
    tiny = bool(head) and "(tiny)" in head[0]
    if not body:
        return None
    try:
        ops = opscript.parse(p.stdout)
    except opscript.OpScriptError:
        ops = None
    img = os.path.join(tmp, "all.img")
    res = apply(vfat, base, p.stdout, opts, img)
    cuts = {}
    for i, ln in enumerate(body):
        if len(cuts) >= 3:
            break
        if ln.split(" ", 1)[0] in ("unlink", "rmdir") and i < len(res) and res[i] == "ok":
            a, b = os.path.join(tmp, f"cut{i}a.img"), os.path.join(tmp, f"cut{i}b.img")
            apply(vfat, base, "\n".join(body[:i]) + "\n", opts, a)
            apply(vfat, base, "\n".join(body[:i + 1]) + "\n", opts, b)
            cuts[i] = (a, b)
    return tiny, res, census(img, ops or [], res if ops else [], cuts)


def main():
    ap = argparse.ArgumentParser(description="census of a fuzz_ops corpus")
    ap.add_argument("corpus")
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--limit", type=int, default=0, help="read at most N inputs (0: all)")
    a = ap.parse_args()
    vfat = os.path.join(a.build, "vfat")
    if not os.path.isdir(a.corpus):
        print(f"fuzz_ops_census: no such corpus directory: {a.corpus}", file=sys.stderr)
        return 2
    files = sorted(os.listdir(a.corpus))[:a.limit or None]
    geo = collections.defaultdict(lambda: {"inputs": 0, "enospc_ops": 0, "states": collections.Counter()})
    with tempfile.TemporaryDirectory(prefix="fuzz-census-") as tmp:
        for name in files:
            r = one(vfat, os.path.join(a.corpus, name), tmp)
            if r is None:
                continue
            tiny, res, states = r
            g = geo["tiny" if tiny else "other"]
            g["inputs"] += 1
            g["enospc_ops"] += res.count("ENOSPC")
            g["states"].update(states)
    out = {"inputs": len(files)}
    for k, g in geo.items():
        out[k] = {"inputs": g["inputs"], "enospc_ops": g["enospc_ops"],
                  "states": {s: g["states"][s] for s in STATES}}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
