"""Findings: stable signatures of divergences and their on-disk form.

A divergence is one disagreement seen while checking an op-script: a
writer that failed or returned another per-op result than the model, or a
reader whose verdict (vfz.check.verdict.verdict_for) is not ok. Its signature is
the KIND of disagreement, never raw names or random bytes:

    role     writer | reader | fuzz | harness (the model or a verdict raised)
    oracle   the reader (dosfsck, mtools, kernel, vfat-check, ...) or the
             writer family (core, kernel, mtools, kernel-nodual, ...)
    verdict  failed | differs | complains | result
    kind     normalised detail: complaint kind, differing listing field,
             "EEXIST->ok" for op results, normalised error message, or a
             named cause whatever the op and names (fsck-v1-lfn-cross,
             v3-dummy-05: vfz.model EXCEPTIONS; op and cls are then "-")
    op       op kind involved (create, rename, ...) or "-"
    cls      docs/op-script.md name class of the name involved or "-"

The signature hash (12 hex digits of SHA-1 over the sorted JSON of these
fields) names the finding directory <workdir>/findings/<hash>/:

    ops.txt          minimised op-script (same signature)
    ops.orig.txt     the op-script as first found
    before-<fs>.img  the fresh image every writer started from (sparse)
    after-<writer>.img  the image each writer left (minimised script)
    raw/<writer>.<oracle>.txt   each oracle's raw output
    crash.bin, crash.min.bin    (fuzz_ops findings) the input and its
                     libFuzzer-minimised form; ops.txt is the latter converted
    summary.txt      one line
    finding.json     signature, fields, writer, fs, seeds, details, timings

Directories are written under a dot-temp name and renamed into place, so
a reader (or a killed run) never sees a partial finding.
"""
import hashlib
import json
import os
import re
import shutil
import time

RESERVED = {"CON", "PRN", "AUX", "NUL", "CLOCK$"} | {f"COM{i}" for i in range(10)} | \
    {f"LPT{i}" for i in range(10)}
INVALID_CHARS = set('*?<>|":\\')
LONG_ONLY = set("+,;=[]")
SHORT_OK = set("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'()-@^_`{}~")
SIG_KEYS = ("role", "oracle", "verdict", "kind", "op", "cls")


def _utf16_len(s):
    return sum(2 if ord(c) > 0xFFFF else 1 for c in s)


def _is_cjk(c):
    o = ord(c)
    return 0x2E80 <= o <= 0x9FFF or 0xAC00 <= o <= 0xD7AF or 0xF900 <= o <= 0xFAFF or 0xFF00 <= o <= 0xFFEF


def name_class(leaf):
    """The docs/op-script.md name class of one path component (vfat gen's names)."""
    if not leaf:
        return "-"
    if any(c in INVALID_CHARS or ord(c) < 0x20 or ord(c) == 0x7F for c in leaf):
        return "invalid"
    if any(ord(c) > 0xFFFF for c in leaf):
        return "astral"
    if leaf[0] in "\u00e5\u00c5\u03c3\u03a3":     # 0xE5 in Latin-1 / CP437 (and upper case)
        return "e5"
    if leaf.split(".")[0].rstrip(" ").upper() in RESERVED:
        return "reserved"
    n = _utf16_len(leaf)
    if n >= 254:
        return "n255"
    if any(_is_cjk(c) for c in leaf):
        return "cjk"
    if any(ord(c) > 0x7F for c in leaf):
        return "latin"
    if n > 12:
        return "slot13" if n % 13 in (0, 1, 12) else "long"
    if leaf.endswith("."):
        return "traildots"
    if leaf.startswith(".") or leaf.count(".") > 1:
        return "dots"
    if " " in leaf:
        return "spaces"
    if any(c in LONG_ONLY for c in leaf):
        return "longchars"
    base, dot, ext = leaf.partition(".")
    if 1 <= len(base) <= 8 and len(ext) <= 3 and all(c in SHORT_OK for c in base + ext):
        return "upper83"
    if 1 <= len(base) <= 8 and len(ext) <= 3 and all(c.upper() in SHORT_OK for c in base + ext):
        return "lower83"
    return "long"


def leaf_of(path):
    return (path or "").rstrip("/").rpartition("/")[2]


