"""`vfatfuzz diff`: readers on one image, or writers x readers on one script.

    diff IMAGE [--ops OPS] [--oracles LIST] [--json]
    diff --ops OPS --writers LIST [--fs fat12|fat16|fat32[:SIZE[:CLUSTER]]] [--oracles LIST]

Expected tree: with --ops, the model's result of OPS on an empty volume
(profile of the writer: the mtools writer has its own, vfz.model); with
IMAGE alone, the core's own listing (`vfat ls`). Each reader's verdict:
  ok         its listing (after the named exceptions) equals the expected
             tree and it has no unexpected complaint
  differs    listing differs (diff lines shown)
  complains  reads the same tree but complains (fsck.fat, mcopy errors) or,
             for fsck.fat, the complaint count differs from the write mode's
  failed     raised, timed out or could not read at all
A verdict other than ok shows "(named: EXC, ...)" when the reader's or the
writer's explain hook names the whole divergence from its evidence, as the
checker files it (report: "named"). Writers are compared on per-op results
too. Exit 0 all ok, 1 any divergence (differs/complains/failed, named or
not), 2 could not run (bad input).
"""
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter

from vfz import oracles
from vfz import model, opscript
from vfz.check import verdict
from vfz.errors import UsageError
from vfz.proc import run

DEFAULT_READERS = oracles.names("reader", default=True)
DEFAULT_WRITERS = [n for n, e in oracles.entries().items()
                   if e.writer and ({"writer", "diff-writer"} & set(e.default))]
FS_DEFAULTS = {"fat12": (2 << 20, 0), "fat16": (16 << 20, 0), "fat32": (40 << 20, 512)}
READ_TIMEOUT = 60.0
WRITE_TIMEOUT = 300.0


def add_arguments(p):
    p.add_argument("image", nargs="?", help="image to read (omit with --writers)")
    p.add_argument("--ops", help="op-script: expected tree = model(OPS)")
    p.add_argument("--oracles", help="readers, comma-separated (default dosfsck,mtools,kernel)")
    p.add_argument("--writers", help="writers, comma-separated")
    p.add_argument("--fs", default="fat16", help="fat12|fat16|fat32[:SIZE[:CLUSTER]] for fresh images")
    p.add_argument("--json", action="store_true", help="machine-readable report on stdout")
    p.add_argument("--timeout", type=float, default=READ_TIMEOUT, help="seconds per oracle call")
    p.add_argument("--keep", help="directory to keep the written images in")
    p.add_argument("--names", choices=("dual", "nodual"), default="dual",
                   help="IMAGE with --ops: how the image's writer made long names (default dual)")
    p.add_argument("--set", action="append", default=[], metavar="ORACLE.KEY=VALUE",
                   help="oracle configuration override, e.g. mtools.mdir='mdir' (repeatable)")


def parse_size(s):
    s = s.strip().upper()
    mult = 1
    for suf, m in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)):
        if s.endswith(suf):
            s, mult = s[:-1], m
            break
    if not s.isdigit():
        raise UsageError(f"bad size {s!r}")
    return int(s) * mult


def parse_fs(spec):
    """A --fs spec -> (FAT bits, size, cluster bytes); a geometry spec (key=N fields,
    @FORMATTER: vfz.geometry) too, its other fields read by the checker's formatter."""
    if "@" in spec or "=" in spec:
        from vfz import geometry
        g = geometry.parse(spec)
        return g.fat, g.size, g.cluster
    parts = spec.split(":")
    if parts[0] not in FS_DEFAULTS or len(parts) > 3:
        raise UsageError(f"--fs: expected fat12|fat16|fat32[:SIZE[:CLUSTER]], got {spec!r}")
    size, cl = FS_DEFAULTS[parts[0]]
    if len(parts) > 1 and parts[1]:
        size = parse_size(parts[1])
    if len(parts) > 2 and parts[2]:
        cl = parse_size(parts[2])
        if cl < 512 or cl > 65536 or cl & (cl - 1):
            raise UsageError(f"--fs: cluster size {cl} is not a power of two in 512..65536")
    return int(parts[0][3:]), size, cl


def make_volume(image, spec, timeout=60.0):
    """The fresh volume of a --fs spec: a geometry spec's by its formatter (vfz.geometry,
    the registry's formatters), else mkfs.fat's."""
    if "@" in spec or "=" in spec:
        from vfz import geometry
        g = geometry.parse(spec)
        r = oracles.get_formatter(g.formatter or "mkfs.fat").format(image, g, timeout)
        if r.error:
            raise UsageError(f"{spec}: {r.error}")
        geometry.apply_window(image, g)      # free=N: the clusters outside the window bad
        return
    mkfs(image, *parse_fs(spec), timeout=timeout)


