"""dosfstools' fatlabel as a writer of the volume label alone: `fatlabel`.

Each `label "TEXT"` op is `fatlabel -c 437 IMAGE TEXT`, `label ""` is
`fatlabel -r IMAGE` (its supports: label only; the campaign sends it the
script's label ops). fatlabel 4.2 has no errno: its messages are mapped
(MESSAGES), exit 0 is ok. The core follows fatlabel's rules, so the model
(vfz/model/inode.py label_err) predicts it as the kernel profile: boot
sector and root entry get the text, "" writes NO NAME and deletes the entry.
"""
from vfz.oracles import Writer
from vfz.proc import run

# fatlabel 4.2's refusals (dosfstools src/fatlabel.c, measured) -> errno
MESSAGES = (
    ("are not allowed", "EINVAL"),            # *?.,;:/\|+=<>[]" and bytes below 0x20
    ("can't start with a space", "EINVAL"),
    ("can't be empty or white space only", "EINVAL"),
    ("no longer than 11", "EINVAL"),
    ("Root directory is full", "ENOSPC"),     # a FAT12/16 root without a free slot
    ("cannot be represented", "EINVAL"),      # a character outside the code page
)


class FatlabelWriter(Writer):
    def __init__(self, name="fatlabel", fatlabel="fatlabel", **cfg):
        self.name = name
        self.fatlabel = fatlabel

    def _apply(self, image, ops, timeout, w):
        for op in ops:
            if op.kind != "label":
                w.results.append("ENOSYS")
                continue
            text = op.args[0]
            argv = [self.fatlabel, "-r", image] if text == "" else [self.fatlabel, "-c", "437", image, text]
            p = run(argv, timeout=timeout)
            w.raw += p.raw()
            if p.error:
                w.error = f"fatlabel: {p.error}"
                return
            if p.rc == 0:
                w.results.append("ok")
                continue
            msg = p.errtext + p.text
            w.results.append(next((e for m, e in MESSAGES if m in msg), "EIO"))
