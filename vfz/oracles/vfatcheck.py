"""`vfat check` as a structural reader.

No listing; each finding line of the checker is a complaint.
    vfat-check      always the normal build (build/vfat or $VFAT_BUILD/vfat),
                    never a fault-injection or mutant one, so that it stays
                    independent of the writer under test.
    vfat-check-own  the build under test's own checker (family core: a
                    Checker with vfat=BUILD runs that build's `vfat check`):
                    check.c shares names.c with the writers, so a fault in
                    the name policy (dummy recognition, 8.3 validity) shows
                    as complaints on a valid image. A campaign reads every
                    image with it (vfz.check.checker.OWN_READERS); elsewhere
                    only when named.
"""
import os

from vfz import REPO
from vfz.oracles import Entry, NamedException, Reader
from vfz.oracles import served
from vfz.proc import run

DUMMY_COLLISION = "dummy-collision"


class VfatCheckReader(Reader):
    def __init__(self, name="vfat-check", vfat=None, served=False, **cfg):
        self.name = name
        self.vfat = vfat or os.path.join(REPO, "build", "vfat")
        self.served = served        # True: answered by this thread's `vfat serve` (vfz.oracles.served)

    def available(self):
        return (os.access(self.vfat, os.X_OK), f"{self.vfat} is not built")

    def _read(self, image, timeout, r):
        p = (served.run if self.served else run)([self.vfat, "check", image], timeout=timeout)
        r.raw = p.raw()
        if p.error or p.rc not in (0, 1):
            r.error = p.error or f"vfat check exit {p.rc}: {p.errtext.strip()[:200]}"
        else:
            r.complaints = [ln for ln in p.text.split("\n") if ln.strip()]

    @staticmethod
    def parse_complaint(c):
        """'kind: /path: message' -> (kind, path or None)."""
        parts = c.split(": ", 2)
        p = parts[1] if len(parts) > 1 and parts[1].startswith("/") and parts[1] != "/" else None
        return parts[0], p

    @staticmethod
    def explain(ev):
        """busybox-label-nul (a formatter's, vfz/oracles/busybox.py) when the checker's only
        complaints are the volume label's ('label: /: volume label ... is not valid') and the
        image's label is NUL-padded: the checker holds a label to the 8.3 character rules,
        which NUL breaks, as fsck.fat does."""
        from vfz.oracles.evidence import label_nul_padded
        cs = list(ev.rr.complaints or ())
        if ev.verdict != "complains" or not ev.image or not cs:
            return None
        if all(c.startswith("label:") and "is not valid" in c for c in cs) and label_nul_padded(ev.image):
            return "busybox-label-nul"
        return None

    @staticmethod
    def expected_complaints(complaints, writer):
        """The complaints left once the writer's design is accounted for:
        two equal dummies are the patch's documented weakness (a writer
        whose short entries are dummies), not a bug."""
        if writer is not None and writer.shorts in ("v1", "v3") and not writer.unique:
            return [c for c in complaints if not c.startswith(DUMMY_COLLISION)]
        return complaints


ENTRIES = [Entry("vfat-check", "vfat-check", reader="vfz.oracles.vfatcheck:VfatCheckReader",
                 cost="process", lists=False, independent=False),
           Entry("vfat-check-own", "core", reader="vfz.oracles.vfatcheck:VfatCheckReader",
                 cost="process", lists=False, independent=False, under_test=True)]

EXCEPTIONS = [
    NamedException(DUMMY_COLLISION, "vfat-check", "reader",
                   "two entries of a directory got the same random dummy: the patch's documented "
                   "weakness (reports/collisions.md), not a writer bug",
                   "a 'dummy-collision' complaint on an image of a writer whose short entries "
                   "are dummies (Entry.shorts v1/v3)"),
]
