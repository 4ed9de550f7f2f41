"""Geometry as a dimension of the main job: draw a formatter and a volume layout per script.

Each script of the campaign gets a geometry spec (vfz.geometry) drawn from its seed:

- the formatter, among the registered formatters the run enables (`--formatters`);
- the FAT type (only those the formatter makes: BusyBox makes FAT32 alone);
- the sector size (512 three times in five, else 1024, 2048 or 4096), FAT count (1 one time
  in four), reserved sectors and root entries (the formatter's default two times in three);
- a size class: `small` (40-400 clusters: volumes that fill, wrap their allocation and run out
  of space inside a script), a cluster-count boundary (`fat12/16` or `fat16/32`: `below`,
  `at-max`, `at-min`, `above`; 4084/4085 and 65524/65525 clusters), `fat32:few-clusters` (the
  smallest FAT32 the formatter makes), or `plain` (the three sizes the campaign always used).

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
    sector = r.choice([1024, 2048, 4096]) if "sector" in acc and r.random() < 0.4 else 0
    bps = sector or 512
    # clusters: one sector up to 64 KiB, capped so the boundary images stay under MAX_IMAGE
    target = {"fat12/16": geometry.FAT12_MAX + 1, "fat16/32": geometry.FAT16_MAX + 1}.get(
        size_class.split(":")[0], 0)
    most = min(1 << 16, MAX_IMAGE // target) if target else 1 << 16
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


def draw(r, formatters, tries=12, fat=None):
    """A geometry (vfz.geometry.Geometry) and its class, drawn with random.Random r from the
    formatters enabled (those that make FAT type fat, when given); (None, why) when none
    could be made."""
    why = "no formatter"
    if fat is not None:
        formatters = [n for n in formatters if fat in oracles.oracle_class(n, "formatter").fats_types]
    for _ in range(tries if formatters else 0):
        name = r.choice(formatters)
        cls = oracles.oracle_class(name, "formatter")
        fat_ = fat or r.choice(sorted(cls.fats_types))
        size_class = r.choices(CLASSES[fat_], weights=[8, 4] + [2] * (len(CLASSES[fat_]) - 2))[0]
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


class Pool:
    """The geometries a campaign draws scripts' volumes from: POOL per FAT type, drawn once
    from the run's seed (so a run is replayable), refreshed one at a time every REFRESH
    scripts of that type, with SHARE of the scripts on them (the rest on the classic three
    volumes, which every earlier finding names)."""
    SIZE, REFRESH, SHARE = 6, 40, 0.5

    def __init__(self, seed, formatters, log=None):
        self.seed, self.formatters, self.log = seed, list(formatters), log
        self.pools, self.uses, self.made = {}, {}, {}
        self.lock = threading.Lock()
        self.classes = {}          # spec -> its cluster-count class (filled as volumes are made)

    def _draw(self, fat, k):
        g, why = draw(random.Random(f"{self.seed}:geometry:{fat}:{k}"), self.formatters, fat=fat)
        if g is None and self.log:
            self.log(f"geometry: no FAT{fat} volume drawn ({why})")
        return g.spec() if g else None

    def spec_for(self, fat, u, k):
        """The volume of a script of FAT type fat: None (the classic one) when u >= SHARE,
        else pool entry k mod SIZE."""
        if u >= self.SHARE or not self.formatters:
            return None
        with self.lock:
            pool = self.pools.get(fat)
            if pool is None:
                pool = self.pools[fat] = [s for s in (self._draw(fat, i) for i in range(self.SIZE)) if s]
                self.made[fat] = self.SIZE
            n = self.uses[fat] = self.uses.get(fat, 0) + 1
            if pool and n % self.REFRESH == 0:          # one entry replaced by a new draw
                s = self._draw(fat, self.made[fat])
                self.made[fat] += 1
                if s:
                    pool[self.made[fat] % len(pool)] = s
            return pool[k % len(pool)] if pool else None


    def script_volume(self, fs, key, k):
        """The drawn volume of a script (key: what makes it, k: its number) whose classic
        volume is fs, or None for the classic one."""
        from vfz.check.checker import fat_bits
        u = random.Random(f"{self.seed}:{key}").random()
        return self.spec_for(fat_bits(fs), u, k)

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
