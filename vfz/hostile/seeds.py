"""Seed volumes of the hostile campaign (vfz/hostile/loop.py): the well-formed (or
fuzzer-damaged) images its mutations start from.

    corpus_seeds(dirs, vfat)   fuzz_image inputs: corpus/fuzz_image/ and any
                               grown corpus (--fuzz-corpus DIR). Both input
                               forms of the harness are decoded as it does
                               (harnesses/fuzz_image.c): a whole image after
                               the 16-byte header (byte 0 bit 7 clear), or
                               patch records over one of its four core-made
                               templates (bit 7 set; the template comes from
                               the same C function, vfat_fuzz_make_image,
                               through `vfat gen --from-input`).
    campaign_seeds(seed, ...)  what the differential campaign writes: its
                               pristine volumes (mkfs.fat, the checker's
                               FS_SPECS: FAT12 2M, FAT16 4M, FAT32 34M),
                               each written by each of its writers (default:
                               the campaign's default writers, core-dual,
                               core-v1, core-v3 and the kernel) with one
                               `vfat gen` script per FAT type, the ops each
                               writer supports (checker.ops_for), as the
                               campaign sends them. Cached per run seed.
    dir_seeds(d, seed)         images under DIR (*.img, *.img.xz; e.g. a
                               campaign's workdir, whose findings keep
                               before-<fs>.img and after-<writer>.img):
                               valid boot signature, at most MAX_DIR_SEEDS
                               of them, MAX_SEED_BYTES each and
                               MAX_DIR_BYTES in all, picked by the run seed,
                               duplicates (same bytes) once.
    layouts(seeds)             name -> hostile_mutate.Layout (a seed the
                               layout reader cannot walk is skipped, logged)
"""
import glob
import hashlib
import lzma
import os
import random
import subprocess
import tempfile

from vfz import REPO
from vfz.hostile import mutate as hm

HDR = 16
# fuzz_image's templates (header byte 0 bits 0-1) as fuzz_ops header bytes
# that select the same geometry (fuzzinput.h: bits 3-4 FAT type, 5-6 cluster)
TEMPLATES = {0: (0x00, "fat12-512"), 1: (0x08, "fat16-512"), 2: (0x10, "fat32-512"), 3: (0x40, "fat12-2048")}
MAX_DIR_SEEDS = 48
MAX_SEED_BYTES = 64 << 20
MAX_DIR_BYTES = 512 << 20
GEN_OPS = 14


def _vfat(vfat=None):
    return vfat or os.path.join(REPO, "build", "vfat")


def template(k, vfat=None, _cache={}):
    """fuzz_image's template k (bytes), made by the core's own
    vfat_fuzz_make_image; None when the core CLI is missing."""
    if k in _cache:
        return _cache[k]
    byte0, _ = TEMPLATES[k]
    with tempfile.TemporaryDirectory(prefix="vfz-hostile-tmpl-") as d:
        inp, img = os.path.join(d, "in"), os.path.join(d, "t.img")
        with open(inp, "wb") as f:
            f.write(bytes([byte0]))
        try:
            p = subprocess.run([_vfat(vfat), "gen", "--from-input", inp, "--image", img],
                               capture_output=True, timeout=60)
        except OSError:
            return None
        if p.returncode != 0 or not os.path.exists(img):
            return None
        with open(img, "rb") as f:
            _cache[k] = f.read()
    return _cache[k]


def decode_fuzz_image(data, vfat=None):
    """A fuzz_image input -> the image the harness opens (None: too short or
    no template). Patch records: (offset u16 x scale, length u8, bytes),
    scale 4 << (byte0 bits 2-4), clipped to the template, as the harness."""
    if len(data) < HDR:
        return None
    if not data[0] & 0x80:
        return data[HDR:]
    t = template(data[0] & 3, vfat)
    if t is None:
        return None
    img = bytearray(t)
    scale = 4 << ((data[0] >> 2) & 7)
    i = HDR
    while i + 3 <= len(data):
        off = (data[i] | data[i + 1] << 8) * scale
        n = min(data[i + 2], len(data) - i - 3)
        i += 3
        if off < len(img):
            img[off:off + n] = data[i:i + n][:len(img) - off]
        i += n
    return bytes(img)


def corpus_seeds(dirs=(), vfat=None, log=print, seed=0):
    """fuzz_image's corpus (corpus/fuzz_image/ and dirs) -> {name: image};
    images below 2 KiB (nothing to mutate) are left out. A grown corpus
    (dirs) holds thousands of inputs, each a whole volume once decoded: at
    most MAX_DIR_SEEDS of each dir and MAX_DIR_BYTES in all are taken,
    picked by the run seed, identical volumes once."""
    out, seen = {}, set()
    roots = [os.path.join(REPO, "corpus", "fuzz_image")] + list(dirs or ())
    for root in roots:
        files = sorted(f for f in glob.glob(os.path.join(root, "*")) if os.path.isfile(f))
        grown = root != roots[0]
        if grown:
            random.Random(f"{seed}:fuzz-corpus:{root}").shuffle(files)
        taken = total = 0
        for f in files:
            if grown and (taken >= MAX_DIR_SEEDS or total >= MAX_DIR_BYTES):
                break
            with open(f, "rb") as fh:
                raw = fh.read()
            img = decode_fuzz_image(raw, vfat)
            if img is None or len(img) < 2048:
                continue
            h = hashlib.sha1(img).digest()
            if h in seen:
                continue
            seen.add(h)
            taken, total = taken + 1, total + len(img)
            tag = "corpus" if not grown else "fuzz:" + os.path.basename(os.path.normpath(root))
            out[f"{tag}:{os.path.basename(f)}"] = img
        if grown:
            log(f"hostile: {taken} fuzz_image inputs from {root} ({len(files)} in it, {total >> 20} MiB)")
    return out


