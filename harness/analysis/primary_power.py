"""Enough seeds for the question (docs/statistics.md): the power of each primary comparison at its
task's smallest effect of interest (sesoi), and the verdict of one that could not have seen it.

The computation is ``ablate plan``'s (:mod:`harness.analysis.seed_planning`): a two-sided paired
t-test at alpha / the size of the primary family (the first, strictest Holm step, as the table's MDE),
with the SD of the paired differences, and at least the seeds at which the exact sign-flip test a
direction needs can reject (:func:`harness.analysis.power.seeds_for_verdict`). Here the SD is the
profile's own runs' (the ``sd_diff`` column of its primary table), not a pilot's: the report can then
be made again from its data file alone (``ablate report --from``), which holds no pilot runs.

A primary comparison of a confirmatory profile that is inconclusive and needed more seeds than it
had reads ``underpowered at this scale (needs N seeds)``: more seeds, not a different design, may
decide it. Power at the sesoi is not the "observed power" at the observed effect (a function of p):
it asks what this design could see at the effect the ablation declares it cares about.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from harness.analysis import power as pw
from harness.analysis import verdicts as vd
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


def mark_underpowered(tables: list[Table], powers: list[PrimaryPower]) -> None:
    """An inconclusive primary comparison that had fewer seeds than it needs reads
    ``underpowered at this scale (needs N seeds)``; every other verdict stands."""
    short = {(p.task, p.metric, p.variant): p.needed for p in powers if p.underpowered}
    for table in tables:
        for i, variant in enumerate(table.frame["variant"]):
            needed = short.get((table.task, table.metric, variant))
            if i and needed is not None and vd.kind(table.frame.loc[i, "verdict"]) is vd.Kind.INCONCLUSIVE:
                table.frame.loc[i, "verdict"] = vd.underpowered(needed)
