"""The power of each primary comparison at its task's smallest effect of interest, and the seeds it
needs (docs/statistics.md, "Enough seeds for the question"): ``ablate plan``'s computation
(:mod:`harness.analysis.seed_planning`) on the profile's own runs. Its verdict: :mod:`harness.analysis.verdicts`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from harness.analysis import power as pw
from harness.analysis.table import Table

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
        """Fewer seeds than ``ablate plan`` says the comparison needs."""
        return self.needed is not None and self.needed > self.n_pairs


def primary_power(tables: list[Table], alpha: float = 0.05) -> list[PrimaryPower]:
    """The power of every tested comparison (a member of the family: a defined t-test p) of the primary ``tables``, after
    :func:`harness.analysis.holm.holm_across` has sized their family.

    Args:
        tables: the primary comparison tables of an analysis (each with its task's ``sesoi``).
        alpha: the family-wise level of the primary family.
    """
    sizes = [
        int(row["family_size"])
        for t in tables
        if "p" in t.frame
        for _, row in t.frame.iloc[1:].iterrows()
        if pd.notna(row["p"]) and pd.notna(row["family_size"])
    ]
    if not sizes or max(sizes) < 1:
        return []
    size = max(sizes)  # one Holm family: every member carries its size
    alpha_each = alpha / size
    out = []
    for table in tables:
        if not table.sesoi or "sd_diff" not in table.frame:
            continue
        for _, row in table.frame.iloc[1:].iterrows():
            n = 0 if pd.isna(row.get("n_pairs")) else int(row["n_pairs"])
            sd = float(row["sd_diff"]) if pd.notna(row.get("sd_diff")) else math.nan
            if n < 2 or math.isnan(sd) or pd.isna(row.get("p")) or pd.isna(row.get("family_size")):
                # not a member: no test (or an exploratory variant, outside the family), no power
                continue
            needed, note = None, ""
            try:
                needed = pw.seeds_for_verdict(table.sesoi, sd, alpha=alpha_each, power=TARGET_POWER)
            except ValueError as exc:  # an SD of 0, or an extreme level: no number, say why
                note = "SD 0: no spread to size from" if sd == 0 else f"cannot size: {exc}"
            power = pw.power_at(table.sesoi, sd, n, alpha_each)
            out.append(
                PrimaryPower(
                    table.task,
                    str(row["variant"]),
                    table.metric,
                    table.sesoi,
                    n,
                    sd,
                    size,
                    alpha_each,
                    power,
                    needed,
                    note,
                )
            )
    return out
