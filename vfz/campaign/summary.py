"""The campaign's summary: the table it prints at the end and <workdir>/summary.json."""
import json
import os
import time

from vfz import findings
from vfz.campaign import minworker
from vfz.campaign import pace


def summarise(self):
    """The summary table and <workdir>/summary.json of a campaign (self: the Campaign)."""
    ck = self.checker
    applies = self.total("applies")
    imgs = self.total("images_checked")
    el = time.monotonic() - self.t0
    self.say("")
    self.say(f"campaign summary: seed {self.seed}, {el:.0f} s, {self.scripts} scripts, "
             f"{sum(applies.values())} images written, next iteration {self.low_water()}")
    self.say(f"{'oracle':<14} {'role':<7} {'images':>8} {'divergences':>12}")
    for n in ck.writer_names:
        self.say(f"{n:<14} {'writer':<7} {applies[n]:>8} {self.seen_divs.get(('writer', n), 0):>12}")
    for n in ck.reader_names:
        self.say(f"{n:<14} {'reader':<7} {imgs[n]:>8} {self.seen_divs.get(('reader', n), 0):>12}")
    stage_s, stage_n = self.total("stage_s"), self.total("stage_n")
    stage_s.update(self.main_s)
    stage_n.update(self.main_n)
    prep = pace.report(stage_s, stage_n, self.total("own_s"),
                       {n: imgs[n] for n in ck.reader_names}, self.loop_s,
                       cpu_s=self.total("cpu_s"),
                       used_cpu=(self.loop_cpu if self.loop_cpu is not None else None),
                       fuzzer_cpu=self.fuzzer_cpu)
    prep["lanes"] = len(self.lanes)
    mn = self.minimiser
    if mn:
        prep["minimiser"] = {"jobs": mn.done, "seconds": round(mn.seconds, 1),
                             "images": dict(mn.checker.images_checked),
                             "pending": sorted(n[:-5] for n in os.listdir(minworker.pending_dir(self.workdir))
                                               if n.endswith(".json"))
                             if os.path.isdir(minworker.pending_dir(self.workdir)) else []}
    for ln in pace.table(prep):
        self.say(ln)
    if mn:
        self.say(f"minimiser: {mn.done} job(s) in {mn.seconds:.1f} s beside the main loop"
                 + (f"; {len(prep['minimiser']['pending'])} pending for the next run"
                    if prep["minimiser"]["pending"] else ""))
    for ln in self.census.lines():
        self.say(ln)
    geo = getattr(self, "geo_stats", None) or {}
    if geo:
        self.say("geometry classes (scripts / new divergences; vfz/campaign/geometry.py):")
        for cls in sorted(geo):
            self.say(f"  {cls:<22} {geo[cls]['scripts']:>6} scripts  {geo[cls]['findings']:>4} divergences")
    if self.fuzzer:
        self.say(f"fuzz_ops: {self.harvested} corpus entries checked in this run "
                 f"({len(self.fuzzer.seen)} in all), {self.fuzzer.restarts} worker restarts")
        if self.fuzzer.judge != self.fuzzer.binary:
            self.say(f"asan replay: {self.fuzzer.replay_runs} corpus entries replayed under the ASan build "
                     f"in this run ({len(self.fuzzer.replayed)} in all, {self.fuzzer.replay_cpu:.1f} CPU-s), "
                     f"{self.fuzzer.replay_fails} failed, {len(self.fuzzer.replay_todo(None))} left for the next run")
    self.say(f"findings: {len(self.new)} new, {len(self.known)} total in {findings.findings_dir(self.workdir)}")
    for h, s in self.new:
        self.say(f"  NEW {h}  {s}")
    # machine-readable form (bench, CI): <workdir>/summary.json
    summ = {"seed": self.seed, "seconds": round(el, 1), "scripts": self.scripts,
            "next_iteration": self.low_water(),
            "shard": list(self.shard),
            "writers": {n: applies[n] for n in ck.writer_names},
            "readers": {n: imgs[n] for n in ck.reader_names},
            "images_per_minute": {n: round(imgs[n] * 60.0 / el, 1) if el else 0.0
                                  for n in ck.reader_names},
            "fuzz_execs_per_s": self.fuzzer.execs_per_s() if self.fuzzer else None,
            "asan_replay": ({"replayed": self.fuzzer.replay_runs, "replayed_in_all": len(self.fuzzer.replayed),
                             "failed": self.fuzzer.replay_fails, "cpu_seconds": round(self.fuzzer.replay_cpu, 1),
                             "left": len(self.fuzzer.replay_todo(None)),
                             "judge": self.fuzzer.judge}
                            if self.fuzzer and self.fuzzer.judge != self.fuzzer.binary else None),
            "pipeline": prep,
            "census": self.census.to_json(),
            "geometry": getattr(self, "geo_stats", None) or {},
            "geometries": {s: c for s, c in getattr(getattr(self, "geo", None), "classes", {}).items()},
            "new_findings": [h for h, _ in self.new], "total_findings": len(self.known)}
    try:
        tmp = os.path.join(self.workdir, f".summary.json.{os.getpid()}")
        with open(tmp, "w") as f:
            json.dump(summ, f, indent=1)
        os.replace(tmp, os.path.join(self.workdir, "summary.json"))
    except OSError:
        pass
