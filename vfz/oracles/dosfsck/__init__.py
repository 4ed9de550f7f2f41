"""fsck.fat (dosfstools 4.2) as a checker: the reader, its verdict rule and named exceptions.

`fsck.fat -n IMAGE` never writes; its output is parsed into structured
complaints (parse.py: the kinds). The verdict compares their counts with
what fsck.fat must say about the image (expect.py: the model's rule, or
exactly, FsckSim's scan of the image, sim.py). When it complains, the repair
probe (repair.py, repair=True) runs `fsck.fat -a` on a copy and records what
the repair destroyed.
"""
import os
import shlex
from collections import Counter

from vfz.oracles import Entry, NamedException, Reader
from vfz.oracles.core import is_v1_dummy
from vfz.oracles.dosfsck.expect import expected_complaints, crossing_note
from vfz.oracles.dosfsck.parse import parse_fsck, complaint_str, gave_up
from vfz.oracles.dosfsck.repair import repair_probe
from vfz.oracles.dosfsck import sim as _sim
from vfz.proc import run


class DosfsckReader(Reader):
    def __init__(self, name="dosfsck", fsck="fsck.fat", repair=True, **cfg):
        self.name = name
        self.fsck = shlex.split(fsck) if isinstance(fsck, str) else list(fsck)
        self.repair = repair

    @classmethod
    def hostile_cfg(cls, asan_bin=None):
        """No repair probe (a second tool run per image); with the sanitizer
        peers, their fsck.fat."""
        return {"repair": False, **({"fsck": os.path.join(asan_bin, "fsck.fat")} if asan_bin else {})}

    @staticmethod
    def fresh_exceptions(geo, rr, image=None):
        return fresh_exceptions(geo, rr)

    @staticmethod
    def explain(ev):
        """fsck.fat's warning on a FAT32 boot sector over few clusters, when it is all it said
        beyond what the image should make it say."""
        from vfz.oracles.evidence import fat32_few_clusters, label_nul_padded
        rr = ev.rr
        if ev.verdict != "complains" or not ev.image:
            return None
        names, rest = [], list(rr.complaints or ())
        if fat32_few_clusters(ev.image):
            few = [c for c in rest if any(w in c for w in FEW_WORDS)]
            if few:
                names.append(FEW_CLUSTERS)
                rest = [c for c in rest if c not in few]
        if label_nul_padded(ev.image):
            lab = [c for c in rest if "abel" in c and "is not valid" in c]
            if lab:
                names.append("busybox-label-nul")    # a formatter's (vfz/oracles/busybox.py)
                rest = [c for c in rest if c not in lab]
        if not names:
            return None
        keep = set(rest)        # judge counts the structured complaints: drop the same ones
        trimmed = type(rr)(rr.oracle, listing=rr.listing, complaints=rest, raw=rr.raw, error=rr.error,
                           extra=dict(rr.extra, complaints=[c for c in rr.extra.get("complaints", [])
                                                            if complaint_str(c) in keep]))
        used = Counter()
        complains, detail = DosfsckReader.judge(trimmed, ev.exp_complaints, used)
        if complains and used.get(CROSS) and detail and detail[0].startswith("named exception"):
            # the rest is exactly the v1 prediction, its LFN deletion crossing clusters (a
            # FAT32 root of one 512-byte cluster grows on such small volumes)
            return names + [CROSS]
        return None if complains else names


    def _read(self, image, timeout, r):
        if not os.path.isfile(image):
            r.error = f"no such image: {image}"
            return
        p = run([*self.fsck, "-n", image], timeout=timeout)
        r.raw += p.raw()
        r.extra["rc"] = p.rc
        if p.error:
            r.error = f"fsck.fat -n: {p.error}"
            return
        why = gave_up(p)
        if p.rc not in (0, 1):
            # 2+ = usage error or unusable image: still a verdict, not a crash
            r.error = f"fsck.fat -n exit {p.rc}: {(p.errtext or p.text).strip().splitlines()[-1:]}"
        elif why:
            # exit 1 without the summary: it stopped checking (not a complaint)
            r.error = f"fsck.fat -n gave up: {why}"
        cs = parse_fsck(p.text + "\n" + p.errtext)
        r.extra["complaints"] = cs
        r.complaints = [complaint_str(c) for c in cs]
        if self.repair and r.error is None and cs:
            r.extra["repair"] = repair_probe(self.fsck, image, timeout)

    # ------------------------------------------------------------ verdict hooks
    @staticmethod
    def expectations(writer=None, m=None, image=None, fat_bits=16, core_listing=None):
        """{kind: count} fsck.fat must report (Expected), for an image written
        by writer (an Entry) as the model m predicts, or, with no writer, for
        an image whose short entries the core's listing shows. image: the
        written image; fsck.fat's scan is then simulated on it (exact counts,
        fsck-v1-lfn-cross)."""
        if core_listing is not None:
            dirs = {"": [0, 0]}
            for e in core_listing:
                if e.get("type") == "dir":
                    dirs.setdefault(e["path"], [0, 0])
            for e in core_listing:
                par = e["path"].rpartition("/")[0]
                d = dirs.setdefault(par, [0, 0])
                short = e.get("short", "")
                # fsck.fat calls both bad short names: a v1 dummy, and a
                # Linux alias holding 0x7F (fsck-del-alias) that fatsort or
                # fsck.fat -a moved with its entry
                if is_v1_dummy(short) or 0x7F in bytes.fromhex(short):
                    d[0] += 1
                else:
                    d[1] += 1
            stats = [(p, b, g, p == "") for p, (b, g) in dirs.items()]
            return expected_complaints(V1, stats, fat_bits, image=image)
        if m is None:
            return {}
        return expected_complaints(mode_of(writer), m.dir_stats("win95"), fat_bits, m.del_alias_count(),
                                   image=image)

    @staticmethod
    def judge(r, exp_complaints, used):
        """fsck.fat's complaints against the expected counts -> (complains?,
        detail lines). Named exceptions: fsck-v1-dots (any number, when no
        image was simulated, unless the repair lost data) and
        fsck-v1-lfn-cross (exactly the prediction, clusters crossed)."""
        detail = []
        bad = False
        cs = r.extra.get("complaints", [])
        got = Counter(c["kind"] for c in cs)
        want = Counter({k: v for k, v in (exp_complaints or {}).items() if v is not None})
        rep = r.extra.get("repair") or {}
        lost = rep.get("data_lost") or 0
        for k, v in (exp_complaints or {}).items():
            # tolerated in any number (named exception) unless the repair then
            # destroyed data: that is a divergence, whatever -n said
            if v is None and got.get(k) and not lost:
                used[TOLERATED.get(k, k)] += got.pop(k)
        cross = list(getattr(exp_complaints, "crossings", ()) or ())
        if got != want:
            bad = True
            detail.append(f"fsck.fat complaints {dict(got)} (expected {dict(want)}):")
            detail += ["  " + c for c in r.complaints]
        elif cross:
            # exactly as predicted, but fsck.fat's LFN deletion runs over other
            # clusters: a known fsck.fat 4.2 bug, reported under its own name
            used[CROSS] += len(cross)
            bad = True
            detail.append(f"named exception {CROSS}: fsck.fat complaints {dict(got)} as predicted; "
                          f"fsck.fat -a would overwrite live clusters:")
            detail += crossing_note(cross)
            if lost:
                detail.append(f"repair probe: fsck.fat -a destroyed the contents of {lost} file(s) "
                              f"({CROSS})")
            lost = 0
        if lost:
            bad = True
            detail.append(f"repair probe: fsck.fat -a destroyed the contents of {lost} file(s)"
                          + (f", e.g. {rep['lost'][0]}" if rep.get("lost") else ""))
        if rep.get("gave_up"):
            bad = True
            detail.append(f"repair probe: fsck.fat -a gave up: {rep['gave_up']}")
        return bad, detail

    @staticmethod
    def complaint_kinds(ev):
        """The divergences of a 'complains' verdict -> [(kind, path)]: one per
        kind whose count differs ('+kind' more, '-kind' fewer than expected),
        else fsck-v1-lfn-cross or repair-data-lost, else repair-gave-up."""
        rr, exp_c = ev.rr, ev.exp_complaints
        got = Counter(c["kind"] for c in rr.extra.get("complaints", []))
        want = {k: c for k, c in (exp_c or {}).items()}
        kinds = set(got) | {k for k, c in want.items() if c is not None}
        out = []
        for k in sorted(kinds):
            if want.get(k, 0) is None:
                continue
            g, w = got.get(k, 0), want.get(k, 0)
            if g == w:
                continue
            paths = [c.get("path") for c in rr.extra.get("complaints", []) if c["kind"] == k]
            p = next((x for x in paths if x and x.startswith("/")), None)
            if p and " and " in p:
                p = p.split(" and ")[0]
            out.append((("+" if g > w else "-") + k, p))
        if not out and getattr(exp_c, "crossings", None):
            out.append((CROSS, None))
        elif not out and "repair probe: fsck.fat -a destroyed" in ev.detail:
            out.append(("repair-data-lost", None))
        if not out and "repair probe: fsck.fat -a gave up" in ev.detail:
            out.append(("repair-gave-up", None))
        return out


