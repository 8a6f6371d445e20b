"""The verdict on a practitioners' claim (``claims.yaml``) from the analysis of one ablation and
profile: each evidence entry's comparison is read from the analysis's tables and judged against the
verdict the claim expects; the words come from :mod:`harness.analysis.verdicts`. Also whether a
negative control (an ablation declaring ``control: {kind: negative}``) was caught
(:func:`control_outcomes`)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from harness.analysis import verdicts as vd
from harness.analysis.comparisons import Analysis, why_not_finished
from harness.encode import count, text
from harness.experiment import metrics
from harness.experiment.ablation import Ablation


def in_grid(evidence: dict[str, Any], view: Ablation) -> bool:
    """Whether a claim's evidence entry names a task and a variant of the profile's grid ``view``
    (an :class:`~harness.experiment.ablation.Ablation` restricted to one profile)."""
    return evidence["task"] in view.tasks and evidence["variant"] in {view.label(v) for v in view.variants()}


POSITIVE = "positive control"
NEGATIVE = "negative control"


@dataclass(frozen=True)
class Guard:
    """A control that guards a claim, and its outcome at this scale. A positive control: a published
    result (an entry of ``harness/experiment/reproductions.yaml`` listing the claim under
    ``guards``; outcome pass | fail | inconclusive ... | not run, :mod:`harness.analysis.reproductions`).
    A negative control: an ablation declaring ``control: {guards: [...]}`` (a known bug; outcome
    caught | not caught | not run, from its confirmatory ``profile``)."""

    id: str
    outcome: str
    kind: str = POSITIVE
    profile: str | None = None  # a negative control's profile

    @property
    def passed(self) -> bool:
        return self.outcome in ("pass", "caught")

    def command(self) -> str:
        """What runs it: ``ablate reproduce ID`` or ``ablate run NAME --profile P``."""
        if self.kind == NEGATIVE:
            return f"ablate run {self.id} --profile {self.profile}"
        return f"ablate reproduce {self.id}"


def claim_verdict(claim: dict[str, Any], result: Analysis, guards: Sequence[Guard] = ()) -> tuple[str, list[str]]:
    """Verdict (supported / partly supported / contradicted / partly contradicted / mixed /
    inconclusive / pilot / not tested in this profile / untestable at this scale / underpowered at
    this scale (needs N seeds) / withheld (positive control ID: OUTCOME)) and one evidence line per
    entry.

    ``guards``: the positive controls of the claim. A verdict that rules (for or against it:
    :data:`~harness.analysis.verdicts.RULINGS`) while one of them has not passed is ``withheld``:
    the harness has not shown at this scale that it sees the published effect the claim's evidence
    rests on. A last evidence line then says what the tests alone gave.

    Each evidence entry names a comparison (task, metric, variant vs the baseline) and the
    verdict expected if the claim holds (better, worse or equivalent). Equivalence within the
    smallest effect of interest, the same outcome in every pair, or identical values in every
    pair contradict a claim of a difference. Entries outside the profile's grid are listed and
    left out of the verdict. A claim whose every comparison is underpowered (inconclusive with fewer
    seeds than ``ablate plan`` asks at the sesoi) reads ``underpowered at this scale (needs N
    seeds)``, N the most any of them needs; one whose every comparison was not learned or at
    ceiling (the baseline at the metric's best value on every seed), ``untestable at this scale``;
    such comparisons beside ones that rule are left out of the verdict.
    """
    verdict, lines = _tested(claim, result)
    waiting = [g for g in guards if not g.passed]
    if not waiting or vd.claim_kind(verdict) not in vd.RULINGS:
        return verdict, lines
    commands = sorted({g.command() for g in waiting if g.outcome == "not run" or g.outcome.startswith("incomplete")})
    return vd.claim_withheld([(f"{g.kind} {g.id}", g.outcome) for g in waiting]), [
        *lines,
        f"The tests alone: **{verdict}**. Withheld until the control{'s' if len(waiting) > 1 else ''} "
        f"guarding this claim pass{'' if len(waiting) > 1 else 'es'} at this scale: a harness that does not see "
        "a known effect (a published result: reproductions.md) or a known bug (a negative control) here "
        "cannot be trusted with this claim's comparisons"
        + (f" ({'; '.join(f'`{c}`' for c in commands)} runs what is missing)." if commands else "."),
    ]


def _tested(claim: dict[str, Any], result: Analysis) -> tuple[str, list[str]]:
    """The verdict of the claim's comparisons alone, and its evidence lines."""
    lines, outcomes, small_effects, needs = [], [], [], []
    abl = result.ablation  # the profile's view: its tasks and variants
    for ev in claim.get("evidence", []):
        if not in_grid(ev, abl):
            lines.append(
                f"{ev['task']} {ev['metric']}, {ev['variant']} vs {abl.baseline_label}: not in the "
                f"`{result.profile}` profile's grid (see the ablation's other profiles)"
            )
            continue
        table = result.table(ev["task"], ev["metric"])
        row = None if table is None else table.frame[table.frame["variant"] == ev["variant"]]
        if row is not None and not row.empty and vd.kind(row.iloc[0].get("verdict")) in vd.NO_VERDICT:
            # no verdict from a task the baseline (or the variant) did not learn, or one too easy to separate them
            outcomes.append("untestable")
            lines.append(
                f"{ev['task']} `{ev['metric']}`, {ev['variant']} vs {abl.baseline_label}: {row.iloc[0]['verdict']}; "
                f"claim expects {ev['expect']}: **untestable at this scale**"
            )
            continue
        if row is None or row.empty or pd.isna(row.iloc[0].get("delta")):
            outcomes.append("not run")
            lines.append(f"{ev['task']} {ev['metric']}, {ev['variant']} vs {abl.baseline_label}: no paired runs")
            continue
        r = row.iloc[0]
        v = str(r["verdict"])
        outcome = (
            "pilot"  # a pilot rules on nothing, a censored comparison of one included
            if vd.kind(v) is vd.Kind.PILOT or not abl.profiles[result.profile].confirmatory
            else "supported"
            if vd.matches(v, ev["expect"])
            else "contradicted"
            if vd.rules(v)
            else "underpowered"
            if vd.kind(v) is vd.Kind.UNDERPOWERED
            else "inconclusive"
        )
        if outcome == "underpowered":
            needs.append(_needed(result, ev["task"], ev["metric"], ev["variant"]))
        outcomes.append(outcome)
        head = (
            f"{ev['task']} `{ev['metric']}`, {ev['variant']} vs {abl.baseline_label}"
            + (f" (this comparison tests {ev['tests']})" if ev.get("tests") else "")
            + ": "
        )
        if ev["metric"] == metrics.OUTCOME:
            base = table.frame.iloc[0]
            why = _failure_reasons(result, ev["task"], ev["variant"])
            lines.append(
                head + f"finished {r['mean'] * r['n']:.0f}/{r['n']} runs vs {base['mean'] * base['n']:.0f}/{base['n']}"
                f"{why}; exact McNemar p = {text(r['p'], '.3g')}, adjusted p = {text(r['p_adj'], '.3g')} "
                f"({table.family}) → {v}; claim expects {ev['expect']}: **{outcome}**"
            )
            continue
        small = ""
        if outcome == "supported" and vd.kind(v) in vd.DIRECTIONS and table.sesoi and abs(r["delta"]) < table.sesoi:
            small_effects.append(table.sesoi)  # real, but smaller than the effect the ablation cares about
            small = f" (|Δ| below the smallest effect of interest {table.sesoi:g})"
        undefined = why_undefined(r)  # no CI or p to print: say why instead of "nan"
        ci = delta_ci(r, " (not adjusted)")
        p_adj = f"{text(r['p_adj'], '.3g')} ({table.family})" if undefined is None else f"– ({undefined})"
        lines.append(
            head + f"Δ = {text(r['delta'], '+.4g')} ({ci}, + = {ev['variant']} better), "
            f"adjusted p = {p_adj}, n = {count(int(r['n_pairs']), 'seed')} → {v}; "
            f"claim expects {ev['expect']}: **{outcome}**{small}"
        )
    if not claim.get("evidence"):
        return vd.ClaimKind.NOT_TESTED_YET.value, lines
    if not outcomes:
        return vd.ClaimKind.NOT_TESTED.value, lines
    counts = Counter(outcomes)
    if counts["pilot"] or not abl.profiles[result.profile].confirmatory:
        # a pilot rules on nothing, also where a comparison's own verdict is not "pilot" (e.g. censored)
        return vd.claim_pilot(), lines
    if counts["supported"] and not counts["contradicted"]:
        # in direction only: every supporting effect is below the sesoi
        return vd.claim_supported(
            counts["supported"] == len(outcomes), len(small_effects) == counts["supported"]
        ), lines
    if counts["contradicted"] and not counts["supported"]:
        return vd.claim_contradicted(counts["contradicted"] == len(outcomes)), lines
    if counts["supported"] and counts["contradicted"]:
        return vd.claim_mixed(counts["supported"], counts["contradicted"]), lines
    if counts["untestable"] == len(outcomes):
        return vd.ClaimKind.UNTESTABLE.value, lines
    if counts["underpowered"] == len(outcomes):  # more seeds, not another design, may decide it
        return vd.claim_underpowered(max(needs)), lines
    return vd.ClaimKind.INCONCLUSIVE.value, lines


def _needed(result: Analysis, task: str, metric: str, variant: str) -> int:
    """The seeds an underpowered comparison needs (:mod:`harness.analysis.primary_power`)."""
    return next(
        p.needed
        for p in result.power
        if (p.task, p.metric, p.variant) == (task, metric, variant) and p.needed is not None
    )


def delta_ci(row: Mapping[str, Any], note: str = "") -> str:
    """``95% CI [-0.01, +0.02]`` of a comparison's Δ (with ``note`` after it), or ``95% CI – (why)``
    where it has no test (:func:`why_undefined`): never ``nan``."""
    undefined = why_undefined(row)
    if undefined is not None:
        return f"95% CI – ({undefined})"
    return f"95% CI [{text(row['delta_ci_low'], '+.4g')}, {text(row['delta_ci_high'], '+.4g')}]{note}"


def why_undefined(row: Mapping[str, Any]) -> str | None:
    """Why a comparison has no test (hence no CI or p), or None when it has one."""
    n = 0 if pd.isna(row.get("n_pairs")) else int(row["n_pairs"])
    if n < 2:
        return "no pairs" if n == 0 else "one pair: no spread to test"
    if pd.isna(row.get("p_adj")):
        return "no pair differs" if row.get("ties") == n else "the test is undefined"
    return None


def _failure_reasons(result: Analysis, task: str, variant: str) -> str:
    """`` (n status: reason)`` of the variant's most common way of not finishing."""
    runs = result.runs[(result.runs["task"] == task) & (result.runs["variant"] == variant)]
    common = why_not_finished(list(runs["status"]), list(runs["reason"]))
    return f" ({common[0][1]} {common[0][0]})" if common else ""


@dataclass(frozen=True)
class ControlOutcome:
    """Whether one comparison of a negative control caught the bug: its variant against the
    baseline on a task's primary metric."""

    task: str
    variant: str
    metric: str
    verdict: str  # the comparison's verdict; "no paired runs" without one
    p_adj: float  # its adjusted p (Holm over the primary family); NaN without a test
    caught: bool  # the verdict is the one the control expects and p_adj < alpha


def control_outcomes(result: Analysis, alpha: float = 0.05) -> list[ControlOutcome]:
    """For an ablation that declares ``control:`` (:class:`harness.experiment.ablation.Control`),
    per task of the profile and control variant: ``caught`` when its primary comparison reads the
    expected verdict (``worse``) with adjusted p < ``alpha``, not caught otherwise (another verdict,
    no verdict, a pilot, a task not learned). Empty for any other ablation."""
    abl = result.ablation
    control = abl.control
    if control is None:
        return []
    labels = [abl.label(v) for v in abl.variants() if abl.label(v) != abl.baseline_label]
    variants = [v for v in labels if control.variant in (None, v)]
    out = []
    for task, entry in abl.tasks.items():
        table = result.table(task, entry.primary.metric)
        for variant in variants:
            row = None if table is None else table.frame[table.frame["variant"] == variant]
            if row is None or row.empty or not isinstance(row.iloc[0].get("verdict"), str):
                out.append(ControlOutcome(task, variant, entry.primary.metric, "no paired runs", math.nan, False))
                continue
            verdict, p_adj = row.iloc[0]["verdict"], row.iloc[0].get("p_adj")
            p_adj = math.nan if pd.isna(p_adj) else float(p_adj)
            caught = vd.kind(verdict) is vd.Kind(control.expect) and p_adj < alpha
            out.append(ControlOutcome(task, variant, entry.primary.metric, verdict, p_adj, caught))
    return out
