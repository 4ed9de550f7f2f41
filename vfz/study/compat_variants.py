"""The dummy byte variants: the seed's dummy bytes edited one way at a time, as each checker and reader sees them.

Variants. One image per variant: the core writes two files in /v (and, for
v3, a directory), then the first short entry's bytes are edited in Python
(LFN checksum recomputed) into a variant of the seed's dummy; stock kernel
(listing with open errors), patched kernel, mtools, 7-Zip, GRUB and
fsck.fat -n / -a judge each.
"""
import os
import shutil
import subprocess
import tempfile
from collections import Counter

from vfz import fatimg, model, opscript
from vfz.check import diff
from vfz.study.compat_matrix import FS, TIMEOUT
from vfz.study.tools import find_short, vfat_ls, vfat_path


VARIANT_OPS = {
    # only the target has a dummy (plus, for v3, the directory target), so
    # what a checker says is about the variant; OTHER.TXT follows it (does a
    # reader still see the entries after the target?)
    "v1": """mkdir "/V"
create "/V/a long file name.txt" 100 7
create "/V/OTHER.TXT" 50 3
mkdir "/V/SUBDIR"
create "/V/SUBDIR/INNER.TXT" 20 9
""",
    "v3": """mkdir "/V"
create "/V/a long file name.txt" 100 7
create "/V/OTHER.TXT" 50 3
mkdir "/V/a long directory name"
create "/V/a long directory name/INNER.TXT" 20 9
""",
}
TARGET = "/V/a long file name.txt"
DTARGET = "/V/a long directory name"


def _variants():
    """(id, base style, target, description, edit(sn, nt) -> (sn, nt))."""
    def setb(i, v):
        def f(sn, nt):
            sn = bytearray(sn)
            sn[i] = v
            return bytes(sn), nt
        return f

    def rand_zero(sn, nt):
        return bytes([0x20, 0] + [0] * 6 + [0x2F, 0, 0]), nt

    def printable(sn, nt):
        return bytes([0x20, 0]) + b"QWERTY" + bytes([0x2F, 0, 0]), nt

    def nt(v):
        return lambda sn, n: (sn, v)

    def lead05(sn, n):
        sn = bytearray(sn)
        if sn[0] in (ord("~"), ord("/")):       # keep the '~'/'/' count: swap it away
            i = next(j for j in range(1, 8) if sn[j] not in (ord("~"), ord("/")))
            sn[i] = sn[0]
        sn[0] = 0x05
        return bytes(sn), n

    def dir_slash(sn, n):
        sn = bytearray(sn)
        i = next(j for j in range(8) if sn[j] != ord("~"))
        sn[i] = ord("/")
        return bytes(sn), n
    return [
        ("v1-seed", "v1", TARGET, "v1 as the seed writes it: 20 00 r r r r r r 2F 00 00, NT 0", None),
        ("v1-space8", "v1", TARGET, "byte 8 a space instead of '/'", setb(8, 0x20)),
        ("v1-nul8", "v1", TARGET, "byte 8 NUL instead of '/'", setb(8, 0x00)),
        ("v1-noleadspace", "v1", TARGET, "byte 0 'X' instead of the leading space", setb(0, ord("X"))),
        ("v1-nul0", "v1", TARGET, "byte 0 NUL (the end-of-directory mark)", setb(0, 0x00)),
        ("v1-e5", "v1", TARGET, "byte 0 0xE5 (the deleted mark)", setb(0, 0xE5)),
        ("v1-space1", "v1", TARGET, "byte 1 a space instead of NUL", setb(1, 0x20)),
        ("v1-zero", "v1", TARGET, "random part 0 (the seed never writes it)", rand_zero),
        ("v1-printable", "v1", TARGET, "printable random bytes 'QWERTY' instead of 0x01-0x1F", printable),
        ("v1-nt20", "v1", TARGET, "v1 bytes with NT byte 0x20 (v3's FAT_NO_83NAME flag)", nt(0x20)),
        ("v3-seed", "v3", TARGET, "v3 file as the July revision writes it ('~', '/', invalid bytes, ext, NT 0x20)", None),
        ("v3-nt0", "v3", TARGET, "v3 file bytes with NT byte 0", nt(0x00)),
        ("v3-lead05", "v3", TARGET, "v3 file whose drawn byte 0 is 0x05 (one of the 35; the 0xE5 escape)",
         lead05),
        ("v3-dir-seed", "v3", DTARGET, "v3 directory as written (no '/')", None),
        ("v3-dir-slash", "v3", DTARGET, "v3 directory with a '/' in its base (as files have)", dir_slash),
    ]


def set_short(img, old_sn, new_sn, new_nt=None):
    offs = find_short(img, old_sn)
    if len(offs) != 1:
        raise RuntimeError(f"short entry {old_sn.hex()} found {len(offs)} times")
    o = offs[0]
    img[o:o + 11] = new_sn
    if new_nt is not None:
        img[o + 12] = new_nt
    ck = fatimg.lfn_checksum(new_sn)
    p = o - 32
    while p >= 0 and img[p + 11] == 0x0F:
        img[p + 13] = ck
        if img[p] & 0x40:
            break
        p -= 32


