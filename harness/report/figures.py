"""PNG figures for reports: each a :class:`matplotlib.figure.Figure` of its own on an Agg canvas.

They are never drawn through ``pyplot``, so that whatever backend ``MPLBACKEND`` names (a notebook's
``module://matplotlib_inline.backend_inline``) a report draws the same figures. A figure's folder is created when its
PNG is saved: a report that fails before any figure leaves no empty ``figures/``.
"""

from __future__ import annotations

import io
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.analysis.paired import describe
from harness.files import write_atomic


def import_matplotlib() -> Any:
    """``matplotlib``, imported with ``MPLBACKEND`` set aside.

    Matplotlib raises ``ValueError`` on import for a backend module that is not installed, as a notebook's outside
    Jupyter.
    """
    if "matplotlib" in sys.modules:
        return sys.modules["matplotlib"]
    named = os.environ.pop("MPLBACKEND", None)
    try:
        import matplotlib
    finally:
        if named is not None:
            os.environ["MPLBACKEND"] = named
    return matplotlib


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, for the figures Optuna draws through it."""
    import_matplotlib().use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def new_figure(width: float, height: float, **kwargs: Any) -> Any:
    """A ``Figure`` of ``width`` x ``height`` inches at 120 dpi on an Agg canvas (``kwargs`` to ``Figure``)."""
    import_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=120, **kwargs)
    FigureCanvasAgg(fig)  # the figure's canvas from now on
    return fig


def _axes(width: float, height: float) -> Any:
    """The one ``Axes`` of a :func:`new_figure` laid out by matplotlib's constrained layout."""
    return new_figure(width, height, layout="constrained").add_subplot()


_SHORT = {"n_layers": "{}L", "warmup_steps": "wu {}", "n_heads": "{}h", "d_model": "d{}", "d_ff": "ff {}"}
"""How an axis value reads in a short label (else the value, or ``key value`` for numbers, booleans, none)."""
SEP = " · "


def _short(key: str, value: str) -> str:
    if key in _SHORT:
        return _SHORT[key].format(value)
    try:
        float(value)
    except ValueError:
        if value.lower() not in ("none", "null", "true", "false"):
            return value
    return f"{key} {value}"


def short_labels(labels: list[str]) -> tuple[list[str], str]:
    """Short names for variants labelled ``key=value,...``, and a caption.

    The short names give the axes that differ (``post · 6L · wu 0``); the caption says what each short form stands for
    and what every variant shares (``""``: not shortened).
    """
    parsed = [dict(part.split("=", 1) for part in label.split(",")) if "=" in label else None for label in labels]
    if not labels or any(p is None for p in parsed) or len({tuple(p) for p in parsed}) != 1:
        return list(labels), ""
    keys = list(parsed[0])
    varying = [k for k in keys if len({p[k] for p in parsed}) > 1] or keys
    short = [SEP.join(_short(k, p[k]) for k in varying) for p in parsed]
    if len(set(short)) != len(short):  # not distinct: keep the full names
        return list(labels), ""
    forms = ["/".join(dict.fromkeys(_short(k, p[k]) for p in parsed)) + f": {k}" for k in varying]
    fixed = [f"{k}={parsed[0][k]}" for k in keys if k not in varying]
    return short, "; ".join(forms) + (f"; every variant: {', '.join(fixed)}" if fixed else "")


def _wrap(text: str, fig, fontsize: float = 10.0) -> str:
    """``text`` wrapped to 80 % of the figure's width (0.62 em per character at most: DejaVu Sans)."""
    width = int(0.8 * fig.get_figwidth() * 72 / (0.62 * fontsize))
    return "\n".join(textwrap.fill(line, width) for line in text.split("\n"))


def metric_vs_length(
    rows: pd.DataFrame, base: str, variants: list[str], train_len: int, title: str, path: Path
) -> Path:
    """Mean of ``base@x{m}`` against the length m x ``train_len`` tokens per variant, 95% t-interval band."""
    ax = _axes(6.4, 4.0)
    names, caption = short_labels(variants)
    for variant, shown in zip(variants, names):
        sub = rows[(rows["variant"] == variant) & rows["metric"].str.match(rf"^{base}@x\d+$")]
        if sub.empty:
            continue
        mults = sorted({int(m.split("@x")[1]) for m in sub["metric"]})
        desc = [describe(sub[sub["metric"] == f"{base}@x{m}"]["value"]) for m in mults]
        x = np.array(mults) * train_len
        (line,) = ax.plot(x, [d.mean for d in desc], marker="o", label=f"{shown} (n={desc[-1].n})")
        lo, hi = np.array([d.ci_low for d in desc]), np.array([d.ci_high for d in desc])
        if np.isfinite(lo).any():
            ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.15, linewidth=0)
    ax.axvline(train_len, color="grey", linestyle=":", linewidth=1)
    ax.set_xscale("log", base=2)
    ticks = sorted({int(m.split("@x")[1]) * train_len for m in rows["metric"] if m.startswith(f"{base}@x")})
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    return _finish(ax, "evaluation length (tokens); dotted line = training length L", base, title, path, caption)


