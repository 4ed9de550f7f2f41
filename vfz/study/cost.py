"""What a dummy collision costs: duplicate short entries, forced or natural, read and repaired by the tools.

make_forced: three files, the second's short entry overwritten with the first's; make_natural: a
real collision of a study trial replayed and pruned to its pair; measure_cost: fsck.fat -n and -a,
mtools and the kernel readers on such an image.
"""
import os
import shutil
import subprocess
import tempfile

from vfz import fatimg
from vfz.study.tools import find_short, vfat_ls, vfat_path


def force_duplicate(img, src_sn, dst_sn):
    """Overwrite the short entry dst_sn with src_sn's 11 bytes and fix the
    checksum of the LFN slots in front of it. -> number of slots fixed."""
    offs = find_short(img, dst_sn)
    if len(offs) != 1:
        raise RuntimeError(f"short entry {dst_sn.hex()} found {len(offs)} times")
    o = offs[0]
    img[o:o + 11] = src_sn
    ck = fatimg.lfn_checksum(src_sn)
    n = 0
    p = o - 32
    while p >= 0 and img[p + 11] == 0x0F:
        img[p + 13] = ck
        n += 1
        if img[p] & 0x40:
            break
        p -= 32
    return n



COST_OPS = """mkdir "/C"
create "/C/first long name.txt" 100 1
create "/C/second long name.txt" 200 2
create "/C/third long name.txt" 300 3
"""


def make_forced(tmp, mode, seed):
    """A 3-file directory whose 2nd dummy is overwritten with the 1st's."""
    img = os.path.join(tmp, f"forced-{mode}.img")
    ops = os.path.join(tmp, "cost.ops")
    with open(ops, "w") as f:
        f.write(COST_OPS)
    subprocess.run([vfat_path(), "mkfs", img, "--size", "8M"], check=True, capture_output=True)
    subprocess.run([vfat_path(), "apply", img, ops, "--dummy", mode, "--seed", str(seed)],
                   check=True, capture_output=True)
    ls = {e["path"]: e for e in vfat_ls(img)}
    a = bytes.fromhex(ls["/C/first long name.txt"]["short"])
    b = bytes.fromhex(ls["/C/second long name.txt"]["short"])
    data = bytearray(open(img, "rb").read())
    force_duplicate(data, a, b)
    with open(img, "wb") as f:
        f.write(data)
    return img


def make_natural(tmp, seed, first, dummy="v1"):
    """A real v1 collision, small: replay the trial's first `first` creations
    (`vfat apply --seed`, the same dummies as the driver: one random number
    per long name), then unlink every file but the two that share a short
    entry, which get contents. -> (image, op-script path, pair)."""
    names = [f"/d/n{i:05d}___.txt" for i in range(first)]
    ops = os.path.join(tmp, "natural.ops")
    img = os.path.join(tmp, "natural.img")

    def write(keep):
        with open(ops, "w") as f:
            f.write(f"# {dummy} trial seed {seed}: the first {first} creations of build/study_collide\n")
            f.write(f"# replay: vfat mkfs IMG --size 8M && vfat apply IMG THIS --dummy {dummy} --seed {seed}\n")
            f.write('mkdir "/d"\n')
            for i, n in enumerate(names):
                size = 100 * (keep.index(n) + 1) if n in keep else 0
                f.write(f'create "{n}" {size} {i % 251}\n')
            for n in names:
                if keep and n not in keep:
                    f.write(f'unlink "{n}"\n')
        if os.path.exists(img):
            os.unlink(img)
        subprocess.run([vfat_path(), "mkfs", img, "--size", "8M"], check=True, capture_output=True)
        subprocess.run([vfat_path(), "apply", img, ops, "--dummy", dummy, "--seed", str(seed)],
                       check=True, capture_output=True)
        return vfat_ls(img)

    by = {}
    for e in write([]):
        if e["type"] == "file":
            by.setdefault(e["short"], []).append(e["path"])
    pairs = [v for v in by.values() if len(v) > 1]
    if not pairs:
        raise RuntimeError(f"natural collision: seed {seed} replayed without a duplicate")
    keep = sorted(pairs[0])[:2]
    ls = [e for e in write(keep) if e["type"] == "file"]
    if len(ls) != 2 or ls[0]["short"] != ls[1]["short"]:
        raise RuntimeError("natural collision: the two kept files do not share a short entry")
    return img, ops, keep


