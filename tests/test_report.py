#!/usr/bin/python3
"""`vfatfuzz report` (vfz/report/) as a person sees it.

One small real campaign (20 s, fsck.fat and mtools reading two core
writers, no fuzzer) is reported, and the page is rendered in headless
Chromium (Debian's chromium; as root with --no-sandbox): the screenshot is
not blank (decoded with matplotlib's PNG reader: share of non-white pixels,
distinct colours), the findings table has exactly the run's findings (read
from the workdir, compared with the table's rows), every href and src of
the index and the finding pages resolves to a file. Where Chromium cannot
start, that test is skipped with the reason, never passed. The page's
summary.json fed back as --history makes nothing new and draws trends.
Unit level (no browser): the page of a merged workdir (`vfatfuzz merge` of
the campaign and a copy: the census summed, one pace row per shard) and of
a hostile workdir (a 10-s real hostile run plus two committed findings).
Coverage (--coverage) is checked where build-coverage/ is built, else
skipped with the reason. About 50 s.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from html.parser import HTMLParser

REPO = os.environ.get("VFAT_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
VFATFUZZ = os.path.join(REPO, "scripts", "vfatfuzz")
sys.path.insert(0, REPO)


def vfz(*args, timeout=600):
    p = subprocess.run([sys.executable, VFATFUZZ, *args], cwd=REPO, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return p.returncode, p.stdout


class Links(HTMLParser):
    """Every href/src of a page, and the rows of its findings table."""

    def __init__(self):
        super().__init__()
        self.links, self.rows, self._tables, self._row = [], [], [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for k in ("href", "src"):
            if a.get(k):
                self.links.append(a[k])
        if tag == "table":
            self._tables.append(a.get("class", ""))
        if tag == "tr" and self._tables and self._tables[-1] == "findings":
            self._row = []
        if tag == "a" and self._row is not None and a.get("href", "").startswith("findings/"):
            self._row.append(a["href"].split("/")[1])

    def handle_endtag(self, tag):
        if tag == "table" and self._tables:
            self._tables.pop()
        if tag == "tr" and self._row is not None:
            if self._row:
                self.rows.append(self._row[0])
            self._row = None


def parse(path):
    p = Links()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    return p


def chromium():
    for n in ("chromium", "chromium-browser"):
        p = shutil.which(n)
        if p:
            return p
    return None


def screenshot(page, png, size="1300,2200"):
    """-> None, or why Chromium could not make one."""
    b = chromium()
    if not b:
        return "chromium is not installed (Debian's chromium; `vfatfuzz setup` installs it)"
    argv = [b, "--headless", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            f"--screenshot={png}", f"--window-size={size}", "file://" + os.path.abspath(page)]
    if os.geteuid() == 0:
        argv.insert(1, "--no-sandbox")
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "chromium --headless did not end within 120 s"
    if not os.path.isfile(png):
        return f"chromium --headless made no screenshot (exit {p.returncode}): {p.stdout.strip()[-300:]}"
    return None


class Report(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="vfz-test-report-")
        cls.work = os.path.join(cls.tmp, "campaign")
        rc, cls.campaign_log = vfz("campaign", "--no-setup", "--minutes", "0.33", "--seed", "1",
                                   "--oracles", "dosfsck,mtools", "--writers", "core-dual,core-v1",
                                   "--no-fuzzer", "--jobs", "1", "--workdir", cls.work)
        assert rc in (0, 1) and os.path.isfile(os.path.join(cls.work, "summary.json")), cls.campaign_log
        cls.out = os.path.join(cls.tmp, "page")
        cls.digest = os.path.join(cls.tmp, "digest.md")
        cls.rc, cls.log = vfz("report", cls.work, "--out", cls.out, "--digest", cls.digest)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def pages(self, out):
        """The index and every finding page of a report."""
        ps = [os.path.join(out, "index.html")]
        fd = os.path.join(out, "findings")
        if os.path.isdir(fd):
            ps += [os.path.join(fd, n, "index.html") for n in sorted(os.listdir(fd))]
        return ps

    def assert_links_resolve(self, out):
        n = 0
        for page in self.pages(out):
            for href in parse(page).links:
                self.assertNotRegex(href, r"^(https?:|//)", f"{page}: a link off the machine: {href}")
                target = os.path.normpath(os.path.join(os.path.dirname(page), href.split("#")[0]))
                self.assertTrue(os.path.isfile(target), f"{page}: {href} -> {target} is no file")
                n += 1
        return n

    def assert_table_is_workdir(self, out, workdir):
        ids = sorted(n for n in os.listdir(os.path.join(workdir, "findings"))
                     if os.path.isfile(os.path.join(workdir, "findings", n, "finding.json")))
        rows = parse(os.path.join(out, "index.html")).rows
        self.assertEqual(sorted(rows), ids)
        return ids, rows

    def test_findings_table_and_links(self):
        self.assertEqual(self.rc, 0, self.log)
        ids, rows = self.assert_table_is_workdir(self.out, self.work)
        with open(os.path.join(self.work, "summary.json")) as f:
            summ = json.load(f)
        self.assertEqual(len(ids), summ["total_findings"])
        self.assertGreater(self.assert_links_resolve(self.out), 3)
        for i in ids:       # each finding's page links its minimised script, verdicts are on it
            with open(os.path.join(self.out, "findings", i, "index.html"), encoding="utf-8") as f:
                text = f.read()
            self.assertIn('href="ops.txt"', text)
            self.assertTrue("Named exception" in text or "Unexplained" in text)
        with open(os.path.join(self.out, "summary.json")) as f:
            rep = json.load(f)["report"]
        self.assertEqual(sorted(rep["findings"]), ids)
        with open(self.digest) as f:
            self.assertIn(f"**{len(ids)} findings, {rep['new']} new**", f.read())

    def test_screenshot_not_blank(self):
        png = os.path.join(self.tmp, "page.png")
        why = screenshot(os.path.join(self.out, "index.html"), png)
        if why:
            self.skipTest(f"Chromium cannot start here: {why}")
        import matplotlib
        matplotlib.use("Agg")
        from matplotlib import image
        px = image.imread(png)[:, :, :3]            # floats 0..1
        nonwhite = (px.min(axis=2) < 0.94).mean()
        colours = len({tuple(c) for c in (px[::4, ::4].reshape(-1, 3) * 255).astype(int).tolist()})
        self.assertGreater(nonwhite, 0.05, f"{png}: {nonwhite:.3f} of the pixels not white")
        self.assertGreater(colours, 30, f"{png}: {colours} distinct colours")

    def test_history_makes_nothing_new(self):
        hist = os.path.join(self.tmp, "history")
        os.makedirs(hist, exist_ok=True)
        shutil.copy(os.path.join(self.out, "summary.json"), os.path.join(hist, "night-1.json"))
        out2 = os.path.join(self.tmp, "page2")
        rc, log = vfz("report", self.work, "--out", out2, "--history", hist)
        self.assertEqual(rc, 0, log)
        with open(os.path.join(out2, "summary.json")) as f:
            self.assertEqual(json.load(f)["report"]["new"], 0)
        self.assertTrue(os.path.isfile(os.path.join(out2, "img", "trends.png")))
        self.assert_links_resolve(out2)

    def test_merged_workdir(self):
        from vfz.report import page, workdir
        copy = os.path.join(self.tmp, "campaign-copy")
        shutil.copytree(self.work, copy)
        merged = os.path.join(self.tmp, "merged")
        rc, log = vfz("merge", self.work, copy, "--out", merged, "--no-corpus")
        self.assertEqual(rc, 0, log)
        run = workdir.load(merged)
        self.assertEqual(run["kind"], "merged")
        one = workdir.load(self.work)
        self.assertEqual([r["scripts"] for r in run["census"]], [2 * r["scripts"] for r in one["census"]])
        self.assertEqual(len(run["pace"]), 2 * len(one["pace"]))
        out = os.path.join(self.tmp, "page-merged")
        page.build(run, out, [])
        self.assert_table_is_workdir(out, merged)
        self.assert_links_resolve(out)

    def test_hostile_workdir(self):
        from vfz.report import page, workdir
        h = os.path.join(self.tmp, "hostile")
        # without the I/O-bounds oracle, whose fsck.fat findings on this short run would be new
        # ones of their own: the test is about committed findings showing as catalogued
        old = os.environ.get("VFZ_IOTRACE")
        os.environ["VFZ_IOTRACE"] = "0"
        try:
            rc, log = vfz("hostile", "--minutes", "0.15", "--seed", "3", "--oracles", "dosfsck",
                          "--workdir", h, "--min-seconds", "10")
        finally:
            if old is None:
                os.environ.pop("VFZ_IOTRACE", None)
            else:
                os.environ["VFZ_IOTRACE"] = old
        self.assertEqual(rc, 0, log)
        for n in ("fatcat-crash-37bb07c848", "mtools-canary-1a43bdab48"):
            shutil.copytree(os.path.join(REPO, "reports", "hostile", n), os.path.join(h, "findings", n))
        # a catalogued finding re-signed with --resign keeps its old directory name: a run files
        # its signature under another hash, and it is catalogued by that signature
        shutil.copytree(os.path.join(REPO, "reports", "hostile", "mtools-crash-263f15b1cf"),
                        os.path.join(h, "findings", "mtools-crash-0123456789"))
        run = workdir.load(h)
        self.assertTrue([f["catalogued"] for f in run["findings"] if f["id"] == "mtools-crash-0123456789"][0])
        self.assertEqual(run["kind"], "hostile")
        self.assertEqual([r["oracle"] for r in run["pace"]], ["dosfsck"])
        out = os.path.join(self.tmp, "page-hostile")
        entry = page.build(run, out, [])
        ids, _ = self.assert_table_is_workdir(out, h)
        self.assertEqual(entry["report"]["new"], 0, "committed hostile findings are catalogued, not new")
        self.assert_links_resolve(out)
        with open(os.path.join(out, "findings", "fatcat-crash-37bb07c848", "index.html")) as f:
            self.assertIn("bpb.bytes_per_sector", f.read())      # the minimised patch, as a table

    def test_coverage(self):
        if not os.path.isfile(os.path.join(REPO, "build-coverage", "CMakeCache.txt")):
            self.skipTest("build-coverage/ is not configured (`cmake --preset coverage`; "
                          "`vfatfuzz report --coverage` builds it once)")
        out = os.path.join(self.tmp, "page-cov")
        rc, log = vfz("report", self.work, "--out", out, "--coverage")
        self.assertEqual(rc, 0, log)
        with open(os.path.join(out, "summary.json")) as f:
            cov = json.load(f)["report"]["coverage"]
        self.assertTrue(0 < cov["line"] <= 100 and 0 < cov["branch"] <= 100, cov)
        links = parse(os.path.join(out, "index.html")).links
        self.assertTrue(any(x.startswith("coverage/coverage/") and x.endswith("namei.c.html") for x in links))
        self.assert_links_resolve(out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
