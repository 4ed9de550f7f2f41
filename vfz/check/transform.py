"""The transformers' pass: fatsort or fsck.fat -a rewrites a copy of a writer's image; the readers must see the same tree."""
import os
import time
from collections import Counter

from vfz import findings, oracles
from vfz.check.divergence import Divergence, _own_exception


def transform_image(ck, res, ops, fs, wn, m, img, readers):
    """Each transformer rewrites a copy of writer wn's image (fatsort,
    fsck.fat -a); every reader that read the writer's image right must
    then see the same tree. A divergence is the transformer's: its own
    named exception when its hook explains it, else the reader's kind
    prefixed with the reader ('kernel:missing'); a failed transform is
    one finding of its own."""
    used = Counter()
    exp_entries = m.entries()
    wentry = oracles.entry(wn)
    for tn, t in ck.transformers:
        key = f"{wn}>{tn}"
        timg = os.path.join(os.path.dirname(img), f"{wn}-{tn}.img")
        findings.sparse_copy(img, timg)
        t0 = time.monotonic()
        try:
            tr = t.transform(timg, ck.timeout)
        except Exception as e:
            tr = oracles.WriteResult(tn, error=f"{type(e).__name__}: {e}")
        ck.timed(f"transform {tn}", time.monotonic() - t0, tr.seconds)
        fam = oracles.entry(tn).family
        res.images[key] = timg
        res.raws[key] = tr.raw
        res.verdicts[key] = {}
        res.details[key] = {}
        if tr.error:
            res.verdicts[key]["(transformer)"] = "failed"
            res.details[key]["(transformer)"] = tr.error
            named = type(t).failure_exception(tr)
            res.add(Divergence({"role": "transformer", "oracle": fam, "verdict": "failed",
                                "kind": named or findings.normalise(tr.error, 60), "op": "-",
                                "cls": "-"}, wn, tr.error))
            continue
        tcls = type(t)

        def relabel(ev, divs, tr=tr, tcls=tcls, fam=fam):
            d = ev.diff
            named = tcls.explain({"raw": tr.raw, "wr": tr, "verdict": ev.verdict, "reader": ev.reader,
                                  "before": img,
                                  "missing": [e["path"] for e in d.missing] if d else [],
                                  "extra": [e["path"] for e in d.extra] if d else []})
            if named:
                yield Divergence({"role": "transformer", "oracle": fam, "verdict": ev.verdict,
                                  "kind": named, "op": "-", "cls": "-"}, ev.writer, ev.detail)
                return
            for div in divs:
                if _own_exception(div.fields):
                    # a named exception of the reader, recognised from
                    # this image: the reader's known bug (e.g. fatcat's
                    # nondeterministic -o hang that the writer's image
                    # happened not to show), not the transformer's doing
                    yield div
                    continue
                f = dict(div.fields, role="transformer", oracle=fam,
                         kind=f"{ev.reader}:{div.fields['kind']}")
                yield Divergence(f, div.writer, div.detail)
        for rn, r in ck.readers:
            if (readers is not None and rn not in readers) or res.verdicts[wn].get(rn) != "ok":
                continue            # a reader that already differs: not the transformer's doing
            try:
                rr = r.read(timg, ck.timeout)
            except Exception as ex:
                rr = oracles.ReadResult(rn, error=f"{type(ex).__name__}: {ex}")
            ck._judge(res, ops, fs, wn, m, timg, rn, r, type(r), rr, used, exp_entries, wentry,
                        key=key, relabel=relabel)
