"""Across all variants: per-seed paired lines and a Friedman test with Nemenyi mean ranks, for
the primary metric of each task (Demsar, "Statistical comparisons of classifiers over multiple
data sets", JMLR 2006: blocks = seeds, treatments = variants).

The pairwise tables compare each variant with the baseline; this adds the omnibus question
(do the variants differ at all?) and the ranks of all of them against each other. Blocks are the
seeds that have every variant; runs left out of the comparison (below the task's gate, for
metrics beyond L) are left out here too. The Nemenyi critical difference is printed whatever
the Friedman p; Demsar reads it only after the Friedman test rejects.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from harness.analysis import ranks
from harness.analysis.table import Table
from harness.report import figures

MIN_BLOCKS = 3  # complete seeds needed for the omnibus test and ranks
MIN_VARIANTS = 3  # with 2 variants the pairwise table already is the whole comparison


def seed_table(rows: pd.DataFrame, metric: str, variants: list[str]) -> pd.DataFrame:
    """(seeds, variants) values of one metric: index seed (ascending), columns ``variants`` in
    the given order; NaN where a variant has no value for a seed.

    Args:
        rows: tidy rows (run_id, variant, seed, metric, value) of one task, gate already applied.

    Raises:
        ValueError: two rows for one (seed, variant) (``DataFrame.pivot``).
    """
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


def friedman_line(res: ranks.Friedman, alpha: float) -> str:
    """``Friedman χ²(df) = .., p = .., N blocks, k variants; mean ranks: ...; CD = ..``, ranks
    best first."""
    ranks = ", ".join(f"{v} {r:.2f}" for v, r in res.mean_ranks.sort_values().items())
    return (
        f"Friedman χ²({res.df}) = {res.statistic:.3g}, p = {res.p:.3g}, {res.n_seeds} blocks (seeds), "
        f"{res.k} variants; mean ranks (1 = best): {ranks}; Nemenyi CD = {res.cd:.3g} at alpha {alpha:g} "
        "(mean ranks further apart than CD differ)."
    )


def across_variants(
    table: Table | None,
    rows: pd.DataFrame,
    fig_dir: Path,
    md_dir: Path,
    stem: str,
    alpha: float = 0.05,
    withheld: str | None = None,
) -> list[str]:
    """Markdown lines for one task's primary table: the paired-lines figure, then one Friedman
    line with the critical-difference figure, or one line saying why the test is left out.

    Args:
        table: the task's primary comparison (its variants, baseline first, and direction);
            None gives no lines.
        rows: the task's tidy rows with the gate applied (``report._gated_rows``).
        fig_dir, md_dir: where the PNGs go; the folder the markdown links are relative to.
        stem: file-name prefix of the report's figures.
        withheld: why no test may be read here (e.g. the task was not learned): the figure, and
            this reason in place of the Friedman line.
    """
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
    return lines + [
        head + friedman_line(res, alpha),
        "",
        f"![{table.task}: mean ranks]({fig.relative_to(md_dir).as_posix()})",
        "",
    ]
