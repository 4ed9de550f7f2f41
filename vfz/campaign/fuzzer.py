"""The fuzzer process: fuzz_ops (libFuzzer) on J workers in the background, and its inputs converted to op-scripts."""
import hashlib
import os
import re
import signal
import subprocess
import tempfile
import time

from vfz import lifeline
from vfz.campaign import pace

from vfz import REPO, opscript, sanitizer
from vfz.proc import run


def fuzz_ops_binary():
    """fuzz_ops of the `fuzz` preset (libFuzzer + ASan + UBSan): the build
    that judges an input (crash files, repro, merge, minimisation)."""
    b = os.path.join(REPO, "build-fuzz", "fuzz", "fuzz_ops")
    return b if os.access(b, os.X_OK) else None


def fuzz_ops_fast_binary():
    """fuzz_ops of the `fuzz-ubsan` preset (libFuzzer + UBSan, no ASan):
    the build the main job fuzzes with. Every op is checked against the
    model and the checker as in the ASan build; ASan's memory checks come
    from replaying each corpus entry it keeps under fuzz_ops_binary()
    (Fuzzer.replay). ASan costs 1.8x per checked op (bench/README.md), so this
    splits the work the way AFL++'s documentation advises (one sanitized
    instance is enough) while no kept input goes unchecked by ASan."""
    b = os.path.join(REPO, "build-fuzz-ubsan", "fuzz", "fuzz_ops")
    return b if os.access(b, os.X_OK) else None


def from_input_supported(vfat):
    """Does `vfat gen --from-input` exist (H7)? -> (bool, message)."""
    with tempfile.NamedTemporaryFile(suffix=".bin", delete=False) as f:
        f.write(b"\x00" * 8)
        name = f.name
    try:
        p = run([vfat, "gen", "--from-input", name], timeout=20)
    finally:
        os.unlink(name)
    if p.rc == 0:
        return True, ""
    return False, (f"`{vfat} gen --from-input` is not supported by this build: "
                   f"{(p.errtext or p.text).strip().splitlines()[-1:] or p.error}")


def convert_input(vfat, path, timeout=20):
    """A fuzz input -> (ops list, options line or '') via vfat gen --from-input."""
    p = run([vfat, "gen", "--from-input", path], timeout=timeout)
    if p.rc != 0:
        raise opscript.OpScriptError(f"vfat gen --from-input {path}: "
                                     f"{(p.errtext or p.error or '').strip()[:200]}")
    opts = ""
    for ln in p.text.split("\n"):
        if ln.startswith("# apply-options:"):
            opts = ln.split(":", 1)[1].strip()
        elif ln.startswith("# vfat gen --from-input:"):
            for fat in ("12", "16", "32"):       # "# vfat gen --from-input: FAT16, ..."
                if f"FAT{fat}" in ln:
                    opts += f" --fat {fat}"
            if "(tiny)" in ln:                    # fuzz_ops' tiny FAT12: one that fills
                opts += " --tiny"
    return opscript.parse(p.text), opts, p.text


def fs_from_options(opts):
    """'# apply-options' may carry no geometry; a '--fat N' word picks the volume."""
    w = opts.split()
    if "--fat" in w:
        i = w.index("--fat")
        if i + 1 < len(w) and w[i + 1] in ("12", "16", "32"):
            return "fat12:64K" if "--tiny" in w and w[i + 1] == "12" else "fat" + w[i + 1]
    return None


def _niced(nice):
    """A preexec_fn giving the child the niceness the fuzzer runs at (None:
    none needed). Dying with the campaign is vfz.lifeline's: a kill -9 of
    the campaign must not leave libFuzzer running for the budget."""
    if not nice:
        return None

    def pre():
        try:
            os.nice(nice)
        except OSError:
            pass
    return pre


CPU_SAMPLE_S = 1.0   # how often poll() samples the workers' CPU
REPLAY_S = 10.0      # at most one ASan replay of new corpus entries this often
REPLAY_BATCH = 400   # corpus entries per replay