FsckSim = _sim.FsckSim   # part of the oracle's interface (tests)
V1 = "v1"          # expectations for images with v1 dummies
DUAL = "dual"      # Linux aliases (0x7F ones: fsck-del-alias)


def mode_of(writer):
    """What fsck.fat's rules need of a writer's traits: "v1" (dummies
    fsck.fat calls bad short names), "dual" (Linux aliases), None."""
    if writer is None:
        return None
    if writer.shorts == "v1":
        return V1
    if writer.shorts == "alias" and writer.names == "dual":
        return DUAL
    return None


CROSS = "fsck-v1-lfn-cross"
TOLERATED = {"dots-missing": "fsck-v1-dots"}

# ---------------------------------------------------------------- registry
EXPORTS = {"dosfsck": "vfz.oracles.dosfsck.export"}   # its reproducer template (vfz/oracles/repro.py)
ENTRIES = [
    Entry("dosfsck", "dosfsck", iotrace="preload", reader="vfz.oracles.dosfsck:DosfsckReader", needs=("dosfstools", "mtools"),
          label="fsck.fat", lists=False, default=("reader",)),
    Entry("mkfs.fat", "dosfsck", formatter="vfz.oracles.dosfsck.format:MkfsFatFormatter", needs=("dosfstools",)),
    # the volume label alone (the second grammar's label op): fatlabel, whose
    # rules the core follows; a writer of no names, so nothing else to send it
    Entry("fatlabel", "dosfsck", writer="vfz.oracles.dosfsck.label:FatlabelWriter", needs=("dosfstools",),
          supports=frozenset({"label"}), label="fatlabel"),
]