def campaign_writers():
    """The differential campaign's default writers."""
    from vfz import oracles
    return oracles.names("writer", default=True)


def campaign_seeds(seed, cache, writers=None, vfat=None, log=print):
    """{name: image}: each FAT type of the campaign, pristine (mkfs.fat) and
    as each writer leaves it after one generated script."""
    from vfz import oracles, opscript
    from vfz.check import checker
    from vfz.check import diff
    writers = campaign_writers() if writers is None else list(writers)
    os.makedirs(cache, exist_ok=True)
    out = {}
    for k, fs in enumerate(sorted(checker.FS_SPECS)):
        fat, size, cl = diff.parse_fs(checker.FS_SPECS[fs])
        base = os.path.join(cache, f"pristine-{fs}.img")
        if not os.path.exists(base):
            try:
                diff.mkfs(base + ".tmp", fat, size, cl)
            except Exception as e:
                log(f"hostile: seed pool {fs}: mkfs.fat failed: {e}")
                continue
            os.replace(base + ".tmp", base)
        with open(base, "rb") as f:
            out[f"pristine:{fs}"] = f.read()
        n = seed * 10 + k
        sp = os.path.join(cache, f"gen{n}.ops")
        if not os.path.exists(sp):
            p = subprocess.run([_vfat(vfat), "gen", "--seed", str(n), "--ops", str(GEN_OPS)],
                               capture_output=True)
            if p.returncode != 0:
                log(f"hostile: seed pool: vfat gen failed: {p.stderr.decode(errors='replace')[-200:]}")
                continue
            with open(sp + ".tmp", "wb") as f:
                f.write(p.stdout)
            os.replace(sp + ".tmp", sp)
        ops = opscript.load(sp)
        for wn in writers:
            img = os.path.join(cache, f"{wn}-{fs}-gen{n}.img")
            if not os.path.exists(img):
                tmp = img + ".tmp"
                with open(base, "rb") as f, open(tmp, "wb") as g:
                    g.write(f.read())
                try:
                    w = oracles.get_writer(wn)
                    try:
                        wr = w.apply(tmp, checker.ops_for(wn, ops), diff.WRITE_TIMEOUT)
                    finally:
                        w.close()
                    err = wr.error
                except Exception as e:
                    err = f"{type(e).__name__}: {e}"
                if err:
                    log(f"hostile: seed pool: {wn} on {fs}: {str(err)[:200]} (left out)")
                    os.unlink(tmp)
                    continue
                os.replace(tmp, img)
            with open(img, "rb") as f:
                out[f"{wn}:{fs}-gen{n}"] = f.read()
    return out


def dir_seeds(d, seed=0, log=print):
    """Images under d, bounded (see the module doc); names 'dir:<relpath>'."""
    paths = sorted(glob.glob(os.path.join(d, "**", "*.img*"), recursive=True))
    paths = [p for p in paths if p.endswith((".img", ".img.xz")) and os.path.isfile(p)]
    random.Random(f"{seed}:dir-seeds").shuffle(paths)
    out, seen, total = {}, set(), 0
    for f in paths:
        if len(out) >= MAX_DIR_SEEDS or total >= MAX_DIR_BYTES:
            break
        try:
            if not f.endswith(".xz") and os.path.getsize(f) > MAX_SEED_BYTES:
                continue
            with open(f, "rb") as fh:
                data = fh.read()
            if f.endswith(".xz"):
                data = lzma.decompress(data)
        except (OSError, lzma.LZMAError):
            continue
        if not (2048 <= len(data) <= MAX_SEED_BYTES and data[510:512] == b"\x55\xaa"):
            continue
        h = hashlib.sha1(data).digest()
        if h in seen:
            continue
        seen.add(h)
        total += len(data)
        out["dir:" + os.path.relpath(f, d)] = data
    log(f"hostile: {len(out)} seed images from {d} ({len(paths)} candidates, {total >> 20} MiB)")
    return out


def layouts(seeds, log=print):
    out = {}
    for name, data in seeds.items():
        try:
            out[name] = hm.Layout(data)
        except hm.SeedError as e:         # already broken: nothing to lay out
            log(f"hostile: seed {name} skipped: {e}")
        except Exception as e:            # a seed the layout reader cannot walk
            log(f"hostile: seed {name} skipped: {type(e).__name__}: {e}")
    return out