def mkfs(image, fat, size, cluster, timeout=60.0):
    """A fresh, deterministic volume made by mkfs.fat (the same start for every writer)."""
    with open(image, "wb") as f:
        f.truncate(size)
    argv = ["mkfs.fat", "-F", str(fat), "-i", "12345678", "-n", "VFATFUZZ"]
    if cluster:
        argv += ["-s", str(cluster // 512)]
    p = run(argv + [image], timeout=timeout)
    if p.rc != 0:
        raise UsageError(f"mkfs.fat failed: {(p.errtext or p.text).strip().splitlines()[-1:]}")


def split_list(s, table, what):
    names = [x.strip() for x in s.split(",") if x.strip()]
    if not names:
        raise UsageError(f"empty {what} list")
    for n in names:
        if n not in table:
            raise UsageError(f"unknown {what} {n!r} (known: {', '.join(sorted(table))})")
    return names


def parse_sets(items):
    """['mtools.mdir=sleep 9'] -> {'mtools': {'mdir': 'sleep 9'}}"""
    cfg = {}
    for it in items:
        k, eq, v = it.partition("=")
        o, dot, key = k.partition(".")
        if not eq or not dot or not o or not key.isidentifier():
            raise UsageError(f"--set: expected ORACLE.KEY=VALUE, got {it!r}")
        if v.lower() in ("true", "false"):
            v = v.lower() == "true"
        else:
            try:
                v = int(v)
            except ValueError:
                try:
                    v = float(v)
                except ValueError:
                    pass
        cfg.setdefault(o, {})[key] = v
    return cfg


def load_oracle(kind, name, explicit, notes, cfg=None):
    """Instantiate a reader/writer; None (with a note) if it cannot be used."""
    kw = dict((cfg or {}).get(name, {}))
    if oracles.entry(name).builds and not explicit:
        # a default oracle: never start a long guest build behind the user's back
        kw.setdefault("auto_build", False)
    try:
        o = {"reader": oracles.get_reader, "writer": oracles.get_writer,
             "transformer": oracles.get_transformer}[kind](name, **kw)
    except Exception as e:  # module missing (not built yet) or broken
        if explicit:
            raise UsageError(f"{kind} {name} unavailable ({type(e).__name__}: {e})")
        notes.append(f"{kind} {name} unavailable ({type(e).__name__}: {e}); skipped")
        return None
    avail = getattr(o, "available", None)
    if callable(avail):
        try:
            ok = avail()
            why = ""
            if isinstance(ok, tuple):
                ok, why = ok
        except Exception as e:
            ok, why = False, str(e)
        if not ok:
            if explicit:
                raise UsageError(f"{kind} {name} not available: {why or 'not built'}")
            notes.append(f"{kind} {name} not available: {why or 'not built'}; skipped")
            return None
    return o


def fat_bits_of(image):
    try:
        from vfz.fatimg import Fat
        with open(image, "rb") as f:
            return Fat(f.read(512 * 64)).bits
    except Exception:
        return 16


def expectations(reader, writer=None, m=None, image=None, fat_bits=16, core_listing=None):
    """What checker `reader` must report (its class's expectations hook)."""
    return oracles.oracle_class(reader, "reader").expectations(
        oracles.entry(writer) if writer else None, m, image, fat_bits, core_listing)


# ---------------------------------------------------------------- main
def run_cmd(args):
    try:
        return _run(args)
    except UsageError as e:
        print(f"vfatfuzz diff: {e}", file=sys.stderr)
        return 2
    except opscript.OpScriptError as e:
        print(f"vfatfuzz diff: {args.ops}: {e}", file=sys.stderr)
        return 2


def check(ops=None, image=None, writers=None, readers=None, fs="fat16", timeout=READ_TIMEOUT,
          sets=(), keep=None, names="dual"):
    """`diff` for other drivers (campaign, repro, minimize): no printing.
    ops: a list of Op (or None); writers/readers: lists of names (None =
    defaults). -> (status, report): status 0 all agree, 1 divergence.
    Raises UsageError for bad input."""
    import argparse
    args = argparse.Namespace(image=image, ops=None, oracles=",".join(readers) if readers else None,
                              writers=",".join(writers) if writers else None, fs=fs, json=True,
                              timeout=timeout, keep=keep, set=list(sets), names=names)
    report = _collect(args, ops)
    return _status(report), report


def _status(report):
    bad = any(t.get("verdict") not in ("ok", None) or
              any(v["verdict"] != "ok" for v in t["readers"].values())
              for t in report["targets"])
    return 1 if bad else 0


def _run(args):
    ops = None
    if args.ops:
        if not os.path.isfile(args.ops):
            raise UsageError(f"no such op-script: {args.ops}")
        ops = opscript.load(args.ops)
    report = _collect(args, ops)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
    else:
        print_report(report)
    return _status(report)


def _collect(args, ops):
    notes = []
    if args.image and args.writers:
        raise UsageError("give either IMAGE or --writers, not both")
    if not args.image and not ops:
        raise UsageError("need IMAGE, or --ops OPS [--writers LIST]")
    if args.writers and not ops:
        raise UsageError("--writers needs --ops")
    if args.image and not os.path.isfile(args.image):
        raise UsageError(f"no such image: {args.image}")
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    explicit_r = args.oracles is not None
    rnames = split_list(args.oracles, oracles.READERS, "reader") if explicit_r else list(DEFAULT_READERS)
    if not explicit_r and args.writers:     # a writer of host directories: their reader too
        rnames += [n for n in oracles.media_readers(split_list(args.writers, oracles.WRITERS, "writer"))
                   if n not in rnames]
    fs = parse_fs(args.fs)
    cfg = parse_sets(args.set)
    args.cfg = cfg
    readers = [(n, load_oracle("reader", n, explicit_r, notes, cfg)) for n in rnames]
    readers = [(n, o) for n, o in readers if o is not None]
    report = {"notes": notes, "targets": []}

    try:
        if args.image:
            report["targets"].append(_diff_image(args, ops, readers, notes))
        else:
            explicit_w = args.writers is not None
            wnames = split_list(args.writers, oracles.WRITERS, "writer") if explicit_w else list(DEFAULT_WRITERS)
            writers = [(wn, load_oracle("writer", wn, explicit_w, notes, args.cfg)) for wn in wnames]
            writers = [(wn, w) for wn, w in writers if w is not None]
            if not writers:
                raise UsageError("no writer available: " + "; ".join(notes))
            tmp = tempfile.mkdtemp(prefix="vfz-diff-")
            try:
                for wn, w in writers:
                    try:
                        report["targets"].append(_diff_writer(args, ops, wn, w, fs, readers, tmp))
                    finally:
                        w.close()
            finally:
                if args.keep:
                    os.makedirs(args.keep, exist_ok=True)
                    for f in os.listdir(tmp):
                        shutil.copy(os.path.join(tmp, f), args.keep)
                shutil.rmtree(tmp, ignore_errors=True)
    finally:
        for _, o in readers:
            try:
                o.close()
            except Exception:
                pass

    return report


def progress(msg):
    """One line on stderr for long work (only on a terminal: logs stay clean)."""
    if sys.stderr.isatty():
        sys.stderr.write(f"[diff {time.strftime('%H:%M:%S')}] {msg}\n")
        sys.stderr.flush()


def named(ops, writer, reader, r, vd, exp_c, image, entries):
    """The named exceptions that explain a reader's whole divergence, as
    the checker files it (the reader's, else the writer's explain hook on
    its Evidence), or []."""
    from vfz.oracles.evidence import Evidence
    ev = Evidence(list(ops or ()), writer=writer, reader=reader, rr=r, verdict=vd.verdict,
                  diff=vd.diff, lines=vd.lines, detail=vd.text(), exp_complaints=exp_c,
                  image=image, entries=entries, fat_bits=fat_bits_of(image))
    from vfz.oracles.evidence import fat_type_exception
    hooks = [fat_type_exception, oracles.oracle_class(reader, "reader").explain] + \
        ([oracles.oracle_class(writer, "writer").explain] if writer else [])
    for h in hooks:
        kinds = h(ev)
        if isinstance(kinds, tuple):
            kinds = kinds[0]
        if kinds:
            return [kinds] if isinstance(kinds, str) else list(kinds)
    return []


def _read_all(image, readers, expected_entries, expect, timeout, used, writer=None, ops=None):
    """expect(reader name) -> what that reader must report."""
    out = {}
    for n, o in readers:
        if not oracles.reads(n, writer):        # a FAT reader and a host directory, or the reverse
            continue
        progress(f"{n} reading {os.path.basename(image)}")
        try:
            r = o.read(image, timeout)
        except Exception as e:  # the contract says never raise; belt and braces
            r = oracles.ReadResult(n, error=f"{type(e).__name__}: {e}")
        exp_c = expect(n)
        vd = verdict.verdict_for(r, expected_entries, n, exp_c, used, writer, image=image)
        out[n] = {"verdict": vd.verdict, "detail": vd.text(), "seconds": round(r.seconds, 3),
                  "complaints": r.complaints, "raw": r.raw[-20000:],
                  "extra": {k: v for k, v in r.extra.items() if k != "complaints"}}
        if vd.verdict != "ok":
            out[n]["named"] = named(ops, writer, n, r, vd, exp_c, image, expected_entries)
    return out


def _diff_image(args, ops, readers, notes):
    used = Counter()
    t = {"target": args.image, "writer": None}
    core_listing = None
    from vfz.oracles.core import CoreReader, available
    if available()[0]:
        cr = CoreReader().read(args.image, args.timeout)
        if cr.error is None:
            core_listing = cr.listing
        else:
            notes.append(f"core reader: {cr.error}")
    if ops is not None:
        m = model.Model("kernel", getattr(args, "names", "dual") or "dual")
        m.apply(ops)
        expected_entries = m.entries()
        t["expected_from"] = "model"
    else:
        if core_listing is None:
            raise UsageError("IMAGE without --ops needs the core's listing, and `vfat ls` "
                             "is not available: " + (available()[1] if not available()[0] else notes[-1]))
        expected_entries = core_listing
        t["expected_from"] = "core"
    bits = fat_bits_of(args.image)

    def expect(rn):
        return (expectations(rn, core_listing=core_listing, fat_bits=bits, image=args.image)
                if core_listing is not None else {})
    t["expected"] = expected_entries
    t["readers"] = _read_all(args.image, readers, expected_entries, expect, args.timeout, used, ops=ops)
    t["exceptions"] = dict(used)
    return t


def model_for_writer(wn):
    """(profile, names) of vfz.model that predicts writer wn (its registry traits)."""
    e = oracles.entry(wn)
    return e.profile, e.names


def shortname_rule(wn):
    """short_only's rule for writer wn (the v3 patch forces winnt)."""
    return oracles.entry(wn).shortname


def _diff_writer(args, ops, wn, w, fs, readers, tmp):
    used = Counter()
    t = {"target": wn, "writer": wn, "readers": {}}
    # the second grammar goes only to writers that claim it (Entry.supports);
    # each op keeps its line number
    sup = oracles.entry(wn).supports
    ops = [o for o in ops if o.kind not in oracles.META_OPS or o.kind in sup]
    profile, names = model_for_writer(wn)
    img = os.path.join(tmp, f"{wn}.img")
    make_volume(img, args.fs)
    from vfz.model.space import space_for
    m = model.Model(profile, names, root=model.root_for(profile, img), space=space_for(profile, img), rule=shortname_rule(wn))
    m.apply(ops)
    exp_entries = m.entries()
    t["expected_results"] = m.results
    progress(f"{wn} applying {len(ops)} ops")
    try:
        wr = w.apply(img, ops, WRITE_TIMEOUT)
    except Exception as e:
        wr = oracles.WriteResult(wn, error=f"{type(e).__name__}: {e}")
    t["results"] = wr.results
    t["raw"] = wr.raw[-20000:]
    if wr.error:
        t["verdict"] = "failed"
        t["detail"] = wr.error
        return t
    rows = verdict.compare_results(ops, m.results, wr.results, oracles.oracle_class(wn, "writer"), used)
    t["verdict"] = "differs" if rows else "ok"
    t["detail"] = verdict.results_text(rows)

    def expect(rn):
        return expectations(rn, wn, m, fat_bits=fs[0], image=img)
    t["readers"] = _read_all(img, readers, exp_entries, expect, args.timeout, used, wn, ops)
    t["exceptions"] = dict(used)
    return t


def print_report(rep):
    for n in rep["notes"]:
        print(f"note: {n}")
    for t in rep["targets"]:
        if t.get("writer"):
            print(f"== writer {t['writer']}: {t['verdict']}")
            if t.get("detail"):
                print(_indent(t["detail"]))
        else:
            print(f"== image {t['target']} (expected tree from {t['expected_from']})")
        for n, v in t["readers"].items():
            why = f" (named: {', '.join(v['named'])})" if v.get("named") else ""
            print(f"   {n:<14} {v['verdict']}{why}")
            if v["detail"]:
                print(_indent(v["detail"], 6))
        if t.get("exceptions"):
            ex = ", ".join(f"{k} x{c}" for k, c in sorted(t["exceptions"].items()))
            print(f"   named exceptions applied: {ex}")


def _indent(s, n=3):
    return "\n".join(" " * n + line for line in s.splitlines())
