"""The report's plots as PNG files (Debian's matplotlib, Agg backend): pace beside its bound, and the trends across runs."""
import os

BLUE, GREY, RED, GREEN = "#2154a6", "#b7c2d6", "#d93f3f", "#22793a"


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=96, bbox_inches="tight")
    os.replace(tmp, path)


def pace(rows, path):
    """rows: [{"oracle", "shard", "pace", "bound"}] -> a horizontal bar
    chart: each oracle's pace (images per minute), its bound as a grey bar
    behind it. -> True when written (False: nothing to plot)."""
    if not rows:
        return False
    plt = _plt()
    labels = [r["oracle"] + (f" (shard {r['shard']})" if r["shard"] is not None else "") for r in rows]
    h = max(1.6, 0.42 * len(rows) + 0.9)
    fig, ax = plt.subplots(figsize=(8.5, h))
    ys = list(range(len(rows)))[::-1]
    bounds = [r["bound"] or 0 for r in rows]
    if any(bounds):
        ax.barh(ys, bounds, color=GREY, height=0.72, label="bound (oracles' own time over the cores)")
    ax.barh(ys, [r["pace"] for r in rows], color=BLUE, height=0.42, label="pace")
    for y, r in zip(ys, rows):
        txt = f"{r['pace']:.0f}/min"
        if r["bound"]:
            txt += f"  ({r['pace'] / r['bound']:.2f} of bound {r['bound']:.0f})"
        ax.text(max(r["pace"], 0) * 1.01 + 1, y, txt, va="center", fontsize=8)
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=9)
    ax.set_xlabel("images per minute")
    ax.set_xlim(0, max([r["pace"] for r in rows] + bounds) * 1.45 + 1)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    _save(fig, path)
    plt.close(fig)
    return True


def trends(series, path):
    """series: [(label, metrics)] (vfz.report.history.metrics), oldest
    first -> four small plots: findings (total, new), coverage (line,
    branch %), pace per oracle, corpus size. -> True when written."""
    if len(series) < 2:
        return False
    plt = _plt()
    xs = list(range(len(series)))
    labels = [lab for lab, _ in series]
    fig, axs = plt.subplots(2, 2, figsize=(11, 6.4))

    def line(ax, key, colour, name, sub=None):
        ys = [(m.get(sub) or {}).get(key) if sub else m.get(key) for _, m in series]
        pts = [(x, y) for x, y in zip(xs, ys) if y is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=colour, label=name)
        return bool(pts)

    ax = axs[0][0]
    line(ax, "findings", BLUE, "findings")
    line(ax, "new", RED, "new")
    ax.set_title("findings", fontsize=10)
    ax = axs[0][1]
    a = line(ax, "line", BLUE, "lines %")
    b = line(ax, "branch", GREEN, "branches %")
    ax.set_title("core coverage" + ("" if a or b else " (not measured)"), fontsize=10)
    ax = axs[1][0]
    names = sorted({k for _, m in series for k in m.get("pace") or {}})
    cols = plt.get_cmap("tab10")
    for i, n in enumerate(names):
        line(ax, n, cols(i % 10), n, sub="pace")
    ax.set_title("pace (images per minute)", fontsize=10)
    ax = axs[1][1]
    c = line(ax, "corpus", BLUE, "corpus inputs")
    ax.set_title("corpus size" + ("" if c else " (no corpus)"), fontsize=10)
    for ax in (a for row in axs for a in row):
        ax.set_xticks(xs)
        ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=7)
        ax.spines[["top", "right"]].set_visible(False)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return True
