"""The formatter sweep: every reader reads each formatter's fresh volumes across the geometry
classes (issue 26), judged by the campaign's own formatted-volume check (vfz.check.formatted).

For each formatter and each FAT type it makes, a plan of layouts (seeded): each size class
(small, plain, each side of the 4084/4085 and 65524/65525 cluster-count boundaries, the smallest
FAT32) with the formatter's defaults, with 512-byte clusters and two FATs, with 4 KiB sectors (or
an explicit cluster size) and one FAT, and a middle sector size with root entries and reserved
sectors, as far as the formatter accepts each field. Sizes are asked of the formatter itself (vfz.check.sizing); a volume it
does not make (its own refusal, a count it never reaches, over 64 MiB) is counted as not made
with its reason. Every made volume is read by every reader, one reader at a time through
check_formatted, so each answer is ok, named (the exceptions that explain it) or a finding.

    vfatfuzz study formatters [--formatters LIST] [--readers LIST] [--seed N] [--size small]

(--size small: the first plain volume of each FAT type per formatter, what the tests run)

writes formatters-sweep.md (the figures) and formatters-sweep.csv (one row per volume and
reader) under --out.
"""
import collections
import csv
import os
import random
import tempfile

from vfz import geometry, oracles
from vfz.check import diff, formatted, sizing
from vfz.check.divergence import CheckResult

EDGES = {"fat12/16": geometry.FAT12_MAX, "fat16/32": geometry.FAT16_MAX}
CLASSES = {12: ["small", "plain", "fat12/16:below", "fat12/16:at-max", "fat12/16:at-min"],
           16: ["small", "plain", "fat12/16:at-max", "fat12/16:at-min", "fat12/16:above",
                "fat16/32:below", "fat16/32:at-max", "fat16/32:at-min"],
           32: ["small", "plain", "fat16/32:at-max", "fat16/32:at-min", "fat16/32:above",
                "fat32:few-clusters"]}
TIMEOUT = 60.0


def target(size_class, r):
    """The cluster count a size class asks for (None: plain or smallest)."""
    if size_class == "small":
        return r.randrange(40, 400)
    if ":" not in size_class or size_class.startswith("fat32"):
        return None
    edge, where = EDGES[size_class.split(":")[0]], size_class.split(":")[1]
    return {"below": edge - 1 - r.randrange(15), "at-max": edge, "at-min": edge + 1,
            "above": edge + 2 + r.randrange(15)}[where]


