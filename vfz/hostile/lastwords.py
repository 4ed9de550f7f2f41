"""What an emulated tool printed last, normalised for a signature (U-Boot, the kernel VM).

A hang or trap inside QEMU has no process to take a backtrace of; what
tells two such bugs apart is what the guest printed before it stopped
answering. Without it, every U-Boot hang was one finding ("U-Boot no
prompt"), so a directory loop's hang hid a boot sector's.

    uboot_last(err)     the last distinct lines the hanging command printed
                        (the console after its start marker), fatls entries
                        reduced to their kind ("<file>", "<dir>/"; "./" and
                        "../" kept: a directory loop prints them over and
                        over), numbers and addresses out; a listing that
                        loops (its last CYCLE lines all entries) by the
                        kinds its cycle prints, wherever the limit cut it;
                        "(nothing)" when the command printed nothing
    kernel_trace(lines) the kernel's call trace: the first frames after
                        "Call Trace:" that the unwinder is sure of (no "?"),
                        the reporting machinery (dump_stack, warn_slowpath,
                        __warn, report_bug, ...) left out
    kernel_last(err)    the last FAT or trap line of the guest's console
                        tail, "(quiet)" when there is none
"""
import ast
import re

LINES = 2
FRAMES = 3
KINDS = ("./", "../", "<dir>/", "<file>")
CYCLE = 12          # the lines a looping listing is judged by: several turns of a short cycle
MARKER = re.compile(r"@@VFZ\d+ -?\d+")
FATLS_FILE = re.compile(r"^\s*\d+\s+(\S.*)$")
FATLS_DIR = re.compile(r"^\s{4,}(\S.*)/$")
STAMP = re.compile(r"^\[\s*[\d.]+\]\s*")
FRAME = re.compile(r"^\s*(\?\s+)?([A-Za-z_][\w.]*)\+0x[0-9a-f]+/0x[0-9a-f]+")
MACHINERY = re.compile(r"^(dump_stack\w*|show_stack|__warn\w*|warn_slowpath\w*|report_bug|handle_bug|"
                       r"exc_invalid_op|asm_exc_\w+|do_error_trap|do_trap|__die\w*|die|oops_\w+|"
                       r"ubsan_\w+|__ubsan_\w+|kasan_\w+|__kasan_\w+|print_report|panic)$")
KERNEL_LINE = re.compile(r"FAT-fs|Kernel panic|BUG:|Oops|general protection|WARNING:|watchdog|"
                         r"hung_task|blocked for more than|RIP: 0010")


def _norm(s):
    s = re.sub(r"0x[0-9a-fA-F]+|\b[0-9a-f]{6,}\b", "X", s)
    s = re.sub(r"\d+", "N", s)
    return re.sub(r"\s+", " ", s).strip()[:60]


def console_of(err):
    """The console tail a board Trap carries ("...; console: '<repr>'") -> text."""
    i = err.rfind("; console: ")
    if i < 0:
        return ""
    try:
        return ast.literal_eval(err[i + len("; console: "):].strip())
    except (ValueError, SyntaxError):
        return err[i + len("; console: "):]


def _uboot_line(ln):
    ln = ln.strip("\r ").rstrip()
    if ln.strip() in ("./", "../"):
        return ln.strip()
    if FATLS_DIR.match(ln):
        return "<dir>/"
    if FATLS_FILE.match(ln):
        return "<file>"
    return _norm(ln)


def uboot_last(err, n=LINES):
    text = console_of(err)
    marks = list(MARKER.finditer(text))
    if marks:
        text = text[marks[-1].end():]
    lines = re.split(r"\r?\n", text)
    if not marks:
        lines = lines[1:]         # a console tail: its first line is cut anywhere
    lines = [ln for ln in lines if ln.strip() and "@@V" not in ln
             and not ln.startswith(("=> ", "virtio read", "run "))]
    norm = [x for x in (_uboot_line(x) for x in lines) if x]
    cycle = norm[-CYCLE:]
    if cycle and all(x in KINDS for x in cycle):
        # a listing that loops ends anywhere in its cycle: every kind the cycle prints, in one
        # order, not the last n lines of wherever the limit cut it ("../ | <file>" at 30 s,
        # "./ | <file>" at 60 s for one directory)
        return " | ".join(sorted(set(cycle), key=KINDS.index))
    out = []
    for ln in reversed(norm):
        if ln not in out:
            out.insert(0, ln)
            if len(out) >= n:
                break
    return " | ".join(out) if out else "(nothing)"


def kernel_trace(lines, n=FRAMES):
    out, inside = [], False
    for ln in lines or ():
        ln = STAMP.sub("", ln)
        if "Call Trace:" in ln:
            if out:
                break             # the first trace only
            inside = True
            continue
        if not inside:
            continue
        m = FRAME.match(ln)
        if not m:
            if out and not ln.strip().startswith(("<", "RIP", "R", "?")):
                break
            continue
        if m.group(1) or MACHINERY.match(m.group(2)):
            continue
        out.append(m.group(2))
        if len(out) >= n:
            break
    return out


def kernel_last(err):
    tail = err.split("; console tail: ", 1)[1] if "; console tail: " in err else ""
    lines = [STAMP.sub("", ln.strip()) for ln in tail.splitlines()]
    hits = [ln for ln in lines if KERNEL_LINE.search(ln)]
    return _norm(hits[-1]) if hits else "(quiet)"
