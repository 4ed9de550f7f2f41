"""A lane's pipeline in the hostile campaign: images made once, the next one ready before it is due.

Every lane (one thread per reader or writer, vfz.hostile.loop) walks the
same image sequence. Measured before (bench/bench_hostile.py, 4 min, seven
writer lanes at load ~21 on 2 cores): a lane spent 0.13-0.45 of its wall in
the tool's own calls; making the image (mutation + a copy of a seed of up
to 34 MiB: 0.06 s), writing it (0.04 s) and a writer's strict reads before
the ops (`vfat ls`, `vfat check`: 0.08 s) were all done by each lane,
one after the other, between two calls of its tool.

    Images       image i made once for all lanes (the most recent KEEP kept;
                 a lane far behind makes its own again: the same bytes,
                 since image i depends on the run seed and i alone)
    Slot         one of a lane's image files, rewritten in place: only the
                 bytes where the image it held and the next one differ (their
                 patches and tails; the seeds' data when the seed changes).
                 Truncating a file to nothing and writing it again made ext4
                 flush it on close (auto_da_alloc): 9-12 ms of wall an image,
                 measured, the FatFs reader lane's whole wait for its next
                 image; in place: 0.01 ms. A file the tool changed (a
                 writer's ops; FatFs's commit renames a copy over it) is
                 moved aside (unlinked by a reaper thread: reap) and made
                 again: each write leaves the file an mtime of its own
                 (STAMP_NS), which any write by another process replaces
                 with the current time
    Prefetch     one lane's next DEPTH images, each written to a file of its own
                 by a worker of its own (FILES in rotation: those a writer lane's
                 judges read after the ops, the one the tool has, those being
                 prepared) and, for a writer, its strict reads
                 before the ops (WriterProbe.prepare: `vfat ls`, `vfat
                 check`, the script) taken from Images.pre, which does them
                 once per image for all writer lanes (two requests to the
                 worker's own `vfat serve`, vfz.oracles.served: no process a
                 volume); while the tool works on the one before
    Behind       a writer lane's judging of volume i -- the strict reader's
                 listing after the ops, the spread and I/O-bounds verdicts
                 (WriterProbe.read_finish, Traced.read_finish) -- in a thread
                 of its own while the writer applies volume i+1's ops: up to
                 JUDGES volumes judged at once, each as in the lane (at a high
                 load a judge's `vfat ls` took longer than FatFs's ops: one judge
                 at a time was the FatFs writer lane's bound). Measured before
                 (bench/profile_hostile.py --clock wall, seed 2805, load ~10):
                 the FatFs writer lane spent 39 ms a volume on the listing
                 after the ops (a `vfat ls` process) beside FatFs's own 47 ms;
                 the listing is a request to the judge's `vfat serve` now, of
                 an image mapped, not read whole (issue 28's last gaps,
                 bench/README.md: 10.3 -> 4.3 ms of a judge's wall a volume)
"""
import itertools
import os
import queue
import threading
from collections import OrderedDict, deque
from concurrent.futures import ThreadPoolExecutor

BLOCK = 4096
_RUNS = {}         # id(seed) -> (seed, its non-zero runs): seeds live as long as the run
_LOCK = threading.Lock()

KEEP = 12          # images kept for the lanes behind (a 34 MiB seed's images: ~400 MiB at most)
DEPTH = 2          # images a lane has prepared, or being prepared, ahead of the one its tool has
JUDGES = 2         # a writer lane's volumes being judged at once behind it (Behind)
FILES = DEPTH + 1 + JUDGES
STAMP_NS = 10 ** 18    # a Slot's mtime (2001-09-09): no write by a tool leaves a time in the past
PRE_WAIT_S = 120   # a writer lane waits this long for another's strict reads of one image


