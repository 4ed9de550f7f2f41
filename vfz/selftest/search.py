"""The hunt: a focused campaign loop that searches a fault build for a divergence the reference build does not show.

Shared by the planted faults (vfz.selftest.hunt) and the mutants
(vfz.selftest.mutants): op-scripts from `vfat gen` (half of them enriched,
vfz.campaign.scriptgen.enrich) on FAT12/16/32, optionally preceded by given
scripts (steered tours) and with fuzz_ops of the fault build running in the
background (FaultFuzzer), checked by a Checker on the fault build; a
divergence counts only when the reference checker does not show the same
signature on the same script. The first one is minimised and, with
--workdir, filed.
"""
import os
import random
import time

from vfz import findings, lifeline, opscript
from vfz.campaign import loop as campaign
from vfz.check import checker, twins
from vfz.campaign import filing
from vfz.campaign import fuzzer
from vfz.campaign import scriptgen
from vfz.proc import run as prun

FAST_READERS = ["dosfsck", "mtools", "vfat-check"]


class FaultFuzzer:
    """fuzz_ops of a fault build in the background; crash() -> (path, message)
    of the first crash the reference fuzz_ops does not share."""

    def __init__(self, binary, seconds):
        import subprocess
        import tempfile
        self.dir = tempfile.mkdtemp(prefix="vfz-selftest-fuzz-")
        self.corpus = os.path.join(self.dir, "corpus")
        self.crashes = os.path.join(self.dir, "crashes")
        os.makedirs(self.corpus)
        os.makedirs(self.crashes)
        self.binary = binary
        self.log = open(os.path.join(self.dir, "log"), "wb")
        self.p = lifeline.Popen([binary, self.corpus, f"-max_total_time={max(1, int(seconds))}",
                                 f"-artifact_prefix={self.crashes}/", "-seed=1"],
                                stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
        self.checked = set()

    def crash(self):
        for n in sorted(os.listdir(self.crashes)):
            if n in self.checked:
                continue
            self.checked.add(n)
            path = os.path.join(self.crashes, n)
            ref = fuzzer.fuzz_ops_binary()
            if ref and prun([ref, path], timeout=60).rc != 0:
                continue              # the reference fails too: not the planted fault
            p = prun([self.binary, path], timeout=60)
            msg = fuzzer.crash_line(p.errtext + p.text, p.rc)
            return path, msg
        return None

    def stop(self):
        import shutil
        import signal
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGTERM)
            except OSError:
                pass
        try:
            self.p.wait(timeout=10)
        except Exception:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def hunt(fault, vfat, ref, args, notes, fuzz_bin=None, first=()):
    """Search for the fault within the budget -> row dict. first: [(ops,
    fs)] checked before the generated scripts (vfz.campaign.steer's tour)."""
    row = {"fault": fault, "found": False, "seconds": None, "ops": None, "oracle": None,
           "signature": None, "scripts": 0}
    readers = ref.reader_names
    ck = checker.Checker(readers, ref.writer_names, vfat=vfat, timeout=30.0, notes=notes,
                         formatter=ref.formatter, unread=ref.unread)
    ff = FaultFuzzer(fuzz_bin, args.budget) if fuzz_bin else None
    try:
        t0 = time.monotonic()
        i = 0
        fsl = campaign.DEFAULT_FS
        while time.monotonic() - t0 < args.budget:
            c = ff.crash() if ff else None
            if c:
                ops, _, _ = fuzzer.convert_input(ref_vfat(), c[0])
                row.update(found=True, seconds=round(time.monotonic() - t0, 1), oracle="fuzz_ops",
                           signature=findings.normalise(c[1], 100), ops=len(ops),
                           script=opscript.dump(ops), writer="core-dual", fs="fat16")
                break
            if i < len(first):
                ops, fs = first[i]
            else:
                j = i - len(first)
                gseed, nops, fsb = scriptgen.iter_params(args.seed, j)
                fs = fsl[j % len(fsl)]
                ops = scriptgen.gen_script(ref_vfat(), gseed, min(nops, 12))
                if j % 2:
                    ops = scriptgen.enrich(ops, random.Random(gseed))
            i += 1
            res = ck.check(ops, fs)
            row["scripts"] += 1
            hit = None
            for d in res.divs.values():
                rr = ref.check(ops, fs, writers=div_writers(ref, d),
                               readers=[d.fields["oracle"]] if d.fields["role"] == "reader" else [])
                if d.sig not in rr.divs:
                    hit = d
                    break
            if not hit:
                continue
            row.update(found=True, seconds=round(time.monotonic() - t0, 1),
                       oracle=hit.fields["oracle"], signature=findings.sig_text(hit.fields),
                       fields=dict(hit.fields),
                       writer=hit.writer, fs=fs, ops_orig=len(ops))
            rdr = [hit.fields["oracle"]] if hit.fields["role"] == "reader" else []

            def test(o, d=hit):
                if d.sig not in ck.check(o, fs, writers=div_writers(ck, d), readers=rdr).divs:
                    return False
                return d.sig not in ref.check(o, fs, writers=div_writers(ref, d), readers=rdr).divs
            from vfz.campaign import minimize
            mops, st = minimize.minimize(ops, test, budget=args.min_budget)
            row["ops"] = len(mops)
            row["script"] = opscript.dump(mops)
            row["minimise_tests"] = st["tests"]
            if args.workdir:
                filing.write_full(os.path.join(args.workdir, fault), ck, hit, ops, mops, fs,
                                    {"fault": fault, "seconds": row["seconds"]})
            break
    finally:
        ck.close()
        if ff:
            ff.stop()
    return row


def div_writers(ck, d):
    """The writers that show divergence d again (vfz.check.twins.replay_writers)."""
    return twins.replay_writers(d.writer, d.fields, ck.writer_names)


_REF = []


def ref_vfat():
    return _REF[0]
