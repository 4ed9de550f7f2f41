#!/usr/bin/python3
"""vfat_shortname_valid (core/src/names.c) against the real fsck.fat.

Every byte value 0x01-0xFF is put at byte 0, 1, 7, 8 and 10 of an
otherwise plain short name (plus a few space patterns and a v1 dummy),
names.c judges each, and fsck.fat -n judges root directories full of them:
a batch of names that names.c calls valid must draw no "Bad short file
name", a batch it calls invalid must draw one per entry.

Exit 0 when they agree, 1 when they do not, 2 when it cannot run.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

SRC = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 500   # root directory of 512 entries


def tool(name):
    for p in (shutil.which(name), "/sbin/" + name, "/usr/sbin/" + name):
        if p and os.path.exists(p):
            return p
    raise RuntimeError(name + " not found (install dosfstools)")


def build_driver(tmp):
    exe = os.path.join(tmp, "names_driver")
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        raise RuntimeError("no C compiler to build tests/names_driver.c")
    subprocess.run([cc, "-std=c11", "-O1", "-I", os.path.join(SRC, "core/include"),
                    "-I", os.path.join(SRC, "core/src"),
                    os.path.join(SRC, "tests/names_driver.c"),
                    os.path.join(SRC, "core/src/names.c"),
                    os.path.join(SRC, "core/src/cp437.c"), "-o", exe], check=True)
    return exe


def candidates():
    out = []
    for pos in (0, 1, 7, 8, 10):
        for b in range(1, 256):
            if pos == 0 and b == 0xE5:   # a deleted entry, not a name
                continue
            n = bytearray(b"ABCDEFGHTXT")
            n[pos] = b
            out.append(bytes(n))
    out += [b" ABC    TXT", b"A B     TXT", b"ABC     T X", b"ABC      XT",
            b"readme  txt", b"A       TXT", b"ABC        ", b"        TXT",
            b"A~1     TXT", b"\x20\x00\x01\x02\x03\x04\x05\x06/\x00\x00"]
    return out


def fsck_flags(mkfs, fsck, tmp, names):
    """Number of "Bad short file name" reports for a root holding names."""
    img = os.path.join(tmp, "v.img")
    if os.path.exists(img):
        os.remove(img)
    subprocess.run([mkfs, "-C", "-F", "16", "-r", "512", img, "32768"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(img, "r+b") as f:
        bs = f.read(512)
        bps, _, res, nf = struct.unpack_from("<HBHB", bs, 11)
        fatsz = struct.unpack_from("<H", bs, 22)[0]
        f.seek((res + nf * fatsz) * bps)
        for n in names:
            f.write(n + bytes([0x20]) + bytes(20))
    p = subprocess.run([fsck, "-n", img], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=120)
    return p.stdout.decode("latin-1").count("Bad short file name")


def main():
    tmp = tempfile.mkdtemp(prefix="vfz-names-fsck-")
    try:
        mkfs, fsck = tool("mkfs.fat"), tool("fsck.fat")
        exe = build_driver(tmp)
        names = candidates()
        p = subprocess.run([exe], input="".join("V %s\n" % n.hex() for n in names).encode(),
                           stdout=subprocess.PIPE, check=True, timeout=60)
        verdict = p.stdout.decode().split()
        if len(verdict) != len(names) or set(verdict) - {"0", "1"}:
            raise RuntimeError("driver answered %r" % verdict[:5])
        good = [n for n, v in zip(names, verdict) if v == "1"]
        bad = [n for n, v in zip(names, verdict) if v == "0"]
        wrong = 0
        for i in range(0, len(good), BATCH):
            batch = good[i:i + BATCH]
            k = fsck_flags(mkfs, fsck, tmp, batch)
            if k:
                wrong += 1
                print("MISMATCH: fsck.fat flags %d of %d names that names.c calls valid"
                      % (k, len(batch)))
        for i in range(0, len(bad), BATCH):
            batch = bad[i:i + BATCH]
            k = fsck_flags(mkfs, fsck, tmp, batch)
            if k != len(batch):
                wrong += 1
                print("MISMATCH: fsck.fat flags %d of %d names that names.c calls invalid"
                      % (k, len(batch)))
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        print("test_names_fsck: cannot run: %s" % e)
        return 2
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("test_names_fsck: %d short names (%d valid, %d invalid), %d disagreeing batches"
          % (len(names), len(good), len(bad), wrong))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
