"""Scripts steered toward the states where bugs live, and a census of the
states a script reached (issue 18, blind spot 2).

The states (STATES), each recognised on the written image (vfz.fatimg, no
C core code) and the script's per-op results:

    near-full           under 15 % of the usable data clusters free at the end
                        (usable: not marked bad; a windowed volume,
                        vfz.geometry free=N, has its other clusters bad)
    enospc              an op the writer answered ENOSPC: a write, create
                        or truncate growth cut part-way, or a directory
                        (mkdir, a name added by create or rename) that
                        found no cluster to grow into
    alloc-wrap          a file or directory chain whose cluster numbers go
                        down somewhere (next-fit allocation passed the end
                        of the volume and wrapped to its start)
    reuse-after-unlink  a chain holds a cluster that an unlinked or removed
                        entry held (the removed chains are read on the image
                        of the script cut before the unlink)
    dir-to-root         a directory renamed from a subdirectory into the root
    dir-from-root       a directory renamed from the root into a subdirectory
    dir-multi-cluster   a directory (the FAT32 root included) of 2+ clusters
    deep-tree           a path 8 or more directories deep
    fat12-sector-edge   on FAT12, a used cluster whose 12-bit entry straddles
                        two FAT sectors (odd/even packing across the edge);
                        FAT12 only (a 16- or 32-bit entry never straddles)
    root-grows          on FAT32, a root directory of 2+ clusters (it starts
                        with one); FAT32 only (the FAT12/16 root is fixed)
    shrink-cluster, extend-hole, ro-modified, time-edge
                        the second grammar's (vfz.campaign.metastates: a
                        truncate cutting a chain, a file extended with a
                        hole, a read-only file modified, a touch at the
                        edge of FAT's time range)

tour(fs, free, cluster) is one script that reaches all of them on a fresh
volume of the given free bytes and cluster size: every name class in one
directory (which then spans clusters), long names in the root (a FAT32 root
grows past its first cluster), a 12-deep tree, directories moved
up into the root and down out of it, two large files and a small one, the
first large one unlinked and a third large one allocated across the end of
the volume into its hole, files grown after the wrap, dot-path renames, and the
second grammar's states (meta_tour). Data stay under ~92 % of the free bytes until
the campaign's tour ends (campaign_tour, capacity): a file then written and grown past
what is left, sized from the model's free count (the model predicts capacity as Linux
6.1 does, vfz.model.space), so that a write runs out of clusters part-way.
"""
import os
import random
from collections import Counter

from vfz import model, opscript
from vfz.errors import UsageError
from vfz.campaign.metastates import META_STATES, meta_reached
from vfz.fatimg import Fat, open_ro

STATES = ["near-full", "alloc-wrap", "reuse-after-unlink", "enospc", "dir-to-root", "dir-from-root",
          "dir-multi-cluster", "deep-tree", "fat12-sector-edge", "root-grows"] + META_STATES
ONLY = {"fat12-sector-edge": "fat12", "root-grows": "fat32"}    # states of one FAT type


def applies(state, fs):
    """Can a script on a volume of FAT type fs ("fat12", ...) reach state at all?"""
    return ONLY.get(state, fs) == fs

# one or two names per class of docs/op-script.md, written here for the tour
TOUR_NAMES = ["README.TXT", "lower.md", "Mixed Case Name.text", "thirteen13chr", "x" * 26,
              "N" * 200 + ".long", "Ünïcödé ñame.txt", "漢字かな交じり.txt", "😀 astral 𝔘.txt",
              ".dotfile", "a..b.c", " lead space", "trail dots...", "plus+comma,semi;eq=[b]",
              "bad*name?", "CON", "nul.txt", "Case.txt", "CASE.TXT", "σigma", "L" * 251 + ".txt"]


