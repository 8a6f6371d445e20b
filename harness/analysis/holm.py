"""The primary comparisons of all tasks of an ablation as one Holm family: every p a verdict reads
and the MDE are adjusted over the family, and the verdicts redone (the exploratory metrics are
Benjamini-Hochberg families within each metric, adjusted by :func:`harness.analysis.stats.compare`)."""

from __future__ import annotations

from collections.abc import Collection

import pandas as pd

from harness.analysis import stats
from harness.analysis import verdicts as vd
from harness.analysis.table import Table
from harness.encode import count


def holm_across(tables: list[Table], alpha: float, confirmatory: bool, exploratory: Collection[str] = ()) -> None:
    """Re-adjust the primary comparisons of all tasks as one Holm family, and redo verdicts.

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
        frame = tables[ti].frame
        frame.loc[ri, ["p_adj", "p_perm_adj", "p_tost_adj", "mde"]] = [
            fam.p_adj[i],
            fam.p_perm_adj[i],
            fam.p_tost_adj[i],
            fam.mde[i],
        ]
        frame.loc[ri, "family_size"] = fam.size
        if vd.kind(frame.loc[ri, "verdict"]) is vd.Kind.IDENTICAL:  # no pair differs: nothing to re-judge
            continue
        low, high = frame.loc[ri, "delta_ci_low"], frame.loc[ri, "delta_ci_high"]
        frame.loc[ri, "verdict"] = fam.verdict(i, low, high, tables[ti].sesoi, alpha=alpha, confirmatory=confirmatory)
    for table in tables:
        if "family_size" in table.frame:  # an exploratory variant is in no primary family
            table.frame.loc[table.frame["variant"].isin(list(exploratory)), "family_size"] = None
        apart = [v for v in table.frame["variant"] if v in exploratory]
        table.family = f"primary (Holm over {count(fam.size, 'comparison')}" + (
            f"; {', '.join(apart)}: exploratory, BH within the table)" if apart else ")"
        )
