"""Verdicts of the hostile campaign: did a reader misbehave on a hostile volume?

A reader that refuses a broken volume with an error message behaves
correctly; only evidence of misbehaviour is a verdict:

    crash   a tool died by a signal (SIGSEGV, SIGABRT: an assertion, SIGBUS,
            SIGFPE, SIGILL), or a sanitizer report (AddressSanitizer,
            UndefinedBehaviorSanitizer "runtime error:") in its output.
            Evidence: vfz.proc's "[rc=... killed by SIGxxx]" in the
            oracle's raw output or error, or the report's text.
    hang    one call of the tool did not answer within the per-image time
            limit and was killed: vfz.proc's "timeout after Ns" (a tool),
            FatFs "FatFs hung", the kernel VM's request timeout, U-Boot
            "no prompt within the time limit". The oracle restarts its
            process or VM for the next image (checked by the test). A glue
            walk that runs out of its budget (the kernel's "the walk spent
            its budget", GRUB's per-directory deadline on a directory loop)
            is not a hang: the tool answered every call.
    trap    FatFs: a WebAssembly trap or JavaScript exception ("fatfs: trap:");
            U-Boot: an exception dump, a reset (banner again), QEMU gone
            ("trap: U-Boot printed ...", "QEMU exited"; its time limits are
            hangs, its transfer/setup errors the glue's); the kernel: an
            Oops, BUG, WARNING, general protection fault, KASAN/UBSAN report
            or a Call Trace in its messages (a reader's, or a writer's:
            kernel_messages).
    overwrite  a transformer (fatsort, fsck.fat -a: vfz.hostile.transform) changed
            bytes it must leave alone: past the volume its boot sector
            declares (on a stick, the next partition), or a region its
            oracle declares it never writes (Transformer.untouched: fatsort's
            boot sector, reserved sectors and FATs; fsck.fat -a's reserved
            sectors but the boot, FSINFO and backup boot sectors). Evidence: the tool's
            command line and the changed ranges with their byte counts
            (rr.extra["writes"]); the message names the region.
    out-of-bounds  a user-space tool read or wrote outside the declared
            volume or the image file (vfz.hostile_bounds: the I/O trace of
            every command; one verdict per program, read/write, region and
            access size; records the oracle's io_exception hook attributes
            to a named trait of the tool are not verdicts). Evidence: the
            accesses with offset, sector, call and command.
    canary  a listed file's contents (sha256) equal the canary pattern: the
            reader returned bytes that lie past the volume the boot sector
            declares (see vfz.hostile.mutate.m_canary). Sound because the
            pattern (random per image, "VFZ!" + 28 bytes) occurs only past
            the declared end; only whole-canary contents are detected (a
            file whose chain leaves the volume halfway is not).

A crash of a tool that asserts (SIGABRT after "Assertion `...' failed")
names the assertion, so two assertions are two signatures. A transformer's
verdicts carry the named exception its oracle's hooks attribute them to
(rr.extra["exception"], e.g. "fatsort SIGSEGV [fatsort-long-set-3-clusters]"):
a known bug does not hide a new one of the same signal.

classify(rr, info) -> [Verdict]; a Verdict's signature (reader, kind,
normalised message) is what findings are deduplicated by.
"""
import hashlib
import re
from dataclasses import dataclass

from vfz.hostile import backtrace as hbt
from vfz.hostile import lastwords as hlw
from vfz.hostile import mutate as hm

SIGNAL = re.compile(r"killed by (SIG(?:SEGV|ABRT|BUS|FPE|ILL|TRAP|SYS|XCPU))")
SANITIZER = re.compile(r"(?:ERROR: AddressSanitizer: [\w-]+|runtime error: [^\n]{0,80}|"
                       r"ERROR: LeakSanitizer)")
ASAN_FRAME = re.compile(r"#\d+ 0x[0-9a-f]+ in (\w+)")
PROC_TIMEOUT = re.compile(r"\$ (\S+)[^\n]*\n\[rc=None timeout after ([\d.]+)s")
# glibc's own aborts: "*** stack smashing detected ***: terminated", "free(): invalid pointer"
GLIBC_ABORT = re.compile(r"\*\*\* ([^*\n]{1,60}) \*\*\*|^((?:free|malloc|realloc|munmap_chunk|double free|"
                         r"corrupted)[^\n]{0,50})$", re.M)
