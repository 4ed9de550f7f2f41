"""What fsck.fat -n must say about an image: the rule from the model's
directories, or exactly, FsckSim's scan of the written image (named
exception fsck-v1-lfn-cross: see vfz/oracles/dosfsck/sim.py).
"""
from collections import Counter

from vfz.oracles.dosfsck.sim import FsckSim, _ATTR_VOLUME

# modes (vfz.oracles.dosfsck.mode_of): "v1" images hold v1 dummies, "dual"
# images Linux aliases (mtools makes its own aliases, with no 0x7F)
BAD_NAME_MODES = ("v1",)
DUAL_MODES = ("dual",)


class Expected(dict):
    """{kind: count or None (any number)} that fsck.fat -n must print, plus:
      crossings  the fsck-v1-lfn-cross instances the image holds (dicts:
                 path, from/to byte offsets, from/to clusters, gap clusters,
                 live = allocated gap clusters that fsck.fat -a overwrites)
      source     "image" (simulated on the image after checking it against
                 the model's dirs), "model" (no image given), or
                 "model (image disagrees: ...)" (then fsck.fat is compared
                 with the model's counts, which shows the disagreement)"""
    crossings = ()
    source = "model"


def _rule(mode, dirs, fat_bits, del_aliases, root_labels=0, bad_labels=0):
    if mode not in BAD_NAME_MODES:
        # dual aliases holding 0x7F (named exception fsck-del-alias)
        return {"bad-short-name": del_aliases} if del_aliases and mode in DUAL_MODES else {}
    out = {}
    nbad = sum(d[1] for d in dirs)
    if nbad:
        out["bad-short-name"] = nbad
    many = 0
    for path, bad, good, is_root in dirs:
        if is_root and fat_bits != 32:
            continue
        if is_root:
            # a label fsck.fat's bad_name rejects (BusyBox's NUL padding) counts as bad
            good, bad = good + root_labels, bad + bad_labels
        if good + bad > 4 and bad > good // 2:
            many += 1
    if many:
        out["many-bad-entries"] = many
    return out


def expected_complaints(mode, dirs, fat_bits=16, del_aliases=0, image=None):
    """What fsck.fat -n must say about an image written in `mode` (docs/write-paths.md).

    The model's rule, from dirs = [(path, n_bad, n_good, is_root)]: in v1
    modes (core-v1, core-unique, kernel-nodual) one bad-short-name per entry
    with LFN slots (its dummy), and one many-bad-entries per directory that
    check_dir counts: good + bad > 4 and bad > good // 2 over the entries
    it lists (not "." and ".."; the volume label counts as good, as bad when
    fsck.fat's bad_name rejects it: BusyBox's NUL-padded label), for
    subdirectories and, on FAT32 only, the root ("Not dropping root
    directory."); dual modes: bad-short-name per alias holding 0x7F
    (fsck-del-alias), and many-bad-entries where such aliases make a
    directory's count (with image: as the simulation finds it; without:
    any number); other modes nothing.

    With image (the written image): fsck.fat's scan is simulated on it
    (FsckSim) twice: with a correct LFN deletion, which must give exactly the
    rule's counts (else the image disagrees with the model and the rule's
    counts are returned, so the divergence shows), and as fsck.fat 4.2 does
    it, whose counts are returned, exact, with .crossings set (named
    exception fsck-v1-lfn-cross, see the module docstring).

    Without image: the rule, plus any number of dots-missing (the older
    named exception fsck-v1-dots, now explained by fsck-v1-lfn-cross).
    -> Expected {kind: count or None}"""
    dual_del = bool(del_aliases) and mode in DUAL_MODES
    if image is None or (mode not in BAD_NAME_MODES and not dual_del):
        out = Expected(_rule(mode, dirs, fat_bits, del_aliases))
        if image is None and mode in BAD_NAME_MODES:
            out["dots-missing"] = None
        if image is None and dual_del:
            out["many-bad-entries"] = None
        return out
    try:
        clean = FsckSim(image, broken_lfn_remove=False).run()
        real = FsckSim(image).run()
    except Exception as e:  # an image fsck.fat's scan cannot even start on
        out = Expected(_rule(mode, dirs, fat_bits, del_aliases))
        out.source = f"model (image not simulated: {type(e).__name__}: {e})"
        return out
    labels = [f for f in clean.root_entries_list() if f.attr & _ATTR_VOLUME]
    bad_labels = sum(1 for f in labels if clean.bad_name(f))
    rule = _rule(mode, dirs, fat_bits, del_aliases, len(labels) - bad_labels, bad_labels)
    cc = dict(Counter(c["kind"] for c in clean.complaints))
    if dual_del:
        # the model counts 0x7F aliases, not per directory: the image's
        # directories, as the simulation scans them, say where they make
        # "many bad entries" (as in v1 modes: good + bad > 4 and bad > good // 2)
        cc.pop("many-bad-entries", None)
    if cc != rule:
        out = Expected(rule)
        out.source = f"model (image disagrees: a correct fsck.fat would print {cc})"
        return out
    out = Expected(Counter(c["kind"] for c in real.complaints))
    out.crossings = [c for c in real.crossings if c["live"]]
    out.source = "image"
    return out


def crossing_note(crossings):
    """One line per fsck-v1-lfn-cross instance, for finding details."""
    out = []
    for c in crossings:
        g = c["gap"]
        span = f"{g[0]}" if len(g) == 1 else f"{g[0]}..{g[-1]}"
        out.append(f"  {c['path']}: LFN slots in cluster {c['from_cluster']}, short entry in "
                   f"cluster {c['to_cluster']}: fsck.fat deletes every slot of clusters {span} "
                   f"in between ({len(c['live'])} allocated)")
    return out

# ---------------------------------------------------------------- simulation
# An independent re-statement (from reading dosfstools 4.2 src/check.c,
# lfn.c, fat.c, io.c; no code copied) of what `fsck.fat -n` does with the
# directory tree, including its -n change list: every fs_write is kept in
# memory and every later fs_read sees it.  See "fsck.fat 4.2 and v1 dummies"
# in the module docstring for what this reproduces and why.
