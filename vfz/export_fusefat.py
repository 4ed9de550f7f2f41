"""Reproducer scripts for fusefat (vfz.export): the image is mounted with
fusefat itself (`fusefat -f -s -o rw+` for a writer bug, `-o ro` for a
reader bug; FUSE, no root needed where /dev/fuse is usable), the ops run
as mkdir / dd / rename(2) (perl) / rm / rmdir on the mount (the kernel exporter's
commands: vfz.export_kernel), the tree is listed with find, stat and
sha256sum, and `fusermount -u` ends fusefat, which writes its state back
to the image then. A failure where Linux succeeds, a success where Linux
fails and a listing other than the expected tree are the symptoms.
"""
from vfz import export_kernel

PACKAGES = ["fusefat", "fuse"]
NEEDS = [("fusefat", "fusefat"), ("fusermount", "fuse"), ("find", "findutils"),
         ("sha256sum", "coreutils"), ("dd", "coreutils"), ("perl", "perl-base")]
SIDES = ("reader", "writer")
SHA = True
LISTING = True
TOOL = "fusefat"
STEPS = ("mounts it with fusefat (`-o rw+` to write, `-o ro` to read) and, for a writer bug, "
         "applies the operations with mkdir, dd, rename(2) (perl), rm and rmdir, checking each exit status; "
         "then lists the mounted tree with find, stat and sha256sum and unmounts with fusermount")
EXPECTED = export_kernel.EXPECTED


def shown(case, path):
    return path


# extra {"check": "fsck"}: fsck.fat -n reads the image fusefat left after the
# unmount (damage the mounted listing cannot show: a file whose clusters
# are free in the FAT); any complaint is a symptom
FSCK = r"""
echo "== fsck.fat -n of the image fusefat left"
command -v fsck.fat >/dev/null 2>&1 || cannot "fsck.fat not found (Debian package dosfstools): needed to see this bug"
fsck.fat -n "$OUT/after.img" > "$OUT/fsck.txt" 2>&1
rc=$?
indent < "$OUT/fsck.txt"
echo "    exit $rc"
[ "$rc" = 0 ] || bug "fsck.fat -n on the image fusefat left: $(sed -n '2,3p' "$OUT/fsck.txt" | tr -s ' \n' ' ')"
"""


def body(case, data):
    mode = "rw+" if case.side == "writer" else "ro"
    out = [r"""
M="$OUT/mnt"
mkdir -p "$M"
fusefat -f -s -o """ + mode + r""" "$IMG" "$M" > "$OUT/fusefat.log" 2>&1 &
FPID=$!
i=0
until grep -q " $M fuse" /proc/mounts; do
    i=$((i + 1))
    if [ $i -gt 100 ] || ! kill -0 $FPID 2>/dev/null; then
        cannot "fusefat did not mount the image: $(tail -n 2 "$OUT/fusefat.log")"
    fi
    sleep 0.1
done
trap 'fusermount -u -z "$M" 2>/dev/null' EXIT
""", export_kernel.KSTEP]
    if case.side == "writer":
        out.append(export_kernel.ops(case, data))
    out.append(export_kernel.LIST_MOUNT)
    out.append(r"""fusermount -u "$M" && trap - EXIT
wait $FPID
echo "fusefat exit $?"
tail -n 20 "$OUT/fusefat.log" | indent
cp "$IMG" "$OUT/after.img"
""")
    if (case.extra or {}).get("check") == "fsck":
        out.append(FSCK)
    return "".join(out)
