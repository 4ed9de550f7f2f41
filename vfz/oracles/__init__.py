"""Oracles: one module per independent implementation, one contract.

A reader takes an image and answers with a canonical listing (see
vfz/listing.py), structured complaints (checkers), its raw output
and an error string when it could not run (timeout, crash, unusable image).
A writer applies an op-script (a list of vfz.opscript.Op) to an image in
place and answers with one result per op ("ok" or an errno name such as
"EEXIST"), so outcomes can be compared across writers.

A transformer rewrites an image in place (fatsort, fsck.fat -a) and the same
tree is expected after it.

A formatter makes an empty volume of a requested geometry (vfz.geometry:
FAT type, size, cluster and sector size, FAT count, reserved sectors, root
entries) in a file and says the exact command it ran, so that a finding
replays the same volume. Every reader reads each formatted volume before
any writer runs: a disagreement there is the formatter's or the reader's.

The verdict (ok | differs | complains | failed) is not decided here: the
driver compares each answer with the model's expected tree (vfz.model).

The registry: every oracle module (MODULES) declares ENTRIES, one Entry per
registered name with its traits (roles, family, the model profile that
predicts its writes, names mode, shortname rule, what it supports, what it
needs installed, its cost), EXCEPTIONS, its NamedExceptions with their
evidence, and EXPORTS, its reproducer templates ({family: module}, the
contract in vfz/oracles/repro.py). Drivers read traits, hooks and templates
from here; nothing outside an oracle's own module tests that oracle's name.
The contract is docs/oracles.md.
"""
from dataclasses import dataclass, field
import functools
import importlib
import time



@dataclass
class ReadResult:
    oracle: str
    listing: list = None          # canonical entries, None if it did not read
    complaints: list = field(default_factory=list)  # one string each
    raw: str = ""                 # everything the tool printed, for reports
    error: str = None             # why it failed (timeout, crash, ...)
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)   # oracle-specific (dmesg, repair probe)


@dataclass
class WriteResult:
    oracle: str
    results: list = field(default_factory=list)  # per op: "ok" or errno name
    raw: str = ""
    error: str = None
    seconds: float = 0.0


class Hooks:
    """The named exceptions and judgements an oracle class may define
    (static: they need no running tool). Defaults: no exception."""

    @staticmethod
    def name_exception(expected_leaf, actual_leaf):
        """The named exception explaining that this oracle shows (reader) or
        stores (writer) a name component differently, else None."""
        return None

    @staticmethod
    def fresh_exceptions(geo, rr, image=None):
        """What this oracle's named exceptions explain of a reader's answer rr
        on a formatter's fresh volume of geometry geo (in the file image):
        [(name, [complaint lines explained])]; a failed read is explained when
        its rr.error is among the lines. A reader explains its own answers; a
        formatter what its volumes make readers say. Default: nothing."""
        return []

    @staticmethod
    def explain(ev):
        """The named exception that explains a whole divergence, from its
        evidence (vfz.check.checker.Evidence), else None; or (name, verdict) to
        file it under another verdict."""
        return None

    @classmethod
    def hostile_cfg(cls, asan_bin=None):
        """The constructor cfg the hostile campaign gives this oracle
        (vfz/hostile/): what it leaves out per image, and with asan_bin (the
        bin/ of scripts/build-asan-peers.sh's output) its sanitizer build's
        binaries. Default: none."""
        return {}

    @staticmethod
    def io_exception(o, head, declared, size):
        """The named exception of this tool that explains one access outside
        the volume or the image (a vfz.iobounds.OutOfBounds; head: the image's
        first 512 bytes, declared: the volume's bytes, size: the file's), else
        None: vfz.hostile_bounds then gives an out-of-bounds verdict."""
        return None


