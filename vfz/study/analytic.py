"""The collision study's analytic side: exact collision probabilities of the v1 and v3 dummies.

Also the 95 % Wilson interval of a measured rate and the expected pair counts of the projections.

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
import math
import random

NMAX = 32767      # 13-character long names that fill a directory (65 536 slots, "." and ".." included)


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
