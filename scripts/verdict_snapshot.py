#!/usr/bin/python3
"""Verdict snapshot: run N generated op-scripts through writers x readers
with the campaign's checker of the tree REPO, and write every verdict and
finding signature (OUT.json at the end, OUT.json.jsonl as it goes), so that
two trees (before/after a refactoring) can be compared with
scripts/verdict_compare.py. Both runs should use the same binaries:

    VFAT_BUILD=FROZEN scripts/verdict_snapshot.py OLD_TREE old.json [--n 200] [--ops 8]
    VFAT_BUILD=FROZEN scripts/verdict_snapshot.py NEW_TREE new.json [--n 200] [--ops 8]
    scripts/verdict_compare.py old.json.jsonl new.json.jsonl

VFAT_BUILD selects the build (vfat, kernel guest, nodual modules). It works
with the old layout (scripts/vfz) and the new one (vfz/). Scripts i =
--first.. get `vfat gen --seed i` and FAT12/16/32 in turn.
"""
import argparse
import json
import os
import subprocess
import sys
import time
ap = argparse.ArgumentParser()
ap.add_argument("repo"); ap.add_argument("out")
ap.add_argument("--n", type=int, default=200); ap.add_argument("--ops", type=int, default=10)
ap.add_argument("--first", type=int, default=1)
ap.add_argument("--writers", default="core-dual,core-v1,core-v3,core-unique,mtools,kernel,kernel-nodual,kernel-nodual-v3")
ap.add_argument("--readers", default="dosfsck,mtools,7z,grub,core,vfat-check,kernel,kernel-nodual,kernel-nodual-v3")
a = ap.parse_args()
sys.path.insert(0, a.repo); sys.path.insert(0, os.path.join(a.repo, "scripts"))
try:
    from vfz.check.checker import Checker
except ImportError:
    from vfz.check.checker import Checker
from vfz import opscript
build = os.environ["VFAT_BUILD"]
vfat = os.path.join(build, "vfat")
notes = []
cfg = {k: {"auto_build": False} for k in ("kernel", "kernel-nodual", "kernel-nodual-v3")}
ck = Checker(readers=a.readers.split(","), writers=a.writers.split(","), vfat=vfat, notes=notes, cfg=cfg)
print("notes:", notes, file=sys.stderr)
out = {"notes": notes, "scripts": []}
log = open(a.out + ".jsonl", "w")
fss = ["fat12", "fat16", "fat32"]
t0 = time.time()
for i in range(a.first, a.first + a.n):
    text = subprocess.run([vfat, "gen", "--seed", str(i), "--ops", str(a.ops)], capture_output=True,
                          text=True, check=True).stdout
    ops = opscript.parse(text)
    fs = fss[i % 3]
    res = ck.check(ops, fs)
    rec = {"seed": i, "fs": fs, "verdicts": res.verdicts,
           "sigs": sorted((d.sig, d.writer, json.dumps(d.fields, sort_keys=True))
                          for d in res.divs.values())}
    out["scripts"].append(rec)
    log.write(json.dumps(rec, sort_keys=True) + "\n")
    log.flush()
    if i % 10 == 0:
        print(f"{i} scripts, {time.time()-t0:.0f}s", file=sys.stderr, flush=True)
ck.close()
tmp = a.out + ".tmp"
with open(tmp, "w") as f:
    json.dump(out, f, indent=1, sort_keys=True)
os.replace(tmp, a.out)
print(f"done {a.n} scripts in {time.time()-t0:.0f}s", file=sys.stderr)