class Reader(Hooks):
    name = "?"
    glue = None          # how errors of the glue name it (default: the oracle's name)
    # the listing fields beyond the canonical keys (docs/listing.md: attr,
    # mtime, atime, crtime, crtime_ns) this reader shows; each image it reads
    # is held against the core's listing on them (vfz.check.meta)
    shows = ()

    @staticmethod
    def shown(field, value):
        """The part of a field's value this reader can show: its mask,
        documented where the reader defines it. Default: all of it."""
        return value

    def read(self, image, timeout=30.0):
        """The answer of _read(image, timeout, r), timed; an exception of the
        glue is the answer's error, never the harness's crash."""
        r = ReadResult(self.name)
        with Timer() as t:
            try:
                self._read(image, timeout, r)
            except Exception as e:
                r.error = f"{self.glue or self.name} reader: {type(e).__name__}: {e}"
                r.listing = None
        r.seconds = t.seconds
        return r

    def _read(self, image, timeout, r):
        raise NotImplementedError

    def read_many(self, images, timeout=30.0):
        """Batch form; oracles with a costly start (the kernel VM) override."""
        return [self.read(img, timeout) for img in images]

    def close(self):
        pass

    @staticmethod
    def meta_mask(key, value):
        """A meta key's value (vfz.listing.META_KEYS) as far as this reader
        can show it; both sides of a comparison pass through it (mdir
        shows times to the minute). Default: all of it."""
        return value

    @staticmethod
    def split_ambiguous(expected, actual, used):
        """Entries this reader cannot tell apart, compared apart: ->
        (expected rest, actual rest, None or ([(sign, path, type)], counts_differ))."""
        return expected, actual, None

    @staticmethod
    def expectations(writer=None, m=None, image=None, fat_bits=16, core_listing=None):
        """What a checker must report about an image (its judge's input)."""
        return None

    @staticmethod
    def judge(r, expected, used):
        """A checker's complaints against expectations -> (complains?, lines)."""
        return bool(r.complaints), list(r.complaints)

    @staticmethod
    def parse_complaint(c):
        """One complaint -> (kind, path or None) of its finding signature."""
        return None, None

    @classmethod
    def complaint_kinds(cls, ev, most=3):
        """The divergences of a 'complains' verdict -> [(kind, path)], one per
        kind, at most `most`."""
        from vfz import findings
        out, seen = [], set()
        for c in ev.rr.complaints:
            kind, p = cls.parse_complaint(c)
            if kind is None:
                kind, p = findings.normalise(c, 60), None
            if kind in seen:
                continue
            seen.add(kind)
            out.append((kind, p))
            if len(seen) >= most:
                break
        return out


class Writer(Hooks):
    name = "?"
    glue = None

    def apply(self, image, ops, timeout=60.0):
        """The answer of _apply(image, ops, timeout, w), timed; an exception
        of the glue is the answer's error."""
        w = WriteResult(self.name)
        with Timer() as t:
            try:
                self._apply(image, ops, timeout, w)
            except Exception as e:
                w.error = f"{self.glue or self.name} writer: {type(e).__name__}: {e}"
        w.seconds = t.seconds
        return w

    def _apply(self, image, ops, timeout, w):
        raise NotImplementedError

    def close(self):
        pass

    @staticmethod
    def result_exception(op, expected, actual):
        """The named exception explaining an op result actual != expected."""
        return None

    @staticmethod
    def known_failure(ev):
        """A known failure of this writer behind its first divergence ->
        (index of the op it starts at, name), else None: the readers then
        check the script cut before that op."""
        return None


class Transformer(Hooks):
    """Rewrites an image in place; the same tree is expected after it."""
    name = "?"

    def transform(self, image, timeout=60.0):
        """-> WriteResult (results empty; error when it failed)."""
        raise NotImplementedError

    @staticmethod
    def failure_exception(wr):
        """The named exception that explains the failed transform wr (its
        error and raw output, which the transform may annotate with what it
        saw in the image before it ran), else None."""
        return None

    @staticmethod
    def untouched(image):
        """[(start, stop, label)] byte ranges of image (bytes) this tool
        never writes on any volume, beyond the bytes past the declared end
        (which no transformer may write): the hostile campaign checks them
        (vfz/hostile/transform.py). Default: none."""
        return []

    def close(self):
        pass


@dataclass
class FormatResult:
    oracle: str
    argv: list = field(default_factory=list)    # the exact command(s) run, for replay and reports
    raw: str = ""
    error: str = None            # why no volume was made ("unsupported: ..." when the
                                 # geometry asks for what this formatter cannot do)
    seconds: float = 0.0


class Formatter(Hooks):
    """Makes an empty volume of a geometry (vfz.geometry.Geometry) in a file."""
    name = "?"
    # the geometry fields this formatter can honour beyond FAT type and size
    # (any of vfz.geometry.KEYS and "cluster"); a geometry asking for another
    # is refused as unsupported, never silently made otherwise
    accepts = frozenset()
    fats_types = frozenset({12, 16, 32})

    def unsupported(self, geo):
        """Why this formatter cannot make geo, else None."""
        if geo.fat not in self.fats_types:
            return f"FAT{geo.fat}"
        asked = [k for k in ("cluster", "sector", "fats", "reserved", "root") if getattr(geo, k)]
        extra = [k for k in asked if k not in self.accepts]
        return ", ".join(extra) or None

    def format(self, image, geo, timeout=60.0):
        r = FormatResult(self.name)
        why = self.unsupported(geo)
        if why:
            r.error = f"unsupported: {self.name} cannot make {why} ({geo.spec()})"
            return r
        with Timer() as t:
            try:
                with open(image, "wb") as f:
                    f.truncate(geo.size)
                self._format(image, geo, timeout, r)
            except Exception as e:
                r.error = f"{self.name} formatter: {type(e).__name__}: {e}"
        r.seconds = t.seconds
        return r

    def _format(self, image, geo, timeout, r):
        raise NotImplementedError

    def close(self):
        pass