def measure_cost(image, readers, timeout=300.0):
    """fsck.fat -n / -a, mtools, kernel(s) on one colliding image."""
    from vfz.proc import run
    from vfz.oracles.mtools import MtoolsReader
    from vfz.oracles.dosfsck import parse_fsck
    res = {}
    core = [e for e in vfat_ls(image) if e["type"] == "file"]
    names = {e["path"] for e in core}
    by_short = {}
    for e in core:
        by_short.setdefault(e["short"], []).append(e["path"])
    dups = {k: v for k, v in by_short.items() if len(v) > 1}
    res["files"] = len(core)
    res["duplicate_groups"] = len(dups)
    res["files_in_duplicates"] = sum(len(v) for v in dups.values())
    p = run(["fsck.fat", "-n", image], timeout=timeout)
    cs = parse_fsck(p.text + "\n" + p.errtext)
    kinds = {}
    for c in cs:
        kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
    res["fsck_n_rc"] = p.rc
    res["fsck_n_kinds"] = kinds
    res["fsck_n_dup_lines"] = [c["path"] + ": " + c["message"] for c in cs if c["kind"] == "duplicate"][:4]
    res["fsck_n_raw"] = [l.rstrip() for l in p.text.splitlines()[1:12]]
    tmp = tempfile.mkdtemp(prefix="vfz-cost-")
    try:
        copy = os.path.join(tmp, "a.img")
        shutil.copyfile(image, copy)
        pa = run(["fsck.fat", "-a", copy], timeout=timeout)
        res["fsck_a_rc"] = pa.rc
        res["fsck_a_actions"] = [l.strip() for l in pa.text.splitlines()
                                 if "Renamed" in l or "Deleting" in l or "Duplicate" in l][:6]
        after = MtoolsReader().read(copy, timeout)
        if after.listing is None:
            res["after_a_error"] = after.error
        else:
            ap = {e["path"] for e in after.listing if e["type"] == "file"}
            # a file keeps its long name when the file with its contents
            # still has the same leaf name (a renamed parent does not count)
            by_blob = {}
            for e in after.listing:
                if e["type"] == "file":
                    by_blob.setdefault((e.get("size"), e.get("sha256")), []).append(e["path"])
            lost = []
            for e in core:
                leaf = e["path"].rpartition("/")[2]
                cands = by_blob.get((e.get("size"), e.get("sha256")), [])
                if not any(c.rpartition("/")[2] == leaf for c in cands):
                    lost.append(e["path"])
            res["paths_changed"] = len(names - ap)
            res["long_names_lost"] = len(lost)
            res["lost_examples"] = lost[:3]
            res["new_names"] = sorted(ap - names)[:3]
            res["files_after_a"] = len(ap)
        p2 = run(["fsck.fat", "-n", copy], timeout=timeout)
        res["fsck_after_a_clean"] = not [c for c in parse_fsck(p2.text) if c["kind"] == "duplicate"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    exp = {e["path"]: e for e in core}
    for rn, r in readers:
        try:
            rr = r.read(image, timeout)
        except Exception as e:
            res[rn] = {"error": f"{type(e).__name__}: {e}"}
            continue
        if rr.listing is None:
            res[rn] = {"error": rr.error or "no listing"}
            continue
        got = {e["path"]: e for e in rr.listing if e.get("type") == "file"}
        ok = [p for p in names if p in got and got[p].get("sha256") == exp[p].get("sha256")
              and not got[p].get("open_error")]
        dupfiles = [p for v in dups.values() for p in v]
        res[rn] = {"listed": len([p for p in names if p in got]), "read_ok": len(ok),
                   "dup_files_read_ok": len([p for p in dupfiles if p in ok]),
                   "dup_files": len(dupfiles), "error": rr.error,
                   "complaints": rr.complaints[:3]}
    return res
