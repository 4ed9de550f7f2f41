"""Shared helpers for the core integration tests: make images, run the core
CLI and the real tools (mtools, fsck.fat, mkfs.fat), parse their output.

Everything runs real binaries with a timeout. A missing tool is a test
FAILURE with a clear message (`scripts/vfatfuzz setup` installs them),
never a silent skip.

Environment:
  VFAT_BUILD  build directory holding the `vfat` binary (build, build-asan)
  VFAT_SRC    source tree (for vfz/)
"""
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

SRC = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("VFAT_BUILD") or os.path.join(SRC, "build")
sys.path.insert(0, SRC)

from vfz import opscript# noqa: E402  (after the path set-up)

content = opscript.content

# The write modes of the core (docs/write-paths.md "The two write paths").
MODES = {
    "dual": ["--names", "dual"],
    "v1": ["--names", "nodual", "--dummy", "v1"],
    "v3": ["--names", "nodual", "--dummy", "v3"],
    "v1-unique": ["--names", "nodual", "--dummy", "v1", "--unique"],
}

# Image geometries the core makes: (fat type, size, cluster bytes).
CORE_FS = {
    "fat12": ("12", "1M", "512"),
    "fat16": ("16", "8M", "1024"),
    "fat32": ("32", "40M", "512"),
}

SANITIZER_RE = re.compile(r"(ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|"
                          r"ERROR: MemorySanitizer|SUMMARY: (Address|Undefined|Leak)Sanitizer)")


class ToolMissing(AssertionError):
    pass


def vfat_bin():
    p = os.path.join(BUILD, "vfat")
    if not os.access(p, os.X_OK):
        raise ToolMissing(f"core CLI not built: {p} (run cmake --build with the preset; "
                          f"VFAT_BUILD={BUILD})")
    return p


def require(tool):
    """Absolute path of a real tool, or a failure telling how to get it."""
    p = shutil.which(tool) or (os.path.exists(f"/usr/sbin/{tool}") and f"/usr/sbin/{tool}") \
        or (os.path.exists(f"/sbin/{tool}") and f"/sbin/{tool}")
    if not p:
        raise ToolMissing(f"required tool '{tool}' is not installed: run `scripts/vfatfuzz setup` "
                          f"(Debian packages mtools, dosfstools)")
    return p


def run(argv, timeout=60, env=None, input=None):
    """Run a command in its own process group; kill the group on timeout.
    Returns CompletedProcess with .timed_out set."""
    full = None
    if env:
        full = dict(os.environ)
        full.update(env)
    child = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=full, start_new_session=True,
                             stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL)
    timed_out = False
    try:
        out, err = child.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = child.communicate()
    cp = subprocess.CompletedProcess(argv, child.returncode, out, err)
    cp.timed_out = timed_out
    return cp


def check_ok(cp, what):
    if cp.timed_out:
        raise AssertionError(f"{what}: timed out")
    if cp.returncode != 0:
        raise AssertionError(f"{what}: exit {cp.returncode}\nstdout: {cp.stdout.decode(errors='replace')[-2000:]}"
                             f"\nstderr: {cp.stderr.decode(errors='replace')[-2000:]}")
    return cp


# ------------------------------------------------------------------ core CLI

def core_mkfs(img, fs="fat12", size=None, fat=None, cluster=None):
    f, s, c = CORE_FS.get(fs, (None, None, None))
    argv = [vfat_bin(), "mkfs", img, "--size", size or s]
    if fat or f:
        argv += ["--fat", fat or f]
    if cluster or c:
        argv += ["--cluster", cluster or c]
    check_ok(run(argv), f"vfat mkfs {fs}")


def core_apply(img, ops_text, mode="dual", seed=1, extra=(), timeout=120):
    """Apply an op-script; returns the list of {"line","op","result"}."""
    with tempfile.NamedTemporaryFile("w", suffix=".ops", delete=False, encoding="utf-8") as f:
        f.write(ops_text)
        path = f.name
    try:
        argv = [vfat_bin(), "apply", img, path, *MODES[mode], "--seed", str(seed), *extra]
        cp = check_ok(run(argv, timeout=timeout), f"vfat apply ({mode})")
        assert_no_sanitizer(cp, "vfat apply")
        return [json.loads(l) for l in cp.stdout.decode().splitlines() if l.strip()]
    finally:
        os.unlink(path)


