"""QEMU vvfat's reproducer template (vfz/oracles/repro.py): the tree as a host directory, `qemu-img convert` of vvfat's disk, the boot sector and FAT read back with od.

vvfat applies no ops: the vvfat writers make the model's final tree of an
op-script into a host directory and freeze vvfat's view of it (writer.py).
The reproducer does the same with nothing but qemu-img and coreutils: run.sh
makes the directory tree (mkdir, the files' bytes from data/, every time
2009-07-01 as the oracle sets them), runs `qemu-img convert --image-opts
driver=vvfat,dir=d,<the variant's options> -O raw disk.img` (the
`-drive file=fat:...:d` a user writes), cuts the FAT volume out of the disk
(the MBR's first partition; a floppy is the volume itself), and reads its
boot sector and FAT with od:

  * the FAT type a reader must take, from the cluster count (Microsoft's
    FAT specification: fewer than 4085 clusters FAT12, fewer than 65525
    FAT16), against the boot sector's type string and the width of the
    entries the FAT holds (its first two entries; every allocated entry
    read 12 and 16 bits wide);
  * symptom: a FAT whose entries are wider than the cluster count allows
    (vvfat-fat32-fat16-bpb: 32-bit entries under a FAT16 count;
    vvfat-floppy16-fat12: 16-bit entries under a FAT12 count, which a
    FAT12 reading follows elsewhere).

fsck.fat -n of the volume is printed for the record when it is installed
(not needed, not counted). The case's writer (bug.json "writer", a finding's
writer) names the variant: default_extra puts it in extra "variant".
"""
from vfz import model, oracles
from vfz.oracles.repro import ExportError, q
from vfz.oracles.vvfat.volume import STAMP, VARIANTS, spec

PACKAGES = ["qemu-utils"]
NEEDS = [("qemu-img", "qemu-utils"), ("od", "coreutils"), ("dd", "coreutils")]
SIDES = ("writer",)
SHA = True
LISTING = False
TOOL = "qemu-img (vvfat)"
STEPS = ("does not use it (vvfat makes its own volume): it makes the directory tree the operations "
         "leave (Linux's result) under `d/`, every time 2009-07-01, runs `qemu-img convert "
         "--image-opts driver=vvfat,dir=d,... -O raw disk.img` (the variant's `fat:...:d` drive), cuts "
         "the FAT volume out of the disk and reads its boot sector and FAT with od: the FAT type the "
         "cluster count decides, against the type string and the width of the FAT's entries")
EXPECTED = ("the tree of the host directory (what vvfat is given and should show): `d PATH` for a "
            "directory, `f PATH SIZE SHA256` for a file. run.sh does not list the volume (qemu-img "
            "has no FAT reader); its symptom is the boot sector against the FAT.")


START_IMAGE = False        # the README shows no entries of image.img: vvfat does not use it


def volume_note(case):
    """The README's volume line: vvfat's own, not image.img's."""
    v = (case.extra or {}).get("variant", "?")
    return (f"vvfat's own, `{spec(v).replace('DIR', 'd')}` (registry variant {v}); image.img.xz "
            "(mkfs.fat's volume of the op-script's campaign) is not used")


def default_extra(extra, writer):
    """The variant is the case's writer (vvfat-32, vvfat-floppy-16, ...)."""
    if writer in VARIANTS:
        extra.setdefault("variant", writer)


def shown(case, path):
    return path


def _tree(case):
    """The model's final tree of the case's ops under the variant's profile (what the vvfat writer
    hands qemu-img): [(path, node)] parents first."""
    e = oracles.entry(case.extra["variant"])
    m = model.Model(e.profile, e.names, root=model.root_for(e.profile, case.image), rule=e.shortname)
    m.apply(case.ops)
    out, stack = [], [("", m.root)]
    while stack:
        p, node = stack.pop(0)
        for k in node.kids.values():
            out.append((f"{p}/{k.name}", k))
            if k.is_dir:
                stack.append((f"{p}/{k.name}", k))
    return out


