"""Collision study: how often do two dummy short entries in one directory
come out equal, measured on REAL directories written by the core, next to
the analytic values; and what a collision costs with fsck.fat, mtools and
the kernel.

Measurement (build/study_collide, scripts/study_collide.c): each trial is a
fresh volume, mkdir /d, then N_max entries with 13-character long names (one
LFN slot + one short entry each, so 32 767 of them fill the 65 536 slots a
directory may have, "." and ".." included), read back with vfat_readdir.
The driver reports, per trial, after how many creations the first
duplicate short entry appeared. The directory of the first n entries of a
trial IS a directory of n entries, so every trial gives one Bernoulli
sample for every size n <= N_max (points of one series are therefore
correlated with each other; each point on its own is an honest binomial
estimate). Intervals: Wilson score, 95 %.

Analytic values (all exact up to floating point unless said otherwise):
  v1      r = rand32 & 0x3FFFFFFF, 0 -> 1: 2^30 - 2 values of probability
          2^-30 and the value 1 with 2^-29. P(no collision) is computed
          exactly from the elementary symmetric polynomial.
  v3      (docs/write-paths.md) tilde position t = r % 8; files: slash offset k =
          (r>>3) % 7, then r >>= 3; the remaining bytes are base-35 digits
          of r, a fresh 32-bit r drawn whenever fewer than 35 remain. The
          slash offset is NOT uniform: with q = r>>6, k = (q + b) % 7 with b
          3 bits, so the offset q % 7 (= first digit % 7, since 35 = 5*7)
          has probability 2/8. Sum p^2 = 1/8 * 10/64 * S for files, 1/8 * S
          for directories, where S = sum over digit strings D of P(D)^2;
          P(D) is exact (counting the source values that emit D), S is
          estimated as the mean of P(D) over D drawn from the process
          (unbiased; its relative standard error is printed). Collision
          probability 1 - prod(1 - i*sum p^2) (birthday with the effective
          space 1/sum p^2). The extension bytes are the alias's: entries
          with different extensions never collide; the study gives every
          file the same extension (.txt), the worst case. A file dummy holds
          a '/', a directory dummy does not: files never collide with
          directories.
  unique  0 by construction (redrawn until unique).
Projections (real, measurable at small n): v1 = the low 10 random bits;
v3 = (tilde position, slash position, first drawn byte). Their exact
collision curves come from the exact value distributions by the same
polynomial.
"""
from vfz import REPO
import csv
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

from vfz import fatimg

SIZES = [10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 32767]
NMAX = 32767
# trials per series at each --size: (v1 files, v3 files, v3 dirs, v1 unique, v3 unique)
TRIALS = {
    "small": {"v1": 40, "v3": 10, "v3-dirs": 5, "unique": 5, "v3-unique": 5},
    "default": {"v1": 300, "v3": 200, "v3-dirs": 50, "unique": 50, "v3-unique": 30},
    "full": {"v1": 3000, "v3": 5000, "v3-dirs": 800, "unique": 400, "v3-unique": 200},
}
SERIES = {
    # name: (driver args, label)
    "v1": (["--dummy", "v1"], "v1 (30 random bits), files"),
    "v3": (["--dummy", "v3"], "v3, files (same extension)"),
    "v3-dirs": (["--dummy", "v3", "--dirs"], "v3, directories"),
    "unique": (["--dummy", "v1", "--unique"], "v1 --unique, files"),
    "v3-unique": (["--dummy", "v3", "--unique"], "v3 --unique, files"),
}
SEED_STRIDE = 1 << 20  # trial t of series i uses seed base*2^24 + i*2^20 + t


