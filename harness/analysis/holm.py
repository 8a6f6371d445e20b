"""The primary comparisons of all tasks of an ablation as one Holm family (docs/statistics.md,
"Families and adjusted p-values"); the exploratory metrics are Benjamini-Hochberg families within
each table, adjusted by :func:`harness.analysis.stats.compare`."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

import pandas as pd

from harness.analysis import stats
from harness.analysis.table import Table
from harness.encode import count


def holm_across(tables: list[Table], alpha: float, exploratory: Collection[str] = ()) -> None:
    """Re-adjust the primary comparisons of all tasks as one Holm family, in each table's frame and
    in the facts its verdicts are decided from.

    Everything a verdict reads or a table prints beside the adjusted p is redone for the whole
    family (:func:`harness.analysis.stats.adjust_family`): the t-test p, the sign-flip p, the TOST p
    (equivalence) and the MDE (at alpha / family size). The rows of ``exploratory`` variants (a
    profile's ``exploratory_variants``) stay out of the family, with the Benjamini-Hochberg
    adjustment within their table."""
    where = [
        (ti, ri)
        for ti, table in enumerate(tables)
        if "p" in table.frame
        for ri, (p, variant) in enumerate(zip(table.frame["p"], table.frame["variant"]))
        if pd.notna(p) and ri > 0 and variant not in exploratory
    ]
    if not where:
        return

    def column(name: str) -> list[float]:
        return [float(tables[ti].frame.loc[ri, name]) for ti, ri in where]

    fam = stats.adjust_family(
        column("p"), column("p_perm"), column("p_tost"), column("n_pairs"), column("sd_diff"), "holm", alpha
    )
    for i, (ti, ri) in enumerate(where):
        table = tables[ti]
        adjusted = {"p_adj": fam.p_adj[i], "p_perm_adj": fam.p_perm_adj[i], "p_tost_adj": fam.p_tost_adj[i]}
        table.frame.loc[ri, [*adjusted, "mde"]] = [*adjusted.values(), fam.mde[i]]
        table.frame.loc[ri, "family_size"] = fam.size
        variant = table.frame.loc[ri, "variant"]
        table.facts[variant] = replace(table.facts[variant], **adjusted, mde=fam.mde[i])
    for table in tables:
        if "family_size" in table.frame:  # an exploratory variant is in no primary family
            table.frame.loc[table.frame["variant"].isin(list(exploratory)), "family_size"] = None
        apart = [v for v in table.frame["variant"] if v in exploratory]
        table.family = f"primary (Holm over {count(fam.size, 'comparison')}" + (
            f"; {', '.join(apart)}: exploratory, BH within the table)" if apart else ")"
        )
