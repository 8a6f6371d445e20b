"""Every variant against the baseline for one metric: the comparison table and the adjustment of a family.

The table: :func:`compare` (:func:`outcome_compare` for whether runs finished); the adjustment: :func:`adjust`,
:func:`adjust_family` (docs/statistics.md, "Families and adjusted p-values").

Does not do: mixed models, bootstrap intervals (percentile bootstrap undercovers at n <= 10).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
from statsmodels.stats.multitest import multipletests

from harness.analysis import verdicts as vd
from harness.analysis.paired import NAN, describe, mde, paired_test, tost_paired


def adjust(pvalues, method: str = "holm") -> tuple[np.ndarray, int]:
    """Multiplicity adjustment by ``statsmodels.stats.multitest.multipletests``: the adjusted p and the family's size.

    ``method``: "holm" or "fdr_bh", passed explicitly (statsmodels' default is Holm-Sidak). The adjusted p is NaN
    where the input is NaN (outside the family); the family's size is the number of non-NaN p.
    """
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, NAN)
    ok = ~np.isnan(p)
    if ok.sum() == 1:  # every method is the identity for a family of one; skipping it also
        out[ok] = p[ok]  # avoids the gc.collect() that statsmodels' Holm runs on every call
    elif ok.any():
        out[ok] = multipletests(p[ok], method=method)[1]
    return out, int(ok.sum())


class AdjustedFamily(NamedTuple):
    """One family's adjusted p and MDE, an entry per comparison given to :func:`adjust_family`, and its size."""

    p_adj: np.ndarray  # adjusted t-test p; NaN where p is NaN
    p_perm_adj: np.ndarray  # adjusted sign-flip p, over the same members
    p_tost_adj: np.ndarray  # adjusted TOST p, over the same members
    mde: np.ndarray  # MDE at alpha / size, the level of the family's first Holm step
    size: int  # members: comparisons with a defined t-test p

    def at(self, i: int) -> dict[str, float]:
        """Comparison ``i``'s adjusted p (``p_adj``, ``p_perm_adj``, ``p_tost_adj``) and ``mde``."""
        return {name: self[j][i] for j, name in enumerate(self._fields[:4])}


def adjust_family(comparisons: Sequence[Mapping[str, float]], method: str, alpha: float = 0.05) -> AdjustedFamily:
    """Adjust every p printed or judged for one family, and size its MDE (at ``alpha / size``).

    From each comparison's ``p``, ``p_perm``, ``p_tost`` (NaN: no TOST), ``n_pairs`` and ``sd_diff``. The members
    are the comparisons whose t-test ``p`` is defined; their sign-flip and TOST p are adjusted by the same
    ``method`` over the same members, so a verdict reads three p of one family.
    """
    columns = ("p", "p_perm", "p_tost", "n_pairs", "sd_diff")
    p, p_perm, p_tost, n_pairs, sd_diff = (np.array([c[k] for c in comparisons], dtype=float) for k in columns)
    member = ~np.isnan(p)
    adj, size = adjust(p, method)
    perm, tost = (adjust(np.where(member, q, NAN), method)[0] for q in (p_perm, p_tost))
    m_de = np.array([mde(int(n), sd, alpha / max(size, 1)) for n, sd in zip(n_pairs, sd_diff)], dtype=float)
    return AdjustedFamily(adj, perm, tost, m_de, size)


COLUMNS = (  # noqa: SIM905 - one line, not one per name
    "variant n mean sd ci_low ci_high n_pairs delta delta_ci_low delta_ci_high wins ties losses d_z sd_diff "
    "prob_improvement t p p_perm p_adj p_perm_adj family_size p_tost p_tost_adj mde verdict"
).split()


def compare(
    df: pd.DataFrame,
    *,
    baseline: str,
    higher_is_better: bool,
    sesoi: float | None = None,
    alpha: float = 0.05,
    confirmatory: bool = True,
    p_adjust: str = "holm",
    facts: dict[str, vd.Facts] | None = None,
) -> pd.DataFrame:
    """Every variant against the baseline, paired by seed, for one metric in one slice.

    One row per variant, baseline first (descriptives only, verdict ``"baseline"``), columns ``COLUMNS`` (``mde``
    at 80 % power, the mean's and Δ's CIs at 95 %); ``delta > 0`` always means better.

    Args:
        df: tidy rows ``variant``, ``seed``, ``value``, one per (variant, seed).
        baseline: the variant the others are compared against.
        higher_is_better: the metric's direction.
        sesoi: (metric units) enables TOST.
        alpha: the level each adjusted p is judged at; the MDE is sized at ``alpha`` / the family's size.
        confirmatory: False: a pilot.
        p_adjust: this call's family (:func:`adjust_family`): "holm" or "fdr_bh".
        facts: filled with each variant's Facts.

    Raises:
        ValueError: for missing columns, duplicate (variant, seed) rows or an unknown baseline.
    """
    if missing := {"variant", "seed", "value"} - set(df.columns):
        raise ValueError(f"compare needs columns variant, seed, value; missing {sorted(missing)}")
    if df.duplicated(["variant", "seed"]).any():
        raise ValueError("duplicate (variant, seed) rows; select one metric and one slice first")
    names = list(pd.unique(df["variant"]))
    if baseline not in names:
        raise ValueError(f"baseline {baseline!r} not among variants {names}")
    names = [baseline] + [v for v in names if v != baseline]
    series = {v: g.set_index("seed")["value"].astype(float) for v, g in df.groupby("variant")}

    rows = [vars(describe(series[baseline])) | {"variant": baseline}]
    tests = [paired_test(series[baseline], series[v], higher_is_better) for v in names[1:]]
    tost = [tost_paired(t.diffs, sesoi) if sesoi and not t.non_finite else NAN for t in tests]
    fam = adjust_family([vars(t) | {"p_tost": q} for t, q in zip(tests, tost)], p_adjust, alpha)
    facts = {} if facts is None else facts
    for i, (v, t) in enumerate(zip(names[1:], tests)):
        better = bool((t.ci_low + t.ci_high) / 2 > 0)
        adjusted = fam.at(i)
        facts[v] = vd.Facts(t.n_pairs, t.ties, t.non_finite, better, *adjusted.values(), sesoi, alpha, confirmatory)
        own = {"variant": v, "delta_ci_low": t.ci_low, "delta_ci_high": t.ci_high, "p_tost": tost[i]}
        own["family_size"] = None if np.isnan(t.p) else fam.size  # a comparison without p is in no family
        own["verdict"] = vd.decide(facts[v])
        rows.append(vars(t) | vars(describe(series[v])) | adjusted | own)  # the mean's CI, not Δ's
    rows[0]["verdict"] = vd.BASELINE
    out = {c: [r.get(c, NAN) for r in rows] for c in COLUMNS}
    for c in ("n", "n_pairs", "wins", "ties", "losses", "family_size"):
        out[c] = pd.array(out[c], dtype="Int64")  # NA on the baseline row
    return pd.DataFrame(out)


def outcome_compare(
    df: pd.DataFrame,
    *,
    baseline: str,
    alpha: float = 0.05,
    confirmatory: bool = True,
    facts: dict[str, vd.Facts] | None = None,
) -> pd.DataFrame:
    """Every variant against the baseline on a binary outcome per run, paired by seed, by the exact McNemar test.

    ``value`` 1: the run finished, 0: it diverged, raised or timed out. The test:
    ``statsmodels.stats.contingency_tables.mcnemar``, ``exact=True``: a binomial test on the discordant pairs (none:
    p = 1), Benjamini-Hochberg within the call. :func:`compare`'s columns: ``mean`` the fraction that finished,
    ``p`` and ``p_perm`` the exact McNemar p.
    """
    from statsmodels.stats.contingency_tables import mcnemar

    frame = compare(
        df, baseline=baseline, higher_is_better=True, alpha=alpha, confirmatory=confirmatory, p_adjust="fdr_bh"
    )
    discordant = [(int(w or 0), int(lo or 0)) for w, lo in zip(frame["wins"].iloc[1:], frame["losses"].iloc[1:])]
    pvals = [float(mcnemar([[0, w], [lo, 0]], exact=True).pvalue) if w + lo else 1.0 for w, lo in discordant]
    p_adj, m = adjust(pvals, "fdr_bh")
    for i, (p, pa) in enumerate(zip(pvals, p_adj), start=1):
        frame.loc[i, ["p", "p_perm", "p_adj", "p_perm_adj"]] = [p, p, pa, pa]
        frame.loc[i, ["t", "p_tost", "p_tost_adj", "mde"]] = NAN  # no t-test, no equivalence, no MDE
        frame.loc[i, "family_size"] = m
        n, ties, delta = int(frame.loc[i, "n_pairs"] or 0), int(frame.loc[i, "ties"]), frame.loc[i, "delta"]
        f = vd.Facts(n, ties, 0, bool(delta > 0), pa, pa, alpha=alpha, confirmatory=confirmatory, outcome=True)
        frame.loc[i, "verdict"] = vd.decide(f)
        if facts is not None:
            facts[frame.loc[i, "variant"]] = f
    return frame
