"""The kernel writer's glue writes an op's data in 16 KiB pwrite calls (agent.c put_content), not in one write(): where the volume runs out part-way, the file keeps another size than one write would leave.

One write() of Linux 6.1 goes page by page over page-aligned chunks and stops at the first page
whose clusters it cannot get (what the model and the core do: vfz.model.space). The agent's
pwrite calls start at the op's offset, 16 KiB apart; each is such a write of its own, so the
last one that fits ends at off + 16 KiB * k, which need not be a page boundary, and a chunk's
last page needs clusters only up to its end. Measured on campaign seed 2626 (fat32:81K@busybox-
mkdosfs, 79 clusters of 512 bytes free): `write "/f" 5737 45817` into an empty file kept 38 505
bytes (5 737 + 2 x 16 384) in the kernel, 36 864 (9 pages) in the model and the core. A harness
matter (the agent's, not Linux's): the fix is one pwrite per op in agent.c.
"""
from vfz.oracles import NamedException

NAME = "kernel-agent-write-chunks"
CHUNK = 16384


def _cut_writes(ops):
    """path -> (offset, end) of the last data op on each path that wrote more than a chunk."""
    out = {}
    for op in ops or ():
        if op.kind == "create" and op.args[1] > CHUNK:
            out[op.path.rstrip("/")] = (0, op.args[1])
        elif op.kind == "write" and op.args[2] > CHUNK:
            out[op.path.rstrip("/")] = (op.args[1], op.args[1] + op.args[2])
    return out


def explain(ev):
    """NAME when the whole listing difference is the size (and so the bytes) of files a data
    op of more than a chunk cut short (the model kept less than its end), each shown one of
    the sizes the agent's chunks leave: off + 16 KiB * k, or a page boundary past the
    model's, less than a chunk and a page beyond it."""
    d = ev.diff
    if ev.verdict != "differs" or d is None or not d.changed or d.missing or d.extra or d.label:
        return None
    cut = _cut_writes(ev.ops)
    for exp, shown in d.changed:
        w = cut.get(exp["path"])
        if w is None or exp.get("type") != "file" or shown.get("type") != "file":
            return None
        off, end = w
        a, b = exp.get("size"), shown.get("size")
        if a is None or b is None or not a < end or not a < b <= min(end, a + CHUNK + 4096):
            return None
        if (b - off) % CHUNK and b % 4096:
            return None
    return NAME


def twin_explain(ops, results):
    """NAME when the twins (a core writer, a kernel one) both answered ENOSPC (results) to a
    data op of more than a chunk: their images may differ by the agent's chunks alone."""
    big = _cut_writes(ops)
    hit = any(r == "ENOSPC" and op.kind in ("create", "write") and op.path.rstrip("/") in big
              for op, r in zip(ops, results or ()))
    return NAME if hit else None


EXCEPTIONS = [
    NamedException(NAME, "kernel", "writer",
                   "the kernel writer's agent (vfz/oracles/kernel/agent.c put_content) writes an op's "
                   "data in 16 KiB pwrite calls from the op's offset; when the volume runs out "
                   "part-way, the file keeps off + 16 KiB * k bytes (or the page boundary inside the "
                   "last chunk) where one write() of Linux, the model and the core keep the largest "
                   "page boundary the free clusters reach (campaign seed 2626, fat32:81K@busybox-"
                   "mkdosfs: 38 505 against 36 864 bytes). The harness's glue, not Linux: one pwrite "
                   "per op is the fix",
                   "every listing difference is the size of a file that a data op of more than "
                   "16 KiB cut short, shown at off + 16 KiB * k or a page boundary within a chunk "
                   "and a page past the model's size (chunks.explain); for the twins, both answered "
                   "ENOSPC to such an op (chunks.twin_explain)"),
]
