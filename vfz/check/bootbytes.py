"""The formatter's bytes: a volume the build's own `vfat mkfs` made against mkfs.fat's of the same layout, byte for byte.

The readers judge a fresh volume by what they use of it (vfz.check.formatted); a field no
reader checks (the 0x55AA signature, FAT32's jump, which BPB field holds a small volume's
sector count) can be wrong without any of them noticing. So the formatter under test's
volume is compared with mkfs.fat's (dosfstools 4.2) made over the same layout: every
choice mkfs.fat lets one pin is pinned to what the core wrote (vfz.oracles.dosfsck.format.
pinned_argv: cluster, reserved sectors, FATs, root entries, media, CHS, volume ID, no MBR,
no alignment), and only the fields below, which mkfs.fat cannot be told, are masked. What
else differs is a divergence of role "formatter" (verdict "bytes", kind the first field
that differs), a finding of the formatter under test -- or of mkfs.fat, which the detail
lets the reader judge.

Compared: the boot sector (whole sector), FSInfo, the FAT32 backup boot sector and its
FSInfo, every other reserved sector, each FAT's reserved entries (0 and 1; FAT32's root
cluster end mark by class: any end mark is one) and the empty root directory.
"""
import os
import struct
import tempfile

from vfz import geometry, oracles
from vfz.check.divergence import Divergence
from vfz.oracles.dosfsck.format import pinned_argv
from vfz.proc import run

# The masks: (first byte, end, why) -- the only bytes allowed to differ. Each is a field
# mkfs.fat cannot be told; tests/test_formatter_bytes.py flips every other byte and sees it.
MASK_OEM = (3, 11, "OEM name: mkfs.fat writes 'mkfs.fat', the core 'VFATFUZZ'; no reader uses it")
MASK_FAT16_SIZE = (22, 24, "sectors per FAT: each formatter's own formula (the core's may be a few "
                   "sectors larger); fsck.fat and every reader judge whether it covers the clusters")
MASK_FAT32_SIZE = (36, 40, MASK_FAT16_SIZE[2])
MASK_CODE16 = (62, 510, "boot code: mkfs.fat's 'not a bootable disk' stub, the core's zeros")
MASK_CODE32 = (90, 510, MASK_CODE16[2])
MASK_FREE = (488, 492, "FSInfo free count: follows the FAT size (fewer or more data clusters); "
             "fsck.fat checks it against the FAT")
BOOT_MASKS = {12: (MASK_OEM, MASK_FAT16_SIZE, MASK_CODE16), 16: (MASK_OEM, MASK_FAT16_SIZE, MASK_CODE16),
              32: (MASK_OEM, MASK_FAT32_SIZE, MASK_CODE32)}
FSINFO_MASKS = (MASK_FREE,)

# field names, for the finding's kind and detail: (first byte, end, name)
_COMMON = ((0, 3, "jump"), (3, 11, "OEM name"), (11, 13, "bytes per sector"), (13, 14, "sectors per cluster"),
           (14, 16, "reserved sectors"), (16, 17, "FATs"), (17, 19, "root entries"),
           (19, 21, "total sectors 16"), (21, 22, "media"), (22, 24, "sectors per FAT 16"),
           (24, 26, "sectors per track"), (26, 28, "heads"), (28, 32, "hidden sectors"),
           (32, 36, "total sectors 32"))
