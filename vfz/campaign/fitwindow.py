"""A fuzz_ops corpus entry's free window sized from what its own ops allocate, so that its data pass the window's end.

A corpus entry is a short script of little data (vfz.campaign.geometry): on a drawn window of
2-32 KiB it seldom fills, and when it does it seldom unlinks and allocates again after that.
The campaign cannot add ops to a corpus entry (it would be another source), but it may choose
the volume: the model (vfz.model, Linux's capacity rules) counts, op by op, the clusters the
script takes and frees on a volume that never fills, and the window (vfz.geometry free=N) is
resized so that next-fit allocation -- Linux's and the core's, which start at the window (at
mount on FAT12/16, by FSInfo's hint on FAT32 with a low run, wrap=K) -- passes its end inside
one op's allocation:

    reuse+wrap  after the first unlink or rmdir that frees clusters and that a later
                allocation follows (the census's reuse-after-unlink cut, vfz.campaign.steer),
                the window ends inside an op that takes 2+ clusters, early enough that what is
                taken after the end passes the low run into the hole: the op's chain crosses the
                end (alloc-wrap), the allocation wraps into the hole (reuse-after-unlink); an op
                whose rest the low run and the holes hold (no ENOSPC from the window) if any
    reuse       else the window ends after the cut, early enough to reach the hole
    wrap        else, on a window with a low run, an op that takes 2+ clusters passes the end
                and ends in the low run (alloc-wrap)
    short       else an op that takes 2+ clusters runs out part-way (enospc)

A script whose mkdirs reach a tree DEEP directories deep gets only sizes that hold the most it
has at once (no ENOSPC: the fit does not cut its chain). A drawn volume that has no window (one pool entry in four) gets one, placed as the pool places
them (vfz.campaign.geometry.window, with a low run), when the script allows a fit; the classic
volumes stay as they are. Only the window changes (its size, and its start when it would pass
the volume's end): the volume is still the pool's, and a writer that allocates elsewhere (first fit, its own hint) simply
meets the same capacity, which every model counts. N is taken from LADDER where the allowed
sizes hold one, so that scripts share windows (each new spec is formatted once, and its fresh
volume read once by every reader). The sizing is a draw seeded by the script's key: replay of a
finding uses the spec it recorded, which holds N.
"""
import random
from dataclasses import replace

from vfz import geometry
from vfz.fatimg import open_ro
from vfz.model.space import Space, space_of
from vfz.model.tree import Model

DEEP = 8              # steer.census's deep-tree: a path this many directories deep
BIG = 1 << 40         # free clusters of the never-full volume the model counts on
LADDER = {int(round(1.125 ** k)) for k in range(140)}    # shared window sizes


def allocations(ops, space):
    """[(clusters taken, clusters freed, result)] per op, Linux's capacity rules (the kernel
    profile's model) on a volume of space's cluster size that never fills."""
    sp = Space(BIG, space.cs, space.root, space.bs)
    m = Model("kernel", "dual", space=sp)
    out = []
    for op in ops:
        before = sp.free
        res = m.apply_one(op)
        d = before - sp.free
        out.append((max(d, 0), max(-d, 0), res))
    return out


def reuse_cut(ops, results):
    """The census's cut: the first ok unlink/rmdir that a create, mkdir or write follows."""
    return next((i for i, op in enumerate(ops) if op.kind in ("unlink", "rmdir") and results[i] == "ok"
                 and any(o.kind in ("create", "mkdir", "write") for o in ops[i + 1:])), None)


def choose(ops, al, low, overflow=True):
    """-> (sizes N the window may take, why) or None: the window sizes for ops given their
    allocations al and a low run of low clusters (module docstring); the first kind below
    that any size gives. overflow False: only sizes whose window and low run hold the most the
    script has at once (no ENOSPC wherever a writer allocates: for writers whose model does not
    count clusters)."""
    got = _choose(ops, al, low)
    if overflow or got is None:
        return got
    taken, freed = [a for a, _, _ in al], [f for _, f, _ in al]
    peak = max(sum(taken[:j + 1]) - sum(freed[:j + 1]) for j in range(len(al)))
    sizes = {n for n in got[0] if n + low >= peak}
    return (sizes, got[1]) if sizes else None


