"""Findings of the hostile campaign: writing, replaying, minimising again,
exporting (vfz/hostile/loop.py finds them; layout in its docstring).

    write_finding(workdir, reader, verdict, rr, h, seed_img, small, args)
    replay(dir) -> 0 REPRODUCED | 1 NOT REPRODUCED | 2 cannot run
    reminimise(dir, budget_s) -> 0 | 1 | 2
    is_hostile_finding(path), export_case(path): the exporter's hook
"""
import hashlib
import json
import lzma
import os
import shutil
import tempfile

from vfz import oracles, proc
from vfz.hostile import backtrace as hbt
from vfz.hostile import minimise as hostile_min
from vfz.hostile import mutate as hm
from vfz.hostile import transform as hostile_tx
from vfz.hostile import verdict as hv

def reader_cfg(name, asan_peers=None):
    """The hostile oracle's constructor cfg, its class's hostile_cfg hook
    (the transformer's when the campaign runs it as one, else the reader's,
    else the writer's); asan_peers: the OUT of scripts/build-asan-peers.sh
    (mtools and fsck.fat built with ASan+UBSan)."""
    if name.startswith(hostile_tx.WRITE):          # a writer's lane: the writer's hook
        name, roles = name[len(hostile_tx.WRITE):], ("writer",)
    else:
        roles = ("reader", "writer")
    e = oracles.entries().get(name)
    role = "transformer" if hostile_tx.is_transformer(name) else \
        next((r for r in roles if e and getattr(e, r)), None)
    if role is None:
        return {}
    b = os.path.join(os.path.abspath(asan_peers), "bin") if asan_peers else None
    return dict(oracles.oracle_class(name, role).hostile_cfg(b))


# sanitizer builds: reports to stderr (the oracles keep it in raw), no leak
# reports (a tool that exits without freeing is no finding)
os.environ.setdefault("ASAN_OPTIONS", "detect_leaks=0")
os.environ.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")


def _xz(path, data):
    with open(path, "wb") as f:
        f.write(lzma.compress(data, preset=6))


def field_names(patches, off, n):
    """The fields of the patches overlapping [off, off+n)."""
    out = []
    for p in patches:
        if p.offset < off + n and off < p.offset + max(len(p.data), 1) and p.field not in out:
            out.append(p.field)
    return out or ["(tail)" if n and off >= 0 else "?"]


def diff_text(seed, image, patches, limit=64):
    lines = []
    for off, n in hm.byte_ranges(seed, image):
        names = field_names(patches, off, n)
        lines.append(f"offset {off:#x} (sector {off // 512}), {n} bytes: {', '.join(names)}")
        a, b = seed[off:off + min(n, limit)], image[off:off + min(n, limit)]
        for k in range(0, len(b), 16):
            lines.append(f"  {off + k:08x}  seed {a[k:k + 16].hex(' '):47s}  hostile {b[k:k + 16].hex(' ')}")
        if n > limit:
            lines.append(f"  ... {n - limit} more bytes")
    return "\n".join(lines) + "\n"


def sig_dir(reader, v):
    return f"{reader.replace(':', '-')}-{v.kind}-{hashlib.sha1(v.signature(reader).encode()).hexdigest()[:10]}"


