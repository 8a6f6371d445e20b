"""PNG figures for reports (matplotlib, Agg backend): every value drawn comes from the store."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from harness import stats


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def metric_vs_length(rows: pd.DataFrame, base: str, variants: list[str], train_len: int,
                     title: str, path: Path) -> Path:
    """Mean of ``base@x{m}`` against evaluation length, one line per variant, 95% t-interval band.

    Args:
        rows: tidy rows (variant, seed, metric, value) of one task, gate already applied.
        base: metric name without the length suffix (``acc``, ``loss``).
        train_len: L in tokens; the x axis is m x L.
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    for variant in variants:
        sub = rows[(rows["variant"] == variant) & rows["metric"].str.match(rf"^{base}@x\d+$")]
        if sub.empty:
            continue
        mults = sorted({int(m.split("@x")[1]) for m in sub["metric"]})
        desc = [stats.describe(sub[sub["metric"] == f"{base}@x{m}"]["value"]) for m in mults]
        x = np.array(mults) * train_len
        mean = np.array([d.mean for d in desc])
        line, = ax.plot(x, mean, marker="o", label=f"{variant} (n={desc[-1].n})")
        lo, hi = np.array([d.ci_low for d in desc]), np.array([d.ci_high for d in desc])
        if np.isfinite(lo).any():
            ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.15, linewidth=0)
    ax.axvline(train_len, color="grey", linestyle=":", linewidth=1)
    ax.set_xscale("log", base=2)
    ticks = sorted({int(m.split("@x")[1]) * train_len for m in rows["metric"] if m.startswith(f"{base}@x")})
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    return _finish(plt, fig, ax, "evaluation length (tokens); dotted line = training length L", base, title, path)


def validation_curves(history: pd.DataFrame, metric: str, variants: list[str], title: str, path: Path) -> Path:
    """Validation ``metric`` at length L against training step: mean over seeds, min-max band.

    Args:
        history: rows (variant, seed, step, <metric>) from the runs' ``history.csv``.
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    for variant in variants:
        sub = history[history["variant"] == variant]
        if sub.empty or metric not in sub:
            continue
        g = sub.groupby("step")[metric]
        line, = ax.plot(g.mean().index, g.mean().values, label=f"{variant} (n={sub['seed'].nunique()})")
        ax.fill_between(g.min().index, g.min().values, g.max().values, color=line.get_color(), alpha=0.15, linewidth=0)
    return _finish(plt, fig, ax, "training step", f"validation {metric} at L", title, path)


def _finish(plt, fig, ax, xlabel: str, ylabel: str, title: str, path: Path) -> Path:
    """Labels, legend and grid shared by every figure; saves the PNG and closes the figure."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    if ax.get_legend_handles_labels()[0]:  # no empty-legend warning when nothing was drawn
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
