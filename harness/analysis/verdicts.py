"""A comparison's verdict words (:class:`Kind` and their constructors) and :data:`RULES`, the rules that pick one.

They choose a comparison's verdict from its :class:`Facts` (the first that holds wins; docs/statistics.md,
"Comparison verdicts", explains each in the same order).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any, NamedTuple


class Kind(str, Enum):
    """The kind of a verdict (:class:`ClaimKind`: of a claim's); the value is its text up to its parameters."""

    BETTER = "better"
    WORSE = "worse"
    EQUIVALENT = "equivalent"
    INCONCLUSIVE = "inconclusive"
    IDENTICAL = "identical"
    UNDEFINED = "undefined"
    SAME_OUTCOME = "same outcome"
    PILOT = "pilot"
    TOO_FEW = "too few pairs"
    CENSORED = "target never reached (censored)"
    NOT_LEARNED = "not learned"
    CEILING = "at ceiling"
    NEGLIGIBLE = "negligible"
    UNDERPOWERED = "underpowered at this scale"
    BASELINE = "baseline"


DIRECTIONS = (Kind.BETTER, Kind.WORSE)
DECIDED = (Kind.BETTER, Kind.WORSE, Kind.EQUIVALENT, Kind.NEGLIGIBLE, Kind.SAME_OUTCOME, Kind.IDENTICAL)
"""Kinds that rule on a published result a control expects: each either matches it or contradicts it (a
claim reads an equivalent or negligible difference apart, as no effect of that size: :data:`EVIDENCE_RULES`)."""

BETTER, WORSE, PILOT, TOO_FEW, CENSORED, BASELINE = (
    k.value for k in (Kind.BETTER, Kind.WORSE, Kind.PILOT, Kind.TOO_FEW, Kind.CENSORED, Kind.BASELINE)
)


def direction(better: bool) -> str:
    """The verdict of a difference with a direction: ``better`` when ``better``, else ``worse``."""
    return BETTER if better else WORSE


def equivalent(sesoi: float) -> str:
    """The ``equivalent`` verdict with its margin ``sesoi``, e.g. ``equivalent (±0.05)``."""
    return f"{Kind.EQUIVALENT.value} (±{sesoi:g})"


def inconclusive(mde: float | None = None, perm_p_adj: float | None = None) -> str:
    """With the MDE, or, when the t-test alone rejects, the exact sign-flip test's adjusted p."""
    if perm_p_adj is not None:
        return f"{Kind.INCONCLUSIVE.value} (t-test only: exact sign-flip p adj {perm_p_adj:.3g})"
    if mde is not None:
        return f"{Kind.INCONCLUSIVE.value} (MDE {mde:.3g})"  # 3 significant digits: 2.95e-07, not 0.000
    return Kind.INCONCLUSIVE.value


def inconclusive_sequential(state: str) -> str:
    """The ``inconclusive`` verdict of a group-sequential design's looks; ``state``: where they stand, in words."""
    return f"{Kind.INCONCLUSIVE.value} ({state})"


def identical(n_pairs: int) -> str:
    """The ``identical`` verdict: no pair of the ``n_pairs`` differs, nothing to test."""
    return f"{Kind.IDENTICAL.value} in all {n_pairs} pairs"


def undefined_non_finite(non_finite: int, n_pairs: int) -> str:
    """The ``undefined`` verdict: ``non_finite`` of the ``n_pairs`` pairs hold an infinite value, so no test exists."""
    return f"{Kind.UNDEFINED.value} (a non-finite value in {non_finite} of {n_pairs} pairs)"


def same_outcome(n_pairs: int) -> str:
    """The ``same outcome`` verdict of an outcome table: all ``n_pairs`` pairs finished alike."""
    return f"{Kind.SAME_OUTCOME.value} in all {n_pairs} pairs"


def not_learned_target(reached: int, planned: int, run: int | None = None) -> str:
    """``run``: the seeds the baseline has a run of, when fewer than ``planned`` (an unfinished grid)."""
    left = f"; {planned - run} not run" if run is not None and run < planned else ""
    return f"{Kind.NOT_LEARNED.value} ({reached}/{planned} seeds reached target{left})"


def not_learned_gate(passed: int, planned: int, whose: str = "") -> str:
    """The ``not learned`` verdict of an arm whose runs did not pass the task's gate.

    ``passed`` of the ``planned`` seeds passed it; ``whose``: ``"baseline "`` for the baseline's runs, ``""`` for
    the variant's (:func:`harness.analysis.untestable.below_gate`).
    """
    return f"{Kind.NOT_LEARNED.value} ({whose}{passed}/{planned} passed the gate)"


def negligible(sesoi: float) -> str:
    """The ``negligible`` verdict: the 95% CI of Δ lies inside ±``sesoi``, whatever the tests say."""
    return f"{Kind.NEGLIGIBLE.value} (95% CI of Δ inside ±{sesoi:g})"


def at_ceiling(best: float, n_seeds: int) -> str:
    """The ``at ceiling`` verdict: the baseline scored the best value ``best`` on all ``n_seeds`` paired seeds."""
    return f"{Kind.CEILING.value} (baseline {best:g} on all {n_seeds} seeds)"


NO_VERDICT = (Kind.NOT_LEARNED, Kind.CEILING)
"""Kinds of a comparison the experiment could not decide (a claim naming only such is untestable)."""


def underpowered(needed: int) -> str:
    """The ``underpowered at this scale`` verdict: the comparison needs ``needed`` seeds, more than it has."""
    return f"{Kind.UNDERPOWERED.value} (needs {needed} seeds)"


@dataclass(frozen=True)
class Facts:
    """What one comparison (a variant against the baseline, one metric) established.

    Its test, adjusted in its family, and what else decides its verdict.
    """

    n_pairs: int | None = None  # seeds paired with the baseline; None: no run compared has a value
    ties: int = 0  # pairs with equal values
    non_finite: int = 0  # pairs with an infinite value: no test of the mean difference exists
    better: bool = False  # the difference's direction (its CI's midpoint; an outcome table's: Δ)
    p_adj: float = math.nan  # the t-test's p (an outcome table's: exact McNemar), adjusted in the family
    p_perm_adj: float = math.nan  # the exact sign-flip test's, adjusted in the same family
    p_tost_adj: float = math.nan  # TOST's at ±sesoi, adjusted in the same family
    mde: float = math.nan  # at alpha / the family's size
    sesoi: float | None = None
    alpha: float = 0.05
    confirmatory: bool = True
    outcome: bool = False  # an outcome table (finished or not)
    sequential: str | None = None  # what a group-sequential design's looks decided (harness.analysis.looks)
    needed: int | None = None  # seeds for 80 % power at the sesoi, when more than it had (power.primary_power)
    unlearned: tuple[int, int, int] | None = None  # the baseline reached the target on k of n seeds (k, n, run)
    below_gate: str | None = None  # whose runs never passed the gate: "baseline " or "" (the variant's)
    planned: int = 0  # seeds planned
    censored: bool = False  # steps_to_target: neither arm reached the target
    ceiling: tuple[float, int] | None = None  # (best, n): the baseline scored the best value on its n paired seeds
    delta_ci: tuple[float, float] | None = None  # the 95% CI of Δ (not adjusted), when the analysis gives it

    @property
    def negligible(self) -> bool:
        """The CI of Δ lies inside ±sesoi: whatever the tests say, no effect of the size the task cares about."""
        if self.sesoi is None or self.delta_ci is None or not all(map(math.isfinite, self.delta_ci)):
            return False
        return -self.sesoi < self.delta_ci[0] and self.delta_ci[1] < self.sesoi

    @property
    def rejects(self) -> bool:
        """Both the t-test and the exact sign-flip test reject, adjusted in the family (p below ``alpha``)."""
        return self.p_adj < self.alpha and self.p_perm_adj < self.alpha

    @property
    def worse(self) -> bool:
        """The looks (a group-sequential design) or the tests say worse."""
        if self.sequential is not None:
            return kind(self.sequential) is Kind.WORSE
        return self.rejects and not self.better


class Rule(NamedTuple):
    """One row of an ordered rule table: when it ``holds`` for the facts, and the ``verdict`` it gives then.

    The tables: :data:`RULES` (a comparison's, from its :class:`Facts`), those of a claim
    (:mod:`harness.analysis.claim_verdicts`) and of a control's comparison (:data:`harness.analysis.controls.OUTCOMES`);
    the first that holds wins (:func:`first`).
    """

    name: str  # the rule's name in docs/statistics.md
    holds: Callable[[Any], bool]
    verdict: Callable[[Any], Any]


def first(table: Iterable[Rule], facts: object) -> Any:
    """The verdict of the first rule of ``table`` that holds for ``facts``."""
    return next(rule.verdict(facts) for rule in table if rule.holds(facts))


RULES = (
    Rule(
        "not learned",
        lambda f: f.unlearned is not None and not f.outcome,
        lambda f: not_learned_target(*f.unlearned),
    ),
    Rule("below the gate", lambda f: f.below_gate is not None, lambda f: not_learned_gate(0, f.planned, f.below_gate)),
    Rule("censored", lambda f: f.censored, lambda f: CENSORED),
    Rule("too few pairs", lambda f: f.n_pairs is not None and f.n_pairs < 2, lambda f: TOO_FEW),
    Rule("no value", lambda f: f.n_pairs is None, lambda f: None),
    Rule("undefined", lambda f: f.non_finite > 0, lambda f: undefined_non_finite(f.non_finite, f.n_pairs)),
    Rule("at ceiling", lambda f: f.ceiling is not None and not f.worse, lambda f: at_ceiling(*f.ceiling)),
    Rule(
        "negligible",
        lambda f: f.confirmatory and f.negligible and f.ties != f.n_pairs,
        lambda f: negligible(f.sesoi),
    ),
    Rule("worse", lambda f: f.confirmatory and f.worse, lambda f: WORSE),
    Rule(
        "same outcome",
        lambda f: f.outcome and f.confirmatory and f.ties == f.n_pairs,
        lambda f: same_outcome(f.n_pairs),
    ),
    Rule("identical", lambda f: f.confirmatory and f.ties == f.n_pairs, lambda f: identical(f.n_pairs)),
    Rule(
        "the looks decided",
        lambda f: f.sequential is not None and kind(f.sequential) in DECIDED,
        lambda f: f.sequential,
    ),
    Rule("pilot", lambda f: not f.confirmatory, lambda f: PILOT),
    Rule("better", lambda f: f.sequential is None and f.rejects, lambda f: direction(f.better)),
    Rule(
        "equivalent",
        lambda f: f.sequential is None and f.sesoi is not None and f.p_tost_adj < f.alpha,
        lambda f: equivalent(f.sesoi),
    ),
    Rule("underpowered", lambda f: f.needed is not None, lambda f: underpowered(f.needed)),
    Rule("the looks", lambda f: f.sequential is not None, lambda f: f.sequential),
    Rule("t-test only", lambda f: f.p_adj < f.alpha, lambda f: inconclusive(perm_p_adj=f.p_perm_adj)),
    Rule("inconclusive", lambda f: True, lambda f: inconclusive(mde=f.mde if math.isfinite(f.mde) else None)),
)


def decide(facts: Facts) -> str | None:
    """The verdict of a comparison (None: no verdict) by the first of :data:`RULES` that holds."""
    return first(RULES, facts)


NO_EFFECT_OF_THAT_SIZE = (Kind.NEGLIGIBLE, Kind.EQUIVALENT)
"""Kinds that say the difference is inside the smallest effect of interest: for a claim of a material
effect neither support nor contradiction, only "no effect of that size"; for an equivalence, a match."""


def matches(verdict: object, expect: str) -> bool:
    """Whether a comparison verdict is the one a claim or a reproduction expects.

    ``expect``: ``better``, ``worse`` or ``equivalent``, whatever its margin; a negligible difference is an
    equivalence.
    """
    k = kind(verdict)
    if expect == Kind.EQUIVALENT.value:
        return k in NO_EFFECT_OF_THAT_SIZE
    return k in DIRECTIONS and k.value == expect


def rules(verdict: object) -> bool:
    """Whether a comparison verdict rules on a claim of a difference: unless it matches, it contradicts it."""
    return kind(verdict) in DECIDED


def kind(verdict: object) -> Kind | None:
    """The kind of a comparison verdict text, or None for no verdict (NaN, empty, unknown)."""
    return _match(Kind, verdict)


def _match(kinds: Iterable[Any], verdict: object) -> Any:
    """The first of ``kinds`` whose text ``verdict`` is, up to its parameters, or None."""
    if not isinstance(verdict, str):
        return None
    return next((k for k in kinds if verdict == k.value or verdict.startswith((k.value + " ", k.value + ":"))), None)