def run_variants(out, seed, readers, progress):
    from vfz.proc import run
    from vfz.oracles.dosfsck import parse_fsck
    tmp = tempfile.mkdtemp(prefix="vfz-variants-")
    rows = []
    try:
        base = {}
        expected = {}
        for style in ("v1", "v3"):
            ops = os.path.join(tmp, f"v-{style}.ops")
            with open(ops, "w") as f:
                f.write(VARIANT_OPS[style])
            img = os.path.join(tmp, f"base-{style}.img")
            diff.mkfs(img, *FS)
            subprocess.run([vfat_path(), "apply", img, ops, "--dummy", style, "--seed", str(seed)],
                           check=True, capture_output=True)
            base[style] = (img, {e["path"]: e for e in vfat_ls(img)})
            m = model.Model("kernel")
            m.apply(opscript.load(ops))
            expected[style] = m.entries()
        for vid, style, target, desc, edit in _variants():
            bimg, ls = base[style]
            img = os.path.join(tmp, f"{vid}.img")
            shutil.copyfile(bimg, img)
            sn = bytes.fromhex(ls[target]["short"])
            nt = ls[target].get("nt", 0)
            if edit:
                nsn, nnt = edit(sn, nt)
                data = bytearray(open(img, "rb").read())
                set_short(data, sn, nsn, nnt)
                with open(img, "wb") as f:
                    f.write(data)
                sn, nt = nsn, nnt
            row = {"id": vid, "description": desc, "bytes": sn.hex(" "), "nt": f"0x{nt:02x}"}
            # fsck.fat -n and -a
            p = run(["fsck.fat", "-n", img], timeout=TIMEOUT)
            cs = parse_fsck(p.text + "\n" + p.errtext)
            kinds = Counter(c["kind"] for c in cs)
            row["fsck.fat -n"] = ", ".join(f"{k} x{v}" for k, v in sorted(kinds.items())) or "clean"
            row["fsck.fat -a"] = repair_effect(img, target, expected[style])
            for rname in ("kernel", "kernel-nodual", "mtools", "7-Zip", "GRUB"):
                o = readers.get(rname)
                if o is None:
                    row[rname] = "n/a"
                    continue
                r = o.read(img, TIMEOUT)
                row[rname] = describe(r, target, expected[style])
            rows.append(row)
            progress(f"compat: variant {vid}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def repair_effect(img, target, expected, timeout=TIMEOUT):
    """What fsck.fat -a does to the target and to the rest of the tree."""
    from vfz.oracles.mtools import MtoolsReader
    from vfz.proc import run
    tmp = tempfile.mkdtemp(prefix="vfz-variant-a-")
    try:
        copy = os.path.join(tmp, "a.img")
        shutil.copyfile(img, copy)
        before = MtoolsReader().read(img, timeout)
        p = run(["fsck.fat", "-a", copy], timeout=timeout)
        if p.error or p.rc not in (0, 1):
            return f"fails ({p.error or 'exit %d' % p.rc})"
        after = MtoolsReader().read(copy, timeout)
        if after.listing is None or before.listing is None:
            return f"re-read fails: {after.error or before.error}"
        exp = {e["path"]: e for e in expected}
        t = exp[target]
        leaf = target.rpartition("/")[2]
        if t["type"] == "file":
            hits = [e["path"] for e in after.listing
                    if e.get("sha256") == t.get("sha256") and e.get("size") == t.get("size")]
        else:
            inner = [p for p in exp if p.startswith(target + "/")]
            il = inner[0].rpartition("/")[2] if inner else None
            hits = [e["path"].rpartition("/")[0] for e in after.listing
                    if il and e["path"].endswith("/" + il)]
        if not hits:
            tgt = "target gone"
        elif any(h.rpartition("/")[2] == leaf for h in hits):
            tgt = "target keeps its long name"
        else:
            tgt = f"target renamed {hits[0].rpartition('/')[2]} (long name lost)"
        bp = {e["path"] for e in before.listing}
        ap = {e["path"] for e in after.listing}
        changed = sorted(bp - ap)
        others = [c for c in changed if c != target and not c.startswith(target + "/")]
        if others:
            tgt += f"; also changed: {', '.join(others[:2])}" + (" ..." if len(others) > 2 else "")
        new = sorted(ap - bp)
        if new and not others:
            tgt += f"; new: {', '.join(new[:2])}"
        return tgt
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def describe(r, target, expected):
    """What a reader did with the variant entry (and the rest of /v)."""
    if r.listing is None:
        return f"fails: {(r.error or '?')[:80]}"
    # GRUB shows 8.3 names in lower case: compare paths case-insensitively
    got = {e["path"].lower(): e for e in r.listing}
    exp = {e["path"].lower(): e for e in expected}
    target = target.lower()
    e = got.get(target)
    parts = []
    if e is None:
        parts.append("not listed")
    else:
        errs = [f"{k} {e[k]}" for k in ("open_error", "stat_error", "read_error") if e.get(k)]
        if errs:
            parts.append("listed, " + ", ".join(errs))
        elif e.get("sha256") is not None and e.get("sha256") != exp[target].get("sha256"):
            parts.append("listed, wrong contents")
        else:
            parts.append("listed, reads")
    others = [p for p in exp if p != target and p.startswith("/v/")
              and not p.startswith(target + "/")]
    missing = [p for p in others if p not in got]
    if missing:
        parts.append(f"{len(missing)} other entries of /v lost")
    extra = [p for p in got if p not in exp]
    if extra:
        parts.append("extra: " + ", ".join(extra[:2]))
    if r.complaints:
        parts.append(f"{len(r.complaints)} complaint(s): {r.complaints[0][:70]}")
    return "; ".join(parts)
