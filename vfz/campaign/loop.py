"""The differential campaign (`vfatfuzz campaign`, the main job).

    campaign [--minutes M] [--seed N] [--oracles LIST] [--writers LIST]
             [--jobs J] [--fuzz-jobs F] [--fuzz-nice N] [--shard I/N] [--workdir DIR]
             [--fs LIST] [--vfat PATH] [--fresh] [--no-fuzzer]

Until the time budget is spent (or SIGINT/SIGTERM), J check lanes (threads,
each with a Checker of its own: its oracle instances and image directory;
the kernel VM is the process's pooled one, shared under its lock) take
jobs from the main thread, one more job queued than there are lanes:
  1. the job's op-script: a harvested fuzz_ops corpus entry converted with
     `vfat gen --from-input` (fuzz_ops runs on F workers in the background
     for the whole budget, at niceness N (default 10) so that the check
     lanes come first; it is required unless --no-fuzzer), else `vfat
     gen --seed S --ops K` with S, K and the volume derived from the
     campaign seed and the iteration (shard I of N: iterations I, I+N, ...);
  2. vfz.check.checker: every writer applies it to a fresh image, its results
     are held against the model's, every reader reads the image (verdicts
     and signatures: vfz.check.checker, vfz.check.verdict);
  3. the main thread takes the lanes' results in the order the jobs were
     made: a divergence with a new signature is journalled
     (<workdir>/pending/<sig>.json, vfz.campaign.minworker) and handed to the
     minimiser, a thread with its own Checker beside the loop, which
     minimises it (vfz.campaign.minimize) on the writer and oracle that showed it,
     checks the minimised script once more on every oracle, writes the
     finding atomically to <workdir>/findings/<signature>/ and drops the
     journal entry.
A progress line at least every 5 s (the loop's phase and the minimiser's),
a summary table at the end with where a script's time went per stage, each
oracle's own time (wall and CPU) and the pace against the bound the oracles
allow (vfz.campaign.pace). A later run with the same workdir skips known signatures,
minimises what is pending first, and continues the seeds from the first
unprocessed iteration (<workdir>/state.json; unreadable: exit 2 unless
--fresh), so a kill -9 at any moment loses no finding and files none twice.
The summary is also written to <workdir>/summary.json. Exit 0 no new
finding, 1 new findings, 2 could not run.
"""
import collections
import os
import queue
import random
import signal
import sys
import threading
import time
from collections import Counter

from vfz import findings, opscript, oracles
from vfz.check import diff
from vfz.campaign import minworker
from vfz.campaign import pace
from vfz.campaign import fitwindow, geometry, patterns, steer
from vfz.check.checker import Checker, FS_SPECS, fat_bits
from vfz.errors import UsageError
from vfz.campaign.fuzzer import Fuzzer, convert_input, from_input_supported, fs_from_options
from vfz.campaign.scriptgen import enrich, gen_script, iter_meta, iter_params
from vfz.campaign import summary as campaign_summary
from vfz.campaign import lanes
from vfz.campaign import newfindings
from vfz.campaign import progress
from vfz.campaign.newfindings import MIN_LATE  # noqa: F401
from vfz.campaign.state import load_state, save_state  # noqa: F401
from vfz.campaign.lanes import Job, Lane
from vfz.campaign import options
from vfz.campaign.options import DEFAULT_FS, add_arguments  # noqa: F401
from vfz.campaign.shards import parse_shard, shard_iteration, shard_seed  # noqa: F401

PROGRESS_EVERY = 5.0


class Stop(BaseException):
    """Raised by the SIGTERM handler: stop cleanly."""


def vfat_default():
    from vfz.oracles.core import vfat_binary
    return vfat_binary()


def unmade_ok(sized, unsized):
    """sized() (a script or volume sized to the script's volume, which makes that volume), or
    unsized when the volume cannot be made: checker.check then files the failure as the own
    mkfs's finding (vfz.check.formatted.format_failed) or stops on a peer formatter's, as
    for any volume. Before, a build under test whose mkfs refused a drawn geometry stopped
    the whole campaign here (main-job mutant mkfs.c:55, 5 Dec 2026)."""
    try:
        return sized()
    except UsageError:
        return unsized


