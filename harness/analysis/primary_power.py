"""The primary family: the primary comparisons of all tasks as one Holm family (docs/statistics.md,
"Families and adjusted p-values"), and each one's power at its task's smallest effect of interest
with the seeds it needs ("Enough seeds for the question"), ``ablate plan``'s computation on the
profile's own runs.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace

import pandas as pd

from harness.analysis import power as pw
from harness.analysis import stats
from harness.analysis.table import Table
from harness.encode import count


def holm_across(tables: list[Table], alpha: float, exploratory: Collection[str] = ()) -> None:
    """Re-adjust the primary comparisons of all tasks as one Holm family (each p a verdict reads, and
    the MDE), in each table's frame and facts; the rows of ``exploratory`` variants stay out of it,
    with their table's Benjamini-Hochberg adjustment."""
    where = [
        (ti, ri)
        for ti, table in enumerate(tables)
        if "p" in table.frame
        for ri, (p, variant) in enumerate(zip(table.frame["p"], table.frame["variant"]))
        if pd.notna(p) and ri > 0 and variant not in exploratory
    ]
    if not where:
        return
    fam = stats.adjust_family([tables[ti].frame.loc[ri] for ti, ri in where], "holm", alpha)
    for i, (ti, ri) in enumerate(where):
        frame, facts, adjusted = tables[ti].frame, tables[ti].facts, fam.at(i)
        frame.loc[ri, list(adjusted)], frame.loc[ri, "family_size"] = list(adjusted.values()), fam.size
        facts[frame.loc[ri, "variant"]] = replace(facts[frame.loc[ri, "variant"]], **adjusted)
    for table in tables:
        if "family_size" in table.frame:  # an exploratory variant is in no primary family
            table.frame.loc[table.frame["variant"].isin(list(exploratory)), "family_size"] = None
        apart = [v for v in table.frame["variant"] if v in exploratory]
        table.family = f"primary (Holm over {count(fam.size, 'comparison')}" + (
            f"; {', '.join(apart)}: exploratory, BH within the table)" if apart else ")"
        )


TARGET_POWER = 0.8
"""The power a primary comparison should have at its sesoi (``ablate plan``'s default)."""


@dataclass(frozen=True)
class PrimaryPower:
    """One primary comparison's power at its task's sesoi, and the seeds it needs."""

    task: str
    variant: str
    metric: str
    sesoi: float  # the effect to detect (metric units)
    n_pairs: int  # seeds paired with the baseline
    sd_diff: float  # SD of the paired differences in these runs
    family_size: int  # comparisons in the primary (Holm) family
    alpha_each: float  # alpha / family_size
    power: float  # two-sided paired t-test at sesoi; NaN when unknown
    needed: int | None  # seeds for TARGET_POWER and the sign-flip floor; None: cannot size (``note``)
    note: str = ""

    @property
    def underpowered(self) -> bool:
        return self.needed is not None and self.needed > self.n_pairs


def primary_power(tables: list[Table], alpha: float = 0.05) -> list[PrimaryPower]:
    """The power of every member of the primary family (a defined t-test p, in the Holm family that
    :func:`holm_across` sized) of the primary ``tables`` with a sesoi, at the family-wise level ``alpha``."""
    out = []
    for table in tables:
        if not table.sesoi or "p" not in table.frame:
            continue
        rows = table.frame.iloc[1:]
        for _, row in rows[rows["p"].notna() & rows["family_size"].notna()].iterrows():
            n, sd, size = int(row["n_pairs"]), float(row["sd_diff"]), int(row["family_size"])
            alpha_each, needed, note = alpha / size, None, ""
            try:
                needed = pw.seeds_for_verdict(table.sesoi, sd, alpha=alpha_each, power=TARGET_POWER)
            except ValueError as exc:  # an SD of 0, or an extreme level: no number, say why
                note = "SD 0: no spread to size from" if sd == 0 else f"cannot size: {exc}"
            which = (table.task, str(row["variant"]), table.metric, table.sesoi, n, sd, size, alpha_each)
            out.append(PrimaryPower(*which, pw.power_at(table.sesoi, sd, n, alpha_each), needed, note))
    return out