def nonzero_runs(seed):
    """[(start, end)] of the non-zero 4 KiB blocks of a seed image, merged; computed once per
    seed. The campaign's seeds are sparse (a 34 MiB FAT32 seed holds ~44 KiB of data), and a
    lane writes only these runs (Hostile.write): writing every image whole cost a FatFs lane
    more than FatFs's own time."""
    got = _RUNS.get(id(seed))
    if got is not None and got[0] is seed:
        return got[1]
    view, zero, big = memoryview(seed), bytes(16 * BLOCK), 16 * BLOCK
    runs, n = [], len(seed)
    for off in range(0, n, big):
        end = min(off + big, n)
        if view[off:end] == zero[:end - off]:
            continue
        for o in range(off, end, BLOCK):
            e = min(o + BLOCK, end)
            if view[o:e] != zero[:e - o]:
                if runs and runs[-1][1] == o:
                    runs[-1][1] = e
                else:
                    runs.append([o, e])
    _RUNS[id(seed)] = (seed, [tuple(r) for r in runs])
    return _RUNS[id(seed)][1]


def _spans(h):
    """[(start, end)] of the bytes of image h that are not its seed's: its patches and its tail."""
    n = len(h.seed)
    out = [(p.offset, min(p.offset + len(p.data), n)) for p in h["patches"] if p.offset < n]
    if h["tail"]:
        out.append((n, n + len(h["tail"])))
    return out


_REAPING = queue.SimpleQueue()
_REAPER = []
_REAP_N = itertools.count()


def reap(path):
    """Unlink path behind the lanes: renamed aside here, unlinked by a reaper thread. A file
    a tool wrote whole (FatFs's commit copies the image and renames the copy over it: 34 MiB
    of blocks for a FAT32 seed) took a prefetch worker 6.8 ms of wall a volume to unlink
    (bench/profile_hostile.py --clock wall, the FatFs writer lane alone, load ~5), the
    largest part of its preparing."""
    aside = f"{path}.reap{next(_REAP_N)}"
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return
    if not _REAPER:
        with _LOCK:
            if not _REAPER:
                _REAPER.append(threading.Thread(target=_reaper, name="hostile-reaper", daemon=True))
                _REAPER[0].start()
    _REAPING.put(aside)


def _reaper():
    while True:
        try:
            os.unlink(_REAPING.get())
        except OSError:         # its lane's directory removed first
            pass


class Slot:
    """One of a lane's image files (see the module doc): put(h) makes it hold image h."""

    def __init__(self, path):
        self.path = path
        self.held = None            # (seed, spans of the image held, (inode, size)) as written here

    def put(self, h):
        seed = getattr(h, "seed", None)
        if seed is None:            # an image without its seed (a plain dict): written whole
            self.held = None
            with open(self.path, "wb") as f:
                f.write(h["image"])
            return
        with open(self.path, "r+b") if self._intact() else self._fresh() as f:
            if self.held is not None:
                self._restore(f, seed)
            else:
                f.truncate(len(seed))
                self._seed_data(f, seed)
            for p in h["patches"]:
                if p.offset < len(seed):
                    f.seek(p.offset)
                    f.write(p.data[:len(seed) - p.offset])
            f.seek(len(seed))
            f.write(h["tail"])
        os.utime(self.path, ns=(STAMP_NS, STAMP_NS))
        st = os.stat(self.path)
        self.held = (seed, _spans(h), (st.st_ino, st.st_size))

    def _intact(self):
        """Does the file still hold what put() wrote last (no other process wrote it)?"""
        if self.held is None:
            return False
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        if (st.st_ino, st.st_size) == self.held[2] and st.st_mtime_ns == STAMP_NS:
            return True
        self.held = None
        return False

    def _fresh(self):
        """A new empty file (the old one moved away first: truncating one in place costs an
        ext4 flush; it is unlinked behind the lane, reap())."""
        reap(self.path)
        return open(self.path, "xb")

    @staticmethod
    def _seed_data(f, seed):
        view = memoryview(seed)
        for a, b in nonzero_runs(seed):
            f.seek(a)
            f.write(view[a:b])

    def _restore(self, f, seed):
        """The file back to seed alone: the old image's patches and tail, and when the seed
        changed the old seed's data, rewritten from the new seed (zeros where it has none)."""
        old, spans, _ = self.held
        f.truncate(len(seed))
        dirty = list(spans) + ([] if old is seed else nonzero_runs(old))
        view, n = memoryview(seed), len(seed)
        for a, b in dirty:
            if a < n:
                f.seek(a)
                f.write(view[a:min(b, n)])
        if old is not seed:
            self._seed_data(f, seed)


