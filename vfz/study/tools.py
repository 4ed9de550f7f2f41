"""What both studies run and name: the core's binaries, `vfat ls`, the tools' versions, short entries in an image.

driver_path/vfat_path: build/study_collide and build/vfat (VFAT_BUILD: another build directory);
vfat_ls: the core's listing of an image; tool_versions: the versions a report names; find_short:
where an 11-byte short name sits in an image's directory entries.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from vfz import REPO


def driver_path():
    b = os.environ.get("VFAT_BUILD") or os.path.join(
        REPO, "build")
    return os.path.join(b, "study_collide")


def vfat_path():
    return os.path.join(os.path.dirname(driver_path()), "vfat")


def _fsck_version():
    """fsck.fat has no --version: its banner on a scratch image, plus the package."""
    tmp = tempfile.mkdtemp(prefix="vfz-ver-")
    try:
        img = os.path.join(tmp, "v.img")
        subprocess.run(["mkfs.fat", "-C", img, "1440"], capture_output=True, timeout=30)
        p = subprocess.run(["fsck.fat", "-n", img], capture_output=True, text=True, timeout=30)
        banner = (p.stdout.splitlines() or ["?"])[0].strip()
    except Exception as e:
        banner = f"unavailable ({e})"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    try:
        pkg = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "dosfstools"],
                             capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:
        pkg = "?"
    return f"{banner}, Debian dosfstools {pkg}"


def tool_versions():
    def first(argv):
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=20)
            s = (p.stdout + p.stderr).strip().splitlines()
            return s[0].strip() if s else "?"
        except Exception as e:
            return f"unavailable ({e})"
    repo = REPO
    rev = first(["git", "-C", repo, "rev-parse", "--short", "HEAD"])
    dirty = first(["git", "-C", repo, "status", "--porcelain", "--", "core"])
    kver = "?"
    try:
        kb = os.path.join(os.path.dirname(driver_path()), "kernel", "kernel-version")
        kver = open(kb).read().strip()
    except OSError:
        kver = first(["uname", "-r"]) + " (host; guest build missing)"
    return {
        "fsck.fat": _fsck_version(),
        "mtools": first(["mtools", "--version"]),
        "7z": next((l for l in subprocess.run(["7z"], capture_output=True, text=True).stdout.splitlines()
                    if "7-Zip" in l), "?") if shutil.which("7z") else "unavailable",
        "grub-fstest": first(["grub-fstest", "--version"]),
        "kernel (guest)": kver,
        "core git revision": rev + (" (core/ modified)" if dirty and dirty != "?" else ""),
        "python": sys.version.split()[0],
    }



def find_short(img, sn):
    """Offsets of 32-byte aligned directory entries whose first 11 bytes are sn."""
    out = []
    i = img.find(sn)
    while i >= 0:
        if i % 32 == 0 and img[i + 11] != 0x0F:
            out.append(i)
        i = img.find(sn, i + 1)
    return out



def vfat_ls(image):
    p = subprocess.run([vfat_path(), "ls", image], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"vfat ls: {p.stderr.strip()}")
    return [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