def validation_curves(history: pd.DataFrame, metric: str, variants: list[str], title: str, path: Path) -> Path:
    """Validation ``metric`` at L (``history.csv`` rows) against training step: mean over seeds, min-max band."""
    ax = _axes(6.4, 4.0)
    names, caption = short_labels(variants)
    for variant, shown in zip(variants, names):
        sub = history[history["variant"] == variant]
        if sub.empty or metric not in sub:
            continue
        g = sub.groupby("step")[metric]
        (line,) = ax.plot(g.mean().index, g.mean().values, label=f"{shown} (n={sub['seed'].nunique()})")
        ax.fill_between(g.min().index, g.min().values, g.max().values, color=line.get_color(), alpha=0.15, linewidth=0)
    return _finish(ax, "training step", f"validation {metric} at L", title, path, caption)


def draw_paired_lines(ax, wide: pd.DataFrame) -> list:
    """One line per seed (a row of ``wide``: columns the variants, baseline first); a NaN breaks the line."""
    x = np.arange(wide.shape[1])
    lines = [
        ax.plot(x, values.to_numpy(float), marker="o", markersize=4, linewidth=0.8, alpha=0.85, label=f"seed {seed}")[0]
        for seed, values in wide.iterrows()
    ]
    n = wide.notna().sum()
    names, _ = short_labels([str(v) for v in wide.columns])
    stacked = [s.replace(SEP, "\n") for s in names]  # one axis value a line: narrow, never over a neighbour
    ax.set_xticks(x, [f"{s}\n(n={n[v]})" for s, v in zip(stacked, wide.columns)])
    if max((len(line) for s in stacked for line in s.split("\n")), default=0) > 14:  # a long single name
        ax.tick_params(axis="x", labelrotation=90)
    return lines


def paired_lines(wide: pd.DataFrame, metric: str, higher_is_better: bool, title: str, path: Path) -> Path:
    """Per-seed paired lines of one metric (:func:`draw_paired_lines`): a line's slope is a paired difference."""
    ax = _axes(max(6.4, 1.3 * wide.shape[1] + 1.5), 4.8)
    draw_paired_lines(ax, wide)
    xlabel = "variant (baseline first); n = seeds drawn (runs left out of the comparison are not)"
    ylabel = f"{metric} ({'higher' if higher_is_better else 'lower'} is better)"
    return _finish(ax, xlabel, ylabel, title, path, short_labels([str(v) for v in wide.columns])[1])


def critical_difference(mean_ranks: pd.Series, cd: float, alpha: float, title: str, path: Path) -> Path:
    """Mean rank of each variant (1 = best, :func:`harness.analysis.paired.friedman`) with a bar of ±CD/2.

    CD is the Nemenyi critical difference; best at the top (after Demsar, JMLR 2006, Fig. 1): two variants differ at
    level ``alpha`` exactly when their bars do not overlap.
    """
    order = mean_ranks.sort_values(ascending=False)  # best last: drawn at the top
    names, caption = short_labels([str(v) for v in order.index])
    ax = _axes(6.4, 2.4 + 0.35 * len(order))
    y = np.arange(len(order))
    ax.errorbar(order.to_numpy(float), y, xerr=cd / 2, fmt="o", capsize=3, linewidth=1.2)
    ax.set_yticks(y, names)
    ax.set_xlim(min(1.0, order.min() - cd / 2) - 0.2, max(len(order), order.max() + cd / 2) + 0.2)
    note = f"bars ± CD/2 (CD = {cd:.3g}); bars that do not overlap differ (Nemenyi, α = {alpha:g})"
    return _finish(ax, "mean rank over seeds (1 = best)", "", f"{title}\n{note}", path, caption)


def _finish(ax, xlabel: str, ylabel: str, title: str, path: Path, caption: str = "") -> Path:
    """Labels (wrapped), legend, grid and ``caption`` (the full names behind short labels); saves the PNG."""
    fig = ax.figure
    ax.set_xlabel(_wrap(xlabel, fig))
    ax.set_ylabel(ylabel)
    ax.set_title(_wrap(title, fig), fontsize=10)
    if caption:
        fig.supxlabel(_wrap(caption, fig, 9), fontsize=9)
    if ax.get_legend_handles_labels()[0]:  # no empty-legend warning when nothing was drawn
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    if fig.get_layout_engine() is None:  # figures made elsewhere (bench) have no layout engine: fit them
        fig.tight_layout()
    return save_png(fig, path)


def save_png(fig: Any, path: Path, **kwargs: Any) -> Path:
    """Render ``fig`` as PNG (``kwargs`` to ``savefig``), then write it atomically.

    A failed render leaves no file or folder, a failed write (a full disk) the previous figure whole.
    """
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", **kwargs)
    write_atomic(Path(path), buffer.getvalue())
    return Path(path)