_NUM = re.compile(r"0x[0-9a-fA-F]+|\d+")
_QUOTED = re.compile(r"\"[^\"]*(\"|$)|'[^']*'|`[^`]*'")
_PATH = re.compile(r"(?<![\w])/[^\s:,]*")


def normalise(msg, limit=80):
    """A message with names, paths and numbers taken out."""
    s = _QUOTED.sub("Q", msg or "")
    s = _PATH.sub("P", s)
    s = _NUM.sub("N", s)
    s = re.sub(r"\s+", " ", s).strip()
    return s[:limit]


def sig_hash(fields):
    key = json.dumps({k: fields.get(k, "-") for k in SIG_KEYS}, sort_keys=True, ensure_ascii=True)
    return hashlib.sha1(key.encode()).hexdigest()[:12]


def sig_text(fields):
    return " ".join(f"{k}={fields.get(k, '-')}" for k in SIG_KEYS)


# ---------------------------------------------------------------- on disk
def findings_dir(workdir):
    return os.path.join(workdir, "findings")


def known_signatures(workdir):
    d = findings_dir(workdir)
    if not os.path.isdir(d):
        return set()
    return {n for n in os.listdir(d) if not n.startswith(".") and
            os.path.isfile(os.path.join(d, n, "finding.json"))}


def clean_temp(workdir):
    """Remove leftovers of an interrupted write (never visible as findings)."""
    d = findings_dir(workdir)
    if os.path.isdir(d):
        for n in os.listdir(d):
            if n.startswith(".tmp-"):
                shutil.rmtree(os.path.join(d, n), ignore_errors=True)


def sparse_copy(src, dst):
    """Copy an image keeping holes where it is zero (images are mostly empty)."""
    blk = 1 << 16
    zero = bytes(blk)
    with open(src, "rb") as f, open(dst, "wb") as g:
        while True:
            b = f.read(blk)
            if not b:
                break
            if b == zero[:len(b)]:
                g.seek(len(b), 1)
            else:
                g.write(b)
        g.truncate()


def write_finding(workdir, h, info, files, images, raws, binary=None):
    """Atomically create <workdir>/findings/<h>/.
    info: finding.json dict (must have "summary"); files: {name: text};
    images: {name: src path}; raws: {name: text} under raw/."""
    root = findings_dir(workdir)
    os.makedirs(root, exist_ok=True)
    final = os.path.join(root, h)
    if os.path.exists(final):
        return final
    tmp = os.path.join(root, f".tmp-{h}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "raw"))
    try:
        for name, text in files.items():
            with open(os.path.join(tmp, name), "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(text)
        for name, data in (binary or {}).items():
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)
        for name, src in images.items():
            if src and os.path.isfile(src):
                sparse_copy(src, os.path.join(tmp, name))
        for name, text in raws.items():
            safe = re.sub(r"[^A-Za-z0-9_.+-]", "_", name)
            with open(os.path.join(tmp, "raw", safe + ".txt"), "w", encoding="utf-8",
                      errors="replace") as f:
                f.write(text or "")
        with open(os.path.join(tmp, "summary.txt"), "w", encoding="utf-8") as f:
            f.write(info["summary"].replace("\n", " ") + "\n")
        info = dict(info, written=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        with open(os.path.join(tmp, "finding.json"), "w", encoding="utf-8") as f:
            json.dump(info, f, indent=1, ensure_ascii=False)
            f.write("\n")
        os.rename(tmp, final)
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def load_finding(path):
    with open(os.path.join(path, "finding.json"), encoding="utf-8") as f:
        return json.load(f)


def well_formed(path):
    """'' if the directory is a complete finding, else what is wrong."""
    need = ["ops.txt", "ops.orig.txt", "summary.txt", "finding.json"]
    for n in need:
        if not os.path.isfile(os.path.join(path, n)):
            return f"missing {n}"
    try:
        info = load_finding(path)
    except ValueError as e:
        return f"finding.json: {e}"
    for k in ("signature", "fields", "summary"):
        if k not in info:
            return f"finding.json lacks {k}"
    if info["signature"] != os.path.basename(path.rstrip("/")):
        return "directory name is not the signature"
    if sig_hash(info["fields"]) != info["signature"]:
        return "signature does not match its fields"
    with open(os.path.join(path, "summary.txt"), encoding="utf-8") as f:
        if len(f.read().strip().splitlines()) != 1:
            return "summary.txt is not one line"
    return ""