class Fuzzer:
    """fuzz_ops on J workers in the background, corpus in <workdir>/corpus,
    crashes in <workdir>/crashes; harvest() yields corpus entries not seen
    before (newest first)."""

    def __init__(self, binary, workdir, jobs, seconds, seed, nice=0, judge=None):
        self.binary = os.path.abspath(binary)
        # the build crash files are judged, minimised and replayed with
        # (the ASan one); when it is not the fuzzing build, every corpus
        # entry is also replayed with it (replay_poll)
        self.judge = os.path.abspath(judge) if judge else self.binary
        self.replayed_file = os.path.join(workdir, "asan-replayed.txt")
        self.replayed = set()
        if os.path.exists(self.replayed_file):
            with open(self.replayed_file) as f:
                self.replayed = {ln.strip() for ln in f if ln.strip()}
        self.replay_proc = None      # (Popen, [paths], log path, started)
        self.replay_at = 0.0
        self.replay_cpu = 0.0
        self.replay_runs = 0
        self.replay_fails = 0
        self.corpus = os.path.join(workdir, "corpus")
        self.crashes = os.path.join(workdir, "crashes")
        self.logs = os.path.join(workdir, "fuzz-logs")
        for d in (self.corpus, self.crashes, self.logs):
            os.makedirs(d, exist_ok=True)
        self.seen_file = os.path.join(workdir, "harvested.txt")
        self.seen = set()
        if os.path.exists(self.seen_file):
            with open(self.seen_file) as f:
                self.seen = {ln.strip() for ln in f if ln.strip()}
        self.crash_seen = set()
        self.jobs = max(1, jobs)
        self.deadline = time.monotonic() + seconds
        self.seed = seed
        self.nice = nice
        self.cpu_dead = 0.0      # CPU of workers that stopped (last sample)
        self.cpu_last = {}       # pid -> last CPU sample of a live worker
        self.cpu_at = 0.0        # when cpu() last sampled
        self.procs = []
        self.restarts = 0
        seeds = os.path.join(REPO, "corpus", "fuzz_ops")
        self.seed_dirs = [seeds] if os.path.isdir(seeds) else []
        dic = os.path.join(REPO, "corpus", "fuzz_ops.dict")
        self.dict = dic if os.path.isfile(dic) else None

    def _start(self, i):
        """One libFuzzer process in fork mode with J jobs: it keeps going
        after a crash (each crash is written to crashes/) and merges new
        inputs into corpus/."""
        left = int(self.deadline - time.monotonic())
        if left < 2:
            return None
        argv = [self.binary, self.corpus, *self.seed_dirs, f"-max_total_time={left}",
                f"-seed={(self.seed + 7919 * (i + self.restarts)) % (1 << 31) or 1}",
                f"-artifact_prefix={self.crashes}/", "-print_final_stats=0",
                f"-fork={self.jobs}", "-ignore_crashes=1", "-ignore_ooms=1", "-ignore_timeouts=1",
                "-close_fd_mask=1"]
        if self.dict:
            argv.append(f"-dict={self.dict}")
        log = open(os.path.join(self.logs, f"worker{i}.log"), "ab")
        p = lifeline.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                           preexec_fn=_niced(self.nice))
        log.close()
        return p

    def start(self):
        self.procs = [self._start(0)]

    def poll(self):
        """Restart workers that stopped (a crash stops libFuzzer) while time
        is left; replay new corpus entries under the judging build."""
        if time.monotonic() - self.cpu_at >= CPU_SAMPLE_S:
            self.cpu()
        if self.judge != self.binary:
            self.replay_poll()
        for i, p in enumerate(self.procs):
            if p is not None and p.poll() is not None:
                self.cpu_dead += self.cpu_last.pop(p.pid, 0.0)
                self.restarts += 1
                self.procs[i] = self._start(i)

    def cpu(self):
        """CPU seconds the workers have used (their fork-mode jobs
        included); a worker that stopped counts with its last sample
        (poll samples at most every CPU_SAMPLE_S: a /proc walk is ~2 ms,
        and poll runs once per script on the main thread)."""
        self.cpu_at = time.monotonic()
        for p in self.procs:
            if p is not None and p.returncode is None:
                c = pace.tree_cpu(p.pid)
                if c:
                    self.cpu_last[p.pid] = c
        return self.cpu_dead + sum(self.cpu_last.values()) + self.replay_cpu

    # ---- ASan replay of the corpus -----------------------------------------

    def replay_poll(self, batch=REPLAY_BATCH):
        """Collect a finished replay; start the next one over up to batch
        corpus entries not replayed yet, at most every REPLAY_S seconds.
        The judging build runs them one after the other (libFuzzer's file
        mode) with -artifact_prefix=crashes/: an input that fails there --
        an ASan report the fuzzing build cannot see -- is written to
        crashes/ and filed like any crash. Runs beside the lanes, niced
        like the workers; never blocks the main loop."""
        if self.replay_proc is not None:
            p, paths, log, _ = self.replay_proc
            try:
                pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            except ChildProcessError:
                pid, status, ru = p.pid, 0, None
            if pid == 0:
                return
            lifeline.release(p.pid)       # reaped here, not by Popen
            p.returncode = os.waitstatus_to_exitcode(status)
            if ru is not None:
                self.replay_cpu += ru.ru_utime + ru.ru_stime
            self._replay_done(p.returncode, paths, log)
            self.replay_proc = None
        if time.monotonic() - self.replay_at < REPLAY_S:
            return
        todo = self.replay_todo(batch)
        if not todo:
            return
        self.replay_at = time.monotonic()
        log = os.path.join(self.logs, "asan-replay.log")
        with open(log, "wb") as f:
            p = lifeline.Popen([self.judge, "-timeout=25", "-rss_limit_mb=2560",
                                f"-artifact_prefix={self.crashes}/", *todo],
                               stdout=f, stderr=f, stdin=subprocess.DEVNULL,
                               preexec_fn=_niced(self.nice))
        self.replay_proc = (p, todo, log, self.replay_at)

    def replay_todo(self, limit):
        """Corpus entries not replayed yet, oldest first (at most limit;
        None: all)."""
        try:
            names = os.listdir(self.corpus)
        except OSError:
            return []
        new = []
        for n in names:
            if n in self.replayed or n.startswith("."):
                continue
            p = os.path.join(self.corpus, n)
            try:
                new.append((os.path.getmtime(p), p))
            except OSError:
                continue
        new.sort()
        return [p for _, p in (new if limit is None else new[:limit])]

    def _replay_done(self, rc, paths, log):
        """Mark what ran: all of paths when it passed; on a failure the
        inputs up to the one that failed (libFuzzer prints "Running: P"
        before each), which is copied to crashes/ as crash-<sha1> (libFuzzer
        saves no artifact in file mode) and filed like any crash. A failure
        before any input ran marks nothing: the log is kept and the inputs
        are tried again."""
        done = paths
        if rc != 0:
            self.replay_fails += 1
            last = None
            try:
                with open(log, "rb") as f:
                    for ln in f.read().decode("utf-8", "replace").splitlines():
                        if ln.startswith("Running: "):
                            last = ln[9:].strip()
            except OSError:
                pass
            done = paths[:paths.index(last) + 1] if last in paths else []
            if last in paths:
                self._save_crash(last)
            keep = os.path.join(self.logs, f"asan-replay-fail-{self.replay_fails}.log")
            try:
                os.replace(log, keep)
            except OSError:
                pass
        self.replay_runs += len(done)
        names = [os.path.basename(x) for x in done]
        self.replayed.update(names)
        with open(self.replayed_file, "a") as f:
            f.write("".join(n + "\n" for n in names))

    def _save_crash(self, path):
        """An input the judging build fails on -> crashes/crash-<sha1>,
        written atomically (new_crashes skips dot files)."""
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return
        dst = os.path.join(self.crashes, "crash-" + hashlib.sha1(data).hexdigest())
        if os.path.exists(dst):
            return
        tmp = os.path.join(self.crashes, f".replay-{os.getpid()}")
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, dst)

    def execs_per_s(self):
        total = 0.0
        for i in range(len(self.procs)):
            try:
                with open(os.path.join(self.logs, f"worker{i}.log"), "rb") as f:
                    f.seek(0, 2)
                    n = f.tell()
                    f.seek(max(0, n - 4096))
                    tail = f.read().decode("utf-8", "replace")
            except OSError:
                continue
            # fork mode: "#4771: cov: 755 ... time: 15s job: 61"; else "exec/s: N"
            m = None
            for m in re.finditer(r"#(\d+): cov: .*? time: (\d+)s", tail):
                pass
            if m and int(m.group(2)) > 0:
                total += int(m.group(1)) / int(m.group(2))
                continue
            k = tail.rfind("exec/s: ")
            if k >= 0:
                try:
                    total += float(tail[k + 8:].split()[0])
                except ValueError:
                    pass
        return total

    def harvest(self, limit=20, queued=()):
        """Newest corpus entries not processed yet (mark_done when checked)."""
        try:
            names = os.listdir(self.corpus)
        except OSError:
            return []
        q = {os.path.basename(x) for x in queued}
        new = []
        for n in names:
            if n not in self.seen and n not in q and not n.startswith("."):
                p = os.path.join(self.corpus, n)
                try:
                    new.append((os.path.getmtime(p), p, n))
                except OSError:
                    continue
        new.sort(reverse=True)
        return [p for _, p, _ in new[:limit]]

    def mark_done(self, path):
        n = os.path.basename(path)
        self.seen.add(n)
        with open(self.seen_file, "a") as f:
            f.write(n + "\n")

    def new_crashes(self, limit=3):
        """Up to limit crash files not looked at yet (a fault can make
        hundreds; the rest wait for the next round)."""
        try:
            names = sorted(os.listdir(self.crashes))
        except OSError:
            return []
        out = []
        for n in names:
            if n not in self.crash_seen and not n.startswith("."):
                self.crash_seen.add(n)
                out.append(os.path.join(self.crashes, n))
                if len(out) >= limit:
                    break
        return out

    def crash_message(self, path):
        """The violation line fuzz_ops prints for a crash file; None when it
        no longer fails."""
        p = run([self.judge, path], timeout=30)
        if p.rc == 0:
            return None
        return crash_line(p.errtext + p.text, p.rc)

    def stop(self):
        self.cpu()
        if self.replay_proc is not None:
            p = self.replay_proc[0]
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                _, _, ru = os.wait4(p.pid, 0)
                self.replay_cpu += ru.ru_utime + ru.ru_stime
            except ChildProcessError:
                pass
            lifeline.release(p.pid)
            self.replay_proc = None   # its inputs are replayed on resume
        for p in self.procs:
            if p is not None and p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except OSError:
                    pass
        for p in self.procs:
            if p is not None:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    p.wait()


def crash_line(text, rc):
    """The one line that says why fuzz_ops failed on an input."""
    lines = text.splitlines()
    for pat in ("VIOLATION", "runtime error:", "ERROR: AddressSanitizer", "ERROR: libFuzzer",
                "ERROR:", "SUMMARY:"):
        for i, ln in enumerate(lines):
            if pat in ln:
                # ASan's kind and function (vfz.sanitizer), not the addresses
                summary = sanitizer.asan_summary(lines) if pat == "ERROR: AddressSanitizer" else None
                if summary:
                    return summary
                out = ln.strip()
                j = i + 1        # a quoted name with a line break in it: join its lines
                while out.count('"') % 2 and j < len(lines) and j <= i + 3:
                    out += "\\n" + lines[j]
                    j += 1
                return out
    return f"exit {rc}"