def write_finding(workdir, reader, v, rr, h, seed_img, small, args, flaky=False):
    root = os.path.join(workdir, "findings")
    final = os.path.join(root, sig_dir(reader, v))
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=root)
    patches = h["patches"]
    info = {
        "reader": reader, **({"role": "transformer"} if hostile_tx.is_transformer(reader) else {}),
        "kind": v.kind, "message": v.message, "signature": v.signature(reader),
        "evidence": v.evidence[:4000], "flaky": flaky, "on_seed": bool(h.get("on_seed")),
        "run_seed": args.seed, "image_index": h["index"], "seed_image": h["seed_name"],
        "mutators": h["kinds"], "timeout": args.timeout,
        "cfg": reader_cfg(reader, getattr(args, "asan_peers", None)),
        "canary": h["canary"].hex() if h["canary"] else None,
        "patches": [{"offset": p.offset, "length": len(p.data), "field": p.field,
                     "data": p.data[:64].hex()} for p in patches],
        "ranges": [{"offset": o, "length": n, "fields": field_names(patches, o, n)}
                   for o, n in hm.byte_ranges(seed_img, small)],
        "error": rr.error,
    }
    if (rr.extra or {}).get("writer"):
        # a hostile write: the writer's registry name, its script and what it answered
        info.update(reader=rr.oracle, lane=reader, role="writer", ops=rr.extra["ops"],
                    results=rr.extra.get("results"), spread=rr.extra.get("spread"))
    with open(os.path.join(tmp, "finding.json"), "w") as f:
        json.dump(info, f, indent=1)
    _xz(os.path.join(tmp, "seed.img.xz"), seed_img)
    _xz(os.path.join(tmp, "hostile.img.xz"), small)
    _xz(os.path.join(tmp, "hostile-full.img.xz"), h["image"])
    diff = diff_text(seed_img, small, patches)
    with open(os.path.join(tmp, "diff.txt"), "w") as f:
        f.write(diff)
    with open(os.path.join(tmp, "output.txt"), "w") as f:
        f.write(f"[error] {rr.error}\n[complaints]\n" + "".join(f"{c}\n" for c in rr.complaints or ())
                + "[raw]\n" + (rr.raw or "")[-30000:])
    with open(os.path.join(tmp, "README.md"), "w") as f:
        f.write(readme(info, diff))
    if os.path.exists(final):          # an earlier run's finding of the same signature
        shutil.rmtree(tmp)
        return final
    os.rename(tmp, final)
    return final


def readme(info, diff):
    title = oracles.entry(info["reader"]).title if info["reader"] in oracles.entries() else info["reader"]
    tx = ("The tool rewrites the volume in place (a transformer): it was given hostile.img followed by a "
          f"{hostile_tx.GUARD_BYTES // 1024} KiB guard (vfz/hostile/transform.py), bytes past the declared volume end "
          "it must leave as they are.\n\n" if info.get("role") == "transformer" else "")
    return (f"# {title}: {info['kind']} on a hostile volume\n\n" + tx +
            f"Signature: `{info['signature']}`{' (flaky: did not happen on a second read)' if info['flaky'] else ''}\n\n"
            + ("**It happens on the unmutated seed volume too**: a bug of the tool on a well-formed "
               "volume, not caused by the mutation.\n\n" if info.get("on_seed") else "") +
            f"Seed volume `{info['seed_image']}`, run seed {info['run_seed']}, image {info['image_index']}, "
            f"mutators {', '.join(info['mutators'])}.\n\n"
            f"Fields the minimised volume changes: "
            f"{'; '.join(dict.fromkeys(', '.join(r['fields']) for r in info['ranges'])) or '(none)'}\n\n"
            f"Evidence:\n\n```\n{info['evidence'][:1500]}\n```\n\n"
            f"Bytes (seed vs hostile):\n\n```\n{diff[:6000]}```\n\n"
            f"Replay: `scripts/vfatfuzz hostile --replay {{this directory}}` "
            f"(exit 0 REPRODUCED, 1 NOT REPRODUCED).\n"
            f"Unpack: `xz -dc hostile.img.xz > hostile.img`.\n")


def load_finding(d):
    with open(os.path.join(d, "finding.json")) as f:
        info = json.load(f)
    with open(os.path.join(d, "hostile.img.xz"), "rb") as f:
        img = lzma.decompress(f.read())
    return info, img


def replay_cfg(info, asan_peers=None):
    """The reader's cfg for a replay -> (cfg, None) or (None, why). A finding
    of a sanitizer build names its binaries by the path they had where it
    was found; on another machine (or checkout) they are looked up under
    asan_peers, else <repo>/build-asan-peers (scripts/build-asan-peers.sh)."""
    cfg = dict(info.get("cfg") or {})
    paths = {k: v for k, v in cfg.items() if isinstance(v, str) and os.path.isabs(v)}
    if not paths or all(os.path.exists(v) for v in paths.values()):
        return cfg, None
    from vfz import REPO
    for root in [asan_peers] if asan_peers else [os.path.join(REPO, "build-asan-peers")]:
        alt = reader_cfg(info["reader"], root)
        if all(os.path.exists(alt.get(k, "")) for k in paths):
            return dict(cfg, **{k: alt[k] for k in paths}), None
    missing = ", ".join(sorted(os.path.basename(v) for v in paths.values()))
    return None, (f"this finding reads with a sanitizer build ({missing}) that is not here: "
                  f"run `scripts/build-asan-peers.sh build-asan-peers` (or pass --asan-peers OUT)")


