#!/usr/bin/python3
"""Regenerate the committed seed corpora of the fuzz targets.

    /usr/bin/python3 harnesses/make_seeds.py [--out corpus]

corpus/fuzz_ops/    structured inputs in the fuzzinput.h layout: every op
                    kind on every name class, in every mode and geometry
corpus/fuzz_names/  one name per class (flags byte, seed, UTF-8 name)
corpus/fuzz_image/  16-byte header + a real mkfs.fat image (FAT12, small
                    FAT32), the FAT12 ones filled by mtools with long names and
                    nested directories; plus patch-mode inputs on the
                    core's templates
Reproducible up to the timestamps mkfs.fat and mtools write (volume ids are fixed).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

NC = ["upper83", "lower83", "long", "slot13", "n255", "latin", "cjk", "astral", "dots",
      "spaces", "traildots", "longchars", "invalid", "reserved", "case", "e5"]


def gen(cls, seed=0):
    """name_spec: a generated name of class cls."""
    return bytes([NC.index(cls), seed & 0xFF, seed >> 8])


def raw(name):
    b = name.encode() if isinstance(name, str) else name
    assert len(b) < 384
    if len(b) >= 128:
        return bytes([0xC1, len(b) - 128]) + b
    return bytes([0xC0, len(b)]) + b


def new(name_spec, parent=None):
    """path_spec: a new name in the root or in believed directory #parent."""
    if parent is None:
        return bytes([0x02]) + name_spec
    return bytes([0x0A]) + name_spec + bytes([parent])


def old(index, respell=None, want=False):
    """path_spec: believed entry #index, maybe respelled."""
    s = 0x04 if want else 0
    if respell is None:
        return bytes([s, index])
    code = {"flip": 0, "dot": 1, "dots": 1 | 4, "child": 2, "upper": 3}[respell]
    s |= 1 | (code & 3) << 3 | (0x20 if code & 4 else 0)
    return bytes([s, index])


def mkdir(p): return bytes([0]) + p
def create(p, size_idx=4, seed=7): return bytes([1]) + p + bytes([size_idx, seed])
def write(p, off=100, size_idx=8, seed=9): return bytes([3]) + p + bytes([off & 0xFF, off >> 8, size_idx, seed])
def churn(p, size_idx=8, seed=5, again=10): return bytes([0x09]) + p + bytes([size_idx, seed, again])
def rename(a, b, dirs=False): return bytes([4 | (8 if dirs else 0)]) + a + b
def unlink(p): return bytes([6 | 8]) + p
def rmdir(p): return bytes([7 | 8]) + p
# the second grammar: kind bytes 0xE0-0xFF (fuzzinput.c meta_op)
def truncate(p, size_idx=3): return bytes([0xE0]) + p + bytes([size_idx])
def chattr(p, bits, dirs=False): return bytes([0xE1 | (4 if dirs else 0)]) + p + bytes([bits])
def touch(p, t1, t2, dirs=False): return bytes([0xE2 | (4 if dirs else 0)]) + p + bytes([t1, t2])
def label(idx): return bytes([0xE3, idx])


def header(dual=False, v3=False, unique=False, fat=12, cs=512, rule="mixed", seed=1):
    f = (1 if dual else 0) | (2 if v3 else 0) | (4 if unique else 0)
    f |= {12: 0, 16: 1, 32: 2}[fat] << 3
    f |= {512: 0, 1024: 1, 2048: 2, 4096: 3}[cs] << 5
    r = {"lower": 0, "win95": 1, "winnt": 2, "mixed": 3}[rule]
    return bytes([f, r]) + seed.to_bytes(4, "little")


