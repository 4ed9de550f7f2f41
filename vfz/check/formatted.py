"""The formatter check: every reader reads a formatter's fresh volume, before any writer runs.

A volume a formatter made (vfz.oracles Formatter, the geometry of a --fs spec) holds an empty
tree. Each reader's answer on it is judged against that (its listing empty, its complaints
those the reader's expectations allow); what differs is explained, line by line, by the
named exceptions of the formatter and of the reader (Hooks.fresh_exceptions: BusyBox's
NUL-padded label, fsck.fat's warning on a FAT32 BPB over few clusters; a failed read only by
its whole error: FatFs's 65 525-cluster FAT16 that Linux and fsck.fat refuse, U-Boot and
fatcat on sectors other than 512 bytes; a reader that decides the FAT type by the cluster
count, on a FAT32 boot sector over fewer than 65 525 clusters, by its family's
fat32-few-clusters whatever it answered, as on written images), and the rest is a
divergence of role "formatter": the formatter's bug or the reader's, one signature per
formatter family, reader, verdict and kind, with the formatter's exact command in its detail.

A formatter under test (the core's `vfat mkfs`, a mutant's in the selftest) that refuses or
crashes on a volume is a divergence of role "formatter" too (format_failed), oracle its own
family, verdict "failed": a finding of the build under test, where it used to stop the campaign.
"""
from types import SimpleNamespace

from vfz import findings, oracles
from vfz.oracles.evidence import fat_type_exception
from vfz.check import verdict
from vfz.check.divergence import Divergence


def explained(geo, formatter, reader, rr, image=None):
    """{exception name: [complaint lines, or the error of a failed read]} the formatter's and
    the reader's fresh-volume exceptions explain of rr (on image, the fresh volume)."""
    out = {}
    for role, name in (("formatter", formatter), ("reader", reader)):
        try:
            cls = oracles.oracle_class(name, role)
        except KeyError:
            continue
        for n, lines in cls.fresh_exceptions(geo, rr, image):
            out.setdefault(n, []).extend(lines)
    return out


def check_formatted(res, readers, geo, formatter, argv, image, fat_bits, timeout, exceptions=None):
    """Read image (the fresh volume of geo made by formatter with argv) with each (name,
    reader) and add a Divergence per reader that disagrees with an empty tree and no named
    exception explains. exceptions (a Counter) counts the names applied."""
    for rn, r in readers:
        rcls = type(r)
        rr = r.read(image, timeout)
        try:
            exp_c = rcls.expectations(writer=None, m=None, image=image, fat_bits=fat_bits, core_listing=[])
        except Exception:
            exp_c = None
        v = verdict.verdict_for(rr, [], rn, exp_c, {}, None)
        if v.verdict == "ok":
            continue
        # a reader that decides the FAT type by the cluster count, on a FAT32 boot sector over
        # fewer than 65 525 clusters: its <family>-fat32-few-clusters, the whole answer, as
        # the checker names it on written images (vfz.oracles.evidence.fat_type_exception)
        whole = fat_type_exception(SimpleNamespace(reader=rn, image=image))
        if whole:
            if exceptions is not None:
                exceptions[whole] += 1
            continue
        names = explained(geo, formatter, rn, rr, image)
        covered = {c for lines in names.values() for c in lines}
        rest = [c for c in rr.complaints or () if c not in covered]
        # a complaint or a failure is named when every line of it is explained: a failed
        # read by its error (a reader that cannot take the volume at all, for a known reason)
        whole = (v.verdict == "complains" or (v.verdict == "failed" and rr.error in covered))
        if whole and not rest and covered:
            if exceptions is not None:
                for n in names:
                    exceptions[n] += 1
            continue
        kind = (findings.normalise(rr.error, 60) if v.verdict == "failed" else
                findings.normalise(rest[0], 60) if rest else v.verdict)
        det = (f"fresh volume {geo.spec()} made by `{' '.join(argv)}`: {rn} {v.verdict}: {v.text()[:500]}"
               + (f"; named but not all: {sorted(names)}" if names else ""))
        res.add(Divergence({"role": "formatter", "oracle": oracles.entry(rn).family, "verdict": v.verdict,
                            "kind": kind, "op": "-", "cls": "-"}, formatter, det))
        res.verdicts.setdefault(formatter, {})[rn] = v.verdict
        res.details.setdefault(formatter, {})[rn] = det


def format_failed(res, spec, name, err):
    """The fresh volume of spec could not be made by formatter name (err, a UsageError).
    When that formatter is under test (Entry.under_test: the build's own mkfs), add a
    "failed" divergence of role formatter and return True; otherwise (a peer formatter, a
    bad spec) return False."""
    try:
        e = oracles.entry(name)
    except KeyError:
        return False
    if not e.under_test:
        return False
    msg = str(err)
    kind = findings.normalise(msg[len(spec) + 2:] if msg.startswith(spec + ": ") else msg, 60)
    res.add(Divergence({"role": "formatter", "oracle": e.family, "verdict": "failed", "kind": kind,
                        "op": "-", "cls": "-"}, name, f"fresh volume {spec}: {msg[:1000]}"))
    res.verdicts.setdefault(name, {})["-"] = "failed"
    res.details.setdefault(name, {})["-"] = msg[:1000]
    return True