def replay(d, log=print, timeout=None, asan_peers=None, resign=False):
    """-> 0 REPRODUCED (the same signature), 1 NOT REPRODUCED, 2 cannot run.
    resign: a verdict of the finding's kind whose message extends the recorded
    one (a backtrace's frames, a guest's last words: vfz.hostile.backtrace,
    lastwords) becomes the finding's signature (finding.json, README.md).
    A finding whose finding.json holds "ops" (an op-script's text) is a
    writer's: the oracle applies the ops to the volume instead of reading it."""
    try:
        info, img = load_finding(d)
    except (OSError, ValueError, KeyError, lzma.LZMAError) as e:
        log(f"hostile: error: {d} is not a hostile finding: {e}")
        return 2
    cfg, why = replay_cfg(info, asan_peers)
    if cfg is None:
        log(f"CANNOT RUN: {why}")
        return 2
    ops = None
    name = info["reader"]
    if info.get("ops") is not None and info.get("lane"):
        # a hostile write found by the campaign: the writer applies the script it was found
        # with, between two reads of the strict reader (damage spread)
        tool = hostile_tx.tool(info["lane"], ops=info["ops"], **cfg)
        name = info["lane"]
    elif info.get("ops") is not None:
        # a writer's finding made by hand: the tool applies the op-script to the volume
        from vfz import opscript
        ops = opscript.parse(info["ops"])
        tool = oracles.get_writer(info["reader"], **cfg)
    else:
        tool = hostile_tx.tool(info["reader"], **cfg)
    ok, why = tool.available() if hasattr(tool, "available") else (True, "")
    if not ok:
        log(f"CANNOT RUN: {info['reader']} unavailable: {why}")
        return 2
    t = timeout or info["timeout"]
    tmp = tempfile.mkdtemp(prefix="vfz-hostile-replay-")
    try:
        path = os.path.join(tmp, "hostile.img")
        with open(path, "wb") as f:
            f.write(img)
        with proc.crash_hook(hbt.gdb_backtrace):      # signed as the campaign signs it
            rr = tool.read(path, t) if ops is None else tool.apply(path, ops, t)
        canary = bytes.fromhex(info["canary"]) if info.get("canary") else None
        vs = hv.classify(rr, img, canary, t)
    finally:
        tool.close()
        shutil.rmtree(tmp, ignore_errors=True)
    sigs = [v.signature(name) for v in vs]
    log(f"[error] {rr.error}")
    for v in vs:
        log(f"verdict {v.kind}: {v.message}")
    if info["signature"] in sigs:
        log(f"REPRODUCED: {info['signature']}")
        return 0
    # a crash's frames may be signed anew (a recursion: vfz.hostile.backtrace), the
    # program and signal kept
    finer = [v for v in vs if v.kind == info["kind"] and (
        v.message.startswith(info["message"]) or
        v.kind == "crash" and v.message.split(" in ")[0] == info["message"].split(" in ")[0])]
    if resign and finer:
        old, v = info["signature"], finer[0]
        info.update(message=v.message, signature=v.signature(name), evidence=v.evidence[:4000])
        with open(os.path.join(d, "diff.txt")) as f:
            diff = f.read()
        for fn, text in (("finding.json", json.dumps(info, indent=1)), ("README.md", readme(info, diff))):
            with open(os.path.join(d, fn + ".tmp"), "w") as f:
                f.write(text)
            os.replace(os.path.join(d, fn + ".tmp"), os.path.join(d, fn))
        log(f"REPRODUCED, RESIGNED: {old} -> {info['signature']}")
        return 0
    log(f"NOT REPRODUCED: expected {info['signature']}, got {sigs or 'no verdict'}")
    return 1


