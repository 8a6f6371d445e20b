"""Across all variants, for the primary metric of each task: per-seed paired lines and a Friedman
test with Nemenyi mean ranks (Demsar, "Statistical comparisons of classifiers over multiple data
sets", JMLR 2006: blocks = the seeds that have every variant, treatments = variants; docs/statistics.md).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from harness.analysis import paired as ranks
from harness.analysis.comparisons import Table
from harness.report import figures

MIN_BLOCKS = 3  # complete seeds needed for the omnibus test and ranks
MIN_VARIANTS = 3  # with 2 variants the pairwise table already is the whole comparison


def seed_table(rows: pd.DataFrame, metric: str, variants: list[str]) -> pd.DataFrame:
    """(seeds, variants) values of one metric from one task's tidy ``rows``: index seed (ascending),
    columns ``variants`` in order, NaN where a variant has no value (ValueError: two for one seed)."""
    sub = rows[rows["metric"] == metric]
    wide = sub.pivot(index="seed", columns="variant", values="value")
    return wide.reindex(columns=variants).sort_index().rename_axis(columns=None)


def skip_reason(n_blocks: int, k: int) -> str | None:
    """Why the omnibus test is left out (too few variants or complete seeds), or None."""
    if k < MIN_VARIANTS:
        return f"{k} variant(s); it needs at least {MIN_VARIANTS}"
    if n_blocks < MIN_BLOCKS:
        return f"only {n_blocks} seed(s) have a value for every variant; it needs at least {MIN_BLOCKS}"
    return None


def across_variants(
    table: Table | None,
    rows: pd.DataFrame,
    fig_dir: Path,
    md_dir: Path,
    stem: str,
    alpha: float = 0.05,
    withheld: str | None = None,
) -> list[str]:
    """Markdown lines for one task's primary ``table`` (None: none) from its tidy ``rows`` (gate applied):
    the paired-lines figure, then the Friedman test with its critical-difference figure, or why it is
    left out (``withheld``: e.g. the task was not learned); figures ``fig_dir/stem-...png``."""
    if table is None:
        return []
    wide = seed_table(rows, table.metric, list(table.frame["variant"]))
    if wide.isna().all(axis=None):
        return []
    name = f"{stem}-{table.task}-{table.metric.replace('@', '_')}"
    label = f"{table.task}: {table.metric} per seed"
    fig = figures.paired_lines(wide, table.metric, table.higher_is_better, label, fig_dir / f"{name}-per-seed.png")
    lines = [f"![{label}]({fig.relative_to(md_dir).as_posix()})", ""]
    head = f"**Across all variants** (`{table.metric}`): "
    if withheld is not None:
        return lines + [f"{head}Friedman test left out: {withheld}.", ""]
    res = ranks.friedman(wide, table.higher_is_better, alpha)
    why = skip_reason(res.n_seeds, res.k)
    if why is None and res.p != res.p:  # NaN
        why = "the statistic is undefined (every seed ties all variants)"
    if why is not None:
        return lines + [f"{head}Friedman test left out: {why}.", ""]
    fig = figures.critical_difference(
        res.mean_ranks, res.cd, alpha, f"{table.task}: mean ranks of {table.metric}", fig_dir / f"{name}-ranks.png"
    )
    mean_ranks = ", ".join(f"{v} {r:.2f}" for v, r in res.mean_ranks.sort_values().items())
    return lines + [
        f"{head}Friedman χ²({res.df}) = {res.statistic:.3g}, p = {res.p:.3g}, {res.n_seeds} blocks (seeds), "
        f"{res.k} variants; mean ranks (1 = best): {mean_ranks}; Nemenyi CD = {res.cd:.3g} at alpha {alpha:g} "
        "(mean ranks further apart than CD differ).",
        "",
        f"![{table.task}: mean ranks]({fig.relative_to(md_dir).as_posix()})",
        "",
    ]
