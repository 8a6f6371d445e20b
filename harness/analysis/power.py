"""The power of each primary comparison at its task's smallest effect of interest, and the seeds it needs.

The report's power section and the ``underpowered`` verdict read it: a two-sided paired t-test at the family's
Holm level, from the spread the runs show (:mod:`harness.analysis.paired`).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.analysis import paired
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
        """It needs more seeds than it has paired with the baseline (``needed`` > ``n_pairs``)."""
        return self.needed is not None and self.needed > self.n_pairs


def primary_power(tables: list[Table], alpha: float = 0.05) -> list[PrimaryPower]:
    """The power of every member of the primary family, at the family-wise level ``alpha``.

    A member: a defined t-test p, in the Holm family that :func:`holm_across` sized, of the primary ``tables``
    with a sesoi.
    """
    out = []
    for table in tables:
        if not table.sesoi or "p" not in table.frame:
            continue
        rows = table.frame.iloc[1:]
        for _, row in rows[rows["p"].notna() & rows["family_size"].notna()].iterrows():
            n, sd, size = int(row["n_pairs"]), float(row["sd_diff"]), int(row["family_size"])
            alpha_each, needed, note = alpha / size, None, ""
            try:
                needed = paired.seeds_for_verdict(table.sesoi, sd, alpha=alpha_each, power=TARGET_POWER)
            except ValueError as exc:  # an SD of 0, or an extreme level: no number, say why
                note = "SD 0: no spread to size from" if sd == 0 else f"cannot size: {exc}"
            which = (table.task, str(row["variant"]), table.metric, table.sesoi, n, sd, size, alpha_each)
            out.append(PrimaryPower(*which, paired.power_at(table.sesoi, sd, n, alpha_each), needed, note))
    return out