ASSERTION = re.compile(r"Assertion [`'](.{1,80}?)' failed")
KERNEL_TRAP = re.compile(r"(Oops|kernel BUG|BUG: [^\n]{0,60}|WARNING: [^\n]{0,80}|general protection fault|"
                         r"UBSAN: [^\n]{0,60}|KASAN: [^\n]{0,60}|Call Trace)")
HEX = re.compile(r"0x[0-9a-fA-F]+|\b[0-9a-f]{6,}\b")
NUM = re.compile(r"\d+")


@dataclass
class Verdict:
    kind: str          # crash | hang | trap | canary | overwrite | spread
    message: str       # what the evidence says, normalised for the signature
    evidence: str      # the line(s) it was recognised from

    def signature(self, reader):
        return f"{reader}|{self.kind}|{self.message}"


def norm(s, n=100):
    """Addresses, numbers and paths out of a message: one bug, one signature."""
    s = HEX.sub("X", s)
    s = NUM.sub("N", s)
    s = re.sub(r"/\S*/", "/", s)
    return re.sub(r"\s+", " ", s).strip()[:n]


def _text(rr):
    return f"{rr.error or ''}\n{rr.raw or ''}"


def crash(rr):
    t = _text(rr)
    m = SANITIZER.search(t)
    if m:
        frames = [f for f in ASAN_FRAME.findall(t[m.start():]) if not f.startswith(("__", "_start"))][:2]
        return Verdict("crash", norm(m.group(0), 60) + (" in " + "<".join(frames) if frames else ""),
                       t[m.start():m.start() + 2000])
    t = f"{rr.raw or ''}\n{rr.error or ''}"       # the raw's "$ argv" line names the program
    m = SIGNAL.search(t)
    if m:
        # which command: the "$ argv" line before it (vfz.proc's raw)
        cmd = t.rfind("$ ", 0, m.start())
        prog = t[cmd + 2:].split(None, 1)[0].rsplit("/", 1)[-1] if cmd >= 0 else "?"
        a = ASSERTION.search(t) if m.group(1) == "SIGABRT" else None
        g = GLIBC_ABORT.search(t) if m.group(1) == "SIGABRT" and not a else None
        what = f" assertion {norm(a.group(1), 60)}" if a else \
            f" ({norm(g.group(1) or g.group(2), 50)})" if g else ""
        # the gdb run's frames (vfz.hostile.backtrace): two crash sites of one
        # program and signal are two signatures
        nxt = t.find("\n$ ", m.end())
        bt = t.find("[backtrace]\n", m.end(), nxt if nxt >= 0 else len(t))
        fr = hbt.frames(t[bt:nxt if nxt >= 0 else len(t)]) if bt >= 0 else []
        what += " in " + "<".join(fr) if fr else ""
        return Verdict("crash", f"{prog} {m.group(1)}{what}", t[max(cmd, 0):m.end() + 200][:2000]
                       + (t[bt:bt + 1500] if bt >= 0 else ""))
    return None


def overwrite(rr):
    """A transformer's writes outside what it may write (vfz.hostile.transform)."""
    writes = (getattr(rr, "extra", None) or {}).get("writes")
    if not writes:
        return None
    from vfz.hostile import transform as hostile_tx
    cmd = next((ln for ln in (rr.raw or "").split("\n") if ln.startswith("$ ")), "")
    return Verdict("overwrite", f"changed bytes {writes[0]['region']}",
                   (cmd + "\n" if cmd else "") + hostile_tx.describe(writes))


UBOOT_QUIET_S = 1.0     # U-Boot printing less than this before the deadline: still answering


