"""Minimisation beside the main loop: a journal of pending findings and the worker that minimises them.

The main loop never minimises. A new divergence is first written to the
journal, <workdir>/pending/<signature>.json (atomically: a temporary file
renamed), and only then counts as known; the worker, a thread with its
own Checker (its own oracle instances; the kernel VM is the process's
pooled one, shared under its lock), takes it from a queue, minimises it,
writes the finding (vfz.findings.write_finding: atomic, never twice) and
only then removes the journal entry. So a kill -9 at any moment leaves
every divergence either in findings/ or in pending/, and the next run
with that workdir minimises what is pending before anything else.

fuzz_ops crash files need no journal: they stay in <workdir>/crashes and
each run looks at all of them again (known signatures are skipped).
"""
import json
import os
import queue
import threading
import time

from vfz import findings, opscript
from vfz.check.checker import Divergence


def pending_dir(workdir):
    return os.path.join(workdir, "pending")


def journal_add(workdir, d, ops, fs, src):
    """Record a divergence found on ops (atomically)."""
    pd = pending_dir(workdir)
    os.makedirs(pd, exist_ok=True)
    rec = {"signature": d.sig, "fields": d.fields, "writer": d.writer, "detail": d.detail[:8000],
           "fs": fs, "src": src, "ops": opscript.dump(ops)}
    tmp = os.path.join(pd, f".{d.sig}.{os.getpid()}.{threading.get_ident()}")
    with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as f:
        json.dump(rec, f, ensure_ascii=False)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(pd, f"{d.sig}.json"))


def journal_done(workdir, sig):
    try:
        os.unlink(os.path.join(pending_dir(workdir), f"{sig}.json"))
    except FileNotFoundError:
        pass


def journal_load(workdir):
    """Pending records [(Divergence, ops, fs, src)], oldest first; entries
    whose finding exists already are removed, temporary files dropped, an
    unreadable entry is an error (never silently lost)."""
    pd = pending_dir(workdir)
    if not os.path.isdir(pd):
        return []
    known = findings.known_signatures(workdir)
    out = []
    names = sorted(os.listdir(pd), key=lambda n: os.path.getmtime(os.path.join(pd, n)))
    for n in names:
        p = os.path.join(pd, n)
        if n.startswith("."):
            os.unlink(p)                 # a record cut by a kill before its rename
            continue
        if not n.endswith(".json"):
            continue
        if n[:-5] in known:
            os.unlink(p)
            continue
        try:
            with open(p, encoding="utf-8", errors="surrogateescape") as f:
                rec = json.load(f)
            d = Divergence(rec["fields"], rec["writer"], rec["detail"])
            if d.sig != rec["signature"]:
                raise ValueError("signature does not match its fields")
            ops = opscript.parse(rec["ops"])
        except (OSError, ValueError, KeyError, opscript.OpScriptError) as e:
            raise ValueError(f"{p}: unreadable pending finding ({e})") from None
        out.append((d, ops, rec["fs"], rec.get("src") or {}))
    return out


class Minimiser(threading.Thread):
    """Takes jobs from a queue: ("div", Divergence, ops, fs, src) or
    ("crash", path); runs camp.minimise_job(checker, job) for each."""

    def __init__(self, camp, checker):
        super().__init__(name="minimiser", daemon=True)
        self.camp = camp
        self.checker = checker
        self.q = queue.Queue()
        self.current = None          # signature being minimised
        self.done = 0
        self.seconds = 0.0
        self.hurry = threading.Event()   # stop: write what is left unminimised

    def submit(self, job):
        self.q.put(job)

    def queued(self):
        return self.q.qsize()

    def finish(self, hurry=False):
        """No more jobs: finish the queue (each job budgeted by the campaign)."""
        if hurry:
            self.hurry.set()
        self.q.put(None)

    def run(self):
        while True:
            job = self.q.get()
            if job is None:
                return
            t0 = time.monotonic()
            try:
                self.camp.minimise_job(self, job)
            except Exception as e:       # never lose the worker; the journal keeps the job
                self.camp.say(f"note: minimising failed: {type(e).__name__}: {e}")
            finally:
                self.current = None
                self.done += 1
                self.seconds += time.monotonic() - t0