class Timer:
    def __enter__(self):
        self.t0 = time.monotonic()
        return self

    def __exit__(self, *a):
        self.seconds = time.monotonic() - self.t0


# ---------------------------------------------------------------- registry
# One line per oracle module; a module is imported when the registry is
# first read (cheap: no tool runs at import), its classes when an oracle
# is instantiated.
MODULES = (
    "vfz.oracles.core",
    "vfz.oracles.vfatcheck",
    "vfz.oracles.dosfsck",
    "vfz.oracles.mtools",
    "vfz.oracles.sevenzip",
    "vfz.oracles.grub",
    "vfz.oracles.kernel",
    "vfz.oracles.sleuthkit",
    "vfz.oracles.fatcat",
    "vfz.oracles.fusefat",
    "vfz.oracles.fatsort",
    "vfz.oracles.fsck_repair",
    "vfz.oracles.uboot",
    "vfz.oracles.fatfs",
    "vfz.oracles.jsfatfs",
    "vfz.oracles.busybox",
    "vfz.oracles.vvfat",
)

OPS = frozenset({"mkdir", "create", "write", "rename", "unlink", "rmdir"})
# The second grammar (docs/op-script.md): no writer claims these unless its
# Entry says so (the default supports below leaves them out).
META_OPS = frozenset({"truncate", "chattr", "touch", "label"})


@dataclass(frozen=True)
class Entry:
    """One registered oracle name and its traits."""
    name: str
    family: str                      # one implementation, whatever its modes ("core", "kernel")
    reader: str = None               # "module:Class" for each role it has
    writer: str = None
    transformer: str = None
    formatter: str = None
    profile: object = "kernel"       # the model profile predicting its writes: a name or a dict of knobs
    names: str = "nodual"            # "dual": long names get 8.3 aliases that lookups match
    shortname: str = "win95"         # which names its writes store bare (vfz.model short_only)
    shorts: str = "alias"            # its short entries: "alias" (Linux rules), "own" (its own
                                     # aliases), "v1" / "v3" (the patch's dummies)
    unique: bool = False             # its dummies are unique within a directory
    twin: str = None                 # the writer whose bytes this one's must equal under the
                                     # same script (short entries, NT byte, attributes,
                                     # clusters, LFN counts): the kernel it reimplements
    seeded: bool = False             # takes the run's seed (dummies, fallback aliases)
    supports: frozenset = OPS | {"write-offset"}   # op kinds (and features) its writer does
    needs: tuple = ()                # Debian packages (and "npm:NAME") it needs installed
    cost: str = "process"            # "inproc" | "process" (a tool per image) | "vm"
    default: tuple = ()              # roles in which it is a default oracle: "reader",
                                     # "writer" (campaign and diff), "diff-writer" (diff only)
    label: str = None                # how reports name it ("7-Zip"); default: the name
    lists: bool = True               # as a reader: answers with a listing (False: a checker)
    independent: bool = True         # an implementation apart from the core under test
    fat_type: str = "bpb"            # how it decides FAT12/16/32: "bpb" (the boot sector's FAT32
                                     # fields, as Linux) or "count" (the cluster count, as Microsoft)
    iotrace: str = None              # how the I/O-bounds oracle sees its accesses (vfz.iobounds):
                                     # "preload" (a user-space tool under the trace library),
                                     # "own" (it records its sectors itself), None (not traced)
    builds: bool = False             # may start a long build when missing: only when named
    under_test: bool = False         # the build under test runs it (the C core's writers, its
                                     # reader and own checker): a Checker's vfat=BUILD is its binary
    unread: bool = False             # no reader reads its writer's images: it writes to be held
                                     # against its twin (byte for byte) and to be watched (core-asan)
    sanitized: bool = False          # the build under test's ASan build runs it: a Checker's
                                     # asan_vfat (default build-asan/vfat) is its binary
    medium: str = "fat"              # what its writer's images are and its reader reads: "fat" a
                                     # FAT volume; "dir" the archive of the host directory vvfat
                                     # wrote back (kernel-vvfat). A reader reads a writer's image
                                     # only when their media agree (reads())

    @property
    def title(self):
        return self.label or self.name

    @property
    def roles(self):
        return tuple(r for r in ("reader", "writer", "transformer", "formatter") if getattr(self, r))