FEW_CLUSTERS = "fsck-fat32-few-clusters"
FEW_WORDS = ("Filesystem is FAT32 according to fat_length and fat32_length fields",
             "less than the required minimum of 65525", "This may lead to problems on some systems")


def fresh_exceptions(geo, rr):
    """fsck.fat's three-line warning on a FAT32 BPB over fewer than 65 525 clusters (what
    BusyBox's mkdosfs and mkfs.fat -F 32 make on small volumes): a warning, not damage."""
    few = [c for c in rr.complaints or () if any(w in c for w in FEW_WORDS)]
    return [(FEW_CLUSTERS, few)] if few and geo.fat == 32 else []


EXCEPTIONS = [
    NamedException(FEW_CLUSTERS, "dosfsck", "reader",
                   "fsck.fat warns (exit 1 with -n) that a FAT32 BPB has fewer than 65 525 clusters, "
                   "which Microsoft's rule would call FAT16 or FAT12; the volume is consistent (design "
                   "difference of the FAT32 formatters that make them: BusyBox, mkfs.fat -F 32)",
                   "on a formatter's fresh FAT32 volume, the complaint lines are fsck.fat's 'Filesystem "
                   "is FAT32 according to fat_length ... but has only N clusters' warning"),
    NamedException("fsck-v1-dots", "dosfsck", "reader",
                   "any number of '.'/'..' found free entries on v1 images, tolerated only when no "
                   "image is given to predict from (expected_complaints without image=) and the "
                   "repair probe loses no data; the cause is fsck-v1-lfn-cross, which the campaign "
                   "and `diff` predict exactly",
                   "dots-missing complaints where the expectations allow any number"),
    NamedException(CROSS, "dosfsck", "reader",
                   "fsck.fat 4.2 renames each bad short name (a v1 dummy, a 0x7F alias) and then "
                   "deletes its LFN slots by writing a deleted entry at every 32 bytes from the "
                   "first slot's disk offset up to the short entry's, as if the directory were "
                   "contiguous: when the set crosses into a later, non-adjacent cluster it "
                   "overwrites every cluster in between (in -n mode in memory, so directories "
                   "scanned later read as empty: '.'/'..' free, their entries unseen, their "
                   "clusters 'Reclaimed', FAT32 free count 'wrong'; fsck.fat -a writes it: live "
                   "directories and file data destroyed)",
                   "fsck.fat -n's output is exactly FsckSim's prediction on the image, which holds "
                   "such a crossing over allocated clusters (sim.py)", bug="fsck-v1-lfn-cross"),
    NamedException("fsck-del-alias", "dosfsck", "reader",
                   "for a long name with DEL (U+007F) among the characters that make its alias, "
                   "Linux (dual) writes the byte 0x7F into the 8.3 alias and fsck.fat 4.2 reports it "
                   "as a bad short name: expected once per such entry on dual images",
                   "bad-short-name counts equal to the model's 0x7F aliases"),
]
