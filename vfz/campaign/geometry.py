"""Geometry as a dimension of the main job: draw a formatter and a volume layout per script.

Each script of the campaign gets a geometry spec (vfz.geometry) drawn from its seed:

- the formatter, among the registered formatters the run enables (`--formatters`);
- the FAT type (only those the formatter makes: BusyBox makes FAT32 alone);
- the sector size (512 three times in five, else 1024, 2048 or 4096), FAT count (1 one time
  in four), reserved sectors and root entries (the formatter's default two times in three);
- a size class, each in turn (Pool): `small` (40-400 clusters: volumes that fill, wrap their allocation and run out
  of space inside a script), a cluster-count boundary (`fat12/16` or `fat16/32`: `below`,
  `at-max`, `at-min`, `above`; 4084/4085 and 65524/65525 clusters), `fat32:few-clusters` (the
  smallest FAT32 the formatter makes), or `plain` (the three sizes the campaign always used);
- three volumes in four, a free window (vfz.geometry free=N, at=C: the clusters outside it
  marked bad once formatted): 2-32 KiB free (at least 4 clusters) wherever the class put the size, so that a
  script fills the volume, wraps its allocation, reuses what it unlinked and runs out of
  space on every FAT type (a valid FAT32 has 65 525 clusters or more: filling it with data
  would take 32 MiB a script); on FAT12 the window starts at a FAT sector edge. Every window
  has a low run below it (vfz.geometry wrap=K: cluster 2 on FAT12/16, 1-4 clusters
  and FSInfo's next-free hint at the window on FAT32), so that next-fit allocation wraps past
  the window's end into free clusters even before anything is unlinked; a fuzz_ops corpus
  entry's window is then resized to what its ops take, and a drawn volume without a window
  gets one for it (vfz.campaign.fitwindow).

The size that gives a target cluster count is found by asking the formatter itself
(vfz.check.sizing: a binary search over image sizes, a few milliseconds a format, cached per
layout): the boundaries are derived from each formatter's own layout, never from a formula of
ours. A layout a formatter
refuses is drawn again. The cluster size is capped so that no image exceeds 64 MiB.
"""
import os
import random
import tempfile
import threading

from vfz import geometry, oracles
from vfz.check.sizing import MAX_IMAGE, clusters_of, size_for, smallest  # noqa: F401
from vfz.fatimg import Fat

PLAIN = {12: (2 << 20, 0), 16: (4 << 20, 512), 32: (34 << 20, 512)}    # the old FS_SPECS
BOUNDARY_TARGETS = {
    "fat12/16:below": lambda r: geometry.FAT12_MAX - 1 - r.randrange(15),
    "fat12/16:at-max": lambda r: geometry.FAT12_MAX,
    "fat12/16:at-min": lambda r: geometry.FAT12_MAX + 1,
    "fat12/16:above": lambda r: geometry.FAT12_MAX + 2 + r.randrange(15),
    "fat16/32:below": lambda r: geometry.FAT16_MAX - 1 - r.randrange(15),
    "fat16/32:at-max": lambda r: geometry.FAT16_MAX,
    "fat16/32:at-min": lambda r: geometry.FAT16_MAX + 1,
    "fat16/32:above": lambda r: geometry.FAT16_MAX + 2 + r.randrange(15),
}
# which boundary classes each FAT type can sit on (by Microsoft's rule the type follows the
# count; a formatter asked for another type over that count refuses or makes what it makes)
CLASSES = {12: ["small", "plain", "fat12/16:below", "fat12/16:at-max"],
           16: ["small", "plain", "fat12/16:at-min", "fat12/16:above", "fat16/32:below",
                "fat16/32:at-max"],
           32: ["small", "plain", "fat16/32:at-min", "fat16/32:above", "fat32:few-clusters"]}