class Images:
    def __init__(self, make, layouts, seed, keep=KEEP):
        self.make, self.layouts, self.seed, self.keep = make, layouts, seed, keep
        self.lock = threading.Lock()
        self.cache = OrderedDict()
        self.pres = OrderedDict()       # i -> a writer's strict reads before the ops (no image bytes)
        self.pending = {}
        self.made = 0

    def get(self, i):
        with self.lock:
            h = self.cache.get(i)
            if h is not None:
                return h
        # made outside the lock (two lanes may make one image twice: the same bytes), so
        # a lane far behind does not hold up the others while it makes its own
        h = self.make(self.layouts, self.seed, i)
        with self.lock:
            self.made += 1
            self.cache[i] = h
            while len(self.cache) > self.keep:
                self.cache.popitem(last=False)
        return h

    def pre(self, i, compute):
        """The writers' strict reads before the ops of image i, done once for all writer
        lanes (compute() -> the dict WriterProbe.prepare answers; kept beside the image)."""
        with self.lock:
            got = self.pres.get(i)
            ev = self.pending.get(i)
            if got is None and ev is None:
                ev = self.pending[i] = threading.Event()
                mine = True
            else:
                mine = False
        if got is not None:
            return got
        if not mine:
            ev.wait(PRE_WAIT_S)
            with self.lock:
                got = self.pres.get(i)
            return got if got is not None else compute()
        try:
            got = compute()
        finally:
            with self.lock:
                if got is not None:
                    self.pres[i] = got
                    while len(self.pres) > self.keep * 4:
                        self.pres.popitem(last=False)
                self.pending.pop(i, None)
            ev.set()
        return got


class Prefetch:
    """A lane's next DEPTH images prepared by as many workers at once (a writer's strict reads
    before the ops are two processes each: at a high load their wall, not their CPU, is what
    a fast writer waited for), handed to the lane in order."""

    def __init__(self, images, tmpdir, probe, timeout):
        self.images, self.tmp, self.probe, self.timeout = images, tmpdir, probe, timeout
        self.slots = [Slot(os.path.join(tmpdir, f"hostile{k}.img")) for k in range(FILES)]
        self.pool = ThreadPoolExecutor(max_workers=DEPTH, thread_name_prefix="prefetch")
        self.ahead = deque(self.pool.submit(self._prepared, i) for i in range(DEPTH))
        self.i = DEPTH

    def _prepared(self, i):
        try:
            return self._prepare(i)
        except Exception as e:          # the lane logs it as the harness's error on image i
            return i, None, None, e

    def _prepare(self, i):
        h = self.images.get(i)
        slot = self.slots[i % FILES]
        slot.put(h)
        path = slot.path
        prep = getattr(self.probe, "prepare", None)
        pre = None
        if prep:
            # a writer's script and view need the volume's first MiB (its boot sector, FATs
            # and the hash the script is seeded with: vfz.hostile.writes.script_for)
            offs, head = [p.offset for p in h["patches"]], h.head(1 << 20)
            pre = dict(self.images.pre(i, lambda: dict(prep(path, head, offs, self.timeout), image=None)),
                       path=path, image=head)
        return i, h, path, pre

    def next(self):
        """-> (i, h, path, pre) or (i, None, None, exception). Image i+DEPTH is asked for
        here: its file is image i-1-JUDGES's, judged by now (the lane has image i-1's ops
        done and handed it to a judge, when no more than JUDGES-1 were in hand before:
        Behind.submit)."""
        got = self.ahead.popleft().result()
        self.ahead.append(self.pool.submit(self._prepared, self.i))
        self.i += 1
        return got

    def close(self):
        for f in self.ahead:
            f.cancel()
        self.pool.shutdown(wait=True)


class Behind:
    """Judging behind the lane (see the module doc): up to JUDGES volumes judged at once,
    each in a worker of its own; submit(fn) first waits until fewer are in hand."""

    def __init__(self, name):
        self.name = name
        self.judges = JUDGES            # FILES counts on it
        self.pool = ThreadPoolExecutor(max_workers=self.judges, thread_name_prefix=f"judge-{name}")
        self.inflight = deque()

    def submit(self, fn):
        while len(self.inflight) >= self.judges:
            self.inflight.popleft().result()    # fn handles its own failures (Run.one)
        self.inflight.append(self.pool.submit(fn))

    def close(self):
        while self.inflight:
            self.inflight.popleft().result()
        self.pool.shutdown(wait=True)