def core_ls(img, timeout=120):
    cp = check_ok(run([vfat_bin(), "ls", img], timeout=timeout), "vfat ls")
    assert_no_sanitizer(cp, "vfat ls")
    return [json.loads(l) for l in cp.stdout.decode("utf-8").splitlines() if l.strip()]


def core_check(img, timeout=120):
    cp = run([vfat_bin(), "check", img], timeout=timeout)
    assert_no_sanitizer(cp, "vfat check")
    return cp


# the name classes these helpers can address in mtools by hand (util_images'
# globs); the classes added later (cp437, lowbyte, marks) are read through the
# oracles themselves (tests/test_naming_readers.py, the campaign)
CLASSIC_NAMES = ("upper83,lower83,long,slot13,n255,latin,cjk,astral,dots,spaces,traildots,"
                 "longchars,invalid,reserved,case,e5")


def core_gen(seed, ops, names=None):
    argv = [vfat_bin(), "gen", "--seed", str(seed), "--ops", str(ops), "--names", names or CLASSIC_NAMES]
    return check_ok(run(argv), "vfat gen").stdout.decode("utf-8")


def assert_no_sanitizer(cp, what):
    err = cp.stderr.decode("utf-8", "replace")
    if SANITIZER_RE.search(err):
        raise AssertionError(f"{what}: sanitizer report:\n{err[-4000:]}")


def canon(entries):
    """path -> (type, size, sha256) of a listing."""
    return {e["path"]: (e["type"], e.get("size"), e.get("sha256")) for e in entries}


def listing_diff(expected, actual):
    exp, act = canon(expected), canon(actual)
    lines = []
    for p in sorted(set(exp) | set(act)):
        if exp.get(p) != act.get(p):
            lines.append(f"  {p!r}: expected {exp.get(p)}, got {act.get(p)}")
    return "\n".join(lines)