def tour(free, cluster, rng=None, fill=True):
    """-> [Op] reaching every state of STATES on a fresh volume with `free`
    data bytes in clusters of `cluster` bytes. rng (random.Random): the
    campaign's variant, names in another order and other sizes and data
    (the same states); fill=False leaves out the volume-filling part
    (near-full, alloc-wrap, the big files' reuse: a light tour)."""
    names = list(TOUR_NAMES)
    if rng:
        rng.shuffle(names)
    lines = ['mkdir "/d"']
    for i, n in enumerate(names):
        size = rng.randrange(700) if rng else 17 * i % 700
        lines.append(f'create "/d/{n}" {size} {rng.randrange(1 << 16) if rng else i}')
    for i in range(24):                 # /d spans 9+ clusters of 512 bytes (FAT16, FAT32)
        lines.append(f'create "/d/a longer name, number {i:02} of the tour.txt" {40 * i} {i}')
    for i in range(cluster // 128 + 2):   # 4 slots each: a FAT32 root grows past its cluster
        lines.append(f'create "/root entry {i:03} of the tour.txt" {i} {i}')
    deep = "/t1"
    lines.append(f'mkdir "{deep}"')
    for k in range(2, 13):
        deep += f"/t{k}"
        lines.append(f'mkdir "{deep}"')
    lines.append(f'create "{deep}/leaf.bin" 1500 7')
    # a subtree up into the root and back down (its '..' must follow)
    lines += ['rename "/t1/t2/t3" "/t3"', 'create "/t3/after-move" 600 3',
              'rename "/t3" "/d/t3"', 'rename "/d/t3/t4" "/t4"', 'rename "/t4" "/t1/t4"']
    # near full, then allocation across the end of the volume into a hole
    big = int(free * 0.40) // cluster * cluster
    if not fill:                  # small files in place of the big ones: reuse after unlink still
        big = 3 * cluster
    lines += [f'create "/big1" {big} 11', f'create "/big2" {big} 12', 'create "/small" 700 13',
              'unlink "/big1"',
              f'create "/big3" {int(free * 0.45) // cluster * cluster if fill else 4 * cluster} 14',
              f'write "/small" 600 {3 * cluster} 15', 'mkdir "/late"',
              'create "/late/f1" 100 16', f'create "/late/f2" {2 * cluster + 1} 17']
    low = "/t1/" + "/".join(f"t{k}" for k in range(4, 13))    # the deep leaf's dir after the moves
    # renames onto an existing file (same directory and across), a
    # case-only rename, removals of a grown file and of a directory
    lines += ['rename "/d/README.TXT" "/d/lower.md"', 'rename "/d/nul.txt" "/late/f1"',
              'rename "/d/Case.txt" "/d/cASE.txt"', 'rename "/small" "/d/SMALL"',
              'unlink "/d/SMALL"', f'rmdir "{low}"', f'unlink "{low}/leaf.bin"', f'rmdir "{low}"',
              'rmdir "/late"']
    # dot paths in renames (EBUSY/EINVAL/ENOTEMPTY per Linux)
    lines += ['rename "/d/." "/e"', 'rename "/late" "/late/.."', 'rename "/t1/.." "/x"']
    lines += meta_tour(cluster, rng)
    return opscript.parse("\n".join(lines) + "\n")


def meta_tour(cluster, rng=None):
    """The tour's second-grammar part (a few clusters): a chain cut by a
    truncate, a file extended with holes (a growing truncate, a write past
    the end), a read-only file written, truncated (to a new size, then to
    its own), renamed and unlinked, an empty file truncated to 0,
    times clamped at both edges of FAT's range and rounded, attributes on
    a directory and on the root, a label. Writers that do not support an
    op are sent the tour without it."""
    r = rng.randrange(1 << 16) if rng else 0
    return [
        'mkdir "/m"', f'create "/m/cut" {3 * cluster + 100} {r % 256}',
        f'truncate "/m/cut" {cluster - 1}', 'truncate "/m/cut" 0',
        'create "/m/grow" 100 1', f'truncate "/m/grow" {2 * cluster + 5}',
        f'write "/m/grow" {3 * cluster + r % cluster} 10 2',
        'create "/m/ro" 700 3', 'chattr "/m/ro" r', 'write "/m/ro" 650 100 4',
        f'truncate "/m/ro" {cluster + 1}', 'rename "/m/ro" "/m/ro moved"', 'chattr "/m/ro moved" rha',
        # a truncate to the size the file has (Linux: fat_truncate_blocks all the same, its
        # mmu_private exact, the archive bit, "now"), of a file with data and of an empty one
        f'truncate "/m/ro moved" {cluster + 1}', 'create "/m/empty" 0 6', 'truncate "/m/empty" 0',
        'create "/m/gone" 10 5', 'chattr "/m/gone" rs', 'unlink "/m/gone"',
        'touch "/m/cut" 0 315532801', 'touch "/m/grow" 4354819199 7258118403.5',
        f'touch "/m/ro moved" {1246079973 + 2 * (r % 1000)}.25 1246079973',
        'chattr "/m" hs', 'chattr "/" r', 'chattr "/" -', 'touch "/" 1 1',
        'label "TOUR"',
    ]


PAGE = 4096                 # Linux writes page by page (core/src/namei.c short_write_end)


def capacity(ck, vol, ops, cluster):
    """The tour's last part, on its near-full volume: a write and a growing truncate that run
    out of clusters part-way, in each shape Linux's short write tells apart (the data start
    inside the last page the clusters reach: the offset is kept; a growth, a write from
    inside the file, a gap longer than the room: the last page boundary is kept). Sized
    from the model's free count after ops (the under-test writer's model on vol); the model
    predicts what each keeps, and the kernel twin compares the bytes. -> [Op] ([] when no
    writer under test or no cluster is left for the file)."""
    from vfz import oracles
    from vfz.check.predict import model_of
    wn = next((n for n in ck.writer_names if oracles.entry(n).under_test), None)
    pre = opscript.parse('mkdir "/cap"\ncreate "/cap/g" 100 41\n')
    if wn is None:
        return []
    m = model_of(wn, ck.pristine_image(vol), list(ops) + pre)
    if m.space is None or m.results[-2:] != ["ok", "ok"]:
        return []
    room = (m.space.clusters(100) + m.space.free) * cluster    # what /cap/g can reach
    tail, lines = room % PAGE, []
    if tail > 1 and room - tail // 2 > 512:
        lines += [f'write "/cap/g" {room - tail // 2} {PAGE} 42', 'truncate "/cap/g" 100']
    lines += [f'truncate "/cap/g" {room + cluster}', 'truncate "/cap/g" 100',
              f'write "/cap/g" 50 {room} 43', 'truncate "/cap/g" 100',
              f'write "/cap/g" {room + cluster} 10 44', 'unlink "/cap/g"']
    return pre + opscript.parse("\n".join(lines) + "\n")


def probe():
    """A short script that touches the volume's FAT, root and data (for
    checking a formatter on each FAT type without a tour's cost)."""
    return opscript.parse('mkdir "/p"\ncreate "/p/a long name.txt" 3000 1\ncreate "/B.TXT" 10 2\n'
                          'unlink "/p/a long name.txt"\n')


def result_census(ck, res, ops, fs):
    """The census of one script a vfz.check.checker.Checker has checked: the
    states reached on the image of its first core writer (its per-op
    results from its raw output); reuse-after-unlink is looked for after
    the first successful unlink/rmdir that a later allocation follows (the
    writer applies the script cut before and after it). -> set of STATES,
    or None when no core writer wrote the script."""
    import json
    from vfz import oracles
    from vfz.check.checker import write_copy
    wn = next((n for n, _ in ck.writers if oracles.entry(n).under_test and n in res.images
               and not res.verdicts.get(n, {}).get("(writer)")), None)
    if wn is None:
        return None
    results = []
    for ln in (res.raws.get(wn) or "").split("\n"):
        try:
            o = json.loads(ln)
        except ValueError:
            continue
        if isinstance(o, dict) and "result" in o:
            results.append(o["result"])
    cuts = {}
    i = next((i for i, op in enumerate(ops) if op.kind in ("unlink", "rmdir") and i < len(results)
              and results[i] == "ok" and any(o.kind in ("create", "mkdir", "write") for o in ops[i + 1:])),
             None)
    if i is not None:
        w = dict(ck.writers)[wn]
        base = ck.pristine_image(fs)
        pair = []
        for k, prefix in (("a", ops[:i]), ("b", ops[:i + 1])):
            img = os.path.join(os.path.dirname(res.images[wn]), f"census-{k}.img")
            write_copy(w, wn, base, img, prefix)
            pair.append(img)
        cuts[i] = tuple(pair)
    try:
        return census(res.images[wn], ops, results, cuts)
    finally:
        for a, b in cuts.values():
            for p in (a, b):
                if os.path.exists(p):
                    os.unlink(p)


def volume_free(image):
    """-> (free data bytes, cluster bytes) of an image."""
    fat = open_ro(image)
    free = sum(1 for c in range(2, fat.clusters + 2) if fat.get(c) == 0)
    return free * fat.bps * fat.spc, fat.bps * fat.spc


def _walk(fat):
    """-> [(depth, is_dir, [clusters])] of every entry reachable from the root."""
    out = []

    def walk(cl, depth):
        if depth > 64:
            return
        for _, name, attr, start, _, _ in fat.short_entries(cl):
            if name in (b".          ", b"..         "):
                continue
            is_dir = bool(attr & 0x10)
            out.append((depth, is_dir, fat.chain(start) if start >= 2 else []))
            if is_dir and start >= 2:
                walk(start, depth + 1)

    walk(None, 1)
    return out


def _free(fat):
    """(free, bad) data clusters (a FAT16/32 table counted in one pass)."""
    import array
    from vfz.geometry import BAD
    n = fat.clusters
    if fat.bits == 12:
        vals = [fat.get(c) for c in range(2, n + 2)]
        return vals.count(0), vals.count(BAD[12])
    w = fat.bits // 8
    a = array.array("H" if w == 2 else "I", bytes(fat.b[fat.fat_off + 2 * w:fat.fat_off + (n + 2) * w]))
    if w == 4:
        a = [v & 0x0FFFFFFF for v in a]
    return a.count(0), a.count(BAD[fat.bits])


def _used(image):
    # mapped, not read: a sparse 34 MB FAT32 image costs ~1 s to read here
    fat = open_ro(image)
    return fat, {c for _, _, ch in _walk(fat) for c in ch} | (
        set(fat.chain(fat.root_cluster)) if fat.bits == 32 else set())


GROWS = ("create", "write", "truncate", "mkdir", "rename")   # ops that may need a cluster


def census(image, ops, results, cuts=None):
    """-> set of STATES the script reached on its written image. results:
    the writer's per-op results; cuts: {op index of an unlink/rmdir:
    (image before it, image after it)} for reuse-after-unlink."""
    reached = set()
    fat, used = _used(image)
    free, bad = _free(fat)
    if free < 0.15 * (fat.clusters - bad):
        reached.add("near-full")
    for depth, is_dir, ch in _walk(fat):
        if any(b < a for a, b in zip(ch, ch[1:])):
            reached.add("alloc-wrap")
        if is_dir and len(ch) >= 2:
            reached.add("dir-multi-cluster")
        if depth >= 8:
            reached.add("deep-tree")
    if fat.bits == 32 and len(fat.chain(fat.root_cluster)) >= 2:
        reached |= {"dir-multi-cluster", "root-grows"}
    if fat.bits == 12 and any((c + c // 2) % fat.bps == fat.bps - 1 for c in used):
        reached.add("fat12-sector-edge")
    dirs = set()
    for i, op in enumerate(ops):
        if i < len(results) and results[i] == "ENOSPC" and op.kind in GROWS:
            reached.add("enospc")
        if i >= len(results) or results[i] != "ok":
            continue
        if op.kind == "mkdir":
            dirs.add(op.path.rstrip("/"))
        elif op.kind == "rename" and op.args[0].rstrip("/") in dirs:
            a, b = (os.path.dirname(p.rstrip("/")) for p in op.args[:2])
            if a != "/" and b == "/":
                reached.add("dir-to-root")
            if a == "/" and b != "/":
                reached.add("dir-from-root")
            dirs.add(op.args[1].rstrip("/"))
    for before, after in (cuts or {}).values():
        freed = _used(before)[1] - _used(after)[1]
        if freed & used:
            reached.add("reuse-after-unlink")
    # the second grammar's states, stepped through the kernel profile's
    # model (a root that never fills: an op counts where both answer ok)
    reached |= meta_reached(model.Model("kernel", "dual"), ops, results, fat.bps * fat.spc)
    return reached


def written(vfat, ops, fs, workdir, cut_unlinks=3):
    """Apply ops with the core (dual names) to a fresh volume of fs (a name of
    vfz.check.checker.FS_SPECS, or a geometry spec: vfz.check.diff.make_volume)
    in workdir -> (image, results, cuts) for census."""
    import json
    import shutil
    from vfz.check import checker
    from vfz.check import diff
    from vfz.proc import run
    base = os.path.join(workdir, f"base-{fs.replace('/', '_')}.img")
    if not os.path.exists(base):
        diff.make_volume(base, checker.FS_SPECS.get(fs, fs))    # a geometry spec's window too

    def apply(prefix, name):
        img = os.path.join(workdir, name)
        shutil.copyfile(base, img)
        script = img + ".ops"
        with open(script, "w", encoding="utf-8") as f:
            f.write(opscript.dump(prefix))
        p = run([vfat, "apply", img, script, "--names", "dual"], timeout=120)
        res = []
        for ln in p.text.split("\n"):
            try:
                o = json.loads(ln)
            except ValueError:
                continue
            if isinstance(o, dict) and "result" in o:
                res.append(o["result"])
        return img, res

    img, res = apply(ops, "all.img")
    cuts = {}
    for i, op in enumerate(ops):
        if len(cuts) >= cut_unlinks:
            break
        if op.kind in ("unlink", "rmdir") and i < len(res) and res[i] == "ok":
            cuts[i] = (apply(ops[:i], f"cut{i}a.img")[0], apply(ops[:i + 1], f"cut{i}b.img")[0])
    return img, res, cuts


# ---------------------------------------------------------------- the campaign
STEER_EVERY = 50      # one generated iteration in STEER_EVERY is a tour (~3-4 s of checks)
EARLY = (1, 2)        # and the first ones: a 2-minute campaign reaches the states in its first seconds
EARLY_FAT32 = 3       # then the probe on the own mkfs's FAT32 volume (its bytes, vfz.check.bootbytes)
# and on the own mkfs's volumes at each side of each cluster-count boundary (the largest count of
# the lower type, the smallest of the upper), sized by the repository's build, not the one under test
EARLY_BOUNDS = {4: (12, "fat12/16:at-max"), 5: (16, "fat12/16:at-min"),
                6: (16, "fat16/32:at-max"), 7: (32, "fat16/32:at-min")}


def campaign_tour(ck, seed, iteration, fs_list, formatters=()):
    """The campaign's steered scripts: generated iteration i with
    i % STEER_EVERY == STEER_EVERY - 1 is a tour (its variant seeded by the
    campaign seed and i), on the volumes of fs_list in turn; on FAT32 the
    light tour (filling the 34 MB volume costs ~30 s of kernel reads), and
    when a writer has no unlink (the tour frees /big1 before /big3: without
    it the data pass the volume's end, an ENOSPC the model does not predict).
    Iterations EARLY are tours too, on the first volumes of fs_list, so that
    a short campaign (the selftest's 2-minute main job, a CI run) reaches the
    states at once; when formatters (the run's, vfz.campaign.geometry) hold
    one under test, those volumes are made by it (`vfat mkfs`: the build's
    own mkfs formats the volume the tour fills; a mkfs that fails is the
    check's finding, vfz.check.formatted.format_failed).
    Iteration EARLY_FAT32 is the probe on the own mkfs's FAT32 volume then: the geometry
    draws one only now and then, and a formatter fault of FAT32 alone (its jump, its BPB
    fields) shows in that volume's bytes against mkfs.fat's. Iterations EARLY_BOUNDS probe
    the own mkfs at both sides of both cluster-count boundaries (boundary_volume): an
    off-by-one in its type rule refuses or mislays exactly those volumes.
    -> (ops, fs) or None for a plain generated iteration."""
    from vfz import oracles
    from vfz.check.checker import FS_SPECS, fat_bits, is_geometry
    own = [f for f in formatters if oracles.entry(f).under_test]
    if iteration == EARLY_FAT32 and own and "fat32" in fs_list:
        return probe(), f"{FS_SPECS['fat32']}@{own[0]}"
    if iteration in EARLY_BOUNDS and own and f"fat{EARLY_BOUNDS[iteration][0]}" in fs_list:
        spec = boundary_volume(seed, iteration, own[0])
        if spec:
            return probe(), spec
    early = iteration in EARLY
    if not early and iteration % STEER_EVERY != STEER_EVERY - 1:
        return None
    fs = fs_list[(EARLY.index(iteration) if early else iteration // STEER_EVERY) % len(fs_list)]
    vol = f"{FS_SPECS.get(fs, fs)}@{own[0]}" if early and own and not is_geometry(FS_SPECS.get(fs, fs)) else fs
    try:
        free, cl = volume_free(ck.pristine_image(vol))
    except UsageError:       # the own mkfs failed: sized on the classic volume, the check files it
        free, cl = volume_free(ck.pristine_image(fs))
    fill = fat_bits(vol) != 32 and all("unlink" in oracles.entry(n).supports for n in ck.writer_names)
    ops = tour(free, cl, random.Random(f"{seed}:{iteration}"), fill=fill)
    if fill and vol in ck.pristine:    # the near-full volume: writes that run out part-way
        ops += capacity(ck, vol, ops, cl)
    return ops, vol


def boundary_volume(seed, iteration, own):
    """The geometry spec of EARLY_BOUNDS[iteration] for formatter own (the core's `vfat
    mkfs`), drawn by vfz.campaign.geometry: sized by the repository's build of it (the
    formatter's default binary, not the Checker's --vfat), so a build under test whose type
    rule is off by one is asked for the volume all the same, and refuses or mislays it (a
    formatter finding, vfz.check.formatted, or its bytes against mkfs.fat's). mkfs.fat
    cannot size these: it keeps a margin from both boundaries. None when none is made."""
    from vfz.campaign import geometry as campaign_geometry
    fat, cls = EARLY_BOUNDS[iteration]
    g, _ = campaign_geometry.draw(random.Random(f"{seed}:bounds:{iteration}"), [own], fat=fat, size_class=cls)
    return g.spec() if g else None


class Census:
    """How often the campaign's scripts reached each state, per volume and
    source (generated, tour, fuzz_ops corpus)."""

    def __init__(self):
        self.n = Counter()          # (fs, source) -> scripts with a census
        self.reached = Counter()    # (fs, source, state) -> scripts that reached it
        self.sent = Counter()       # (writer, op kind) -> second-grammar ops it was sent

    def add_sent(self, res, ops):
        """Count the second grammar's ops each writer of a checked script
        (a vfz.check.checker.CheckResult) was sent: those it supports."""
        from vfz import oracles
        from vfz.check.checker import ops_for
        for wn in res.verdicts:
            if wn in oracles.WRITERS:
                for o in ops_for(wn, ops):
                    if o.kind in opscript.META_KINDS:
                        self.sent[(wn, o.kind)] += 1

    def sent_json(self):
        """{writer: {op kind: ops sent}} of the second grammar."""
        out = {}
        for (wn, kind), n in sorted(self.sent.items()):
            out.setdefault(wn, {})[kind] = n
        return out

    def add(self, fs, source, states):
        if states is None:
            return
        self.n[(fs, source)] += 1
        for st in states:
            self.reached[(fs, source, st)] += 1

    def lines(self):
        """The summary table: one row per state, one column per (volume, source)."""
        cols = sorted(self.n)
        if not cols:
            return []
        out = ["states reached (scripts that reached it / scripts, per volume and source):",
               f"{'state':<20} " + " ".join(f"{fs + ' ' + src:>20}" for fs, src in cols)]
        for st in STATES:
            out.append(f"{st:<20} " + " ".join(
                f"{self.reached[(fs, src, st)]:>9}/{self.n[(fs, src)]:<10}" if applies(st, fs)
                else f"{'-':>9} {'':<10}" for fs, src in cols))
        for wn, kinds in self.sent_json().items():
            out.append(f"second grammar sent to {wn}: " + ", ".join(
                f"{kinds.get(k, 0)} {k}" for k in opscript.META_KINDS))
        return out

    def to_json(self):
        return [{"fs": fs, "source": src, "scripts": self.n[(fs, src)],
                 "reached": {st: self.reached[(fs, src, st)] for st in STATES if applies(st, fs)}}
                for fs, src in sorted(self.n)]
