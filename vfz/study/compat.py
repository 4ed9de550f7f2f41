"""Compatibility study: which checkers and readers accept images written in
each style, per name class, and why the seed's dummy bytes are what they
are.

The matrix (every name class x write style, each image read by every row):
vfz.study.compat_matrix; the dummy byte variants: vfz.study.compat_variants;
compat.md: vfz.study.compat_report. This module runs them and writes the CSVs.
"""
import csv
import os
import time

from vfz.study.compat_matrix import (CLASSES, FS, MAP, READER_OF, ROWS, SHORT, SIZES, STYLES,  # noqa: F401
                                     TIMEOUT, VERDICTS, _worst, fsck_repair, judge, load_readers, run_matrix)
from vfz.study import compat_media
from vfz.study.compat_report import write_md
from vfz.study.compat_variants import run_variants


def run_study(out, seed, size, progress, with_kernel=True):
    os.makedirs(out, exist_ok=True)
    t0 = time.monotonic()
    notes = []
    readers = load_readers(with_kernel, notes)
    media = compat_media.load(with_kernel, notes)
    try:
        cells, links, mismatches, notable = run_matrix(out, seed, size, readers, progress, media)
        for mm in mismatches:
            notes.append("writer results differ from the model (expected tree = the ops the "
                         "writer carried out): " + mm)
        variants = run_variants(out, seed, readers, progress)
    finally:
        compat_media.close(media)
        for o in readers.values():
            try:
                o.close()
            except Exception:
                pass
    rows_present = [r for r in ROWS if any(k[0] == r for k in cells)]
    with open(os.path.join(out, "compat.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["row", "style", "class", *VERDICTS, "case"])
        for row in ROWS:
            for style in STYLES:
                for cls in CLASSES:
                    c = cells.get((row, style, cls))
                    if c is None:
                        w.writerow([row, style, cls, *["" for _ in VERDICTS], "n/a"])
                        continue
                    wv = _worst(c)
                    w.writerow([row, style, cls, *[c.get(v, 0) for v in VERDICTS],
                                "compat/cases/" + links[(row, style, cls, wv)]])
    with open(os.path.join(out, "compat-variants.csv"), "w", newline="") as f:
        if variants:
            w = csv.DictWriter(f, fieldnames=list(variants[0]))
            w.writeheader()
            w.writerows(variants)
    write_md(os.path.join(out, "compat.md"), cells, links, variants, notes, seed, size,
             time.monotonic() - t0, rows_present, notable)