def hang(rr, timeout=None):
    err = rr.error or ""
    for m in PROC_TIMEOUT.finditer(rr.raw or ""):
        # a call cut short by what was left of a walk's budget is the glue's
        # limit, not the tool hanging: only a call given half the limit counts
        if timeout is None or float(m.group(2)) >= timeout / 2:
            return Verdict("hang", m.group(1).rsplit("/", 1)[-1] + " timeout", m.group(0))
    for pat, what in ((r"FatFs hung", "FatFs request timeout"), (r"fusefat hung", "fusefat request timeout"),
                      (r"no prompt within the time limit|the image's time limit ran out", "U-Boot no prompt"),
                      (r"^kernel VM: timeout", "kernel VM request timeout")):
        if re.search(pat, err):
            if "time limit ran out" in err and hlw.console_of(err).rstrip().endswith("=>"):
                # U-Boot at its prompt: every command answered, the glue's walk ran out of
                # the image's budget (a directory that holds itself, walked deeper and deeper)
                return None
            given = re.search(r"; ([\d.]+) s given, ([\d.]+) s quiet\)", err.split("; console:")[0])
            if given and timeout and float(given.group(1)) < timeout / 2 \
                    and float(given.group(2)) < UBOOT_QUIET_S:
                # the same walk cut in its last round trip: sent with less than half the
                # image's budget left, U-Boot still printing when it ran out
                # (uboot-hang-a50d5e7c75: 347 fatls, each answered); a hang is silent, or
                # has had its time (a loop printing "./ ../" in the first round trip)
                return None
            # signed by what the guest printed last (vfz.hostile.lastwords)
            if what == "U-Boot no prompt":
                verb = UBOOT_VERB.search(err.split("; console:")[0]) or re.search(r"\((\w[\w-]*) ", err)
                what += (f" during {verb.group(1)}" if verb else "") + " after: " + hlw.uboot_last(err)
            elif what.startswith("kernel"):
                what += " after: " + hlw.kernel_last(err)
            return Verdict("hang", what, err[:1500])
    return None


# U-Boot's "trap: ..." errors that are a trap (an exception dump, a reset,
# QEMU gone); its time limits are hangs (above), its other errors (setup,
# transfer disk, shell quoting) are the glue's
UBOOT_VERB = re.compile(r"\b(fat\w+|size|ls|load|save|rm|mkdir|mv|unlink)\b")    # the FAT command in the glue
UBOOT_TRAP = re.compile(r"U-Boot printed|QEMU exited|console is gone")


def uboot_message(err):
    """The signature part of a U-Boot trap: what happened and during which
    command, without the command's arguments (the path differs per image:
    "QEMU exited (fatls virtio 0:0 '/x'; echo ...)" -> "QEMU exited during
    fatls")."""
    why = err[6:].split("; console:")[0].strip()
    i = why.find(" (")
    if i >= 0 and why.endswith(")"):
        verb = (UBOOT_VERB.search(why[i + 2:]) or re.match(r"[\w-]*", why[i + 2:])).group(0)
        why = why[:i] + (f" during {verb}" if verb else "")
    return norm(why, 80)


def kernel_messages(rr):
    """The guest's kernel messages of a kernel oracle's answer, or None (not
    a kernel answer): a reader's are in extra["kmsg"], a writer's in the
    "[kmsg]" section that ends its raw output."""
    kmsg = (rr.extra or {}).get("kmsg") if hasattr(rr, "extra") else None
    if kmsg is None and "\n[kmsg]\n" in (rr.raw or ""):
        kmsg = [ln for ln in rr.raw.rsplit("\n[kmsg]\n", 1)[1].splitlines() if ln]
    return kmsg


def _trace(lines):
    """" < f1 < f2 < f3": the kernel's call trace (the first sure frames), or ""."""
    fr = hlw.kernel_trace(lines)
    return " < " + " < ".join(fr) if fr else ""