def body(case, data):
    v = (case.extra or {}).get("variant")
    if v not in VARIANTS:
        raise ExportError(f"a vvfat case names its variant (bug.json writer or extra variant: "
                          f"{', '.join(VARIANTS)}), not {v!r}")
    lines = ['mkdir "$OUT/d" || cannot "cannot make $OUT/d"\n']
    for i, (p, node) in enumerate(_tree(case)):
        if node.is_dir:
            lines.append(f'mkdir "$OUT/d"{q(p)}\n')
        else:
            f = data.add(f"file{i + 1}", bytes(node.data))
            lines.append(f'cp "$HERE/{f}" "$OUT/d"{q(p)}\n')
    opts = ",".join(f"{k}={val}" for k, val in VARIANTS[v].items())
    drive = spec(v).replace("DIR", "d")
    return (f'\necho "== the host directory vvfat is given: the tree the operations leave"\n'
            + "".join(lines)
            + f'find "$OUT/d" -exec touch -h -d @{STAMP} {{}} +\n'
            + _CONVERT.replace("{OPTS}", opts).replace("{DRIVE}", drive) + _CHECK)


_CONVERT = r"""
( cd "$OUT/d" && find . -mindepth 1 | LC_ALL=C sort ) | indent
echo "== qemu-img convert of vvfat's disk of d ({DRIVE})"
qemu-img --version | head -n 1 | indent
( cd "$OUT" && qemu-img convert --image-opts "driver=vvfat,dir=d,{OPTS}" -O raw disk.img ) > "$OUT/convert.txt" 2>&1
rc=$?
indent < "$OUT/convert.txt"
[ $rc = 0 ] || cannot "qemu-img convert failed (exit $rc)"
u() {   # FILE OFFSET BYTES: an unsigned little-endian number
    od -An -v -tu1 -j "$2" -N "$3" "$1" | tr -s ' \n' ' ' | awk '{ v = 0; for (i = NF; i >= 1; i--) v = v * 256 + $i; print v }'
}
D="$OUT/disk.img"
if [ "$(u "$D" 0 1)" = 235 ] || [ "$(u "$D" 0 1)" = 233 ]; then
    echo "the disk is a floppy: sector 0 is the boot sector"
    cp "$D" "$OUT/after.img"
else
    start=$(u "$D" 454 4)
    len=$(u "$D" 458 4)
    echo "MBR partition 1: type $(u "$D" 450 1), sectors $start + $len"
    dd if="$D" of="$OUT/after.img" bs=1M iflag=skip_bytes,count_bytes skip=$((start * 512)) \
        count=$((len * 512)) conv=sparse status=none || cannot "dd of the partition failed"
fi
"""

