"""Op-scripts the campaign generates: `vfat gen` parameters from the campaign seed, and enrichment with the ops where bugs live."""
import hashlib

from vfz import opscript
from vfz.errors import UsageError
from vfz.proc import run

GEN_OPS = (3, 24)


def iter_params(seed, i):
    """(gen seed, number of ops, fs) of iteration i: a pure function."""
    h = hashlib.sha256(f"{seed}:{i}".encode()).digest()
    gseed = int.from_bytes(h[:6], "little")
    nops = GEN_OPS[0] + h[6] % (GEN_OPS[1] - GEN_OPS[0] + 1)
    return gseed, nops, h[7]


def iter_meta(seed, i):
    """Does iteration i's script draw the second grammar too (`vfat gen
    --meta`: truncate, chattr, touch, label)? One in two, a pure function
    of the campaign seed and i. A writer that does not support an op is
    sent the script without it (vfz.check.checker.ops_for)."""
    return hashlib.sha256(f"{seed}:{i}".encode()).digest()[8] & 1 == 1


def gen_script(vfat, gseed, nops, names=None, meta=False):
    argv = [vfat, "gen", "--seed", str(gseed), "--ops", str(nops)]
    if names:
        argv += ["--names", names]
    if meta:
        argv.append("--meta")
    p = run(argv, timeout=30)
    if p.rc != 0:
        raise UsageError(f"vfat gen failed: {(p.errtext or p.error or '').strip()[:200]}")
    return opscript.parse(p.text)


# ---------------------------------------------------------------- script enrichment
def enrich(ops, rng, meta=False):
    """Append a few ops aimed at tricky semantics to a generated script:
    aliases that collide (siblings sharing the first 6 characters and the
    extension), case-only renames, renames onto an existing file, names of
    13*k characters, a name whose first byte is 0xE5 in CP437; with meta
    (a script of the second grammar), then a file made read-only and
    modified (written, truncated, renamed or unlinked). Random but seeded
    (rng), so a replay gives the same script."""
    made = [o for o in ops if o.kind in ("create", "mkdir")]
    files = [o.path for o in ops if o.kind == "create"]
    out = list(ops)
    n = 1 + rng.randrange(4)
    for _ in range(n):
        k = rng.randrange(7)
        parent = "/"
        if made and rng.randrange(2):
            parent = made[rng.randrange(len(made))].path.rpartition("/")[0] + "/"
        if k == 0 and made:
            src = made[rng.randrange(len(made))].path
            par, _, leaf = src.rpartition("/")
            base, dot, ext = leaf.rpartition(".") if "." in leaf[1:] else (leaf, "", "")
            stem = (base or leaf)[:6] or "x"
            for j in range(1 + rng.randrange(3)):
                sib = f"{stem}{'_-+ '[rng.randrange(4)]}{rng.randrange(100)}{dot}{ext[:3]}"
                out.append(opscript.Op("create", [f"{par}/{sib}", rng.randrange(600), rng.randrange(256)]))
        elif k == 1 and made:
            src = made[rng.randrange(len(made))].path
            par, _, leaf = src.rpartition("/")
            out.append(opscript.Op("rename", [src, f"{par}/{leaf.swapcase()}"]))
        elif k == 2 and len(files) >= 2:
            a, b = rng.sample(files, 2)
            out.append(opscript.Op("rename", [a, b]))
        elif k == 3:
            name = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(13 * (1 + rng.randrange(4))))
            out.append(opscript.Op("create", [parent + name, rng.randrange(3000), rng.randrange(256)]))
        elif k == 5 and len([o for o in made if o.kind == "mkdir"]) >= 2:
            dirs = [o.path for o in made if o.kind == "mkdir"]
            a, b = rng.sample(dirs, 2)
            out.append(opscript.Op("rename", [a, b + "/" + a.rpartition("/")[2]]))
        elif k == 4:
            for j in range(2):
                out.append(opscript.Op("create", [f"{parent}LongName{'ABC'[j]}{rng.randrange(9)}.txt",
                                                  rng.randrange(600), rng.randrange(256)]))
        else:
            out.append(opscript.Op("mkdir", [parent + "\u03c3" + str(rng.randrange(100))]))
    if meta and files:
        out += read_only_modified(files[rng.randrange(len(files))], rng)
    return campaign_renumber(out)


def read_only_modified(path, rng):
    """chattr r (with another letter now and then), then one op that
    modifies the file: what a read-only file answers (docs/op-script.md)."""
    k = rng.randrange(4)
    ops = [opscript.Op("chattr", [path, "r" + rng.choice(("", "h", "s", "a"))])]
    if k == 0:
        ops.append(opscript.Op("write", [path, rng.randrange(5000), 1 + rng.randrange(700), rng.randrange(256)]))
    elif k == 1:
        ops.append(opscript.Op("truncate", [path, rng.randrange(5000)]))
    elif k == 2:
        ops.append(opscript.Op("rename", [path, path + " ro"]))
    else:
        ops.append(opscript.Op("unlink", [path]))
    return ops


def campaign_renumber(ops):
    return [opscript.Op(o.kind, list(o.args), i + 1) for i, o in enumerate(ops)]