def _choose(ops, al, low):
    taken = [a for a, _, _ in al]
    cum = [sum(taken[:j]) for j in range(len(al))]
    i = reuse_cut(ops, [r for _, _, r in al])
    first = next((j for j in range(i + 1, len(al)) if taken[j]), None) if i is not None and al[i][1] else None
    if first is not None:
        last = sum(taken) - low - 1       # what is taken after the end passes the low run
        cross = [(j, x) for j in range(first, len(al)) for x in range(1, taken[j]) if cum[j] + x <= last]
        # an op's chain crosses the end, and the low run and the holes hold the rest of it
        both = {cum[j] + x for j, x in cross if taken[j] - x <= low + sum(f for _, f, _ in al[:j])}
        if both or cross:
            return both or {cum[j] + x for j, x in cross}, "reuse+wrap"
        if cum[first] <= last:
            return set(range(cum[first], last + 1)), "reuse"
    ends = {cum[j] + taken[j] - y for j in range(len(al)) for y in range(1, min(low, taken[j] - 1) + 1)}
    if ends:                              # an op's chain ends in the low run
        return ends, "wrap"
    short = {cum[j] + x for j in range(len(al)) for x in range(1, taken[j])}
    return (short, "short") if short else None


def pick(sizes, rng):
    """One of sizes (at least 1), from LADDER when it holds one."""
    sizes = sorted(n for n in sizes if n >= 1) or [1]
    on = [n for n in sizes if n in LADDER]
    return rng.choice(on or sizes)


def fitted(pristine, ops, fs, key, overflow=True):
    """The volume spec for a corpus entry's ops: fs with its window resized (module docstring),
    a drawn volume without one (a geometry spec, `@formatter`) with one placed as the pool
    places them (vfz.campaign.geometry.window, low_run); fs itself when it is a classic volume
    or the script allows no fit. pristine: spec -> the fresh image of it
    (vfz.check.checker.Checker.pristine_image); overflow: may the fit run the script out of
    space (choose)."""
    if "free=" not in fs and "@" not in fs:
        return fs
    g = geometry.parse(fs)
    rng = random.Random(f"{key}:fit")
    image = pristine(fs)
    space = space_of(image)
    if space is None or not ops:
        return fs
    if not g.free:
        from vfz.campaign.geometry import low_run, window
        low = low_run(rng, g.fat)
        g = replace(g, free=1, at=window(rng, image, low)[1], wrap=low)
    try:
        al = allocations(ops, space)
    except (ValueError, KeyError, IndexError, TypeError):     # the model's limits: keep the pool's
        return fs
    # a tree 8 deep (the census's deep-tree) is never cut by the fit: its mkdirs keep their room
    deep = any(op.kind == "mkdir" and r == "ok" and op.args[0].rstrip("/").count("/") >= DEEP
               for op, (_, _, r) in zip(ops, al))
    got = choose(ops, al, g.wrap, overflow and not deep)
    if got is None:
        return fs
    n = pick(got[0], rng)
    at, end = g.at or 2, open_ro(image).clusters + 2
    if at + n > end:                                 # keep it on the volume: start it lower
        at = end - n
        if at < 3 + (g.wrap + 1 if g.wrap else 0):   # above the low run (vfz.campaign.geometry.window)
            return fs
    return replace(g, free=n, at=at).spec()


def corpus_volume(pool, checker, ops, fs, path, slot):
    """The volume of a corpus entry (path, its ops, job slot) whose classic volume is fs for
    checker's writers: the pool's draw (vfz.campaign.geometry.Pool.script_volume), its window
    fitted to the ops, out of space only where every writer's model counts clusters (as
    vfz.campaign.patterns.for_script decides)."""
    import os
    from vfz import oracles
    from vfz.model.space import space_for
    key = f"corpus:{os.path.basename(path)}"
    fs = pool.script_volume(fs, key, slot) or fs
    if "@" not in fs:                                # a classic volume: as it is
        return fs
    base = checker.pristine_image(fs)
    overflow = all(space_for(oracles.entry(w).profile, base) is not None for w in checker.writer_names)
    return fitted(checker.pristine_image, ops, fs, f"{pool.seed}:{key}", overflow)