def layouts(name, fat, r):
    """The layouts of one formatter and FAT type: defaults; 512-byte clusters with two FATs;
    4 KiB sectors (or an explicit 4 KiB cluster) with one FAT; a middle sector size with root
    entries and reserved sectors."""
    acc = oracles.oracle_class(name, "formatter").accepts
    out = [geometry.Geometry(fat, 0, formatter=name)]
    if "cluster" in acc:            # the one layout under 64 MiB at 65 525 clusters
        out.append(geometry.Geometry(fat, 0, 512, fats=2 if "fats" in acc else 0, formatter=name))
    sector = 4096 if "sector" in acc else 0
    cluster = (sector or 4096) if "cluster" in acc else 0
    out.append(geometry.Geometry(fat, 0, cluster, sector, 1 if "fats" in acc else 0, formatter=name))
    sector = r.choice([1024, 2048]) if "sector" in acc else 0
    bps = sector or 512
    root = -(-r.choice([64, 224, 512]) * 32 // bps) * bps // 32 if fat != 32 and "root" in acc else 0
    reserved = r.choice([8, 16] if fat == 32 else [2, 4, 8]) if "reserved" in acc else 0
    cluster = bps * r.choice([1, 2, 4]) if "cluster" in acc else 0
    out.append(geometry.Geometry(fat, 0, cluster, sector, 2 if "fats" in acc else 0, reserved, root,
                                 formatter=name))
    return list(dict.fromkeys(out))


def plan(name, seed, only=None):
    """[(size class, layout, Geometry or None, why not)] of one formatter (only: the size
    classes to plan, default all)."""
    out = []
    cls = oracles.oracle_class(name, "formatter")
    for fat in sorted(cls.fats_types):
        for size_class in [c for c in CLASSES[fat] if only is None or c in only]:
            for i, lay in enumerate(layouts(name, fat, random.Random(f"{seed}:{name}:{fat}"))):
                r = random.Random(f"{seed}:{name}:{fat}:{size_class}:{i}")
                g, why = _sized(lay, size_class, target(size_class, r))
                out.append((size_class, lay, g, why))
    return out


def _sized(lay, size_class, count):
    why = oracles.oracle_class(lay.formatter, "formatter")().unsupported(
        geometry.Geometry(**{**lay.__dict__, "size": 1 << 20}))
    if why:
        return None, f"unsupported: {why}"
    if count and count * max(lay.cluster, lay.bytes_per_sector) > sizing.MAX_IMAGE:
        return None, "over 64 MiB"
    if size_class == "plain":
        size = geometry.DEFAULT_SIZE[lay.fat]
    elif size_class == "fat32:few-clusters":
        size = sizing.smallest(lay)
    else:
        size = sizing.size_for(lay, count)
    if size is None:
        return None, f"no {size_class} volume with this layout (no size gives {count or 'a FAT32'} clusters)"
    return geometry.Geometry(**{**lay.__dict__, "size": size}), None


def load_readers(names, notes):
    """The readers of the sweep: those named, else every registered reader available (the
    VM-hosted modes of one family read with the same code: one of them)."""
    out, vm_families = [], set()
    for n in names or oracles.names("reader"):
        e = oracles.entry(n)
        if not names and e.cost == "vm":
            if e.family in vm_families:
                continue
            vm_families.add(e.family)
        o = diff.load_oracle("reader", n, bool(names), notes)
        if o is not None:
            out.append((n, o))
    return out


def sweep(formatters, readers, seed, progress, small=False):
    """-> (volumes, rows): volumes [(formatter, class, spec or None, why, argv, made)], rows
    [(formatter, class, spec, reader, outcome, names, detail)]."""
    volumes, rows = [], []
    tmp = tempfile.mkdtemp(prefix="vfz-fmtsweep-")
    img = os.path.join(tmp, "v.img")
    try:
        for name in formatters:
            f = oracles.get_formatter(name)
            # small, the tests' size: the first plain volume made of each FAT type, no boundary search
            made_fats = set()
            for size_class, lay, g, why in plan(name, seed, ("plain",) if small else None):
                if small and (g is None or g.fat in made_fats):
                    continue
                if g is None:
                    volumes.append((name, size_class, lay.spec(), why, [], None))
                    continue
                res = f.format(img, g, TIMEOUT)
                if res.error:
                    volumes.append((name, size_class, g.spec(), res.error, res.argv, None))
                    continue
                m = geometry.made(img)
                made_fats.add(g.fat)
                volumes.append((name, size_class, g.spec(), None, res.argv, m))
                progress(f"{name} {g.spec()} ({size_class}, {m['clusters']} clusters)")
                for rn, r in readers:
                    rows.append((name, size_class, g.spec(), rn) + _judge(g, name, res.argv, img, rn, r))
            f.close()
    finally:
        try:
            os.unlink(img)
        except OSError:
            pass
        os.rmdir(tmp)
    return volumes, rows


def _judge(g, name, argv, img, rn, r):
    """One reader on one fresh volume -> (outcome ok|named|finding, names, detail)."""
    res, named = CheckResult(), collections.Counter()
    formatted.check_formatted(res, [(rn, r)], g, name, argv, img, g.fat, TIMEOUT, named)
    if res.divs:
        d = next(iter(res.divs.values()))
        return "finding", sorted(named), f"{d.fields['verdict']} {d.fields['kind']}: {d.detail}"
    return ("named" if named else "ok"), sorted(named), ""


def run_study(out, seed, size, progress, with_kernel=True, formatters=None, readers=None):
    notes = []
    fmts = formatters or oracles.names("formatter")
    rs = load_readers(readers, notes)
    if not with_kernel:
        rs = [(n, o) for n, o in rs if oracles.entry(n).cost != "vm"]
    try:
        volumes, rows = sweep(fmts, rs, seed, progress, small=size == "small")
    finally:
        for _, o in rs:
            try:
                o.close()
            except Exception:
                pass
    with open(os.path.join(out, "formatters-sweep.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["formatter", "class", "spec", "reader", "outcome", "named", "detail"])
        for row in rows:
            w.writerow(list(row[:5]) + [" ".join(row[5]), row[6][:300]])
    from vfz.study.formatters_report import write_md
    write_md(os.path.join(out, "formatters-sweep.md"), fmts, [n for n, _ in rs], volumes, rows, notes, seed, size)
