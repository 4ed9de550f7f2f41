"""A stock binary's crash, signed by its backtrace: the command run again under gdb.

When a tool of the hostile campaign dies by a signal (vfz.proc.run with
crash_hook(gdb_backtrace) in force), the same argv, environment, working
directory and input run once more under `gdb -batch`, which stops at the
signal and prints the stack. Running it again rather than reading a core
dump keeps the machine's core_pattern (a host setting, often a pipe to a
crash collector) out of the harness; gdb turns address randomisation off,
and each frame is named by its function where the binary or a library
exports one, else by its object and the offset into it ("mtools+0x10873":
Debian's tools are stripped, but an offset in one build is one place in the
code). The I/O trace's preload is left out of gdb's environment (gdb itself
would be traced); it does not change what the tool computes.

gdb_backtrace(argv, env, cwd, input, timeout) -> text for Proc.backtrace:
    signal SIGFPE
    #0 mtools+0x10873
    #1 mtools+0x10a7e
    ...
or "gdb: <why not>" (no gdb, the crash did not happen again under it).
frames(text) -> [frame names], the first MAX_FRAMES of the tool's own
stack below the signal handler frames.
"""
import os
import re
import shutil
import subprocess

MAX_FRAMES = 3
RECURSION = 3      # a frame this often in the stack printed: a recursion
GDB_SLACK_S = 20
FRAME = re.compile(r"^#(\d+)\s+(?:(0x[0-9a-f]+) in )?(\S+) \(", re.M)
MAPPING = re.compile(r"^\s*(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+\s+(0x[0-9a-f]+)\s+\S*\s*(/\S+)\s*$",
                     re.M)
SIGNAL = re.compile(r"Program (?:received|terminated with) signal (SIG\w+)")
MARK = "@@vfz-gdb@@"


def _env(env):
    full = dict(os.environ if env is None else env)
    for k in ("LD_PRELOAD", "VFZ_IOTRACE_LOG", "VFZ_IOTRACE_LABEL"):
        full.pop(k, None)
    return full


def gdb_backtrace(argv, env=None, cwd=None, input=None, timeout=30.0):
    gdb = shutil.which("gdb")
    exe = shutil.which(argv[0]) if argv else None
    if not gdb or not exe:
        return "gdb: " + ("not installed" if not gdb else f"{argv[0]} not found")
    cmd = [gdb, "-q", "-batch", "-nx", "-ex", "set startup-with-shell off",
           "-ex", "set pagination off", "-ex", "run",
           "-ex", f"echo {MARK}\\n", "-ex", "bt 24", "-ex", "info proc mappings",
           "--args", exe] + list(argv[1:])
    try:
        p = subprocess.run(cmd, input=input, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           env=_env(env), cwd=cwd, timeout=timeout + GDB_SLACK_S,
                           stdin=None if input is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "gdb: no answer within the time limit"
    except OSError as e:
        return f"gdb: cannot run: {e.strerror}"
    return render(p.stdout.decode("utf-8", "replace"))


def render(out):
    """gdb's output -> "signal SIGx" and one "#k name" line per frame."""
    sig = SIGNAL.search(out)
    if not sig or MARK not in out:
        return "gdb: the crash did not happen again under gdb"
    tail = out.split(MARK, 1)[1]
    maps = [(int(a, 16), int(b, 16), int(o, 16), os.path.basename(f)) for a, b, o, f in MAPPING.findall(tail)]
    lines = [f"signal {sig.group(1)}"]
    for k, addr, name in FRAME.findall(tail):
        if name == "??" and addr:
            a = int(addr, 16)
            name = next((f"{obj}+{a - lo + off:#x}" for lo, hi, off, obj in maps if lo <= a < hi), "??")
        lines.append(f"#{k} {name}")
    return "\n".join(lines)


def frames(text, n=MAX_FRAMES):
    """The first n frame names of a rendered backtrace, libc's signal and
    abort machinery left out (they name how it died, not where). A stack that
    ran out in a recursion is signed by the recursion: where the stack ended
    is chance (mtools' mdir -/ died in mbrtowc once and in its own code the
    next time), the frames that repeat are not: ["recursion", the repeating
    frames in order of address]."""
    names = [m.group(1) for m in re.finditer(r"^#\d+ (\S+)", text or "", re.M)]
    again = sorted({x for x in names if names.count(x) >= RECURSION and x != "??"})
    if again:
        return ["recursion"] + again[:n]
    out = []
    for ln in (text or "").splitlines():
        m = re.match(r"#\d+ (\S+)", ln)
        if not m:
            continue
        name = m.group(1)
        if re.match(r"(__GI_+)?_*(pthread_kill\w*|raise|abort|assert_fail\w*|libc_message\w*|"
                    r"fortify_fail|stack_chk_fail|libc_start\w*)$", name) or name.startswith("libc.so"):
            continue
        out.append(name)
        if len(out) >= n:
            break
    return out
