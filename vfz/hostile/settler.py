"""Settling the hostile campaign's findings off the lanes: confirm, minimise, write.

A lane (one thread per reader or writer, vfz.hostile.loop) that meets a new
signature hands it here and reads its next image at once: each lane with
findings gets one settler thread with an oracle instance of its own (its
own process, board or, for the kernel, its own turn on the pooled VM),
which confirms, minimises and writes the lane's findings one after the
other (Run.settle). Before, the lane did that itself, and a lane with
findings spent up to --min-seconds a finding away from its images: its
pace in the bench was the minimiser's, not the tool's.

At the deadline the lanes stop and Run.run waits for the settlers to drain
their queues (each finding bounded by --min-seconds); an interrupt stops
them after the finding in hand.
"""
import os
import queue
import shutil
import tempfile
import threading

from vfz import proc
from vfz.hostile import backtrace as hbt
from vfz.hostile import transform as hostile_tx
from vfz.hostile.findings import reader_cfg


def submit(run, name, item):
    """Queue item (h, verdict, rr, fixed ops or None) for the lane's settler."""
    with run.lock:
        s = run.settlers.get(name)
        if s is None:
            s = run.settlers[name] = Settler(run, name)
            s.start()
        s.pending += 1
    s.q.put(item)


def drain(run, log):
    """Wait for every settler to finish its queue (after the lanes stopped)."""
    left = sum(s.pending for s in run.settlers.values())
    if left:
        log(f"hostile: settling {left} finding(s) after the deadline")
    for s in list(run.settlers.values()):
        s.q.put(None)
    try:
        for s in list(run.settlers.values()):
            while s.is_alive():
                s.join(1.0)
    except KeyboardInterrupt:
        # the findings in hand are finished, the queued ones left (their signatures unclaimed)
        log("hostile: interrupted: the settlers stop after the finding in hand")
        run.stop.set()
        for s in list(run.settlers.values()):
            s.join(run.args.timeout * 4 + 30)


class Settler(threading.Thread):
    def __init__(self, run, name):
        super().__init__(daemon=True, name=f"settle-{name}")
        self.run_, self.lane = run, name
        self.q = queue.Queue()
        self.pending = 0

    def run(self):
        r, name = self.run_, self.lane
        tool = None
        tmp = tempfile.mkdtemp(prefix=f"vfz-settle-{name.replace(':', '-')}-", dir=r.workdir)
        path = os.path.join(tmp, "hostile.img")
        try:
            with proc.crash_hook(hbt.gdb_backtrace):
                while True:
                    item = self.q.get()
                    if item is None:
                        break
                    h, v, rr, fixed = item
                    try:
                        if not r.stop.is_set():
                            if tool is None:
                                tool = hostile_tx.tool(name, **reader_cfg(name, getattr(r.args, "asan_peers", None)))
                            probe = getattr(tool, "reader", tool)
                            if hasattr(probe, "offsets"):     # a writer: the script it was found with
                                probe.offsets = [p.offset for p in h["patches"]]
                                probe.fixed = fixed
                            r.settle(name, tool, h, v, rr, path)
                    except Exception as e:
                        r.log(f"hostile: {name}: harness error settling {v.kind} ({v.message}): "
                              f"{type(e).__name__}: {e}")
                        with r.lock:
                            st = r.stats[name]
                            st["harness_errors"] = st.get("harness_errors", 0) + 1
                            if r.sigs.get(v.signature(name)) is None:
                                r.sigs.pop(v.signature(name), None)     # a later sighting may settle it
                    finally:
                        with r.lock:
                            self.pending -= 1
        finally:
            if tool is not None:
                try:
                    tool.close()
                except Exception:
                    pass
            shutil.rmtree(tmp, ignore_errors=True)
