#!/usr/bin/python3
"""The core's deleted slots hold what Linux's disk holds (core/src/inode.c):
the bytes of the entry's last write, vfat_add_entry's (start 0 and size 0
for a file or a renamed entry, the cluster of a new directory), since the
kernel writes an inode back only at the unmount. Measured against the
kernel in corpus/regressions/deleted-slot-write-back (same_metadata); here
the core alone, many entries at once (the table grows), also under ASan."""
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import fatimg  # noqa: E402
from vfz.check import diff  # noqa: E402
from vfz.oracles import core as core_oracle  # noqa: E402

VFAT = core_oracle.vfat_binary()
N = 150


def script():
    """Adds into /D, then only removals there: no later add reuses a
    deleted slot. Renamed files and a renamed directory go to /E."""
    ops = ['mkdir "/D"', 'mkdir "/E"']
    for i in range(N):
        ops.append(f'create "/D/file {i} with a long name.txt" {100 + i * 37} {i % 256}')
    for i in range(1, N, 6):                 # the write changes the inode only
        ops.append(f'write "/D/file {i} with a long name.txt" 0 4000 9')
    for i in range(0, N, 2):                 # the old slot keeps create's add: start 0, size 0
        ops.append(f'rename "/D/file {i} with a long name.txt" "/E/renamed {i}.txt"')
    for i in range(1, N, 2):
        ops.append(f'unlink "/D/file {i} with a long name.txt"')
    # mkdir's add holds the cluster (the root's deleted slot); the rename's
    # add in /E holds start 0 (its deleted slot after the rmdir)
    ops += ['mkdir "/moved dir"', 'rename "/moved dir" "/E/moved dir"', 'rmdir "/E/moved dir"']
    return "\n".join(ops) + "\n"


@unittest.skipUnless(os.access(VFAT, os.X_OK), "build/vfat not built")
class DeletedSlots(unittest.TestCase):
    def test_deleted_slots_keep_the_add(self):
        with tempfile.TemporaryDirectory(prefix="vfz-wb-") as tmp:
            ops = os.path.join(tmp, "ops.txt")
            with open(ops, "w", encoding="utf-8") as f:
                f.write(script())
            for fs, spec in (("fat16", "fat16:4M:512"), ("fat32", "fat32:34M:512")):
                for mode in (["--names", "dual"], ["--names", "nodual", "--dummy", "v1"]):
                    img = os.path.join(tmp, f"{fs}.img")
                    diff.mkfs(img, *diff.parse_fs(spec))
                    p = subprocess.run([VFAT, "apply", img, ops, *mode, "--no-sync"], capture_output=True,
                                       text=True)
                    self.assertEqual(p.returncode, 0, p.stderr)
                    self.assertNotIn('"result": "E', p.stdout)
                    with open(img, "rb") as f:
                        fat = fatimg.Fat(f.read())

                    def start_of(e, fat=fat):
                        return e[26] | e[27] << 8 | ((e[20] | e[21] << 8) << 16 if fat.bits == 32 else 0)
                    sub = {fatimg.short_text(e[:11]): start_of(e) for _, e in fat.entries()
                           if e[11] & 0x10 and e[0] != 0xE5}
                    files = dirs = 0
                    for where in (None, sub["D"], sub["E"]):
                        for _, e in fat.entries(where):
                            if e[0] != 0xE5 or e[11] == 0x0F:
                                continue
                            start = start_of(e)
                            size = int.from_bytes(e[28:32], "little")
                            with self.subTest(fs=fs, mode=mode, slot=e.hex()):
                                self.assertEqual(size, 0)
                                if e[11] & 0x10 and where is None:
                                    self.assertGreaterEqual(start, 2)    # mkdir's add: its cluster
                                    dirs += 1
                                else:
                                    self.assertEqual(start, 0)          # create's or rename's add
                                    files += e[11] & 0x10 == 0
                    self.assertEqual((files, dirs), (N, 1), (fs, mode))


if __name__ == "__main__":
    unittest.main(verbosity=2)