# ------------------------------------------------------------------ stats
def wilson(k, n, z=1.959964):
    """95 % Wilson score interval for k successes in n trials."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (0.0 if k == 0 else max(0.0, c - h), 1.0 if k == n else min(1.0, c + h))


def birthday(n, sum_p2):
    """1 - prod_{i<n} (1 - i*sum_p2): the birthday formula for an effective
    space of 1/sum_p2 values."""
    if n < 2:
        return 0.0
    lg = 0.0
    for i in range(1, n):
        x = i * sum_p2
        if x >= 1:
            return 1.0
        lg += math.log1p(-x)
    return -math.expm1(lg)


def p_collide_exact(n, probs):
    """Exact P(some value repeats) for n independent draws from the
    distribution probs (list of probabilities): 1 - n! * e_n(probs)."""
    if n < 2:
        return 0.0
    if n > len(probs):
        return 1.0
    # e[k] scaled by k! as we go: f[k] = k! e_k
    f = [1.0] + [0.0] * n
    for p in probs:
        for k in range(n, 0, -1):
            f[k] += k * p * f[k - 1]
    return max(0.0, 1.0 - f[n])


def v1_collide(n):
    """Exact for v1: M = 2^30 - 2 values of prob u = 2^-30, one of 2u.
    P(distinct) = u^n [M!/(M-n)! + 2n M!/(M-n+1)!]."""
    if n < 2:
        return 0.0
    u = 2.0 ** -30
    M = (1 << 30) - 2
    lg = sum(math.log((M - i) * u) for i in range(n))
    pd = math.exp(lg) * (1 + 2 * n / (M - n + 1))
    return max(0.0, 1.0 - pd)


V1_SUM_P2 = ((1 << 30) - 2 + 4) / 2.0 ** 60


# ------------------------------------------------------------------ v3
def _count_h(e, j, W, hmin, hmax):
    top = ((1 << W) - 1 - e) // 35 ** j
    hi = top if hmax is None else min(hmax, top)
    return max(0, hi - hmin + 1)


def p_digits(D, W, _memo=None):
    """Exact probability that the v3 digit process, starting from a fresh
    uniform W-bit value (then fresh 32-bit values), emits the digits D
    (tuple, first first) as its first len(D) base-35 digits. The C code
    writes r % 35, r /= 35, and redraws when r < 35."""
    memo = {} if _memo is None else _memo
    key = (D, W)
    if key in memo:
        return memo[key]
    n = len(D)
    total = 0.0
    e = 0
    for j in range(1, n + 1):
        e += D[j - 1] * 35 ** (j - 1)
        hmin = 0 if j == 1 else 1        # not stopped before digit j
        if j < n:                         # stops right after digit j
            c = _count_h(e, j, W, hmin, 34)
            if c:
                total += c / 2.0 ** W * p_digits(D[j:], 32, memo)
        else:
            total += _count_h(e, j, W, hmin, None) / 2.0 ** W
    memo[key] = total
    return total


def _sample_digits(rng, n, W):
    r = rng.getrandbits(W)
    out = []
    while len(out) < n:
        out.append(r % 35)
        r //= 35
        if r < 35:
            r = rng.getrandbits(32)
    return tuple(out)


def v3_sum_p2(is_dir, samples=40000, seed=1):
    """(sum p^2, relative standard error) of a v3 dummy's 8 base bytes
    (extension fixed). S = E_{D~P}[P(D)], P exact, D sampled."""
    n, W = (7, 29) if is_dir else (6, 26)
    rng = random.Random(seed)
    xs = [p_digits(_sample_digits(rng, n, W), W) for _ in range(samples)]
    m = sum(xs) / len(xs)
    var = sum((x - m) ** 2 for x in xs) / (len(xs) - 1)
    rse = math.sqrt(var / len(xs)) / m
    factor = 1 / 8 * (1 if is_dir else 10 / 64)
    return factor * m, rse


def v3_uniform_space(is_dir):
    """The space as one would count it naively (all choices uniform)."""
    return 8 * 35 ** 7 if is_dir else 8 * 7 * 35 ** 6


def v3_proj_probs(is_dir):
    """Exact distribution of the projection (t, slash position, first digit)."""
    W = 29 if is_dir else 26
    pd1 = [((1 << W) - 1 - d) // 35 + 1 for d in range(35)]
    pd1 = [c / 2.0 ** W for c in pd1]
    out = []
    for t in range(8):
        for d1 in range(35):
            if is_dir:
                out.append(pd1[d1] / 8)
            else:
                for k in range(7):
                    pk = 2 / 8 if k == d1 % 7 else 1 / 8
                    out.append(pd1[d1] / 8 * pk)
    return out


def v1_proj_probs():
    """Exact distribution of the low 10 bits of the v1 value (0 -> 1)."""
    base = 1 << 20
    probs = [base / 2.0 ** 30] * 1024
    probs[0] = (base - 1) / 2.0 ** 30
    probs[1] = (base + 1) / 2.0 ** 30
    return probs


def _s23(probs):
    return sum(p * p for p in probs), sum(p ** 3 for p in probs)


def proj_moments(name):
    """Exact (sum p^2, sum p^3) of the driver's projections A and B
    (scripts/study_collide.c proj_ab) for a series."""
    if name in ("v1", "unique"):
        lo = [2.0 ** -15] * (1 << 15)
        lo[0] = ((1 << 15) - 1) / 2.0 ** 30
        lo[1] = ((1 << 15) + 1) / 2.0 ** 30
        hi = [2.0 ** -15] * (1 << 15)
        return _s23(lo), _s23(hi)
    is_dir = name == "v3-dirs"
    W = 29 if is_dir else 26
    a = _s23(v3_proj_probs(is_dir))
    memo = {}
    pd2 = [p_digits((d1, d2), W, memo) for d1 in range(35) for d2 in range(35)]
    if is_dir:
        b = (sum(p * p for p in pd2) / 8, sum(p ** 3 for p in pd2) / 64)
    else:
        # sum over t (1/8 each) and k (P(k|D1): 2/8 once, 1/8 six times)
        b = (sum(p * p for p in pd2) / 8 * (4 + 6) / 64,
             sum(p ** 3 for p in pd2) / 64 * (8 + 6) / 512)
    return a, b


def pairs_expectation(n, s2, s3):
    """Mean and variance of the number of equal pairs among n draws."""
    c2 = n * (n - 1) / 2
    c3 = n * (n - 1) * (n - 2) / 6
    return c2 * s2, c2 * (s2 - s2 * s2) + 6 * c3 * (s3 - s2 * s2)


def uniformity(data):
    """Per series: observed vs expected equal pairs in projections A and B,
    summed over trials. -> {name: [(label, obs, mean, sd, z), ...]}"""
    out = {}
    for name, trs in data.items():
        rows = []
        for idx, (s2, s3) in zip((4, 5), proj_moments(name)):
            m, v = pairs_expectation(NMAX, s2, s3)
            obs = sum(t[idx] for t in trs)
            mean, sd = m * len(trs), math.sqrt(v * len(trs))
            rows.append(("AB"[idx - 4], obs, mean, sd, (obs - mean) / sd))
        out[name] = rows
    return out


# ------------------------------------------------------------------ driver
def driver_path():
    b = os.environ.get("VFAT_BUILD") or os.path.join(
        REPO, "build")
    return os.path.join(b, "study_collide")


def vfat_path():
    return os.path.join(os.path.dirname(driver_path()), "vfat")


def run_series(name, trials, seed, nmax=NMAX, progress=None):
    """-> list of (seed, first, proj, pairs)."""
    args, _ = SERIES[name]
    idx = list(SERIES).index(name)
    base = seed * (1 << 24) + idx * SEED_STRIDE
    out = []
    chunk = max(1, min(50, trials))
    t0 = time.monotonic()
    done = 0
    while done < trials:
        k = min(chunk, trials - done)
        p = subprocess.run([driver_path(), *args, "--n", str(nmax), "--trials", str(k),
                            "--seed", str(base + done)], capture_output=True, text=True, timeout=3600)
        if p.returncode != 0:
            raise RuntimeError(f"study_collide {name}: {p.stderr.strip() or p.returncode}")
        for line in p.stdout.splitlines():
            f = line.split()
            if f[0] != "trial":
                continue
            if int(f[5]) != nmax:
                raise RuntimeError(f"study_collide {name}: read back {f[5]} entries, wanted {nmax}")
            out.append((int(f[1]), int(f[2]), int(f[3]), int(f[4]), int(f[6]), int(f[7])))
        done += k
        if progress:
            progress(f"collisions: {name}: {done}/{trials} trials of {nmax} entries, "
                     f"{sum(1 for r in out if r[1])} with a duplicate, {time.monotonic() - t0:.0f}s")
    return out


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


# ------------------------------------------------------------------ cost
def _find_short(img, sn):
    """Offsets of 32-byte aligned directory entries whose first 11 bytes are sn."""
    out = []
    i = img.find(sn)
    while i >= 0:
        if i % 32 == 0 and img[i + 11] != 0x0F:
            out.append(i)
        i = img.find(sn, i + 1)
    return out


def force_duplicate(img, src_sn, dst_sn):
    """Overwrite the short entry dst_sn with src_sn's 11 bytes and fix the
    checksum of the LFN slots in front of it. -> number of slots fixed."""
    offs = _find_short(img, dst_sn)
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


def vfat_ls(image):
    p = subprocess.run([vfat_path(), "ls", image], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"vfat ls: {p.stderr.strip()}")
    return [json.loads(l) for l in p.stdout.splitlines() if l.strip()]


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


# ------------------------------------------------------------------ report
def run_study(out, seed, size, progress, with_kernel=True):
    os.makedirs(out, exist_ok=True)
    if not os.access(driver_path(), os.X_OK):
        raise RuntimeError(f"{driver_path()} is not built (cmake --build build --target study_collide)")
    t0 = time.monotonic()
    trials = TRIALS[size]
    data = {}
    for name in SERIES:
        data[name] = run_series(name, trials[name], seed, progress=progress)
    progress("collisions: analytic values")
    s3f, rse_f = v3_sum_p2(False, seed=seed + 1)
    s3d, rse_d = v3_sum_p2(True, seed=seed + 2)
    proj = {"v1": v1_proj_probs(), "v3": v3_proj_probs(False), "v3-dirs": v3_proj_probs(True),
            "unique": v1_proj_probs(), "v3-unique": v3_proj_probs(False)}
    analytic = {
        "v1": lambda n: v1_collide(n),
        "v3": lambda n: birthday(n, s3f),
        "v3-dirs": lambda n: birthday(n, s3d),
        "unique": lambda n: 0.0,
        "v3-unique": lambda n: 0.0,
    }
    rows = []
    for name, trs in data.items():
        for n in SIZES:
            k = sum(1 for t in trs if 0 < t[1] <= n)
            kp = sum(1 for t in trs if 0 < t[2] <= n)
            lo, hi = wilson(k, len(trs))
            plo, phi = wilson(kp, len(trs))
            pproj = p_collide_exact(n, proj[name]) if n <= 400 else 1.0
            rows.append({"series": name, "n": n, "trials": len(trs), "collided": k,
                         "measured": k / len(trs), "ci_low": lo, "ci_high": hi,
                         "analytic": analytic[name](n),
                         "proj_collided": kp, "proj_measured": kp / len(trs),
                         "proj_ci_low": plo, "proj_ci_high": phi, "proj_analytic": pproj})
    with open(os.path.join(out, "collisions.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})

    # pair counts: expected C(N,2) * sum p^2 per trial
    pairs = {}
    for name, trs in data.items():
        sp2 = {"v1": V1_SUM_P2, "v3": s3f, "v3-dirs": s3d}.get(name, 0.0)
        pairs[name] = (sum(t[3] for t in trs), len(trs) * NMAX * (NMAX - 1) / 2 * sp2)

    unif = uniformity(data)

    # cost of a collision
    progress("collisions: cost of a collision (fsck.fat, mtools, kernel)")
    readers = [("mtools", None)]
    from vfz.oracles.mtools import MtoolsReader
    readers = [("mtools", MtoolsReader())]
    if with_kernel:
        from vfz import oracles
        for kn in ("kernel", "kernel-nodual"):
            try:
                r = oracles.get_reader(kn)
                av = r.available() if hasattr(r, "available") else True
                if isinstance(av, tuple):
                    av = av[0]
                if av:
                    readers.append((kn, r))
            except Exception:
                pass
    tmp = tempfile.mkdtemp(prefix="vfz-coll-")
    costs = []
    try:
        for mode in ("v1", "v3"):
            img = make_forced(tmp, mode, seed)
            costs.append((f"forced {mode}: 3 files, the 2nd's dummy overwritten with the 1st's",
                          measure_cost(img, readers)))
        for mode in ("v1", "v3"):
            nat = sorted((t[1], t[0]) for t in data[mode] if t[1])
            if not nat:
                continue
            first, s = nat[0]
            img, ops, keep = make_natural(tmp, s, first, mode)
            where = "not kept (large); regenerate with the replay line below"
            if first <= 5000:
                name = f"collisions-natural-{mode}.ops"
                shutil.copyfile(ops, os.path.join(out, name))
                where = f"op-script: {name}"
            costs.append((f"natural {mode}: seed {s}, the first {first} creations of that trial, then "
                          f"all files unlinked but the two sharing a dummy ({keep[0]}, {keep[1]}); "
                          f"{where} (replay: `build/study_collide --dummy {mode} --n {first} --seed {s}` "
                          f"builds the full directory)", measure_cost(img, readers)))
    finally:
        for _, r in readers:
            try:
                r.close()
            except Exception:
                pass
        shutil.rmtree(tmp, ignore_errors=True)

    vers = tool_versions()
    plot_ok = plot(os.path.join(out, "collisions.png"), rows, analytic, s3f, s3d)
    write_md(os.path.join(out, "collisions.md"), rows, data, pairs, costs, vers, seed, size,
             (s3f, rse_f, s3d, rse_d), plot_ok, time.monotonic() - t0, unif)
    with open(os.path.join(out, "collisions.json"), "w") as f:
        json.dump({"seed": seed, "size": size, "trials": {k: len(v) for k, v in data.items()},
                   "v3_sum_p2": {"files": s3f, "files_rse": rse_f, "dirs": s3d, "dirs_rse": rse_d},
                   "pairs": pairs, "uniformity": unif, "costs": costs, "versions": vers,
                   "seeds": {k: {"first": v[0][0], "last": v[-1][0]} for k, v in data.items()},
                   "collided_trials": {k: [[t[0], t[1], t[3]] for t in v if t[1]]
                                       for k, v in data.items()}}, f, indent=1)
    return rows


def plot(path, rows, analytic, s3f, s3d):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # pragma: no cover
        sys.stderr.write(f"study collisions: no plot ({e})\n")
        return False
    fig, ax = plt.subplots(figsize=(9, 6))
    ns = [int(round(10 ** (i / 20))) for i in range(20, 91)] + [NMAX]
    ns = sorted(set(n for n in ns if n <= NMAX))
    colors = {"v1": "C0", "v3": "C1", "v3-dirs": "C2"}
    for name, lab in (("v1", "v1 exact"), ("v3", "v3 files, exact distribution"),
                      ("v3-dirs", "v3 directories, exact distribution")):
        ax.plot(ns, [analytic[name](n) for n in ns], "-", color=colors[name], label=lab)
    ax.plot(ns, [birthday(n, 1 / v3_uniform_space(False)) for n in ns], ":", color="C1",
            label="v3 files, uniform 8*7*35^6 (the July README's count)")
    for name, mk in (("v1", "o"), ("v3", "s"), ("v3-dirs", "^")):
        pts = [r for r in rows if r["series"] == name]
        xs, ys, lo, hi, up = [], [], [], [], []
        for r in pts:
            if r["collided"]:
                xs.append(r["n"])
                ys.append(r["measured"])
                lo.append(r["measured"] - r["ci_low"])
                hi.append(r["ci_high"] - r["measured"])
            else:
                up.append((r["n"], r["ci_high"]))
        if xs:
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt=mk, color=colors[name], capsize=3,
                        label=f"{name} measured (95% Wilson)")
        if up:
            ax.plot([u[0] for u in up], [u[1] for u in up], "v", color=colors[name], alpha=0.5,
                    markersize=5, label=f"{name}: 0 seen, upper 95% bound")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1e-12, 1.5)
    ax.set_xlabel("long names in one directory (max 32 767)")
    ax.set_ylabel("P(at least two equal dummy short entries)")
    ax.set_title("Dummy short-entry collisions: real directories (core) vs analytic\n"
                 "--unique: 0 by construction and 0 measured (not drawable on a log scale)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _pct(x):
    if x == 0:
        return "0"
    if x < 1e-3:
        return f"{x:.3g}"
    return f"{100 * x:.3g} %"


def write_md(path, rows, data, pairs, costs, vers, seed, size, v3s, plot_ok, secs, unif):
    s3f, rse_f, s3d, rse_d = v3s
    C2 = NMAX * (NMAX - 1) / 2
    L = []
    A = L.append
    A("# Dummy short-entry collisions")
    A("")
    A(f"Generated by `vfatfuzz study collisions --seed {seed} --size {size}` "
      f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {secs:.0f} s).")
    A("")
    A("Tools: " + "; ".join(f"{k}: `{v}`" for k, v in vers.items()))
    A("")
    A("## Method")
    A("")
    A("* **Measured** = real directories: `build/study_collide` (scripts/study_collide.c) formats a "
      "volume in memory with the core, makes `/d`, creates 32 767 files `/d/nNNNNN___.txt` "
      "(directories `/d/dNNNNN___` for the v3-dirs series) through the core's own "
      "create/mkdir (13-character names: one LFN slot + one short entry each, so the directory "
      "ends with all 65 536 slots used, `.` and `..` included), reads the directory back with "
      "`vfat_readdir` and compares the 11-byte short entries. A trial's first n creations are a "
      "directory of n entries, so one trial samples every size (the points of one series are "
      "correlated; each point alone is an honest binomial estimate). 95 % Wilson intervals. "
      "The trials of a series use consecutive seeds (first and last in collisions.json, "
      "with [seed, first duplicate at, equal pairs] of every trial that collided); "
      "`study_collide --script` prints the equivalent op-script for `vfat apply --seed`.")
    A("* **Analytic**: v1 exact (2^30 - 2 values of probability 2^-30, plus the value 1 "
      "with 2^-29 because 0 becomes 1). v3: exact per-value probabilities of the docs/write-paths.md "
      "rules (see the v3 section); the birthday formula 1 - prod(1 - i*sum p^2) with that "
      "effective space. `--unique`: 0.")
    A("* **Projection** (a real, measurable check at small n that the dummies are drawn as "
      "analysed): v1 = low 10 random bits; v3 = (tilde position, slash position, first drawn "
      "byte). Exact curves from the exact distributions (elementary symmetric polynomial).")
    A("")
    A("## The published figures and where they come from")
    A("")
    A("None of the three figures is in the seed patches (/work/shared/seeds/). 0.5 % (a full "
      "directory, 32 767 files) and 4.8e-8 (\"approximately 0.0000048%\" for 100 files) are from "
      "the README of the July 2009 series (features/vfat/README in WindRiver-Labs/kernel-cache, "
      "with FAT-Add-CONFIG_VFAT_FS_NO_DUALNAMES-option.patch and FAT-Added-FAT_NO_83NAME.patch), "
      "about the v3 dummies as chkdsk.exe renames. 39.3 % is this project's own analytic figure "
      "for the June (v1) dummies.")
    A("")
    v1full = v1_collide(NMAX)
    r_v1 = next(r for r in rows if r["series"] == "v1" and r["n"] == NMAX)
    r_v3 = next(r for r in rows if r["series"] == "v3" and r["n"] == NMAX)
    uni_full = birthday(NMAX, 1 / v3_uniform_space(False))
    uni_100 = birthday(100, 1 / v3_uniform_space(False))
    ex_full = birthday(NMAX, s3f)
    has_ex = r_v3["ci_low"] <= ex_full <= r_v3["ci_high"]
    has_uni = r_v3["ci_low"] <= uni_full <= r_v3["ci_high"]
    if has_ex and has_uni:
        v3_meas = (f"the measurement does not decide: its interval [{100 * r_v3['ci_low']:.3f}, "
                   f"{100 * r_v3['ci_high']:.3f}] % contains both {100 * uni_full:.3f} % and "
                   f"{100 * ex_full:.3f} %")
    else:
        v3_meas = (f"the measured interval [{100 * r_v3['ci_low']:.3f}, {100 * r_v3['ci_high']:.3f}] % "
                   f"{'contains' if has_ex else 'excludes'} the exact {100 * ex_full:.3f} % and "
                   f"{'contains' if has_uni else 'excludes'} the uniform {100 * uni_full:.3f} %")
    A("| figure (source) | analytic (this study) | measured (real directories) | verdict |")
    A("|---|---|---|---|")
    A(f"| v1, full directory of 32 767 long names: 39.3 % (this project's analysis) | "
      f"{100 * v1full:.2f} % (exact) | "
      f"{r_v1['collided']}/{r_v1['trials']} = {100 * r_v1['measured']:.1f} % "
      f"[{100 * r_v1['ci_low']:.1f}, {100 * r_v1['ci_high']:.1f}] | "
      f"{'confirmed by measurement' if r_v1['ci_low'] <= 0.393 <= r_v1['ci_high'] and abs(v1full - 0.393) < 0.001 else 'NOT confirmed'} |")
    A(f"| v3, full directory: 0.5 % (July 2009 README) | {100 * ex_full:.3f} % with the exact "
      f"distribution; {100 * uni_full:.3f} % if all choices were uniform (8*7*35^6 = "
      f"{v3_uniform_space(False):.4g} values) | {r_v3['collided']}/{r_v3['trials']} = "
      f"{100 * r_v3['measured']:.3f} % [{100 * r_v3['ci_low']:.3f}, {100 * r_v3['ci_high']:.3f}] | "
      f"the README's figure matches the uniform count ({100 * uni_full:.3f} %); by the exact "
      f"analysis alone the true rate is {100 * ex_full:.3f} %, {ex_full / uni_full:.3f}x more "
      f"(non-uniform slash offset, digit tails); {v3_meas} |")
    A(f"| v3, 100 files: 4.8e-8 (July 2009 README) | {birthday(100, s3f):.3g} exact distribution; "
      f"{uni_100:.3g} uniform | not measurable (0 expected in any feasible number of trials; the "
      f"projections below check the distribution instead) | the README's figure matches the uniform "
      f"count ({uni_100:.3g}); by the exact analysis alone the true rate is "
      f"{birthday(100, s3f):.3g}, {birthday(100, s3f) / uni_100:.3f}x higher; no measurement "
      f"decides it |")
    A("")
    A("## Collision probability by directory size")
    A("")
    if plot_ok:
        A("![collision probability](collisions.png)")
        A("")
    A("`measured` = k/trials [95 % Wilson]; `analytic` as above; proj = projection "
      "(measured vs exact).")
    A("")
    A("| series | n | measured | analytic | proj measured | proj exact |")
    A("|---|---:|---|---:|---|---:|")
    for r in rows:
        A(f"| {r['series']} | {r['n']} | {r['collided']}/{r['trials']} [{_pct(r['ci_low'])}, "
          f"{_pct(r['ci_high'])}] | {_pct(r['analytic'])} | {r['proj_collided']}/{r['trials']} "
          f"[{_pct(r['proj_ci_low'])}, {_pct(r['proj_ci_high'])}] | {_pct(r['proj_analytic'])} |")
    A("")
    A("Equal pairs among all 32 767 entries, summed over trials (expected = trials x "
      "C(32767,2) x sum p^2):")
    A("")
    for name, (got, exp) in pairs.items():
        A(f"* {name}: {got} pairs seen, {exp:.3g} expected")
    A("")
    A("## Uniformity check: equal pairs in projections")
    A("")
    A("Full collisions are rare; projections of the dummy onto a smaller space collide by the "
      "thousand in every real directory of 32 767 entries, so their pair counts test the "
      "generator sharply (a stuck or missing random bit doubles them). v1: A = random bits 0-14 "
      "(bytes 2-4), B = bits 15-29 (bytes 5-7); v3: A = (tilde position, slash position, first "
      "drawn byte), B = A plus the second drawn byte. Expected mean and standard deviation are "
      "exact (C(n,2) sum p^2; variance with the sum p^3 term), summed over trials.")
    A("")
    A("| series | projection | pairs seen | expected | sd | z |")
    A("|---|---|---:|---:|---:|---:|")
    for name, rs in unif.items():
        for lab, obs, mean, sd, z in rs:
            A(f"| {name} | {lab} | {obs} | {mean:.1f} | {sd:.1f} | {z:+.2f} |")
    A("")
    A("## v3's value space")
    A("")
    A(f"* Files: 8 tilde positions x 7 slash offsets x 35^6 = {v3_uniform_space(False):.6g} "
      f"values if every choice were uniform. The rules are not uniform: the slash offset is "
      f"(r>>3) % 7 on a 29-bit value, r>>3 then drops 3 more bits, so with q = r>>6 the offset "
      f"is (q + b) % 7 for a 3-bit b: the offset q % 7 gets 2 of the 8 values of b. And q % 7 "
      f"is the first drawn digit % 7 (35 = 5 x 7). That alone multiplies sum p^2 by 70/64. "
      f"The base-35 digits come from 26 bits (then fresh 32-bit values): the digit that makes "
      f"r < 35 ends the chunk, so strings are not equally likely either. Exact per-string "
      f"probabilities averaged over the process (relative standard error {rse_f:.1e}) give "
      f"sum p^2 = {s3f:.6g}, an effective space of **{1 / s3f:.6g}** values "
      f"({v3_uniform_space(False) * s3f:.4f}x the uniform count's collision rate).")
    A(f"* Directories: no slash: 8 x 35^7 = {v3_uniform_space(True):.6g} uniform; exact "
      f"sum p^2 = {s3d:.6g} (rse {rse_d:.1e}), effective space **{1 / s3d:.6g}**.")
    A("* A file's dummy always holds one '/', a directory's none: a file never collides with a "
      "directory. The extension bytes are the alias's own, so files with different extensions "
      "never collide either; the study gives all files `.txt` (the worst case).")
    A("* v3 at small n is a rare event: its points come from the analytic computation; the real "
      "runs bound them (0 seen) and the projection shows the real dummies follow the analysed "
      "distribution.")
    A("")
    A("## What a collision costs")
    A("")
    A("Colliding images: forced ones (three files written by the core, the second file's 11 short "
      "bytes overwritten with the first's and its LFN checksums recomputed) and a natural one "
      "(per series, the trial whose first duplicate came earliest, replayed with `vfat apply "
      "--seed` up to that creation, then every other file unlinked). "
      "Each is read by fsck.fat -n, repaired with fsck.fat -a on a copy and re-listed with mtools, "
      "and read by mtools and the kernel oracles (listing + open + read of every file).")
    A("")
    A("Summary: a duplicate costs one long name per extra member under `fsck.fat -a` when "
      "nothing else is wrong (v3: fsck.fat exempts the dummies, reports `Duplicate directory "
      "entry` and renames the second file); on v1 volumes `fsck.fat -a` renames every dummy "
      "anyway (bad short names), collision or not. Linux and mtools find files by long name and "
      "reach both members of a duplicate. Expected long names lost to duplicates in a full "
      "directory of 32 767 = expected equal pairs = "
      + ", ".join(f"{n}: {C2 * sp:.3g}" for n, sp in (("v1", V1_SUM_P2), ("v3 files", s3f),
                                                      ("v3 directories", s3d)))
      + " (measured: " + ", ".join(f"{n} {got} pairs in {len(data[n])} trials" for n, (got, _) in pairs.items())
      + ").")
    A("")
    for title, c in costs:
        A(f"### {title}")
        A("")
        A(f"* files {c['files']}, duplicate groups {c['duplicate_groups']} "
          f"({c['files_in_duplicates']} files)")
        A(f"* `fsck.fat -n`: exit {c['fsck_n_rc']}, complaints by kind {c['fsck_n_kinds']}")
        if c.get("fsck_n_raw"):
            A("  ```")
            for l in c["fsck_n_raw"]:
                A("  " + l)
            A("  ```")
        A(f"* `fsck.fat -a`: exit {c.get('fsck_a_rc')}; actions: "
          + "; ".join(f"`{a}`" for a in c.get("fsck_a_actions", [])))
        if "long_names_lost" in c:
            A(f"  * re-read with mtools: {c['files_after_a']} files; **long names lost: "
              f"{c['long_names_lost']}** {c['lost_examples']}; paths changed {c['paths_changed']} "
              f"(now {c['new_names']}); "
              f"duplicate gone after repair: {c['fsck_after_a_clean']}")
        else:
            A(f"  * re-read failed: {c.get('after_a_error')}")
        for rn in ("mtools", "kernel", "kernel-nodual"):
            if rn in c:
                x = c[rn]
                if x.get("listed") is None:
                    A(f"* {rn}: failed: {x.get('error')}")
                else:
                    A(f"* {rn}: lists {x['listed']}/{c['files']}, reads correctly {x['read_ok']}; "
                      f"of the {x['dup_files']} files sharing a short entry it reaches "
                      f"{x['dup_files_read_ok']}" + (f"; error {x['error']}" if x.get("error") else "")
                      + (f"; complaints {x['complaints']}" if x.get("complaints") else ""))
        A("")
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")