BOOT_FIELDS = {
    16: _COMMON + ((36, 37, "drive"), (37, 38, "reserved1"), (38, 39, "boot signature 0x29"),
                   (39, 43, "volume ID"), (43, 54, "label"), (54, 62, "type"), (62, 510, "boot code"),
                   (510, 512, "signature 0x55AA")),
    32: _COMMON + ((36, 40, "sectors per FAT 32"), (40, 42, "flags"), (42, 44, "version"),
                   (44, 48, "root cluster"), (48, 50, "FSInfo sector"), (50, 52, "backup boot sector"),
                   (52, 64, "reserved"), (64, 65, "drive"), (65, 66, "reserved1"),
                   (66, 67, "boot signature 0x29"), (67, 71, "volume ID"), (71, 82, "label"),
                   (82, 90, "type"), (90, 510, "boot code"), (510, 512, "signature 0x55AA")),
}
BOOT_FIELDS[12] = BOOT_FIELDS[16]
FSINFO_FIELDS = ((0, 4, "lead signature"), (4, 484, "reserved"), (484, 488, "struct signature"),
                 (488, 492, "free count"), (492, 496, "next free"), (496, 508, "reserved2"),
                 (508, 512, "trail signature"))


def field_of(fields, off):
    """(first byte, end, name) of the field holding off (a lone byte outside any)."""
    return next(((a, b, n) for a, b, n in fields if a <= off < b), (off, off + 1, f"byte {off}"))


def masked(masks, off):
    return any(a <= off < b for a, b, _ in masks)


def diff_region(ours, ref, region, fields=(), masks=()):
    """[(region, field, offset, ours hex, mkfs.fat's hex)] of every unmasked byte that
    differs, one per field (its whole bytes, up to 16)."""
    out, seen = [], set()
    if ours == ref:
        return out
    for i in range(min(len(ours), len(ref))):
        if ours[i] != ref[i] and not masked(masks, i):
            a, b, name = field_of(fields, i)
            if name not in seen:
                seen.add(name)
                b = min(b, a + 16)
                out.append((region, name, i, bytes(ours[a:b]).hex(), bytes(ref[a:b]).hex()))
    return out


def _layout(b):
    """What the two volumes must share to be compared, from the core's boot sector."""
    ss, spc, res, nfats, root = struct.unpack_from("<HBHBH", b, 11)
    spf = struct.unpack_from("<H", b, 22)[0] or struct.unpack_from("<I", b, 36)[0]
    fat32 = struct.unpack_from("<H", b, 22)[0] == 0
    return dict(ss=ss, spc=spc, res=res, nfats=nfats, root=root, spf=spf, fat32=fat32,
                fsinfo=struct.unpack_from("<H", b, 48)[0] if fat32 else 0,
                backup=struct.unpack_from("<H", b, 50)[0] if fat32 else 0,
                root_clus=struct.unpack_from("<I", b, 44)[0] if fat32 else 0)


def _sector(img, n, ss):
    return img[n * ss:(n + 1) * ss]


def compare_images(ours, ref, fat):
    """[(region, field, offset, ours hex, ref hex)] where ours (the formatter under test's volume, bytes)
    differs from ref (mkfs.fat's of the same layout) outside the masks."""
    lo, lr = _layout(ours), _layout(ref)
    ss = lo["ss"]
    boot_f, boot_m = BOOT_FIELDS[fat], BOOT_MASKS[fat]
    out = diff_region(_sector(ours, 0, ss), _sector(ref, 0, ss), "boot", boot_f, boot_m)
    special = {0}
    if lo["fat32"]:
        for n, name, f, m in ((lo["fsinfo"], "FSInfo", FSINFO_FIELDS, FSINFO_MASKS),
                              (lo["backup"], "backup boot", boot_f, boot_m),
                              (lo["backup"] + 1, "backup FSInfo", FSINFO_FIELDS, FSINFO_MASKS)):
            if 0 < n < lo["res"] and n not in special:
                special.add(n)
                out += diff_region(_sector(ours, n, ss), _sector(ref, n, ss), name, f, m)
    for n in range(1, lo["res"]):
        if n not in special:
            out += diff_region(_sector(ours, n, ss), _sector(ref, n, ss), f"reserved sector {n}")
    head = {12: 3, 16: 4, 32: 8}[fat]
    for i in range(lo["nfats"]):
        fo, fr = (lo["res"] + i * lo["spf"]) * ss, (lr["res"] + i * lr["spf"]) * ss
        out += diff_region(ours[fo:fo + head], ref[fr:fr + head], f"FAT{i + 1} reserved entries")
        if fat == 32:         # the root cluster's end mark: any of 0x0FFFFFF8-F is one
            eo, er = (struct.unpack_from("<I", img, off + 8)[0] & 0x0FFFFFFF
                      for img, off in ((ours, fo), (ref, fr)))
            if (eo >= 0x0FFFFFF8) != (er >= 0x0FFFFFF8):
                out.append((f"FAT{i + 1} root cluster", "end mark", 8, f"{eo:08x}", f"{er:08x}"))
    out += diff_region(_root(ours, lo), _root(ref, lr), "root directory")
    return out