def ops_seeds():
    scripts = {}
    # every class as a directory and a file, then renames/unlinks among them
    for i, cls in enumerate(NC):
        scripts["class-" + cls] = (
            mkdir(new(gen(cls, i))) + create(new(gen(cls, i + 100)), 5, i) +
            create(new(gen(cls, i + 200), 0), 3, i) + rename(old(1), new(gen(cls, i + 300))) +
            rename(old(0, "flip"), old(0, "upper")) + unlink(old(1)) + rmdir(old(0, want=True)))
    scripts["tree"] = (
        mkdir(new(raw("Documents"))) + mkdir(new(raw("Sub Folder"), 0)) +
        create(new(raw("Report 2009.txt"), 1), 8, 1) + create(new(raw("README.TXT")), 1, 2) +
        write(old(2), 3000, 9, 5) + rename(old(0, want=True), new(raw("Moved"), 1), dirs=True) +
        rmdir(old(0, want=True)) + rename(old(2), old(3)) + unlink(old(0)))
    scripts["case-and-dots"] = (
        create(new(raw("abc.txt"))) + create(old(0, "flip")) + create(old(0, "dot")) +
        create(new(raw("abc..."))) + rename(old(0), old(0, "flip")) + rename(old(0), old(0, "upper")) +
        mkdir(old(0, "child")) + unlink(old(0, "dots")))
    scripts["alias-clash"] = (
        create(new(raw("longfilename1.txt"))) + create(new(raw("longfilename2.txt"))) +
        create(new(raw("LONGFI~1.TXT"))) + create(new(raw("longfi~1.txt"))) +
        rename(old(1), new(raw("LONGFI~2.TXT"))) + unlink(new(raw("LONGFI~1.TXT"))))
    scripts["slot-boundaries"] = b"".join(
        create(new(raw("x" * n)), 2, n & 0xFF) for n in (12, 13, 14, 25, 26, 27, 247, 255)) + \
        create(new(raw("y" * 256)))
    scripts["bad-names"] = b"".join(create(new(raw(n))) for n in (
        "a*b", "q?", "pipe|x", "trail ", " lead", "\x01ctl", "e\xcc\x81", "\xff\xfe", "CON", "nul.txt",
        "\xe5start", "..", ".", "/", "x/./y"))
    scripts["rmdir-rename-dirs"] = (
        mkdir(new(raw("A"))) + mkdir(new(raw("B"), 0)) + mkdir(new(raw("C"), 1)) +
        rename(old(0, want=True), new(raw("inside"), 2), dirs=True) + rmdir(old(0, want=True)) +
        rename(old(2, want=True), new(raw("top"))) + rename(old(1, want=True), old(0, want=True), dirs=True) +
        rmdir(old(0, want=True)) + rmdir(old(1, want=True)))
    modes = [dict(), dict(dual=True), dict(v3=True), dict(unique=True), dict(dual=True, rule="winnt"),
             dict(dual=True, rule="lower", fat=16), dict(v3=True, fat=32), dict(fat=32, cs=4096),
             dict(fat=16, cs=2048, rule="win95"), dict(dual=True, fat=32, cs=1024)]
    out = {}
    for k, (name, body) in enumerate(sorted(scripts.items())):
        for j in range(2):
            m = modes[(k + 3 * j) % len(modes)]
            tag = "-".join("%s%s" % (a, "" if b is True else b) for a, b in sorted(m.items())) or "nodual"
            out["%s.%s" % (name, tag)] = header(seed=k * 7 + j, **m) + body
    # truncate across cluster boundaries, attributes on files, a directory
    # and the root, times at FAT's edges, labels valid and not (kept out of
    # the loop above so that the older seeds keep their modes)
    meta = (
        create(new(raw("data.bin")), 10, 3) + truncate(old(0), 3) + truncate(old(0), 9) +
        truncate(old(0), 0) + mkdir(new(raw("Dir"))) + chattr(old(1, want=True), 0x27, dirs=True) +
        chattr(old(0), 0x01) + write(old(0), 700, 5, 1) + truncate(old(0), 4) +
        touch(old(0), 1, 0x3C) + touch(old(1, want=True), 13, 14, dirs=True) +
        chattr(new(raw("..")), 0x02) + label(0) + label(4) + label(1) + label(10) +
        rename(old(0), new(raw("moved.bin"))))
    for j, m in enumerate((dict(dual=True), dict(v3=True, fat=32), dict(fat=16, cs=2048))):
        tag = "-".join("%s%s" % (a, "" if b is True else b) for a, b in sorted(m.items()))
        out["meta-ops.%s" % tag] = header(seed=900 + j, **m) + meta
    # churn (a create kind byte with bit 3: the file unlinked and created again), then more
    # allocation: the census's reuse-after-unlink where the campaign fits a window to the
    # script (vfz/campaign/fitwindow.py); the last one on the tiny FAT12 (bits 3-4 = 3)
    body = (mkdir(new(raw("Dir"))) + churn(new(raw("churn.bin"), 0), 8, 5, 10) +
            create(new(raw("after.bin")), 9, 6) + write(old(2), 4000, 10, 7) +
            churn(new(raw("again.dat")), 6, 8, 11) + mkdir(new(raw("Late"))) +
            create(new(raw("late.bin"), 1), 10, 9) + unlink(old(2)) + create(new(raw("last.bin")), 11, 10))
    for j, m in enumerate((dict(), dict(dual=True, fat=16), dict(v3=True, fat=32, cs=1024), dict(dual=True))):
        h = header(seed=950 + j, **m)
        tiny = j == 3
        tag = "tiny" if tiny else "-".join("%s%s" % (a, "" if b is True else b) for a, b in sorted(m.items())) or "nodual"
        out["churn.%s" % tag] = bytes([h[0] | (0x18 if tiny else 0)]) + h[1:] + body
    return out