class Campaign:
    def __init__(self, args, out=sys.stdout):
        self.args = args
        self.out = out
        self.notes = []
        self.t0 = time.monotonic()
        self.scripts = 0
        self.harvested = 0
        self.new = []             # (sig, summary) of findings written in this run
        self.seen_divs = Counter()  # (role, oracle or writer): divergences seen (incl. known)
        self.census = steer.Census()   # states the scripts reached (vfz.campaign.steer)
        self.phase = "starting"
        self.loop_t0 = None
        self.loop_s = 0.0
        self.loop_cpu = None
        self.fuzzer_cpu = None
        self.fuzzer = None
        self.checker = None       # lane 0's (the probe's)
        self.checkers = []        # every lane's
        self.lanes = []
        self.minimiser = None
        self.main_s = Counter()   # the main thread's own stages (bookkeeping)
        self.main_n = Counter()
        self.known = set()
        self.lock = threading.Lock()
        self._stop_progress = threading.Event()

    def say(self, msg):
        with self.lock:
            print(msg, file=self.out, flush=True)

    def total(self, attr):
        out = Counter()
        for ck in self.checkers or ([self.checker] if self.checker else []):
            with ck._lock:                # the lanes count under it
                out.update(getattr(ck, attr))
        return out

    def progress_line(self):
        return progress.line(self)

    def _progress_loop(self):
        while not self._stop_progress.wait(PROGRESS_EVERY):
            try:
                self.say(self.progress_line())
            except Exception:
                pass

    # .........................................................
    def run(self):
        a = self.args
        self.workdir = os.path.abspath(a.workdir)
        os.makedirs(self.workdir, exist_ok=True)
        findings.clean_temp(self.workdir)
        st = load_state(self.workdir, getattr(a, "fresh", False))
        try:
            pending = minworker.journal_load(self.workdir)
        except ValueError as e:
            raise UsageError(str(e)) from None
        self.known = findings.known_signatures(self.workdir) | {d.sig for d, *_ in pending}
        self.shard = parse_shard(getattr(a, "shard", None))
        if st.get("shard") and list(st["shard"]) != list(self.shard) and not getattr(a, "fresh", False):
            raise UsageError(f"{self.workdir} is shard {st['shard'][0]}/{st['shard'][1]}'s workdir, not "
                             f"{self.shard[0]}/{self.shard[1]}'s: give each shard its own "
                             f"(vfatfuzz merge joins them)")
        st["shard"] = list(self.shard)
        seed = a.seed if a.seed is not None else st.get("last_seed")
        if seed is None:
            seed = random.SystemRandom().randrange(1, 1 << 31)
        self.seed = seed
        seeds = st.setdefault("seeds", {})
        self.iter = int(seeds.get(str(seed), 0))
        st["last_seed"] = seed
        self.state = st
        self.vfat = a.vfat or vfat_default()
        budget = a.minutes * 60.0
        self.deadline = self.t0 + budget
        resumed = f", resuming at iteration {self.iter}" if self.iter else ""
        shard = f"; shard {self.shard[0]}/{self.shard[1]}" if self.shard[1] > 1 else ""
        self.say(f"campaign seed {seed} (replay: --seed {seed}){resumed}{shard}; workdir {self.workdir}; "
                 f"{len(self.known)} known findings; budget {a.minutes:g} min")
        readers, writers = options.roles(a)
        fb, judge = options.fuzz_binaries(a)
        self.fs_list = a.fs.split(",") if a.fs else list(DEFAULT_FS)
        for fs in self.fs_list:
            diff.parse_fs(FS_SPECS.get(fs, fs))
        fmts = getattr(a, "formatters", None)
        fmts = [] if a.fs or fmts == "none" else (fmts.split(",") if fmts else oracles.names("formatter"))
        bad = [f for f in fmts if f not in oracles.names("formatter")]
        if bad:
            raise UsageError(f"unknown formatter(s) {', '.join(bad)} (known: {', '.join(oracles.names('formatter'))})")
        self.geo = geometry.Pool(self.seed, fmts, log=self.say, prefetch=True)   # the geometry dimension
        self.geo_stats = {}            # geometry class -> {"scripts": n, "findings": n}
        self.kcfg = {n: {"auto_build": False} for n, e in oracles.entries().items() if e.builds}
        self.transformers = a.transformers.split(",") if getattr(a, "transformers", None) else []
        self.checker = Checker(readers, writers, vfat=a.vfat, asan_vfat=a.asan_vfat, timeout=a.timeout,
                               notes=self.notes,
                               cfg=self.kcfg, transformers=self.transformers)
        self.checkers = [self.checker]
        thr = threading.Thread(target=self._progress_loop, daemon=True)
        thr.start()            # progress lines while the kernel VM boots, too
        try:
            vm_notes = self.probe_vms()
        except BaseException:
            self._stop_progress.set()
            self.checker.close()
            raise
        for fam, why in vm_notes:
            self.say(f"{fam} oracle not available ({why.replace('; skipped', '')[:200]}); going on without it")
        for n in self.notes:
            self.say(f"note: {n[:300]}")
        stopped = None
        try:
            rn, wn = self.checker.reader_names, self.checker.writer_names
            for i in range(1, a.jobs):
                self.checkers.append(Checker(rn, wn, vfat=a.vfat, asan_vfat=a.asan_vfat, timeout=a.timeout,
                                             notes=[],
                                             cfg=self.kcfg, transformers=self.transformers))
            self.lanes = [Lane(self, i, ck) for i, ck in enumerate(self.checkers)]
            self.minimiser = minworker.Minimiser(
                self, Checker(rn, wn, vfat=a.vfat, asan_vfat=a.asan_vfat, timeout=a.timeout, notes=[],
                              cfg=self.kcfg,
                              transformers=self.transformers))
            self.say(f"writers: {','.join(wn)}; readers: {','.join(rn)}; volumes: "
                     f"{','.join(self.fs_list)}; {len(self.lanes)} check lane(s), minimiser beside them")
            for d, ops, fs, src in pending:
                self.say(f"pending divergence {d.sig} from an earlier run: queued for minimisation")
                self.minimiser.submit(("div", d, ops, fs, src))
            self.minimiser.start()
            self.jobs = queue.Queue()
            for ln in self.lanes:
                ln.start()
            self.queue = []
            if fb:
                ok, why = from_input_supported(self.vfat)
                if not ok:
                    self.say(f"note: fuzz_ops exists but {why}; corpus harvesting off")
                else:
                    self.fuzzer = Fuzzer(fb, self.workdir, a.fuzz_jobs, budget,
                                         shard_seed(seed, self.shard), nice=a.fuzz_nice, judge=judge)
                    self.fuzzer.start()
                    rep = (f"; corpus entries replayed under {judge}"
                           if self.fuzzer.judge != self.fuzzer.binary else "")
                    self.say(f"fuzzer: {fb} on {a.fuzz_jobs} worker(s), corpus {self.fuzzer.corpus}{rep}")
            self.loop()
        except (Stop, KeyboardInterrupt) as e:
            stopped = "SIGTERM" if isinstance(e, Stop) else "SIGINT"
        finally:
            late = []
            if threading.current_thread() is threading.main_thread():
                # finish the clean-up: a second Ctrl-C here left the lanes'
                # checkers unclosed (stopped U-Boot QEMUs outlived the run).
                # At the natural end a signal still cuts the minimisation of
                # what is queued short (it is written unminimised): with slow
                # peers that queue took a minute a finding (seed 10102)
                def cut_short(signum, frame):
                    late.append(signal.Signals(signum).name)
                    if self.minimiser:
                        self.minimiser.hurry.set()
                    signal.signal(signal.SIGTERM, signal.SIG_IGN)
                    signal.signal(signal.SIGINT, signal.SIG_IGN)
                handler = signal.SIG_IGN if stopped else cut_short
                signal.signal(signal.SIGTERM, handler)
                signal.signal(signal.SIGINT, handler)
                if stopped:
                    self.say("stopping: finishing the lanes' scripts and writing what is pending "
                             "(further signals are ignored until then; kill -9 loses nothing found)")
            self.stop_lanes()
            self.loop_s = time.monotonic() - self.loop_t0 if self.loop_t0 else 0.0
            self.loop_cpu = pace.tree_cpu() - self.loop_cpu0 if self.loop_t0 else None
            self.fuzzer_cpu = self.fuzzer.cpu() if self.fuzzer and self.loop_t0 else None
            self.phase = "finishing"
            if self.fuzzer:
                self.fuzzer.stop()
            if self.minimiser and self.minimiser.is_alive():
                # what is queued is minimised with MIN_LATE s each (the time is
                # spent); stopped by a signal: written unminimised
                self.minimiser.finish(hurry=bool(stopped))
                self.minimiser.join()
            self._stop_progress.set()
            findings.clean_temp(self.workdir)
            seeds[str(seed)] = self.low_water()
            save_state(self.workdir, st)
            for ck in self.checkers + ([self.minimiser.checker] if self.minimiser else []):
                ck.close()
        if late and not stopped:
            self.say(f"{late[0]} while finishing: what was queued was written unminimised")
        if stopped:
            self.say(f"stopped by {stopped}; everything found so far is in {findings.findings_dir(self.workdir)}")
        self.summary()
        return 1 if self.new else 0

    def probe_vms(self):
        """Boot each VM oracle's family once up front; drop a family that
        cannot answer (lanes.probe_vms)."""
        self.phase = "booting the VM oracles"
        return lanes.probe_vms(self.checker, self.fs_list[0], self.args.timeout)

    def next_job(self):
        """Alternate fuzz_ops corpus entries (when queued) and generated scripts."""
        if self.queue and (self.scripts + len(self.inflight)) % 2 == 0:
            job = Job("corpus", path=self.queue.pop(0))
            job.slot = self.scripts + len(self.inflight)
            return job
        job = Job("gen", iteration=self.iter)
        self.iter += 1
        return job

    def do_job(self, checker, job):
        """In a lane: make the job's script and check it."""
        t0 = time.monotonic()
        try:
            if job.kind == "corpus":
                try:
                    ops, opts, _ = convert_input(self.vfat, job.path)
                except opscript.OpScriptError as e:
                    job.note = str(e)
                    return
                fs = fs_from_options(opts) or self.fs_list[job.slot % len(self.fs_list)]
                fs = unmade_ok(lambda: fitwindow.corpus_volume(self.geo, checker, ops, fs, job.path,
                                                               job.slot), fs)
                src = {"source": "fuzz_ops corpus", "input": os.path.basename(job.path)}
            else:
                gseed, nops, fsb = iter_params(self.seed, shard_iteration(job.iteration, self.shard))
                fs = self.fs_list[fsb % len(self.fs_list)]
                fs = self.geo.script_volume(fs, f"gen:{job.iteration}", job.iteration) or fs
                meta = iter_meta(self.seed, shard_iteration(job.iteration, self.shard))
                ops = gen_script(self.vfat, gseed, nops, self.args.names, meta)
                if fsb & 0x80:                   # half the scripts: tricky additions
                    ops = enrich(ops, random.Random(gseed), meta)
                ops = unmade_ok(lambda: patterns.for_script(checker, ops, fs, gseed), ops)   # sized to the volume
                src = {"source": "vfat gen", "iteration": job.iteration, "gen_seed": gseed, "ops": nops}
                if meta:
                    src["meta"] = True
                if self.shard[1] > 1:
                    src["shard"] = f"{self.shard[0]}/{self.shard[1]}"
                tour = steer.campaign_tour(checker, self.seed, shard_iteration(job.iteration, self.shard),
                                           self.fs_list, self.geo.formatters)
                if tour:          # iterations 1, 2, then one in steer.STEER_EVERY: a steered tour instead
                    ops, fs = tour
                    src = dict(src, source="steer tour", ops=len(ops))
        finally:
            checker.timed("generate", time.monotonic() - t0)
        job.ops, job.fs, job.src = ops, fs, src
        if ops:
            job.res = checker.check(ops, fs)
            job.geo_class = self.geo.class_of(checker, fs) if fs in checker.pristine else "unformatted"
            t0 = time.monotonic()
            try:
                job.census = steer.result_census(checker, job.res, ops, fs)
            except Exception as e:       # the census is a report, never a stop
                job.note = f"census: {type(e).__name__}: {e}"
            checker.timed("census", time.monotonic() - t0)

    def loop(self):
        self.loop_t0 = time.monotonic()
        self.loop_cpu0 = pace.tree_cpu()
        self.inflight = collections.deque()
        last_save = time.monotonic()
        while time.monotonic() < self.deadline:
            t0 = time.monotonic()
            if self.fuzzer:
                self.fuzzer.poll()
                for c in self.fuzzer.new_crashes():
                    self.minimiser.submit(("crash", c))
                if len(self.queue) < 5:
                    self.queue.extend(self.fuzzer.harvest(
                        queued=self.queue + [j.path for j in self.inflight if j.path]))
            # one job more than lanes: a lane never waits for the main thread
            while len(self.inflight) < len(self.lanes) + 1:
                job = self.next_job()
                self.inflight.append(job)
                self.jobs.put(job)
            self.phase = "checking"
            self.main_s["bookkeeping"] += time.monotonic() - t0
            job = self.inflight[0]
            if not job.done.wait(0.5):
                continue
            t0 = time.monotonic()
            self.process(job)          # then popped: a signal inside leaves it in flight
            self.inflight.popleft()
            if self.scripts % 20 == 0 or time.monotonic() - last_save > 10:
                self.state["seeds"][str(self.seed)] = self.low_water()
                save_state(self.workdir, self.state)
                last_save = time.monotonic()
            self.main_s["bookkeeping"] += time.monotonic() - t0
            self.main_n["bookkeeping"] += 1

    def stop_lanes(self):
        """Jobs not started are dropped (their iterations stay for the next
        run); the running ones finish and are processed."""
        inflight = getattr(self, "inflight", None) or collections.deque()
        if not self.lanes:
            return
        try:
            while True:
                j = self.jobs.get_nowait()
                if j is not None:
                    j.dropped = True
                    j.done.set()
        except queue.Empty:
            pass
        for _ in self.lanes:
            self.jobs.put(None)
        self.phase = "finishing the lanes' scripts"
        while inflight:
            job = inflight[0]
            if job.dropped:
                break
            job.done.wait()
            try:
                self.process(job)
            except BaseException as e:        # the clean-up goes on
                self.say(f"note: {type(e).__name__}: {e}")
            inflight.popleft()
        for ln in self.lanes:
            ln.join()

    def low_water(self):
        """The first generated iteration not processed yet: where the next
        run resumes (a few scripts may be checked twice, none skipped)."""
        its = [j.iteration for j in (getattr(self, "inflight", None) or ()) if j.kind == "gen"]
        return min(its) if its else self.iter

    def process(self, job):
        """A lane's result, in the order the jobs were made: journal new
        divergences, hand them to the minimiser, account."""
        if job.error is not None:
            raise job.error
        if job.note:
            self.notes.append(job.note)
        if job.res is not None:
            self.scripts += 1
            self.census.add(f"fat{fat_bits(job.fs)}", job.src.get("source"), getattr(job, "census", None))
            self.census.add_sent(job.res, job.ops)
            g = self.geo_stats.setdefault(getattr(job, "geo_class", "?"), {"scripts": 0, "findings": 0})
            g["scripts"] += 1
            for sig, d in job.res.divs.items():
                # a writer's own (results, failures) by writer name: family
                # names ("kernel") would mix with the reader of that name
                role = d.fields["role"]
                self.seen_divs[(role, d.writer if role == "writer" else d.fields["oracle"])] += 1
                if sig in self.known:
                    continue
                src = dict(job.src, found_after_s=round(time.monotonic() - self.t0, 1))
                g["findings"] += 1
                minworker.journal_add(self.workdir, d, job.ops, job.fs, src)
                self.known.add(sig)
                self.say(f"new divergence {d.sig}: {findings.sig_text(d.fields)} (writer {d.writer}, "
                         f"{len(job.ops)} ops); minimising beside the main loop")
                self.minimiser.submit(("div", d, job.ops, job.fs, src))
        if job.kind == "corpus":
            self.fuzzer.mark_done(job.path)
            self.harvested += 1

    # ......................................................... the minimiser
    def minimise_job(self, worker, job):
        """The minimiser's work on one job (vfz.campaign.newfindings)."""
        if job[0] == "crash":
            return newfindings.crash_finding(self, worker, job[1])
        return newfindings.divergence_finding(self, worker, job)

    # ......................................................... the summary

    def summary(self):
        campaign_summary.summarise(self)


def run_cmd(args):
    if args.minutes <= 0:
        print("vfatfuzz campaign: --minutes must be positive", file=sys.stderr)
        return 2
    if args.jobs < 1 or args.fuzz_jobs < 1:
        print("vfatfuzz campaign: --jobs and --fuzz-jobs must be at least 1", file=sys.stderr)
        return 2

    def on_term(signum, frame):
        raise Stop()
    old = signal.signal(signal.SIGTERM, on_term)
    old_int = signal.getsignal(signal.SIGINT)      # Campaign.run ignores it while cleaning up
    try:
        return Campaign(args).run()
    except UsageError as e:
        print(f"vfatfuzz campaign: {e}", file=sys.stderr)
        return 2
    except (Stop, KeyboardInterrupt):
        print("vfatfuzz campaign: stopped while starting; nothing was found yet", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, old)
        signal.signal(signal.SIGINT, old_int)