_CHECK = r"""
V="$OUT/after.img"
bps=$(u "$V" 11 2); spc=$(u "$V" 13 1); rsvd=$(u "$V" 14 2); nfats=$(u "$V" 16 1)
rootent=$(u "$V" 17 2); tot=$(u "$V" 19 2); [ "$tot" != 0 ] || tot=$(u "$V" 32 4)
fatsz16=$(u "$V" 22 2); fatsz=$fatsz16; [ "$fatsz" != 0 ] || fatsz=$(u "$V" 36 4)
[ "$bps" -gt 0 ] && [ "$spc" -gt 0 ] || cannot "the volume's boot sector has no geometry (bytes per sector $bps, sectors per cluster $spc)"
rootsecs=$(( (rootent * 32 + bps - 1) / bps ))
clusters=$(( (tot - rsvd - nfats * fatsz - rootsecs) / spc ))
if [ $clusters -lt 4085 ]; then bits=12; elif [ $clusters -lt 65525 ]; then bits=16; else bits=32; fi
if [ "$fatsz16" != 0 ]; then typestr=$(dd if="$V" bs=1 skip=54 count=8 status=none); else typestr=$(dd if="$V" bs=1 skip=82 count=8 status=none); fi
head=$(od -An -tx1 -j $((rsvd * bps)) -N 8 "$V" | tr -s ' \n' ' ' | sed 's/^ //; s/ $//')
echo "== the volume's boot sector and FAT"
echo "bytes/sector $bps, sectors/cluster $spc, reserved $rsvd, FATs $nfats, root entries $rootent, sectors $tot, sectors/FAT $fatsz ($( [ "$fatsz16" != 0 ] && echo 16-bit field || echo FAT32 field))" | indent
echo "type string '$typestr'; $clusters clusters: FAT$bits by the cluster count (the FAT specification: fewer than 4085 FAT12, fewer than 65525 FAT16)" | indent
echo "the FAT starts: $head" | indent
# the FAT's entries read 12, 16 and 32 bits wide: how many allocated, how many
# hold no valid value (neither 0, an end of chain, bad, nor a cluster of the volume),
# and for the 16-bit reading how many a 12-bit one reads otherwise
# (the first 16384 entries: a reproducer's tree is small, and awk is slow on 64K of them)
scan=$(( clusters < 16384 ? clusters : 16384 ))
[ $scan = $clusters ] || echo "(the FAT read over its first $scan entries)" | indent
od -An -v -tu1 -j $((rsvd * bps)) -N $(( (scan + 2) * 4 < fatsz * bps ? (scan + 2) * 4 : fatsz * bps )) "$V" \
    | awk -v n=$scan -v nc=$clusters '{ for (i = 1; i <= NF; i++) b[k++] = $i }
    function e(w, c,   o, v) {
        if (w == 12) { o = c + int(c / 2); v = b[o] + 256 * b[o + 1]; return (c % 2) ? int(v / 16) : v % 4096 }
        if (w == 16) return b[2 * c] + 256 * b[2 * c + 1]
        return (b[4 * c] + 256 * b[4 * c + 1] + 65536 * b[4 * c + 2] + 16777216 * (b[4 * c + 3] % 16))
    }
    function kind(w, v,   top) {
        top = (w == 12) ? 4095 : (w == 16) ? 65535 : 268435455
        if (v == 0) return "free"; if (v >= top - 7) return "eoc"; if (v == top - 8) return "bad"
        if (v >= 2 && v < nc + 2) return "next"; return "invalid"
    }
    END {
        split("12 16 32", W, " ")
        for (j = 1; j <= 3; j++) { w = W[j]
            a = 0; bad = 0
            for (c = 2; c < n + 2 && (w < 32 || 4 * c + 3 < k); c++) { t = kind(w, e(w, c)); if (t != "free") a++; if (t == "invalid") bad++ }
            printf "read %d bits wide: %d entries allocated, %d invalid\n", w, a, bad
            if (w == 16) { d = 0
                for (c = 2; c < n + 2; c++) { v16 = e(16, c); t16 = kind(16, v16); if (t16 == "free") continue
                    v12 = e(12, c); t12 = kind(12, v12)
                    if (t12 != t16 || (t16 == "next" && v12 != v16)) d++ }
                printf "read 12 bits wide, %d of the entries allocated 16 bits wide lead elsewhere\n", d }
        }
    }' > "$OUT/fatwidth.txt"
indent < "$OUT/fatwidth.txt"
inv() { sed -n "s/^read $1 bits wide: .*, \([0-9]*\) invalid$/\1/p" "$OUT/fatwidth.txt"; }
alloc() { sed -n "s/^read $1 bits wide: \([0-9]*\) entries.*/\1/p" "$OUT/fatwidth.txt"; }
case "$head" in
    "f8 ff ff 0f ff ff ff 0f"|"f0 ff ff 0f ff ff ff 0f")
        width=32 ;;
    *)
        if [ "$(inv 16)" = 0 ] && [ "$(alloc 16)" -gt 0 ] && [ "$(inv 12)" != 0 ]; then width=16
        elif [ "$(inv 16)" = 0 ] && [ "$(echo "$head" | cut -d' ' -f2-4)" = "ff ff ff" ] && [ "$bits" = 12 ] && \
             [ "$(sed -n 's/^read 12 bits wide, \([0-9]*\) of .*/\1/p' "$OUT/fatwidth.txt")" -gt 0 ]; then width=16
        else width=$bits; fi ;;
esac
echo "the FAT's entries are $width bits wide (its first entries, and the reading in which every entry is valid)"
if [ "$width" -gt "$bits" ]; then
    bug "the FAT holds $width-bit entries (it starts $head) under a boot sector whose $clusters clusters make it FAT$bits (type string '$typestr'$( [ "$fatsz16" != 0 ] && echo ", 16-bit sectors per FAT $fatsz16, a fixed root of $rootent entries")): every reader takes the FAT as FAT$bits and follows each chain through $( [ $width = 32 ] && echo 'the halves of 32-bit entries' || echo '12-bit readings of 16-bit entries')"
fi
if command -v fsck.fat >/dev/null 2>&1; then
    echo "== fsck.fat -n of the volume (for the record: dosfstools is not needed to see the bug)"
    fsck.fat -n "$V" 2>&1 | head -n 20 | indent
fi
"""
