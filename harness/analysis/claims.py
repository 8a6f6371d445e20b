"""The verdict on a practitioners' claim (``claims.yaml``), and whether a negative control was caught.

The verdict comes from the analysis of one ablation and profile (docs/statistics.md, "Claims and their verdicts";
docs/claims-audit.md); a negative control's outcome from :func:`control_outcomes`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from harness.analysis import claim_verdicts as cv
from harness.analysis import verdicts as vd
from harness.analysis.comparisons import Analysis, why_not_finished
from harness.encode import count, text
from harness.errors import RunStatus, TextEnum
from harness.experiment import metrics
from harness.experiment.ablation import Ablation
from harness.experiment.claims import Claim, Evidence


def in_grid(evidence: Evidence, view: Ablation, profile: str) -> bool:
    """Whether a claim's evidence entry names a task and variants (``against`` too) of the profile's grid ``view``.

    When it names a ``profile``, also whether that is the one (``profile``: the view's).
    """
    if evidence.profile is not None and evidence.profile != profile:
        return False
    labels = {view.label(v) for v in view.variants()}
    named = {evidence.variant, evidence.against or view.baseline_label}
    if (tr := evidence.trend) is not None:
        named |= set(tr.variants or []) | set(tr.against or [])
    return evidence.task in view.tasks and named <= labels


POSITIVE = "positive control"
NEGATIVE = "negative control"


class ControlOutcome(TextEnum):
    """A control's outcome at this scale, which reads, prints and is compared as its text (``pass``).

    docs/statistics.md, "Controls before verdicts": a positive control's pass | fail | inconclusive | incomplete |
    not run, a negative control's caught | not caught | incomplete | not run. What more there is to say
    (``baseline not learned 3/8`` of an inconclusive one, ``29/32 runs`` of an incomplete one) is a field beside
    it, and :meth:`text` the two in words: ``incomplete (29/32 runs)``.

    Attributes:
        PASS: A positive control's comparisons each gave the verdict its published result predicts.
        FAIL: One gave another verdict, or the reference fell below the control's bar: a finding, not a bug.
        INCONCLUSIVE: The tests did not decide, or the reference did not learn the task or sat at its ceiling.
        CAUGHT: A negative control's known bug read as expected on every task of its confirmatory profile.
        NOT_CAUGHT: It did not, on some task.
        INCOMPLETE: Its grids have not all finished: not judged yet, whatever its first runs say.
        NOT_RUN: None of its runs is in the store (one comparison of a positive control: no runs of both variants).
        UNKNOWN: Not known: a report made from a data file found no controls' file beside it, or none is read.
    """

    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"
    CAUGHT = "caught"
    NOT_CAUGHT = "not caught"
    INCOMPLETE = "incomplete"
    NOT_RUN = "not run"
    UNKNOWN = "unknown: no controls' file beside the data file"

    @property
    def passed(self) -> bool:
        """The control passed (pass, caught): the claims it guards get their verdicts."""
        return self in (ControlOutcome.PASS, ControlOutcome.CAUGHT)

    @property
    def runs_missing(self) -> bool:
        """Some of its runs are not in the store (not run, incomplete): its command runs what is missing."""
        return self in (ControlOutcome.NOT_RUN, ControlOutcome.INCOMPLETE)

    @property
    def fell_short(self) -> bool:
        """Judged on all its runs, and not passed (fail, inconclusive, not caught)."""
        return self in (ControlOutcome.FAIL, ControlOutcome.INCONCLUSIVE, ControlOutcome.NOT_CAUGHT)

    def text(self, why: str = "") -> str:
        """The outcome in words, with ``why`` in brackets after it when there is one: ``incomplete (29/32 runs)``."""
        return f"{self.value} ({why})" if why else self.value

    @classmethod
    def parse(cls, text: str) -> tuple[ControlOutcome, str]:
        """The outcome and its why of :meth:`text`'s words, split at their first `` (`` (no outcome's value has one).

        Raises:
            ValueError: ``text`` is not an outcome's words.
        """
        word, _, why = text.partition(" (")
        return cls(word), why.removesuffix(")")


@dataclass(frozen=True)
class ControlResult:
    """A control that guards a claim, and its outcome at this scale.

    A negative control's outcome is that of its confirmatory ``profile``; ``why``: what more its outcome says
    (:class:`ControlOutcome`).
    """

    id: str
    outcome: ControlOutcome
    why: str = ""
    kind: str = POSITIVE
    profile: str | None = None  # a negative control's profile

    @property
    def text(self) -> str:
        """Its outcome in words: ``incomplete (29/32 runs)``."""
        return self.outcome.text(self.why)

    def command(self) -> str:
        """The command that runs the control: ``ablate run ID --profile PROFILE`` or ``ablate reproduce ID``."""
        if self.kind == NEGATIVE:
            return f"ablate run {self.id} --profile {self.profile}"
        return f"ablate reproduce {self.id}"


def claim_verdict(claim: Claim, result: Analysis, controls: Sequence[ControlResult] = ()) -> tuple[str, list[str]]:
    """The claim's verdict and one evidence line per evidence entry.

    Entries outside the profile's grid are listed and left out; while one of its ``controls`` has not passed, a
    verdict that rules is ``withheld``, and a last evidence line says what the tests alone gave.
    """
    verdict, lines = _tested(claim, result)
    waiting = [g for g in controls if not g.outcome.passed]
    if not waiting or cv.claim_kind(verdict) not in cv.RULINGS:
        return verdict, lines
    commands = sorted({g.command() for g in waiting if g.outcome.runs_missing})
    return cv.claim_withheld([(f"{g.kind} {g.id}", g.text) for g in waiting]), [
        *lines,
        f"The tests alone: **{verdict}**. Withheld until the control{'s' if len(waiting) > 1 else ''} "
        f"guarding this claim pass{'' if len(waiting) > 1 else 'es'} at this scale: a harness that does not see "
        "a known effect (a published result: reproductions.md) or a known bug (a negative control) here "
        "cannot be trusted with this claim's comparisons"
        + (f" ({'; '.join(f'`{c}`' for c in commands)} runs what is missing)." if commands else "."),
    ]


def _tested(claim: Claim, result: Analysis) -> tuple[str, list[str]]:
    """The verdict of the claim's comparisons alone, and its evidence lines.

    The verdict is that of :data:`~harness.analysis.claim_verdicts.CLAIM_RULES`.
    """
    lines: list[str] = []
    judged: list[cv.Judged] = []
    premise_fails: str | None = None
    for ev in claim.evidence:
        line, outcome = _judge(ev, result)
        lines.append((f"{ev.condition}: " if ev.condition else "") + line)
        if ev.premise:
            premise_fails = premise_fails or outcome  # a premise entry's outcome: what failed, or None
        elif outcome is not None:
            judged.append(outcome)
    untested = [p for p in claim.parts if p.kind != "condition" and p.not_tested]
    every = untested and len(untested) == sum(p.kind != "condition" for p in claim.parts)
    facts = cv.ClaimFacts(
        evidence=len(claim.evidence),
        premise_fails=premise_fails,
        judged=tuple(judged),
        not_testable=f"{untested[0].words}: {untested[0].not_tested}" if every else None,
        confirmatory=result.selection.settings.confirmatory,
    )
    return cv.decide_claim(facts), lines


def _judge(ev: Evidence, result: Analysis) -> tuple[str, cv.Judged | str | None]:
    """One evidence entry's line and :class:`~harness.analysis.claim_verdicts.Judged`.

    The latter is None outside the profile's grid; for a premise entry, the ``premise fails here`` verdict or None.
    """
    abl = result.ablation  # the profile's view: its tasks and variants
    ref, cond = ev.against or abl.baseline_label, ev.condition
    along = "" if ev.trend is None else f" along {ev.trend.axis}"
    name, plain = (f"{ev.task} {q}{ev.metric}{q}, {ev.variant} vs {ref}{along}" for q in ("`", ""))
    if ev.profile is not None and ev.profile != result.profile:  # a setting only that profile runs
        return f"{plain}: read in the `{ev.profile}` profile (its report), not in `{result.profile}`", None
    if not in_grid(ev, abl, result.profile):
        return f"{plain}: not in the `{result.profile}` profile's grid (see the ablation's other profiles)", None
    if ev.premise:
        return _premise(ev, result, name)
    table = result.trend_table(ev) if ev.trend is not None else result.table(ev.task, ev.metric, ref)
    r = {} if table is None else table.row(ev.variant)
    confirmatory = result.selection.settings.confirmatory
    facts = cv.EvidenceFacts(r.get("verdict"), ev.expect, not pd.isna(r.get("delta")), confirmatory)
    outcome = vd.first(cv.EVIDENCE_RULES, facts)  # what the comparison says of the claim
    if outcome == "untestable":
        # no verdict from a task the baseline (or the variant) did not learn, or one too easy to separate them
        return f"{name}: {r['verdict']}; claim expects {ev.expect}: **untestable at this scale**", cv.Judged(
            outcome, cond
        )
    if outcome == "not run":
        return f"{plain}: no paired runs", cv.Judged(outcome, cond)
    v = str(r["verdict"])
    key = (ev.task, ev.metric, ev.variant)
    needs = next((p.needed for p in result.power if (p.task, p.metric, p.variant) == key and p.needed), None)
    head = name + (f" (this comparison tests {ev.tests})" if ev.tests else "") + ": "
    family = "exploratory variant, BH within the table" if ev.variant in abl.exploratory_variants else table.family
    shown = "no effect of that size" if outcome == "negligible" else outcome
    if ev.metric == metrics.OUTCOME:
        base = table.row(ref)
        common = _not_finished(result, ev.task, ev.variant)[1]
        why = f" ({common[0][1]} {common[0][0]})" if common else ""
        return (
            head + f"finished {r['mean'] * r['n']:.0f}/{r['n']} runs vs {base['mean'] * base['n']:.0f}/{base['n']}"
            f"{why}; exact McNemar p = {text(r['p'], '.3g')}, adjusted p = {text(r['p_adj'], '.3g')} "
            f"({family}) → {v}; claim expects {ev.expect}: **{shown}**",
            cv.Judged(outcome, cond, needs),
        )
    small, note = None, ""
    if outcome == "supported" and vd.kind(v) in vd.DIRECTIONS and table.sesoi and abs(r["delta"]) < table.sesoi:
        small = table.sesoi  # real, but smaller than the effect the ablation cares about
        note = f" (|Δ| below the smallest effect of interest {table.sesoi:g})"
    if outcome == "negligible":
        note = f" (inside the smallest effect of interest ±{table.sesoi:g}: neither for nor against the claim)"
    undefined = why_undefined(r)  # no CI or p to print: say why instead of "nan"
    ci = delta_ci(r, " (not adjusted)")
    p_adj = f"{text(r['p_adj'], '.3g')} ({family})" if undefined is None else f"– ({undefined})"
    unit = f" per {ev.trend.unit}" if ev.trend is not None else ""
    if metrics.is_ratio(ev.metric) and undefined is None:  # Δ is a log ratio: the ratio too
        low, mid, high = (text(math.exp(r[k]), ".3g") for k in ("delta_ci_low", "delta", "delta_ci_high"))
        unit = f" (per-seed ratio {ev.variant} / {ref}: ×{mid}, 95% CI [×{low}, ×{high}])"
    return (
        head + f"{'slope' if ev.trend is not None else 'Δ'} = {text(r['delta'], '+.4g')}{unit} ({ci}, "
        f"+ = {ev.variant} better), adjusted p = {p_adj}, n = {count(int(r['n_pairs']), 'seed')} → {v}; "
        f"claim expects {ev.expect}: **{shown}**{note}",
        cv.Judged(outcome, cond, needs, small, table.sesoi if outcome == "negligible" else None),
    )


def _premise(ev: Evidence, result: Analysis, name: str) -> tuple[str, str | None]:
    """A premise entry (``finished`` of the claim's setting): it fails when no run of the variant finished."""
    runs, common = _not_finished(result, ev.task, ev.variant)
    if runs.empty:
        return f"{name}: premise ({ev.premise}) not known: no runs", None
    done = int((runs["status"] == RunStatus.OK).sum())
    observed = f"{done}/{len(runs)} runs finished" + (f"; {common[0][1]} {common[0][0]}" if common else "")
    if done:
        return f"{name}: premise ({ev.premise}) holds here: {observed}", None
    return (
        f"{name}: premise ({ev.premise}) **fails here**: {observed}; no comparison here rules on what the claim "
        "says happens in that setting",
        cv.claim_premise_fails(ev.premise, observed),
    )


def audit_text(claim: Claim) -> str | None:
    """``Tests: A; B. Does not test: C (why)``: the claim's audit (its ``parts``), or None without one."""
    if not (parts := claim.parts):
        return None
    tested = [f"*{p.words}* ({p.kind})" for p in parts if not p.not_tested]
    untested = [f"*{p.words}* ({p.kind}: {p.not_tested})" for p in parts if p.not_tested]
    conditions = list(dict.fromkeys(ev.condition for ev in claim.evidence if ev.condition))
    out = "Tests: " + ("; ".join(tested) if tested else "none of its parts")
    if conditions:
        out += f", under each of: {'; '.join(conditions)}"
    if untested:
        out += ". Does not test: " + "; ".join(untested)
    return out + ". The verdict rules only on the parts tested."


def delta_ci(row: Mapping[str, Any], note: str = "") -> str:
    """``95% CI [-0.01, +0.02]`` of a comparison's Δ (with ``note`` after it), or ``95% CI – (why)``."""
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


def _not_finished(result: Analysis, task: str, variant: str) -> tuple[pd.DataFrame, list[tuple[str, int]]]:
    """The variant's runs of ``task``, and why those that did not finish did not, most common first."""
    runs = result.runs[(result.runs["task"] == task) & (result.runs["variant"] == variant)]
    return runs, why_not_finished(list(runs["status"]), list(runs["reason"]))


@dataclass(frozen=True)
class NegativeComparison:
    """Whether one comparison of a negative control (its variant on a task's primary metric) caught the bug."""

    task: str
    variant: str
    metric: str
    verdict: str  # the comparison's verdict; "no paired runs" without one
    p_adj: float  # its adjusted p (Holm over the primary family); NaN without a test
    caught: bool  # the verdict is the one the control expects and p_adj < alpha


def control_outcomes(result: Analysis) -> list[NegativeComparison]:
    """For an ablation that declares ``control:``, an outcome per task of the profile and control variant.

    Caught when its primary comparison reads the expected verdict with adjusted p below the analysis's alpha; else
    (no ``control:``) empty.
    """
    abl, control = result.ablation, result.ablation.control
    if control is None:
        return []
    labels = [abl.label(v) for v in abl.variants() if abl.label(v) != abl.baseline_label]
    variants = [v for v in labels if control.variant in (None, v)]
    out = []
    for task, entry in abl.tasks.items():
        table = result.table(task, entry.primary.metric)
        for variant in variants:
            r = {} if table is None else table.row(variant)
            verdict, p_adj = r.get("verdict"), r.get("p_adj")
            if not isinstance(verdict, str):
                verdict, p_adj = "no paired runs", None
            p_adj = math.nan if pd.isna(p_adj) else float(p_adj)
            caught = vd.kind(verdict) is vd.Kind(control.expect) and p_adj < result.alpha
            out.append(NegativeComparison(task, variant, entry.primary.metric, verdict, p_adj, caught))
    return out
