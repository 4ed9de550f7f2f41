"""The static report of a workdir: what a campaign, a merged night or a hostile run found, reached and cost.

`vfatfuzz report WORKDIR [--out DIR] [--history DIR] [--coverage] [--digest FILE]`
(vfz/cli/report.py) writes DIR/index.html, one page of HTML and CSS with
its images beside it (no server, no network, no script), a page per finding
under DIR/findings/, copies of the files they link, and DIR/summary.json:
the workdir's summary.json with a "report" key (date, findings, corpus size,
coverage) that a later run's --history reads for its trends. docs/report.md
describes the page and the digest.

One concern per module:
    workdir   read a workdir (campaign, merged, hostile) into plain data
    history   earlier runs' summaries: which findings are new, the trends
    diffview  a finding's recorded detail text as a table of differences
    html      HTML and CSS primitives: escaping, tables, heat-map colours
    charts    the plots (matplotlib, Agg backend) as PNG files
    coverage  llvm-cov of the coverage preset over the run's corpus
    findpage  the page of one finding
    page      the index page, the copies it links, summary.json
    digest    the short Markdown digest (a CI job summary)

Layer: a subsystem. What it may import: the contracts (vfz.findings, vfz.listing, the oracle
registry's named exceptions in vfz.oracles, vfz.model's), vfz.proc and
vfz.REPO; it reads workdir files and never runs a campaign's code. Nothing
imports it except the command (vfz/cli/report.py).
"""
