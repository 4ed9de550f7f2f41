"""The campaign's progress line: elapsed time, pace, corpus, scripts, images per reader, findings, phase."""
import os
import time


def line(camp):
    """The line the campaign prints at least every PROGRESS_EVERY seconds (camp: the Campaign)."""
    el = time.monotonic() - camp.t0
    ck = camp.checker
    imgs = camp.total("images_checked")
    per = " ".join(f"{n}={imgs[n]}" for n in ck.reader_names) if ck else ""
    execs = camp.fuzzer.execs_per_s() if camp.fuzzer else 0.0
    if not execs:
        execs = sum(camp.total("applies").values()) / el if ck and el > 0 else 0.0
    corpus = ""
    if camp.fuzzer:
        try:
            corpus = f"corpus {len(os.listdir(camp.fuzzer.corpus))} "
            if camp.fuzzer.judge != camp.fuzzer.binary:
                corpus += f"asan-replayed {len(camp.fuzzer.replayed)} "
        except OSError:
            pass
    mn = camp.minimiser
    mstate = "idle"
    if mn and mn.current:
        mstate = f"minimising {mn.current}"
    if mn and mn.queued():
        mstate += f", {mn.queued()} queued"
    return (f"[campaign] {el:6.0f}s execs/s {execs:.1f} {corpus}scripts {camp.scripts} "
            f"images[{per}] findings {len(camp.new)} new/{len(camp.known)} total "
            f"({camp.phase}; minimiser {mstate})")