def names_seeds():
    names = ["README.TXT", "readme.txt", "ReadMe.Txt", "Long File Name.txt", "x" * 13, "y" * 26,
             "z" * 255, "a" * 256, "caf\u00e9.txt", "\u00c5ngstr\u00f6m", "\u6f22\u5b57.doc", "\U0001F600 smile",
             ".hidden", "..dots", "a.b.c.d", "name...", " lead", "trail ", "inner  space", "x+y=z[1];2,3.txt",
             "CON", "nul.txt", "\u00e5first", "\u03c3igma", "a*b", "ctl\x01", "DEL\x7f", "\u00ff.\u00ff",
             "12345678.1234", "123456789.123", "NAME.TOOLONG", ".", "...", "a" * 8 + "." + "b" * 3]
    out = {}
    for i, n in enumerate(names):
        flags = (i % 4) | (4 if i % 3 == 0 else 0)
        out["name%02d" % i] = bytes([flags, i, 0, 0, 0]) + n.encode("utf-8", "surrogatepass")
    return out


def run(cmd, **kw):
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1", MTOOLS_NO_VFAT="0")
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)


def image_seeds():
    out = {}
    tmp = tempfile.mkdtemp(prefix="vfz-seeds-")
    try:
        src = os.path.join(tmp, "payload")
        with open(src, "wb") as f:
            f.write(bytes((7 + 31 * i) & 0xFF for i in range(1500)))

        def mk(name, kb, args, fill):
            img = os.path.join(tmp, name)
            run(["mkfs.fat", "-C", "-i", "20090627", "-n", "SEED"] + args + [img, str(kb)])
            for op in fill:
                if op[0] == "md":
                    run(["mmd", "-i", img, "::" + op[1]])
                else:
                    run(["mcopy", "-i", img, src, "::" + op[1]])
            with open(img, "rb") as f:
                return f.read()

        filled = [("md", "/Documents"), ("md", "/Documents/Sub Folder"), ("cp", "/Long File Name.txt"),
                  ("cp", "/README.TXT"), ("cp", "/Documents/caf\u00e9 r\u00e9sum\u00e9.doc"),
                  ("cp", "/Documents/Sub Folder/" + "n" * 40 + ".bin"), ("md", "/UPPER"),
                  ("cp", "/UPPER/lower.txt")]
        images = {
            "fat12-empty": mk("a.img", 64, ["-F", "12"], []),
            "fat12-mtools": mk("b.img", 100, ["-F", "12"], filled),
            "fat12-2k-clusters-16-root": mk("c.img", 160, ["-F", "12", "-s", "4", "-r", "16"], filled[:4]),
            # mtools reads a FAT32 volume of < 4085 clusters as FAT12, so
            # the small FAT32 seed stays as mkfs.fat made it
            "fat32-small-empty": mk("d.img", 200, ["-F", "32", "-s", "1"], []),
        }
        hdrs = [bytes([0, 1, 3, 6, 0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5]),
                bytes([0, 0x1A, 9, 4, 7, 6, 5, 3, 2, 0, 3, 1, 4, 1, 5, 9])]
        for k, (name, img) in enumerate(images.items()):
            out[name] = hdrs[k % 2] + img
        # patch mode on the core's templates: a damaged FAT, a bad boot
        # sector field, an LFN slot in the root
        lfn = bytes([0x41, ord("a"), 0, ord("b"), 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 0, 0x99]) + b"\xff" * 12 + b"\0\0" + b"\xff" * 4
        out["patch-fat12-bootsector"] = bytes([0x80, 1, 1, 3, 0, 1, 3, 5, 2, 1, 0, 0, 0, 0, 0, 0]) + bytes([3, 0, 2, 0x00, 0x01])
        out["patch-fat16-fat"] = bytes([0x81, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]) + bytes([128, 0, 6, 0xF8, 0xFF, 3, 0, 2, 0])
        out["patch-fat32-lfn-root"] = bytes([0x82, 3, 0, 4, 2, 3, 4, 5, 0, 0, 1, 2, 3, 0, 0, 0]) + bytes([0, 0, 0]) + bytes([0x18, 0x03, 32]) + lfn
    finally:
        shutil.rmtree(tmp)
    return out


def write_dir(path, files):
    os.makedirs(path, exist_ok=True)
    for name in os.listdir(path):
        os.unlink(os.path.join(path, name))
    for name, data in files.items():
        with open(os.path.join(path, name), "wb") as f:
            f.write(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corpus"))
    a = ap.parse_args()
    write_dir(os.path.join(a.out, "fuzz_ops"), ops_seeds())
    write_dir(os.path.join(a.out, "fuzz_names"), names_seeds())
    write_dir(os.path.join(a.out, "fuzz_image"), image_seeds())
    return 0


if __name__ == "__main__":
    sys.exit(main())