def _root(img, lo):
    start = (lo["res"] + lo["nfats"] * lo["spf"]) * lo["ss"]
    n = lo["spc"] * lo["ss"] if lo["fat32"] else lo["root"] * 32
    if lo["fat32"]:
        start += (lo["root_clus"] - 2) * n
    return img[start:start + n]


def reference(image, timeout=60.0):
    """mkfs.fat's volume of the layout of the fresh volume in image -> (argv, its bytes, or
    None and why not: no BPB to pin it to, or mkfs.fat refuses the layout -- it refuses
    cluster counts at the types' edges that the core makes on purpose)."""
    made = geometry.made(image)
    with open(image, "rb") as f:
        ours = f.read(512)
    if not made or made["fat"] not in (12, 16, 32):
        return [], None, "no BPB to pin mkfs.fat to"
    vid = struct.unpack_from("<I", ours, 67 if made["bpb32"] else 39)[0]
    fd, ref_path = tempfile.mkstemp(prefix="vfz-mkfsfat-", suffix=".img")
    os.close(fd)
    try:
        os.truncate(ref_path, os.path.getsize(image))
        argv = pinned_argv(made, vid, ref_path)
        p = run(argv, timeout=timeout)
        if p.rc != 0:
            last = (p.errtext or p.text or "").strip().splitlines()[-1:]
            return argv, None, f"mkfs.fat refused: {last[0] if last else p.rc}"
        with open(ref_path, "rb") as f:
            return argv, f.read(), None
    finally:
        os.unlink(ref_path)


def compare(image, timeout=60.0):
    """Compare the fresh volume in image (the formatter under test's, before any free
    window) with mkfs.fat's of its layout -> {"argv": mkfs.fat's command, "diffs": [...],
    "skipped": why not compared, or None}."""
    argv, ref, why = reference(image, timeout)
    if ref is None:
        return {"argv": argv, "diffs": [], "skipped": why}
    with open(image, "rb") as f:
        ours = f.read()
    return {"argv": argv, "diffs": compare_images(ours, ref, geometry.made(image)["fat"]), "skipped": None}


def describe(diffs):
    return "; ".join(f"{region} {name} (byte {off}): {a} where mkfs.fat has {b}"
                     for region, name, off, a, b in diffs)


def add_divergence(res, formatter, cmp, spec):
    """A Divergence of role formatter for cmp (compare's answer) when bytes differ: oracle the
    formatter's family, verdict "bytes", kind the first differing region and field."""
    if not cmp or not cmp["diffs"]:
        return
    region, name = cmp["diffs"][0][:2]
    det = (f"fresh volume {spec}: bytes differ from `{' '.join(cmp['argv'][:-1])} IMAGE` outside "
           f"the masks (vfz.check.bootbytes): {describe(cmp['diffs'])}")
    res.add(Divergence({"role": "formatter", "oracle": oracles.entry(formatter).family, "verdict": "bytes",
                        "kind": f"{region}: {name}", "op": "-", "cls": "-"}, formatter, det[:4000]))
    res.verdicts.setdefault(formatter, {})["mkfs.fat"] = "bytes"
    res.details.setdefault(formatter, {})["mkfs.fat"] = det[:4000]
