"""The campaign's check lanes: jobs (one script each), the threads that check them, and the VM oracles probed up front."""
import os
import threading

from vfz import findings, oracles


class Job:
    """One script for a lane: generated (iteration) or a corpus entry (path)."""

    def __init__(self, kind, iteration=None, path=None):
        self.kind = kind
        self.iteration = iteration
        self.path = path
        self.ops = None
        self.fs = None
        self.src = None
        self.res = None
        self.error = None
        self.note = None
        self.slot = 0
        self.dropped = False
        self.done = threading.Event()


class Lane(threading.Thread):
    """A check lane: its own Checker (its oracle instances, its image
    directory); takes Jobs from the campaign's queue, generates and checks."""

    def __init__(self, camp, idx, checker):
        super().__init__(name=f"lane{idx}", daemon=True)
        self.camp = camp
        self.checker = checker

    def run(self):
        while True:
            job = self.camp.jobs.get()
            if job is None:
                return
            try:
                self.camp.do_job(self.checker, job)
            except BaseException as e:
                job.error = e
            finally:
                job.done.set()


def probe_vms(ck, fs, timeout):
    """Boot each VM oracle's family once up front (an empty volume); if
    it cannot read (or write), drop that family's oracles with a note
    instead of reporting every script as a finding. -> [(family, why)]."""
    out = []
    fams = {}
    for role, lst in (("reader", ck.readers), ("writer", ck.writers)):
        for n, o in lst:
            e = oracles.entry(n)
            # a reader of host directories cannot read the FAT probe: its writer is probed
            if e.cost == "vm" and (role == "writer" or oracles.reads(n)):
                fams.setdefault(e.family, (role, o))
    for fam, (role, o) in fams.items():
        img = os.path.join(ck.tmp, "probe.img")
        findings.sparse_copy(ck.pristine_image(fs), img)
        try:
            if role == "reader":
                why = o.read(img, max(timeout, 120.0)).error
            else:
                why = o.apply(img, [], max(timeout, 120.0)).error
        except Exception as e:
            why = f"{type(e).__name__}: {e}"
        if not why:
            continue
        out.append((fam, why))
        for lst in (ck.readers, ck.writers):
            for n, x in [x for x in lst if oracles.entry(x[0]).family == fam]:
                try:
                    x.close()
                except Exception:
                    pass
                lst.remove((n, x))
    return out