def trap(rr):
    err = rr.error or ""
    if err.startswith("trap: "):          # U-Boot (vfz/oracles/uboot/board.py)
        if UBOOT_TRAP.search(err):
            last = "" if "U-Boot printed" in err else " after: " + hlw.uboot_last(err)
            return Verdict("trap", uboot_message(err) + last, err[:2000])
        return None
    if re.search(r"^fatfs: trap: ", err):  # FatFs: a wasm trap or JS exception
        return Verdict("trap", norm(err.split("trap: ", 1)[1], 80), err[:2000])
    if re.search(r"^fatfs: FatFs process exited", err):   # node died without answering
        return Verdict("crash", "FatFs process exited", err[:2000])
    if err.startswith("kernel VM: "):      # the guest died or hung (vfz/oracles/kernel/vm.py)
        m = KERNEL_TRAP.search(err.split("; guest: ", 1)[1]) if "; guest: " in err else None
        if m or "Kernel panic" in err:
            line = err.split("; guest: ", 1)[1].split(" | ")[0] if m else "Kernel panic"
            return Verdict("trap", norm(line, 80) + _trace(err.split("; console tail: ")[-1].splitlines()),
                           err[:3000])
        if re.search(r"QEMU exited|QEMU died", err):
            return Verdict("trap", "kernel VM died", err[:3000])
    hits = []
    kmsg = kernel_messages(rr)
    for c in list(getattr(rr, "complaints", None) or ()) + list(kmsg or ()):
        if isinstance(c, str):
            m = KERNEL_TRAP.search(c)
            if m and kmsg is not None:
                hits.append((m.group(1), c))
    if hits:
        return Verdict("trap", norm(hits[0][1], 80) + _trace(kmsg), "\n".join(c for _, c in hits)[:4000])
    return None


def canary_hits(rr, image, pattern):
    """Listed files whose contents are all canary -> [path]; [] unless the
    canary lies wholly past the volume this image declares (image: its bytes,
    or a function that makes them, called only when a file reads as the canary)."""
    if pattern is None or not rr.listing:
        return []
    out, cache = [], {}
    for e in rr.listing:
        size, sha = e.get("size"), e.get("sha256")
        if e.get("type") != "file" or not size or not sha:
            continue
        if size not in cache:
            cache[size] = hashlib.sha256(hm.canary_bytes(pattern, 0, size)).hexdigest()
        if sha == cache[size]:
            out.append(e["path"])
    if not out:
        return []
    if callable(image):         # the image made only now that a file reads as the canary
        image = image()
    end = hm.declared_end(image)
    if end is None or image.find(pattern[:8]) < end:
        return []
    return out


def spread(rr):
    """Damage spread of a hostile write (vfz.hostile.writes): entries the ops did not name
    that read differently after them. Signed by what happened to them (lost, type, size,
    contents, appeared), never by their names; a spread the writer's oracle attributes to a
    named exception (extra["spread_exception"]) by that name alone: whatever it did to the
    entries, one cause is one signature."""
    extra = getattr(rr, "extra", None) or {}
    sp = extra.get("spread")
    if not sp:
        return None
    ev = "\n".join(f"{w} {p} (size {b} -> {a})" for w, p, b, a in sp[:40])
    exc = extra.get("spread_exception")
    if exc:
        return Verdict("spread", f"entries the ops did not name [{exc}]", ev)
    kinds = sorted({w for w, *_ in sp})
    return Verdict("spread", "entries the ops did not name: " + ",".join(kinds), ev)


def out_of_bounds(rr):
    """The I/O-bounds oracle's verdicts (vfz.hostile_bounds put them in extra["io"])."""
    io = (getattr(rr, "extra", None) or {}).get("io") or {}
    return [Verdict("out-of-bounds", m, e) for m, e in io.get("verdicts", ())]


def classify(rr, image=None, pattern=None, timeout=None):
    """Every verdict the answer gives evidence of (usually none)."""
    out = [v for v in (crash(rr), hang(rr, timeout), trap(rr), overwrite(rr), spread(rr)) if v] + \
        out_of_bounds(rr)
    exc = (getattr(rr, "extra", None) or {}).get("exception")
    if exc:
        for v in out:
            v.message += f" [{exc}]"
    hits = canary_hits(rr, image, pattern) if image is not None else []
    if hits:
        out.append(Verdict("canary", "file contents read past the declared volume",
                           "canary contents: " + ", ".join(hits[:5])))
    return out
