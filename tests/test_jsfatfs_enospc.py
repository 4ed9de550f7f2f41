#!/usr/bin/python3
"""The jsfatfs causes of issue 29's campaign 3201 (volumes drawn per script, filled), each recognised from real evidence -- the npm fatfs package 0.10.8 writing, one Node process -- and not on its control:
  * jsfatfs-alloc-search-range: a file of 92 of the 93 free clusters of
    mkfs.fat's 64 KiB FAT12 is ENOSPC (the last two clusters are never
    allocated), 91 are not;
  * no finding where Linux runs out too (the model's capacity, knob
    linux_capacity; and a reproducer's expected results run out too): six nested mkdirs on the campaign's 184 KiB FAT32 of
    83 clusters with five free (75362a887e44, filed as ok->ENOSPC);
  * jsfatfs-empty-file-cluster where it runs a volume out: three empty
    files and three mkdirs into five free clusters, not two empty files;
  * jsfatfs-enospc-chain-size: 1301 + 1093 + 3199 bytes into 12 free
    512-byte clusters (ENOSPC on Linux too): the package records 3199 over
    6 clusters; not when the last file is 3072 bytes; a write past the end
    that runs out keeps 12 clusters for 4110 bytes, the next create is
    ENOSPC; not for a write that fits; one that grew the chain to 2 of the
    3 clusters it needed wrote nothing and records 14 097 bytes (within
    the chain: the size fs.write records, Linux keeps 16 384);
  * jsfatfs-enospc-truncate-keeps-size: a mkdir, then an empty file
    truncated to 50 000, on five free 8 KiB clusters: the file keeps size 0
    (the model of Linux: 32 768);
    not for 20 000; after a write past the end it keeps the size that
    write got from the package (1023); not for a growth that fits;
  * jsfatfs-fat32-few-clusters-write where its view has more free clusters
    (8, Linux 7): the eighth mkdir is ok for the package; seven agree;
  * jsfatfs-fat32-few-clusters-write's throw: the eighth mkdir in
    BusyBox's 16 KiB FAT32 root (0xF0F read as a link) throws 'Invalid
    sector number!'; seven do not;
  * jsfatfs-one-fat where the package grew a chain: a 255-unit mkdir grows
    mformat's FAT32 root, FAT 2 keeps its old end mark; not where FAT 2
    holds a link there;
  * two exceptions in one listing: a gap write's size beside a wrapped
    date (not beside a date off by 2 s), bad chars beside a gap size,
    few-clusters beside dir-spellings (not without the second spelling);
  * jsfatfs-enospc-partial-entry in a full subdirectory (seed 3202): not
    without the last mkdir;
  * jsfatfs-empty-read-cluster0: the package cannot read core-dual's empty
    file on a 3 MB FAT12 of 64 KiB clusters (cluster 0's sector -222); of
    2 KiB clusters it can.
"""
import os
import shutil
import sys
import unittest

