"""Op patterns appended to generated scripts, sized to the script's own volume, so that ordinary scripts reach the census's states.

`vfat gen` draws its ops without knowing the volume: a few files of up to 33 000 bytes, one
mkdir in five into a random directory. On the campaign's volumes that reaches none of the
states vfz.campaign.steer counts but by chance (a 2 MiB FAT12 never fills in 24 ops, a tree
8 deep needs 8 nested mkdirs in a row). A generated script gets, seeded by its own seed:

    deep     (one script in three) a chain of 8-11 nested directories and a file at the
             bottom: deep-tree
    root     (FAT32 of clusters up to 16 KiB, one script in three) names of 16 slots each
             in the root, enough to pass its first cluster: root-grows
    fill     (on a volume that fills within a script: at most FILL_MAX free bytes, the
             small and windowed volumes of vfz.campaign.geometry) two files of ~30 % of the
             free clusters, the first unlinked, a third of what is left and half the hole
             allocated across the end of the volume into the hole, then the second written past the rest: near-full,
             alloc-wrap, reuse-after-unlink, and enospc where every writer's model counts
             clusters (vfz.model.space); else the last write stays inside what is free.

The patterns come after the generated ops (whose semantics stay as `vfat gen` made them) and
before nothing else; a pattern's names are its own (no collision with generated names but by
the generator's choice of the same text, which the model handles like any other).
"""
from vfz import opscript

FILL_MAX = 1 << 20


def deep(rng):
    depth = 8 + rng.randrange(4)
    top = f"/deep {rng.randrange(1000)}"
    ops, path = [], top
    for k in range(depth):
        ops.append(opscript.Op("mkdir", [path]))
        path += f"/level {k + 2}"
    ops.append(opscript.Op("create", [path.rpartition("/")[0] + "/leaf.txt", rng.randrange(2000), 7]))
    return ops


ROOT_MAX_CLUSTER = 16384      # above, a root's cluster holds too many slots to fill cheaply


def root(rng, cluster):
    n = cluster // 32 // 16 + 2     # 16 slots a name (15 LFN + the short entry)
    tag = rng.randrange(1000)
    return [opscript.Op("create", [f"/root name {tag:03} number {i:03} " + "x" * 176 + ".txt",
                                   rng.randrange(300), i % 256]) for i in range(n)]


def fill(rng, free, cluster, overflow):
    """Fill, unlink, allocate across the end into the hole, then write past what is left
    (overflow) or into it."""
    def part(k):                        # k clusters' worth, ending anywhere in the last
        return max(1, k) * cluster - rng.randrange(cluster)
    n = free // cluster
    na = nb = max(1, n * 3 // 10)
    # the third needs what is left after the second and half the first's hole: it wraps
    # past the end into the hole whatever the cluster count (4 clusters: 1, 1, 3)
    nc = max(1, n - na - nb + max(1, na // 2))
    a, b, c = part(na), part(nb), part(nc)
    tag = rng.randrange(1000)
    fa, fb, fc = (f"/fill {tag} {x}.bin" for x in "abc")
    more = part(n * 6 // 10 if overflow else n // 10)
    return [opscript.Op("create", [fa, a, 1]), opscript.Op("create", [fb, b, 2]),
            opscript.Op("unlink", [fa]), opscript.Op("create", [fc, c, 3]),
            opscript.Op("write", [fb, b, more, 4])]


def extend(ops, rng, space, fat, overflow):
    """ops with the patterns for a volume of fat bits whose fresh Space (vfz.model.space) is
    space; overflow: may the last write run out of space (every writer's model counts
    clusters)."""
    out = list(ops)
    if rng.randrange(3) == 0:
        out += deep(rng)
    if fat == 32 and rng.randrange(3) == 0 and space is not None and space.cs <= ROOT_MAX_CLUSTER:
        out += root(rng, space.cs)
    if space is not None and space.free * space.cs <= FILL_MAX:
        out += fill(rng, space.free * space.cs, space.cs, overflow)
    return [opscript.Op(o.kind, list(o.args), i + 1) for i, o in enumerate(out)]


def for_script(checker, ops, fs, seed):
    """The generated script of seed for checker's writers on volume fs, with its patterns."""
    import random
    from vfz import oracles
    from vfz.check.checker import fat_bits
    from vfz.model.space import space_for, space_of
    base = checker.pristine_image(fs)
    overflow = all(space_for(oracles.entry(w).profile, base) is not None for w in checker.writer_names)
    return extend(ops, random.Random(f"{seed}:patterns"), space_of(base), fat_bits(fs), overflow)
