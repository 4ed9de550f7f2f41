"""Minimisation of op-scripts: the smallest script that keeps a property.

minimize(ops, test, budget) with test(ops) -> bool (True = still shows the
same signature) runs, within `budget` seconds:
  1. delta debugging (ddmin) over op lines,
  2. hoisting: a `mkdir P` is dropped and what was under P/ moves up,
     shrinking names: each distinct path component is replaced, everywhere
     it occurs, by shorter candidates (a one-letter name, prefixes, ...),
  3. shrinking numbers: sizes, offsets and content seeds towards 0,
  4. one more pass of single-line removal (1-minimal result).
Candidates are tested only if they parse (vfz.opscript rules). Returns
(ops, stats) with stats = {"tests": n, "orig": len, "min": len, "timeout": bool,
"reproduced": bool}. The script as given is tested first: a divergence
that does not show again (a nondeterministic peer, a timeout under load)
is returned as it is, with "reproduced": False, and no budget is spent
minimising against a property that does not hold.
"""
import time

from vfz import opscript


class _Budget(Exception):
    pass


BudgetSpent = _Budget      # a test may raise it to end the minimisation early


class _Tester:
    def __init__(self, test, budget, max_tests):
        self.test = test
        self.deadline = time.monotonic() + budget
        self.max_tests = max_tests
        self.n = 0
        self.cache = {}
        self.timed_out = False
        self.best = None

    def __call__(self, ops):
        key = opscript.dump(ops)
        if key in self.cache:
            return self.cache[key]
        if time.monotonic() > self.deadline or self.n >= self.max_tests:
            self.timed_out = True
            raise _Budget()
        self.n += 1
        try:
            ok = bool(self.test(ops))
        except (opscript.OpScriptError, ValueError):
            ok = False
        self.cache[key] = ok
        if ok:
            self.best = ops       # every accepted candidate improves on the last
        return ok


def renumber(ops):
    return [opscript.Op(o.kind, list(o.args), i + 1) for i, o in enumerate(ops)]


def ddmin(ops, t):
    n = 2
    while len(ops) >= 2:
        size = max(1, len(ops) // n)
        chunks = [ops[i:i + size] for i in range(0, len(ops), size)]
        reduced = False
        for i in range(len(chunks)):          # complements first: drop one chunk
            comp = [o for j, c in enumerate(chunks) if j != i for o in c]
            if comp and t(renumber(comp)):
                ops, n, reduced = comp, max(n - 1, 2), True
                break
        if not reduced and len(chunks) > 2:
            for c in chunks:
                if t(renumber(c)):
                    ops, n, reduced = c, 2, True
                    break
        if not reduced:
            if n >= len(ops):
                break
            n = min(len(ops), 2 * n)
    return ops


def one_minimal(ops, t):
    i = len(ops) - 1
    while i >= 0 and len(ops) > 1:
        cand = ops[:i] + ops[i + 1:]
        if t(renumber(cand)):
            ops = cand
        i -= 1
    return ops


def _components(ops):
    comps = []
    for o in ops:
        for a, k in zip(o.args, opscript.OPS[o.kind]):
            if k == "s":
                for c in a.split("/")[1:]:
                    if c and c not in comps:
                        comps.append(c)
    return comps


def _replace(ops, old, new):
    out = []
    for o in ops:
        args = []
        for a, k in zip(o.args, opscript.OPS[o.kind]):
            if k == "s":
                a = "/".join(new if c == old else c for c in a.split("/"))
            args.append(a)
        out.append(opscript.Op(o.kind, args, o.line))
    return out


def _valid(ops):
    try:
        opscript.parse(opscript.dump(ops))
        return True
    except opscript.OpScriptError:
        return False


def name_candidates(c, taken):
    cands = ["A", "a", "A.TXT", "a.txt"]
    n = len(c)
    for k in (1, 2, 3, 5, 8, 12, 13, 15, 20, 30, n // 2, n - 1):
        if 0 < k < n:
            cands.append(c[:k])
            cands.append(c[-k:])
    if "." in c:
        b, _, e = c.rpartition(".")
        cands += [b[:1] + "." + e, "A." + e]
    seen = set()
    out = []
    for x in cands:
        if x and x != c and x not in taken and x not in seen and x not in (".", ".."):
            seen.add(x)
            out.append(x)
    return sorted(out, key=len)


def shrink_names(ops, t):
    changed = True
    while changed:
        changed = False
        comps = sorted(_components(ops), key=len, reverse=True)
        for c in comps:
            taken = set(_components(ops))
            for cand in name_candidates(c, taken):
                if len(cand) >= len(c) and cand not in ("A", "a"):
                    continue
                new = _replace(ops, c, cand)
                if _valid(new) and t(renumber(new)):
                    ops = new
                    changed = len(cand) < len(c)
                    break
    return ops


def hoist_dirs(ops, t):
    """Drop a directory level: remove `mkdir P` and move everything under
    P/ to P's parent (deep paths rarely matter)."""
    i = 0
    while i < len(ops):
        o = ops[i]
        if o.kind == "mkdir":
            p = o.path
            par = p.rpartition("/")[0]
            new = []
            for j, x in enumerate(ops):
                if j == i:
                    continue
                args = []
                for a, k in zip(x.args, opscript.OPS[x.kind]):
                    if k == "s" and a.startswith(p + "/"):
                        a = par + a[len(p):]
                    args.append(a)
                new.append(opscript.Op(x.kind, args, x.line))
            if new and _valid(new) and t(renumber(new)):
                ops = new
                continue
        i += 1
    return ops


def _num_candidates(v):
    out = [0, 1]
    x = v
    while x > 1:
        x //= 2
        out.append(x)
    return [c for c in dict.fromkeys(out) if c < v]


def shrink_numbers(ops, t):
    for i in range(len(ops)):
        o = ops[i]
        for j, k in enumerate(opscript.OPS[o.kind]):
            if k != "n":
                continue
            for cand in _num_candidates(ops[i].args[j]):
                args = list(ops[i].args)
                args[j] = cand
                new = ops[:i] + [opscript.Op(o.kind, args, o.line)] + ops[i + 1:]
                if t(renumber(new)):
                    ops = new
                    break
    return ops


def minimize(ops, test, budget=90.0, max_tests=2000):
    """-> (minimised ops, stats); stats["reproduced"] is False (and ops
    come back unchanged) when the input does not pass test."""
    t = _Tester(test, budget, max_tests)
    orig = len(ops)
    best = renumber(ops)
    try:
        if not t(best):
            return best, {"tests": t.n, "orig": orig, "min": orig, "timeout": False,
                          "reproduced": False}
    except _Budget:
        return best, {"tests": t.n, "orig": orig, "min": orig, "timeout": True, "reproduced": None}
    try:
        best = renumber(ddmin(best, t))
        best = renumber(one_minimal(best, t))
        best = renumber(hoist_dirs(best, t))
        best = renumber(shrink_names(best, t))
        best = renumber(shrink_numbers(best, t))
        best = renumber(one_minimal(best, t))
    except _Budget:
        if t.best is not None and len(t.best) <= len(best):
            best = renumber(t.best)
    return best, {"tests": t.n, "orig": orig, "min": len(best), "timeout": t.timed_out,
                  "reproduced": True}