@dataclass(frozen=True)
class NamedException:
    """A known, catalogued bug or design difference of one implementation,
    recognised from evidence (never a blanket tolerance)."""
    name: str
    oracle: str                      # family
    side: str                        # "reader" | "writer" | "transformer"
    reason: str
    evidence: str = ""               # how it is recognised
    bug: str = None                  # anchor in reports/bugs.md when it is a bug


@functools.lru_cache(maxsize=None)
def _modules():
    return tuple(importlib.import_module(m) for m in MODULES)


@functools.lru_cache(maxsize=None)
def entries():
    """name -> Entry, in MODULES order."""
    out = {}
    for mod in _modules():
        for e in getattr(mod, "ENTRIES", ()):
            if e.name in out:
                raise ValueError(f"oracle {e.name!r} registered twice ({mod.__name__})")
            out[e.name] = e
    return out


def exceptions():
    """Every NamedException of every oracle module (one name may be an
    exception of more than one implementation: v3-dummy-05 of 7-Zip and GRUB)."""
    return [x for mod in _modules() for x in getattr(mod, "EXCEPTIONS", ())]


@functools.lru_cache(maxsize=None)
def exporters():
    """family -> the dotted module of its reproducer template (every oracle
    module's EXPORTS, in MODULES order)."""
    out = {}
    for mod in _modules():
        for fam, path in getattr(mod, "EXPORTS", {}).items():
            if fam in out:
                raise ValueError(f"reproducer template of {fam!r} declared twice ({mod.__name__})")
            out[fam] = path
    return out


def exporter(family):
    """The reproducer template module of family (imported; the contract is
    vfz/oracles/repro.py); KeyError when it has none."""
    path = exporters().get(family)
    if path is None:
        raise KeyError(f"no reproducer template for {family!r} (have: {', '.join(sorted(exporters()))})")
    return importlib.import_module(path)


def exception(name):
    """The NamedExceptions of that name (a list: one per implementation)."""
    return [x for x in exceptions() if x.name == name]


def entry(name):
    try:
        return entries()[name]
    except KeyError:
        raise KeyError(f"unknown oracle {name!r} (known: {', '.join(sorted(entries()))})") from None


def reads(reader, writer=None):
    """Does reader read writer's images (writer None: a FAT volume)? Their
    media agree, and the writer writes to be read (not unread)."""
    if writer and entry(writer).unread:
        return False
    return entry(reader).medium == (entry(writer).medium if writer else "fat")


def media_readers(writers):
    """The readers of the media other than FAT that writers write (kernel-vvfat's
    archives): a default reader list has none, so they are added for them."""
    media = {entry(w).medium for w in writers} - {"fat"}
    return [n for n, e in entries().items() if e.reader and e.medium in media]


def names(role, default=False):
    """Registered names with this role (only the default ones if default)."""
    return [n for n, e in entries().items()
            if getattr(e, role) and (not default or role in e.default)]


def __getattr__(attr):
    # READERS / WRITERS / TRANSFORMERS: name -> "module:Class", read from the registry
    role = {"READERS": "reader", "WRITERS": "writer", "TRANSFORMERS": "transformer",
            "FORMATTERS": "formatter"}.get(attr)
    if role is None:
        raise AttributeError(attr)
    return {n: getattr(e, role) for n, e in entries().items() if getattr(e, role)}


def _load(role, name, **cfg):
    return oracle_class(name, role)(name=name, **cfg)


def oracle_class(name, role):
    """The class registered for name in role (its hooks are static)."""
    e = entry(name)
    path = getattr(e, role)
    if not path:
        raise KeyError(f"{name} is not a {role} (it is: {', '.join(e.roles)})")
    mod, cls = path.split(":")
    return getattr(importlib.import_module(mod), cls)


def get_reader(name, **cfg):
    return _load("reader", name, **cfg)


def get_writer(name, **cfg):
    return _load("writer", name, **cfg)


def get_transformer(name, **cfg):
    return _load("transformer", name, **cfg)


def get_formatter(name, **cfg):
    return _load("formatter", name, **cfg)