def _layout(r, formatter, fat, size_class):
    f = oracles.oracle_class(formatter, "formatter")
    acc = f.accepts
    # clusters: one sector up to 64 KiB, capped so the boundary images stay under MAX_IMAGE
    # with their FATs and reserved sectors (a 30th of the data at most: 65 525 clusters of
    # 1 KiB made no FAT16 under 64 MiB), and sectors no larger than that cap
    target = {"fat12/16": geometry.FAT12_MAX + 1, "fat16/32": geometry.FAT16_MAX + 1}.get(
        size_class.split(":")[0], 0)
    most = min(1 << 16, MAX_IMAGE // (target + target // 30)) if target else 1 << 16
    sectors = [c for c in (1024, 2048, 4096) if c <= most]
    sector = r.choice(sectors) if sectors and "sector" in acc and r.random() < 0.4 else 0
    bps = sector or 512
    choices = [c for c in (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536) if bps <= c <= most]
    cluster = r.choice(choices) if "cluster" in acc and choices and r.random() < 0.8 else 0
    if cluster and cluster < bps:
        cluster = 0
    fats = 1 if "fats" in acc and r.random() < 0.25 else 0
    reserved = r.choice([1, 2, 4, 8, 16, 32]) if "reserved" in acc and r.random() < 0.3 else 0
    if fat == 32 and reserved and reserved < 8:
        reserved = 0                      # FAT32 needs room for FSInfo and the backup boot sector
    root = r.choice([16, 64, 112, 224, 512, 1024]) if fat != 32 and "root" in acc and r.random() < 0.3 else 0
    # whole sectors of root entries: mkfs.fat 4.2 writes -r 224 with 4 KiB sectors as is,
    # which Linux refuses to mount (reports/bugs.md, mkfs-fat-root-partial-sector); drawn
    # volumes stay mountable so that scripts test writers, not that one bug again
    per = bps // 32
    root = (root + per - 1) // per * per if root else 0
    return geometry.Geometry(fat, 0, cluster, sector, fats, reserved, root, formatter)


def draw(r, formatters, tries=12, fat=None, size_class=None):
    """A geometry (vfz.geometry.Geometry) and its class, drawn with random.Random r from the
    formatters enabled (those that make FAT type fat, when given), of size_class when given
    (else drawn); (None, why) when none could be made."""
    why = "no formatter"
    if fat is not None:
        formatters = [n for n in formatters if fat in oracles.oracle_class(n, "formatter").fats_types]
    asked = size_class
    for _ in range(tries if formatters else 0):
        name = r.choice(formatters)
        cls = oracles.oracle_class(name, "formatter")
        fat_ = fat or r.choice(sorted(cls.fats_types))
        size_class = asked if asked in CLASSES[fat_] else \
            r.choices(CLASSES[fat_], weights=[8, 4] + [2] * (len(CLASSES[fat_]) - 2))[0]
        lay = _layout(r, name, fat_, size_class)
        if size_class == "plain":
            size, cl = PLAIN[fat_]
            if "cluster" not in cls.accepts or cl < lay.bytes_per_sector:
                cl = 0
            g = geometry.Geometry(**{**lay.__dict__, "size": size, "cluster": lay.cluster or cl})
        elif size_class == "small":
            size = size_for(lay, r.randrange(40, 400))
            if size is None:
                why = f"{name} makes no small FAT{fat_} with {lay.spec()}"
                continue
            g = geometry.Geometry(**{**lay.__dict__, "size": size})
        elif size_class == "fat32:few-clusters":
            size = smallest(lay)
            if size is None:
                why = f"{name} makes no FAT32 with {lay.spec()}"
                continue
            g = geometry.Geometry(**{**lay.__dict__, "size": size})
        else:
            size = size_for(lay, BOUNDARY_TARGETS[size_class](r))
            if size is None:
                why = f"{name} makes no {size_class} FAT{fat_} with {lay.spec()}"
                continue
            g = geometry.Geometry(**{**lay.__dict__, "size": size})
        with tempfile.TemporaryDirectory(prefix="vfz-geo-") as d:
            res = oracles.get_formatter(name).format(os.path.join(d, "g.img"), g)
        if res.error:
            why = res.error
            continue
        return g, None
    return None, why


def window(r, image, low=0):
    """A free window (vfz.geometry free=N, at=C) for a fresh volume: 2-32 KiB of clusters
    (at least 4), so that a short script fills it, wraps its allocation and runs out of
    space whatever the FAT type and size; on FAT12 it starts a few clusters before a
    cluster whose 12-bit entry straddles two FAT sectors, so that the first allocations
    cross that edge. low: clusters of a low run (wrap=K) to keep below it, with one bad
    cluster between. -> (free, at)."""
    with open(image, "rb") as f:
        fat = Fat(f.read(4096))
    n = max(4, min(fat.clusters - 8, int(2 ** r.uniform(11, 15)) // fat.csize))
    lo, hi = 3 + (low + 1 if low else 0), fat.clusters + 2 - n
    if fat.bits == 12:
        edges = [c for c in range(lo, hi) if (c + c // 2) % fat.bps == fat.bps - 1]
        if edges:
            return n, max(lo, r.choice(edges) - r.randrange(4))
    return n, r.randrange(lo, max(lo + 1, hi))


def low_run(r, fat):
    """K of a window's low run (vfz.geometry wrap=K): on FAT12/16 one cluster, cluster 2 (Linux's
    first allocation after mount starts at 3: more low clusters would be taken first, before the
    window); on FAT32 1-4, reached after the wrap whatever their number (FSInfo's next-free
    hint points at the window)."""
    return 1 if fat != 32 else 1 + r.randrange(4)


def windowed(r, g):
    """g with a free window drawn for it (its volume formatted once to see its clusters) and a
    low run below it (low_run)."""
    with tempfile.TemporaryDirectory(prefix="vfz-geo-") as d:
        img = os.path.join(d, "g.img")
        if oracles.get_formatter(g.formatter).format(img, g).error:
            return g
        low = low_run(r, g.fat)
        free, at = window(r, img, low)
    return geometry.Geometry(**{**g.__dict__, "free": free, "at": at, "wrap": low})


class Pool:
    """The geometries a campaign draws scripts' volumes from: POOL per FAT type, drawn once
    from the run's seed (so a run is replayable), refreshed one at a time every REFRESH
    scripts of that type, with SHARE of the scripts on them (the rest on the classic three
    volumes, which every earlier finding names). Draw k of a FAT type asks for the size
    class CLASSES[fat][k mod its length] (every boundary class within the first draws;
    drawn at random when the formatters cannot make it), and all draws but one in WINDOW_OF get a
    free window (window()): volumes of every type and class that fill within a script."""
    SIZE, REFRESH, SHARE = 6, 40, 0.5
    WINDOW_OF = 4
    # fuzz_ops corpus entries are short scripts of little data (up to 24 ops of at most 8 KiB,
    # many of them mkdirs): three in four run on drawn volumes, so that enough of them land in
    # a window they fill (issue 26's census: each state in 10 % of each source's scripts)
    SHARE_OF = {"corpus": 0.75}

    def __init__(self, seed, formatters, log=None, prefetch=False):
        """prefetch: draw the three pools in a thread of its own from now on (the lanes wait
        on the lock only while a pool is drawn; the pools are the same whatever the timing)."""
        self.seed, self.formatters, self.log = seed, list(formatters), log
        self.pools, self.uses, self.made = {}, {}, {}
        self.lock = threading.Lock()
        self.classes = {}          # spec -> its cluster-count class (filled as volumes are made)
        if prefetch and self.formatters:
            threading.Thread(target=self._prefetch, daemon=True).start()

    def _prefetch(self):
        for fat in (12, 16, 32):
            with self.lock:
                self._pool(fat)

    def _pool(self, fat):
        """FAT type fat's pool, drawn the first time (the lock held)."""
        if fat not in self.pools:
            self.pools[fat] = [s for s in (self._draw(fat, i) for i in range(self.SIZE)) if s]
            self.made[fat] = self.SIZE
        return self.pools[fat]

    def _draw(self, fat, k):
        r = random.Random(f"{self.seed}:geometry:{fat}:{k}")
        g, why = draw(r, self.formatters, fat=fat, size_class=CLASSES[fat][k % len(CLASSES[fat])])
        if g is None:
            g, why = draw(r, self.formatters, fat=fat)
        if g is None and self.log:
            self.log(f"geometry: no FAT{fat} volume drawn ({why})")
        if g is not None and k % self.WINDOW_OF:
            g = windowed(r, g)
        return g.spec() if g else None

    def spec_for(self, fat, u, k, share=None):
        """The volume of a script of FAT type fat: None (the classic one) when u >= share
        (default SHARE), else pool entry k mod SIZE."""
        if u >= (share if share is not None else self.SHARE) or not self.formatters:
            return None
        with self.lock:
            pool = self._pool(fat)
            n = self.uses[fat] = self.uses.get(fat, 0) + 1
            if pool and n % self.REFRESH == 0:          # one entry replaced by a new draw
                s = self._draw(fat, self.made[fat])
                self.made[fat] += 1
                if s:
                    pool[self.made[fat] % len(pool)] = s
            return pool[k % len(pool)] if pool else None


    def script_volume(self, fs, key, k=None):
        """The drawn volume of a script (key: what makes it, and which pool entry it takes;
        k: its number, unused) whose classic volume is fs, or None for the classic one."""
        from vfz.check.checker import fat_bits
        r = random.Random(f"{self.seed}:{key}")
        u = r.random()
        # the pool entry from the script's own key, not from k: corpus jobs take the even slots
        # and their FAT type by slot % 3, so slot % SIZE gave each FAT type's corpus scripts
        # one entry only (campaign seed 2626: FAT12's and FAT16's never windowed)
        return self.spec_for(fat_bits(fs), u, r.randrange(1 << 30), self.SHARE_OF.get(key.partition(":")[0]))

    def class_of(self, checker, fs):
        """The geometry class of the checker's fresh volume of fs (cached per spec)."""
        from vfz.check.checker import FS_SPECS, fat_bits
        spec = FS_SPECS.get(fs, fs)
        with self.lock:
            cls = self.classes.get(spec)
        if cls is None:
            cls = geometry_class(checker.pristine_image(fs), fat_bits(fs))
            with self.lock:
                self.classes[spec] = cls
        return cls


def geometry_class(image, fat_bits=None):
    """The class of a made volume by its cluster count (vfz.geometry.count_class)."""
    with open(image, "rb") as f:
        fat = Fat(f.read(4096))
    return geometry.count_class(fat.clusters, fat_bits or fat.bits)


if __name__ == "__main__":       # a quick look: python3 -m vfz.campaign.geometry SEED N
    import sys
    rr = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
    for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 10):
        print(*draw(rr, oracles.names("formatter")))