def file_entry(path, data):
    return {"path": path, "type": "file", "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest()}


def dir_entry(path):
    return {"path": path, "type": "dir"}


# -------------------------------------------------------------------- mtools

# One mtools configuration for the oracle and the tests (codepage 437,
# no geometry check, UTF-8 locale).
from vfz.oracles.mtools import mtools_env, mpath  # noqa: E402,F401


# How mtools 4.0.x shows a long name (each astral character as '__').
from vfz.model import mtools_shown as mtools_name  # noqa: E402,F401


def mtools(tool, *args, timeout=60, input=None):
    return run([require(tool), *args], timeout=timeout, env=mtools_env(), input=input)


def mtools_paths(img):
    """[(path, is_dir)] from `mdir -/ -b -a ::/` (recursive, bare, hidden)."""
    cp = mtools("mdir", "-i", img, "-/", "-b", "-a", "::/")
    if cp.timed_out:
        raise AssertionError("mdir timed out")
    text = cp.stdout.decode("utf-8", "replace")
    if cp.returncode != 0:
        # an empty root directory makes mdir -b exit 1 with 'File "::/" not found'
        if 'File "::/" not found' in cp.stderr.decode(errors="replace") and not text.strip():
            return []
        raise AssertionError(f"mdir failed (exit {cp.returncode}): {cp.stderr.decode(errors='replace')}")
    out = []
    for line in text.split("\n"):
        if not line.startswith("::/"):
            continue
        s = line[2:]
        is_dir = s.endswith("/") and len(s) > 1
        out.append((s[:-1] if is_dir else s, is_dir))
    return out


def _unit_glob(path, paths):
    """An mtools pattern for path with every '_' as '?', after checking
    that each component matches exactly one entry of its directory."""
    kids = {}
    for p, _ in paths:
        parent, _, leaf = p.rpartition("/")
        kids.setdefault(parent, []).append(leaf)
    out, parent = [], ""
    for comp in path.split("/")[1:]:
        pat = "".join("?" if ch == "_" else ("\\" + ch if ch in "[]*?\\" else ch) for ch in comp)
        rx = re.compile("".join("." if ch == "_" else re.escape(ch) for ch in comp) + r"\Z", re.S)
        hits = [k for k in kids.get(parent, []) if rx.match(k)]
        if len(hits) != 1:
            raise AssertionError(f"cannot address {path!r} in mtools: {comp!r} matches {hits}")
        out.append(pat)
        parent += "/" + comp
    return "::/" + "/".join(out)


def _clashes(paths):
    """Paths whose name equals a sibling's when case is ignored (mtools
    folds case beyond ASCII, so mtype NAME prints every such sibling)."""
    groups = {}
    for p, _ in paths:
        parent, _, leaf = p.rpartition("/")
        groups.setdefault((parent, leaf.lower()), []).append(p)
    return {p for g in groups.values() if len(g) > 1 for p in g}


def _extract_all(img):
    """Every file of the image copied out by one recursive mcopy (host
    file names are case-sensitive, so case-clashing siblings stay apart)."""
    d = tempfile.mkdtemp(prefix="vfz-core-mcopy-")
    cp = mtools("mcopy", "-i", img, "-s", "-n", "-Q", "::/*", d, timeout=300)
    if cp.timed_out or cp.returncode != 0:
        shutil.rmtree(d, ignore_errors=True)
        raise AssertionError(f"mcopy -s failed (exit {cp.returncode}): {cp.stderr.decode(errors='replace')}")
    return d


def mtools_listing(img):
    """Canonical listing as mtools reads it: mdir for the tree, one mtype
    per file for its content (a recursive mcopy for names that clash with
    a sibling when case is ignored)."""
    entries = []
    paths = mtools_paths(img)
    clash = _clashes(paths)
    extracted = None
    try:
        for p, is_dir in paths:
            if is_dir:
                entries.append(dir_entry(p))
                continue
            if p in clash:
                if extracted is None:
                    extracted = _extract_all(img)
                with open(os.path.join(extracted, p.lstrip("/")), "rb") as f:
                    entries.append(file_entry(p, f.read()))
                continue
            entries.append(file_entry(p, _mtype(img, p, paths)))
    finally:
        if extracted:
            shutil.rmtree(extracted, ignore_errors=True)
    return entries


def _mtype(img, p, paths):
    cp = mtools("mtype", "-i", img, mpath(p))
    if not cp.timed_out and cp.returncode != 0 and "_" in p:
        # mdir shows each half of a surrogate pair as '_' but mtype does
        # not find that spelling; '?' matches one UTF-16 unit
        cp = mtools("mtype", "-i", img, _unit_glob(p, paths))
    if cp.timed_out or cp.returncode != 0:
        raise AssertionError(f"mtype {p!r} failed (exit {cp.returncode}): "
                             f"{cp.stderr.decode(errors='replace')}")
    return cp.stdout


def core_as_mtools(entries):
    """The core's listing with names as mtools displays them."""
    out = []
    for e in entries:
        e = dict(e)
        e["path"] = mtools_name(e["path"])
        out.append(e)
    return out


# ------------------------------------------------------------------ fsck.fat

_FSCK_SKIP = re.compile(r"^(fsck\.fat \d|Leaving filesystem unchanged|Checking |Starting check|"
                        r".*: \d+ files?, \d+/\d+ clusters$)")


def fsck_n(img, timeout=120):
    """Run `fsck.fat -n`; returns (rc, blocks, text) where blocks is a list
    of (path or None, [message lines]) in output order: a line in column 0
    starting with '/' opens a block for that entry, indented lines belong
    to it, any other line is a block of its own (path None)."""
    cp = run([require("fsck.fat"), "-n", img], timeout=timeout)
    if cp.timed_out:
        raise AssertionError("fsck.fat -n timed out")
    text = cp.stdout.decode("utf-8", "replace") + cp.stderr.decode("utf-8", "replace")
    blocks = []
    cur = None
    for line in text.split("\n"):
        if not line.strip() or _FSCK_SKIP.match(line):
            cur = None
            continue
        if line.startswith("/"):
            cur = (line.rstrip("\n"), [])
            blocks.append(cur)
        elif line.startswith((" ", "\t")) and cur is not None:
            cur[1].append(line.strip())
        else:
            cur = None
            blocks.append((None, [line.strip()]))
    return cp.returncode, blocks, text


def fsck_assert_clean(tc, img, what=""):
    rc, blocks, text = fsck_n(img)
    tc.assertEqual(blocks, [], f"fsck.fat -n is not clean {what}:\n{text}")
    tc.assertEqual(rc, 0, f"fsck.fat -n exit {rc} {what}:\n{text}")


# ------------------------------------------------------------- tool images

def mkfs_fat(img, size_kb, *opts):
    """Real mkfs.fat on a fresh file of size_kb KiB."""
    if os.path.exists(img):
        os.unlink(img)
    cp = run([require("mkfs.fat"), "-C", *map(str, opts), img, str(size_kb)])
    check_ok(cp, f"mkfs.fat {' '.join(map(str, opts))} {size_kb}")
    return cp


def tmpdir(prefix="vfz-core-"):
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    return tempfile.mkdtemp(prefix=prefix, dir=base)


# ------------------------------------------------------- raw FAT walking
# A small reader independent of the core: geometry, FAT entries, cluster
# chains, and every 32-byte directory slot with its image offset.

class RawFat:
    def __init__(self, data):
        import struct
        self.b = data
        (self.bps, self.spc, self.res, self.nfats, self.rootent, tot16, _media,
         spf16) = struct.unpack_from("<HBHBHHBH", data, 11)
        self.total = tot16 or struct.unpack_from("<I", data, 32)[0]
        self.spf = spf16 or struct.unpack_from("<I", data, 36)[0]
        self.fat32 = spf16 == 0
        self.root_clus = struct.unpack_from("<I", data, 44)[0] if self.fat32 else 0
        self.fat_off = self.res * self.bps
        self.root_off = self.fat_off + self.nfats * self.spf * self.bps
        self.data_off = self.root_off + self.rootent * 32
        self.csize = self.bps * self.spc
        self.nclus = (self.total * self.bps - self.data_off) // self.csize
        self.bits = 32 if self.fat32 else (12 if self.nclus <= 4084 else 16)

    def get(self, n):
        b, o = self.b, self.fat_off
        if self.bits == 12:
            v = b[o + n * 3 // 2] | (b[o + n * 3 // 2 + 1] << 8)
            return (v >> 4) if n & 1 else (v & 0xFFF)
        if self.bits == 16:
            return b[o + 2 * n] | (b[o + 2 * n + 1] << 8)
        return int.from_bytes(b[o + 4 * n:o + 4 * n + 4], "little") & 0x0FFFFFFF

    def fat_off_of(self, n):
        """Byte offset of FAT entry n in the first FAT (FAT16/32 only)."""
        return self.fat_off + n * (self.bits // 8)

    def chain(self, c, limit=1 << 20):
        out, seen = [], set()
        while 2 <= c < self.nclus + 2 and c not in seen and len(out) < limit:
            out.append(c)
            seen.add(c)
            c = self.get(c)
        return out

    def coff(self, c):
        return self.data_off + (c - 2) * self.csize

    def dir_slot_offsets(self, cluster):
        """Offsets of every slot of a directory (cluster 0 = the root)."""
        if cluster == 0 and not self.fat32:
            return [self.root_off + 32 * i for i in range(self.rootent)]
        if cluster == 0:
            cluster = self.root_clus
        return [self.coff(c) + i for c in self.chain(cluster) for i in range(0, self.csize, 32)]

    def walk(self):
        """Yield (dir_cluster, [(offset, raw32)]) for every directory."""
        todo, seen = [0], set()
        while todo:
            d = todo.pop()
            if d in seen:
                continue
            seen.add(d)
            slots = []
            for off in self.dir_slot_offsets(d):
                raw = self.b[off:off + 32]
                if len(raw) < 32 or raw[0] == 0:
                    break
                slots.append((off, raw))
                if raw[0] != 0xE5 and raw[11] != 0x0F and raw[11] & 0x10 and raw[0] != 0x2E:
                    c = raw[26] | (raw[27] << 8) | ((raw[20] | (raw[21] << 8)) << 16 if self.fat32 else 0)
                    if c:
                        todo.append(c)
            yield d, slots


def split_lfn_runs(img_bytes):
    """Entries whose LFN slots and short entry are not contiguous on disk
    (the run crosses into a directory cluster that does not follow the
    previous one): [(short 11 bytes, first offset, short offset)]."""
    f = RawFat(img_bytes)
    out = []
    for _, slots in f.walk():
        run = []
        for off, raw in slots:
            if raw[0] == 0xE5:
                run = []
                continue
            if raw[11] == 0x0F:
                run.append(off)
                continue
            if run and any(b - a != 32 for a, b in zip(run + [off], (run + [off])[1:])):
                out.append((bytes(raw[:11]), run[0], off))
            run = []
    return out