def reminimise(d, budget_s=600.0, log=print):
    """Minimise a finding again (byte ranges of hostile-full.img against
    seed.img, with the finding's reader and limit; a hang confirmed at twice
    the limit) and rewrite hostile.img.xz, diff.txt and finding.json's
    ranges. -> 0 done, 1 it no longer reproduces, 2 cannot run."""
    try:
        with open(os.path.join(d, "finding.json")) as f:
            info = json.load(f)
        seed_img = lzma.decompress(open(os.path.join(d, "seed.img.xz"), "rb").read())
        full = lzma.decompress(open(os.path.join(d, "hostile-full.img.xz"), "rb").read())
    except (OSError, ValueError, KeyError, lzma.LZMAError) as e:
        log(f"hostile: error: {d} is not a hostile finding: {e}")
        return 2
    patches = [hm.Patch(p["offset"], b"\0" * p["length"], p["field"]) for p in info["patches"]]
    canary = bytes.fromhex(info["canary"]) if info.get("canary") else None
    cfg, why = replay_cfg(info)
    if cfg is None:
        log(f"CANNOT RUN: {why}")
        return 2
    reader = hostile_tx.tool(info["reader"], **cfg)
    tmp = tempfile.mkdtemp(prefix="vfz-hostile-min-")
    hook = proc.crash_hook(hbt.gdb_backtrace)
    hook.__enter__()
    try:
        path = os.path.join(tmp, "hostile.img")
        t = info["timeout"]
        confirm = hostile_min.Checker(reader, info["reader"], info["signature"], canary,
                                      t * (2 if info["kind"] == "hang" else 1), path)
        if not confirm(full):
            log(f"NOT REPRODUCED: {info['signature']} on hostile-full.img")
            return 1
        check = hostile_min.Checker(reader, info["reader"], info["signature"], canary, t, path)
        h = {"patches": [], "tail": b"", "image": full}
        small = hostile_min.minimise(seed_img, h, check, budget_s=budget_s, max_reads=200)
        if small != full and info["kind"] == "hang" and not confirm(small):
            log("hostile: the minimised volume did not hang at twice the limit: kept the full one")
            small = full
    finally:
        hook.__exit__(None, None, None)
        reader.close()
        shutil.rmtree(tmp, ignore_errors=True)
    diff = diff_text(seed_img, small, patches)
    info["ranges"] = [{"offset": o, "length": n, "fields": field_names(patches, o, n)}
                      for o, n in hm.byte_ranges(seed_img, small)]
    for name, data in (("hostile.img.xz", lzma.compress(small)), ("diff.txt", diff.encode()),
                       ("finding.json", json.dumps(info, indent=1).encode()),
                       ("README.md", readme(info, diff).encode())):
        with open(os.path.join(d, name + ".tmp"), "wb") as f:
            f.write(data)
        os.replace(os.path.join(d, name + ".tmp"), os.path.join(d, name))
    log(f"hostile: {d}: {len(info['ranges'])} byte ranges: "
        + "; ".join(", ".join(r["fields"]) for r in info["ranges"]))
    return 0


# ------------------------------------------------------------------ export hook
def is_hostile_finding(path):
    return os.path.isfile(os.path.join(path, "finding.json")) and \
        os.path.isfile(os.path.join(path, "hostile.img.xz"))


def export_case(path):
    """The exporter's hook (vfz/export/hostile.py): a hostile finding as a dict
    {impl (the family, whose reproducer template writes the tool's part of
    run.sh), reader, kind, signature, image (bytes), readme (text with the
    hexdump of the mutated fields), ops (a writer's finding: the
    op-script the tool applies to the volume, else None)}; a transformer's
    finding adds guard (sh text appending the guard to "$IMG": the tool gets
    what the campaign gave it) and regions (the protected byte ranges of
    that file, vfz.hostile.transform.regions)."""
    info, img = load_finding(path)
    with open(os.path.join(path, "diff.txt")) as f:
        diff = f.read()
    fam = oracles.entry(info["reader"]).family if info["reader"] in oracles.entries() else info["reader"]
    if info.get("role") == "transformer":
        # the tool gets the volume and the guard (its command is in the evidence)
        return {"impl": fam, "reader": info["reader"], "kind": info["kind"], "signature": info["signature"],
                "image": img, "guard": hostile_tx.GUARD_SH, "readme": readme(info, diff), "hexdump": diff,
                "ops": None, "regions": hostile_tx.regions(
                    img, oracles.oracle_class(info["reader"], "transformer"))}
    return {"impl": fam, "reader": info["reader"], "kind": info["kind"], "signature": info["signature"],
            "image": img, "readme": readme(info, diff), "hexdump": diff, "ops": info.get("ops")}
