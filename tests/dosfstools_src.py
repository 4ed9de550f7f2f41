"""dosfstools' own test images, from Debian's source package, fetched on
demand: its tests/*.fsck and *.xxd hex dumps are GPL-3.0 and this project
ships none of them (it declares no licence to ship them under).

source_dir() returns the unpacked source tree: $VFZ_DOSFSTOOLS_SRC if
set, else BUILD/dosfstools-src (fetched once with apt-get source through a
private apt configuration: a deb-src line for bookworm main, lists and
cache under that directory, nothing of the system's apt touched), or None
with the reason when neither works (no network to deb.debian.org).
image(src, name, out) turns tests/NAME.fsck into an image with xxd -r, as
dosfstools' test-fsck does.
"""
import glob
import os
import subprocess
import tarfile

VERSION = "4.2"


def source_dir(build):
    env = os.environ.get("VFZ_DOSFSTOOLS_SRC")
    if env:
        return (env, None) if os.path.isdir(os.path.join(env, "tests")) else (None, f"{env}: no tests/")
    root = os.path.join(build, "dosfstools-src")
    tree = os.path.join(root, f"dosfstools-{VERSION}")
    if os.path.isdir(os.path.join(tree, "tests")):
        return tree, None
    try:
        _fetch(root)
    except (OSError, subprocess.SubprocessError, tarfile.TarError) as e:
        return None, f"cannot fetch Debian's dosfstools source: {e}"
    if not os.path.isdir(os.path.join(tree, "tests")):
        return None, f"Debian's dosfstools source has no {tree}/tests"
    return tree, None


def _fetch(root):
    lists, cache = os.path.join(root, "lists"), os.path.join(root, "cache")
    for d in (os.path.join(lists, "partial"), os.path.join(cache, "archives", "partial")):
        os.makedirs(d, exist_ok=True)
    sl = os.path.join(root, "sources.list")
    with open(sl, "w") as f:
        f.write("deb-src http://deb.debian.org/debian bookworm main\n")
    opts = ["-o", f"Dir::Etc::SourceList={sl}", "-o", "Dir::Etc::SourceParts=/nonexistent",
            "-o", f"Dir::State::Lists={lists}", "-o", f"Dir::Cache={cache}", "-q"]
    subprocess.run(["apt-get"] + opts + ["update"], cwd=root, check=True, timeout=300,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    subprocess.run(["apt-get"] + opts + ["source", "--download-only", f"dosfstools={VERSION}-1"],
                   cwd=root, check=True, timeout=300, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)
    orig = glob.glob(os.path.join(root, f"dosfstools_{VERSION}.orig.tar.*"))
    if not orig:
        raise OSError("apt-get source left no orig tarball")
    with tarfile.open(orig[0]) as t:
        members = [m for m in t.getmembers() if m.name.startswith(f"dosfstools-{VERSION}/tests/")]
        t.extractall(root, members=members)


def image(src, name, out):
    """xxd -r tests/NAME.fsck > out; returns the test's fsck.fat arguments."""
    with open(os.path.join(src, "tests", name + ".fsck"), "rb") as fin, open(out, "wb") as fout:
        subprocess.run(["xxd", "-r"], stdin=fin, stdout=fout, check=True, timeout=120)
    args = os.path.join(src, "tests", name + ".args")
    if os.path.exists(args):
        with open(args) as f:
            return f.read().split()
    return []