REPO = os.environ.get("VFAT_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vfz import opscript, oracles  # noqa: E402
from vfz.check.checker import Checker  # noqa: E402
from vfz.check.predict import model_of  # noqa: E402
from vfz.fatimg import open_ro  # noqa: E402
from vfz.oracles.core import vfat_binary  # noqa: E402
from vfz.oracles.jsfatfs import alloc, enospc  # noqa: E402
from vfz.oracles.jsfatfs.fewclusters import package_tree, package_view, path_key  # noqa: E402
from vfz.oracles.jsfatfs.server import available  # noqa: E402

WINDOW12 = "fat12:32701K:8192:sector=1024:free=4:at=1365:wrap=1@vfat"    # 5 free 8 KiB clusters
FEW32 = "fat32:184K:2048:free=4:at=30:wrap=1@mkfs.fat"
NESTED = "".join(f'mkdir "/A{"/a" * k}"\n' for k in range(6))


@unittest.skipUnless(available()[0], "node or the npm package fatfs is missing (vfatfuzz setup)")
@unittest.skipUnless(shutil.which("mkfs.fat") and os.access(vfat_binary(), os.X_OK), "mkfs.fat or build/vfat missing")
class JsfatfsEnospcTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ck = Checker(readers=["dosfsck", "mtools", "jsfatfs"], writers=["jsfatfs"], vfat=vfat_binary())

    @classmethod
    def tearDownClass(cls):
        cls.ck.close()

    def kinds(self, text, fs):
        """{writer divergence kind: detail} of the package on fs; its results."""
        res = self.ck.check(opscript.parse(text), fs, readers=[])
        return {d.fields["kind"]: d.detail for d in res.divs.values()}, res

    def test_last_two_clusters(self):
        fs = "fat12:64K:512@mkfs.fat"
        fat = open_ro(self.ck.pristine_image(fs))
        free = sum(1 for n in range(2, fat.clusters + 2) if fat.get(n) == 0)
        self.assertEqual((fat.clusters, free), (93, 93))
        k, res = self.kinds(f'create "/a" {92 * 512} 0\n', fs)
        self.assertEqual(res.results["jsfatfs"], ["ENOSPC"])
        self.assertEqual(list(k), [alloc.ALLOC])
        view = package_view(res.images["jsfatfs"])
        self.assertEqual([n for n in range(2, 95) if view.get(n) == 0], [93, 94])
        k, res = self.kinds(f'create "/a" {91 * 512} 0\n', fs)
        self.assertEqual((res.results["jsfatfs"], k), (["ok"], {}))

    def test_export_expects_linux_capacity(self):
        # a writer case's expected results (what the reproducer calls Linux's) run out of
        # clusters: 94 of the 93 free clusters are ENOSPC, 45 056 bytes kept (was 'ok')
        from vfz.export.case import expected_of
        base = self.ck.pristine_image("fat12:64K:512@mkfs.fat")
        results, entries = expected_of("writer", None, base, opscript.parse('create "/a" 48128 0\n'))
        self.assertEqual((results, [e["size"] for e in entries]), (["ENOSPC"], [45056]))

    def test_runs_out_where_linux_does(self):
        # the model of Linux's capacity (profile knob linux_capacity): before it, the sixth
        # mkdir's ENOSPC was a finding (75362a887e44) though Linux runs out there too
        k, res = self.kinds(NESTED, FEW32)
        self.assertEqual(res.results["jsfatfs"], ["ok"] * 5 + ["ENOSPC"])
        self.assertEqual(k, {})
        view = package_view(res.images["jsfatfs"])
        self.assertEqual((view.bits, view.clusters), (12, 83))

    def test_empty_files_run_out(self):
        text = 'mkdir "/å"\nmkdir "/z"\ncreate "/z/A" 0 0\ncreate "/z/g" 0 0\ncreate "//a" 0 0\nmkdir "/T"\n'
        k, res = self.kinds(text, WINDOW12)
        self.assertEqual(res.results["jsfatfs"][-1], "ENOSPC")
        self.assertIn("jsfatfs-empty-file-cluster", k)
        self.assertIn("from line 6", k["jsfatfs-empty-file-cluster"])
        k, res = self.kinds(text.replace('create "//a" 0 0\n', ""), WINDOW12)
        self.assertEqual((res.results["jsfatfs"], k), (["ok"] * 5, {}))

    def test_write_size_over_short_chain(self):
        fs = "fat32:33835520:512:fats=1:free=8:at=37578:wrap=4@vfat"     # 12 free clusters
        text = 'create "/a" 1301 0\ncreate "/f" 1093 0\ncreate "/c" 3199 0\n'
        k, res = self.kinds(text, fs)
        self.assertEqual(res.results["jsfatfs"], ["ok", "ok", "ENOSPC"])
        self.assertEqual(list(k), [enospc.SIZE])
        view = package_view(res.images["jsfatfs"])
        first, is_dir, size = package_tree(view)[path_key(["c"])]
        self.assertEqual((size, len(view.chain(first))), (3199, 6))
        k, res = self.kinds(text.replace("3199", "3072"), fs)
        self.assertEqual((res.results["jsfatfs"], k), (["ok"] * 3, {}))
        # 687889030abc: past the end the size is recorded short (jsfatfs-gap-write-size), and the
        # three clusters the write got stay beyond it, so the next create finds none
        text = 'create "/n" 4097 131\nwrite "/n" 8932 13 238\ncreate "/k.o" 1 214\n'
        k, res = self.kinds(text, fs)
        self.assertEqual((res.results["jsfatfs"], list(k)), (["ok", "ENOSPC", "ENOSPC"], [enospc.SIZE]))
        view = package_view(res.images["jsfatfs"])
        first, is_dir, size = package_tree(view)[path_key(["n"])]
        self.assertEqual((size, len(view.chain(first))), (4110, 12))
        k, res = self.kinds(text.replace("8932", "5000"), fs)
        self.assertNotIn(enospc.SIZE, k)
        # a67a554b2e5e: the chain grown first, nothing written, the gap size recorded within it
        text = 'mkdir "/d"\ncreate "/a" 4097 1\ncreate "/b" 513 2\ncreate "/c" 2048 3\nwrite "/a" 8262 10000 4\n'
        k, res = self.kinds(text, WINDOW12)
        self.assertEqual((res.results["jsfatfs"][-1], list(k)), ("ENOSPC", [enospc.SIZE]))
        view = package_view(res.images["jsfatfs"])
        first, is_dir, size = package_tree(view)[path_key(["a"])]
        self.assertEqual((size, len(view.chain(first))), (14097, 2))
        self.assertFalse(enospc.chain_split(view, (first, is_dir, size)))

    def test_truncate_growth_keeps_size(self):
        text = 'mkdir "/d"\ncreate "/a" 0 0\ntruncate "/a" 50000\n'
        k, res = self.kinds(text, WINDOW12)
        self.assertEqual(res.results["jsfatfs"], ["ok", "ok", "ENOSPC"])
        self.assertEqual(list(k), [enospc.KEEP])
        view = package_view(res.images["jsfatfs"])
        self.assertEqual(package_tree(view)[path_key(["a"])][2], 0)
        k, res = self.kinds(text.replace("50000", "20000"), WINDOW12)
        self.assertEqual((res.results["jsfatfs"], k), (["ok"] * 3, {}))

    def test_truncate_after_gap_write_keeps_size(self):
        # 81b47be2c87e: the size before the growth is the one the package's fs.write gave (511 + 512)
        fs = "fat12:16349K:4096:root=16:free=4:at=2730:wrap=1@mformat"
        text = 'create "/f" 511 1\nwrite "/f" 4030 512 2\ntruncate "/f" 33000\n'
        k, res = self.kinds(text, fs)
        self.assertEqual((res.results["jsfatfs"], list(k)), (["ok", "ok", "ENOSPC"], [enospc.KEEP]))
        self.assertEqual(package_tree(package_view(res.images["jsfatfs"]))[path_key(["f"])][2], 1023)
        k, res = self.kinds(text.replace("33000", "12000"), fs)
        self.assertEqual((res.results["jsfatfs"], k), (["ok"] * 3, {}))

    def test_few_clusters_view_has_more_free(self):
        # 7b7b24a9189e: 7 clusters free to Linux, 8 in the package's 12-bit reading
        fs = "fat32:896K:8192:free=4:at=106:wrap=3@mkfs.fat"
        self.assertEqual(enospc.free_shortfall(self.ck.pristine_image(fs)), -1)
        text = "".join(f'mkdir "/d{n}"\n' for n in range(9))
        k, res = self.kinds(text, fs)
        self.assertEqual(res.results["jsfatfs"], ["ok"] * 8 + ["ENOSPC"])
        self.assertIn('from line 8: mkdir "/d7"', k["jsfatfs-fat32-few-clusters-write"])
        k, res = self.kinds("".join(text.splitlines(True)[:7]), fs)
        self.assertEqual((res.results["jsfatfs"], k), (["ok"] * 7, {}))

    def test_few_clusters_root_runs_off(self):
        fs = "fat32:16K@busybox-mkdosfs"
        text = "".join(f'mkdir "/{c}"\n' for c in "abcdefghij")
        k, res = self.kinds(text, fs)
        self.assertIn("jsfatfs-fat32-few-clusters-write", k)
        self.assertIn('from line 8: mkdir "/h"', k["jsfatfs-fat32-few-clusters-write"])
        self.assertIn("Invalid sector number!", k["jsfatfs-fat32-few-clusters-write"])
        k, res = self.kinds("".join(text.splitlines(True)[:7]), fs)
        self.assertEqual(res.results["jsfatfs"], ["ok"] * 7)
        self.assertNotIn("jsfatfs-fat32-few-clusters-write", k)

    def test_one_fat_grown_chain(self):
        # 1ac97219a924: a 255-unit name grows the root; FAT 2 keeps the root's old end mark
        from vfz.oracles.jsfatfs import fsck
        from vfz.fatimg import Fat
        res = self.ck.check(opscript.parse(f'mkdir "/{"n" * 255}"\n'), "fat32:34M:512@mformat",
                            readers=["dosfsck"])
        kinds = {d.fields["kind"] for d in res.divs.values()}
        self.assertIn("jsfatfs-one-fat", kinds)
        self.assertLessEqual(kinds, {x.name for x in oracles.exceptions()})
        with open(res.images["jsfatfs"], "rb") as f:
            fat = Fat(bytearray(f.read()))
        root = fat.root_cluster
        second = fat.fat_off + fat.spf * fat.bps + 4 * root
        self.assertEqual((fat.get(root) > root, fat.b[second:second + 4]), (True, b"\xff\xff\xff\x0f"))
        self.assertTrue(fsck._fsck_holds("jsfatfs-one-fat", None, {}, fat, None, {}, []))
        fat.b[second:second + 4] = (5).to_bytes(4, "little")     # not an end mark: another chain
        self.assertFalse(fsck._fsck_holds("jsfatfs-one-fat", None, {}, fat, None, {}, []))

    def named_kinds(self, text, fs, readers):
        res = self.ck.check(opscript.parse(text), fs, readers=readers)
        kinds = {(d.fields["oracle"], d.fields["kind"]) for d in res.divs.values()}
        self.assertLessEqual({k for _, k in kinds}, {x.name for x in oracles.exceptions()})
        return kinds

    def test_gap_size_beside_time_wrap(self):
        # b887fdf2a9d3: one listing holds a gap write's size and a wrapped date: each part named
        from vfz.check.verdict import ListingDiff
        from vfz.oracles.evidence import Evidence, year_wrapped
        from vfz.oracles.jsfatfs import meta
        from vfz.oracles.jsfatfs.exceptions import explain_write, gap_entries
        text = 'create "/c" 5 1\nwrite "/c" 100 10 2\ncreate "/t" 1 3\ntouch "/t" 0 0\n'
        kinds = self.named_kinds(text, "fat16", ["jsfatfs"])
        self.assertEqual(kinds, {("jsfatfs", "jsfatfs-gap-write-size"), ("jsfatfs", "jsfatfs-time-wrap")})
        ops = opscript.parse(text)
        exp = {e["path"]: e for e in model_of("jsfatfs", self.ck.pristine_image("fat16"), ops).entries()}
        gap_c = dict(exp["/c"], size=gap_entries(ops)["/c"]["size"], sha256=gap_entries(ops)["/c"]["sha256"])
        for mtime, named in ((year_wrapped(0), True), (exp["/t"]["mtime"] + 2, False)):
            d = ListingDiff(changed=[(exp["/c"], gap_c), (exp["/t"], dict(exp["/t"], mtime=mtime))])
            ev = Evidence(ops, writer="jsfatfs", reader="jsfatfs", verdict="differs", diff=d)
            got = meta.explain_split(ev, explain_write)
            self.assertEqual(got, ["jsfatfs-gap-write-size", "jsfatfs-time-wrap"] if named else None)

    def test_bad_chars_beside_gap_size(self):
        # d89bf14baec6: mtools shows '/b?' as '/b_' with the size the gap write gave it
        kinds = self.named_kinds('create "/b?" 513 200\nwrite "/b?" 6308 13 40\n', "fat16", ["mtools"])
        self.assertEqual(kinds, {("mtools", "jsfatfs-bad-chars"), ("mtools", "jsfatfs-gap-write-size")})

    def test_few_clusters_beside_spellings(self):
        # 9b7588a217fb: on a few-clusters FAT32, an entry one spelling of /h overwrote
        text = 'mkdir "/h"\ncreate "/H/x" 0 0\nmkdir "/h/y"\ncreate "/H/a" 0 0\n'
        kinds = self.named_kinds(text, "fat32:16K@busybox-mkdosfs", ["dosfsck"])
        self.assertEqual(kinds, {("dosfsck", "jsfatfs-dir-spellings"), ("dosfsck", "jsfatfs-fat32-few-clusters-write")})
        kinds = self.named_kinds(text.replace('"/H/a"', '"/h/a"'), "fat32:16K@busybox-mkdosfs", ["dosfsck"])
        self.assertEqual(kinds, {("dosfsck", "jsfatfs-fat32-few-clusters-write")})

    def test_empty_file_read_before_volume(self):
        # f827886d73f9: the reader on core-dual's empty file, 64 KiB clusters; 2 KiB ones read
        from vfz.oracles.jsfatfs import emptyread
        ck = Checker(readers=["jsfatfs"], writers=["core-dual"], vfat=vfat_binary())
        try:
            for fs, want in (("fat12:3025K:65536:fats=1@vfat", {emptyread.EMPTY_READ}), ("fat12:3025K:2048@vfat", set())):
                res = ck.check(opscript.parse('create "/a" 0 0\n'), fs)
                self.assertEqual({d.fields["kind"] for d in res.divs.values()}, want, fs)
                self.assertEqual(emptyread.cluster0_before_volume(res.images["core-dual"]), bool(want))
            # the original script of the finding: the file listed without its hash (a changed
            # pair, not a missing one) is the same; another hash is not
            from vfz.check.verdict import ListingDiff
            from vfz.oracles import ReadResult
            from vfz.oracles.evidence import Evidence
            fs = "fat12:3025K:65536:fats=1@vfat"
            res = ck.check(opscript.parse('create "/a" 0 0\n'), fs)
            exp = {"path": "/a", "type": "file", "size": 0, "sha256": "e3b0" + "0" * 60, "attrs": "a"}
            rr = ReadResult("jsfatfs", listing=[], complaints=["readFile /a: IO"])
            for shown, named in ((dict(exp, sha256=None), False), ({k: v for k, v in exp.items() if k != "sha256"}, True)):
                ev = Evidence([], writer="core-dual", reader="jsfatfs", rr=rr, verdict="differs",
                              diff=ListingDiff(changed=[(exp, shown)]), image=res.images["core-dual"], entries=[exp])
                self.assertEqual(emptyread.explain(ev), emptyread.EMPTY_READ if named else None)
        finally:
            ck.close()

    def test_partial_entry_in_full_subdirectory(self):
        # seed 3202's 5111662145ee: the 255-unit mkdir in /ҙ on a full FAT16 (ENOSPC for both):
        # the package's slots fill the subdirectory's cluster, orphaned (fsck.fat), its cluster lost
        from vfz.oracles.jsfatfs import fsck, partial
        fs = "fat16:33829376:512:free=6:at=14859:wrap=1@vfat"
        text = OPS_5111662145EE
        kinds = self.named_kinds(text, fs, ["dosfsck"])
        self.assertIn(("dosfsck", "jsfatfs-enospc-partial-entry"), kinds)
        res = self.ck.check(opscript.parse(text), fs, readers=[])
        self.assertEqual((partial.orphan_tail(res.images["jsfatfs"]), fsck.orphan_tail_any(res.images["jsfatfs"]) > 0),
                         (0, True))
        res = self.ck.check(opscript.parse(text.rsplit("mkdir", 1)[0]), fs, readers=[])
        self.assertEqual(fsck.orphan_tail_any(res.images["jsfatfs"]), 0)


OPS_5111662145EE = """mkdir "/./𠀋"
mkdir "/./𠀋/a"
mkdir "/b"
mkdir "/2/"
create "/A" 511 175
mkdir "/ҙ"
mkdir "/ҙ/9Ak0eEfwnF6g0vatu4rD0rohc6dnxxpkafvk0fjz4k8rFgEdacr8Bk3a2iefhn6FoceArgCfglfnvE4A4n0fcjw7pB4po9at30abha3kl1pqjvrgqsxA4o6xjCEtv2xx8jrptpD4wkDyuddwvgnju3ukuCsidy9wcvwkCopq1zji7cql8pm9s8b9xc66ado0idywn9evuamhm41vbecs979ojget3ffkxv7B53egsDe2b5yjqofEryavEjfz"
"""


if __name__ == "__main__":
    unittest.main()
