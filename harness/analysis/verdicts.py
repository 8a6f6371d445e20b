"""The verdicts: every word a comparison or a claim can be judged with, and the rules that choose a
comparison's verdict, in one place.

A comparison (one row of a comparison table, :mod:`harness.analysis.comparisons`) gathers what it
established in a :class:`Facts`; :func:`decide` gives its verdict by :data:`RULES`, in order, the
first rule that holds winning. docs/statistics.md ("Comparison verdicts") explains each rule, in the
same order. A claim verdict (:func:`harness.analysis.claims.claim_verdict`; docs/claims-audit.md) is
written by the ``claim_*`` constructors. Verdicts are read back by :func:`kind` / :func:`claim_kind`,
never by matching a prefix elsewhere. The texts are what reports print; changing one changes every
committed report.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple


class Kind(str, Enum):
    """The kind of a comparison verdict; the value is the verdict's text up to its parameters."""

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
    UNDERPOWERED = "underpowered at this scale"
    BASELINE = "baseline"


DIRECTIONS = (Kind.BETTER, Kind.WORSE)
"""Kinds that declare a difference."""
DECIDED = (Kind.BETTER, Kind.WORSE, Kind.EQUIVALENT, Kind.SAME_OUTCOME, Kind.IDENTICAL)
"""Kinds that rule on a claim of a difference: each either matches the claim or contradicts it."""

BETTER = Kind.BETTER.value
WORSE = Kind.WORSE.value
PILOT = Kind.PILOT.value
TOO_FEW = Kind.TOO_FEW.value
CENSORED = Kind.CENSORED.value
BASELINE = Kind.BASELINE.value


def direction(better: bool) -> str:
    """``better`` or ``worse``."""
    return BETTER if better else WORSE


def equivalent(sesoi: float) -> str:
    """``equivalent (±sesoi)``."""
    return f"{Kind.EQUIVALENT.value} (±{sesoi:g})"


def inconclusive(mde: float | None = None, perm_p_adj: float | None = None) -> str:
    """``inconclusive``, with the MDE (``(MDE 0.0212)``, 3 significant digits) or, when the t-test alone rejects, the exact
    sign-flip test's adjusted p (``(t-test only: exact sign-flip p adj x)``)."""
    if perm_p_adj is not None:
        return f"{Kind.INCONCLUSIVE.value} (t-test only: exact sign-flip p adj {perm_p_adj:.3g})"
    if mde is not None:
        return f"{Kind.INCONCLUSIVE.value} (MDE {mde:.3g})"  # 3 significant digits: 2.95e-07, not 0.000
    return Kind.INCONCLUSIVE.value


def inconclusive_sequential(state: str) -> str:
    """``inconclusive (STATE)``: what the looks of a group-sequential design left undecided
    (``open: next look 2 at 16 seeds``; :func:`harness.analysis.looks.verdict`)."""
    return f"{Kind.INCONCLUSIVE.value} ({state})"


def identical(n_pairs: int) -> str:
    """``identical in all n pairs``."""
    return f"{Kind.IDENTICAL.value} in all {n_pairs} pairs"


def undefined_non_finite(non_finite: int, n_pairs: int) -> str:
    """``undefined (a non-finite value in k of n pairs)``."""
    return f"{Kind.UNDEFINED.value} (a non-finite value in {non_finite} of {n_pairs} pairs)"


def same_outcome(n_pairs: int) -> str:
    """``same outcome in all n pairs`` (outcome tables)."""
    return f"{Kind.SAME_OUTCOME.value} in all {n_pairs} pairs"


def not_learned_target(reached: int, planned: int, run: int | None = None) -> str:
    """``not learned (k/n seeds reached target)``; ``run``: the seeds the baseline has a run of, when
    fewer than ``planned`` (an unfinished grid: ``not learned (0/8 seeds reached target; 5 not run)``)."""
    left = f"; {planned - run} not run" if run is not None and run < planned else ""
    return f"{Kind.NOT_LEARNED.value} ({reached}/{planned} seeds reached target{left})"


def not_learned_gate(passed: int, planned: int, whose: str = "") -> str:
    """``not learned (k/n passed the gate)``; ``whose``: ``"baseline "`` when it is the baseline's runs."""
    return f"{Kind.NOT_LEARNED.value} ({whose}{passed}/{planned} passed the gate)"


def at_ceiling(best: float, n_seeds: int) -> str:
    """``at ceiling (baseline 1 on all n seeds)``, ``best`` the metric's best value."""
    return f"{Kind.CEILING.value} (baseline {best:g} on all {n_seeds} seeds)"


NO_VERDICT = (Kind.NOT_LEARNED, Kind.CEILING)
"""Kinds of a comparison the experiment could not decide: a claim that names only such comparisons
is ``untestable at this scale``."""


def underpowered(needed: int) -> str:
    """``underpowered at this scale (needs N seeds)``."""
    return f"{Kind.UNDERPOWERED.value} (needs {needed} seeds)"


NAN = float("nan")


@dataclass(frozen=True)
class Facts:
    """What one comparison (a variant against the baseline, one metric) established: its test,
    adjusted in its family (:mod:`harness.analysis.stats`), and what else decides its verdict."""

    n_pairs: int | None = None  # seeds paired with the baseline; None: no run compared has a value
    ties: int = 0  # pairs with equal values
    non_finite: int = 0  # pairs with an infinite value: no test of the mean difference exists
    better: bool = False  # the difference's direction (its CI's midpoint; an outcome table's: Δ)
    p_adj: float = NAN  # the t-test's p (an outcome table's: exact McNemar), adjusted in the family
    p_perm_adj: float = NAN  # the exact sign-flip test's, adjusted in the same family
    p_tost_adj: float = NAN  # TOST's at ±sesoi, adjusted in the same family
    mde: float = NAN  # at alpha / the family's size
    sesoi: float | None = None
    alpha: float = 0.05
    confirmatory: bool = True
    outcome: bool = False  # an outcome table (finished or not)
    sequential: str | None = None  # what a group-sequential design's looks decided (harness.analysis.looks)
    needed: int | None = None  # seeds for 80 % power at the sesoi, when more than it had (primary_power)
    unlearned: tuple[int, int, int] | None = None  # the baseline reached the target on k of n seeds (k, n, run)
    below_gate: str | None = None  # whose runs never passed the gate: "baseline " or "" (the variant's)
    planned: int = 0  # seeds planned
    censored: bool = False  # steps_to_target: neither arm reached the target
    ceiling: tuple[float, int] | None = None  # (best, n): the baseline scored the best value on its n paired seeds

    @property
    def rejects(self) -> bool:
        """The t-test and the exact sign-flip test both reject."""
        return self.p_adj < self.alpha and self.p_perm_adj < self.alpha

    @property
    def worse(self) -> bool:
        """The looks (in a group-sequential design) or the tests say worse."""
        if self.sequential is not None:
            return kind(self.sequential) is Kind.WORSE
        return self.rejects and not self.better


class Rule(NamedTuple):
    """When a verdict applies; ``name``: the rule's name in docs/statistics.md."""

    name: str
    holds: Callable[[Facts], bool]
    verdict: Callable[[Facts], str | None]


RULES = (
    Rule("not learned", lambda f: f.unlearned is not None, lambda f: not_learned_target(*f.unlearned)),
    Rule("below the gate", lambda f: f.below_gate is not None, lambda f: not_learned_gate(0, f.planned, f.below_gate)),
    Rule("censored", lambda f: f.censored, lambda f: CENSORED),
    Rule("too few pairs", lambda f: f.n_pairs is not None and f.n_pairs < 2, lambda f: TOO_FEW),
    Rule("no value", lambda f: f.n_pairs is None, lambda f: None),
    Rule("undefined", lambda f: f.non_finite > 0, lambda f: undefined_non_finite(f.non_finite, f.n_pairs)),
    Rule("worse", lambda f: f.confirmatory and f.worse, lambda f: WORSE),
    Rule("at ceiling", lambda f: f.ceiling is not None, lambda f: at_ceiling(*f.ceiling)),
    Rule(
        "same outcome",
        lambda f: f.outcome and f.confirmatory and f.ties == f.n_pairs,
        lambda f: same_outcome(f.n_pairs),
    ),
    Rule("identical", lambda f: f.confirmatory and f.ties == f.n_pairs, lambda f: identical(f.n_pairs)),
    Rule("the looks", lambda f: f.sequential is not None, lambda f: f.sequential),
    Rule("pilot", lambda f: not f.confirmatory, lambda f: PILOT),
    Rule("better", lambda f: f.rejects, lambda f: direction(f.better)),
    Rule("equivalent", lambda f: f.sesoi is not None and f.p_tost_adj < f.alpha, lambda f: equivalent(f.sesoi)),
    Rule("underpowered", lambda f: f.needed is not None, lambda f: underpowered(f.needed)),
    Rule("t-test only", lambda f: f.p_adj < f.alpha, lambda f: inconclusive(perm_p_adj=f.p_perm_adj)),
    Rule("inconclusive", lambda f: True, lambda f: inconclusive(mde=f.mde if math.isfinite(f.mde) else None)),
)
"""The rules of a comparison's verdict, in order: the first that holds gives it (docs/statistics.md)."""


def decide(facts: Facts) -> str | None:
    """The verdict of a comparison (None: no verdict) by the first of :data:`RULES` that holds."""
    return next(rule.verdict(facts) for rule in RULES if rule.holds(facts))


def matches(verdict: object, expect: str) -> bool:
    """Whether a comparison verdict is the one a claim or a reproduction expects (``better``,
    ``worse`` or ``equivalent``, whatever its margin)."""
    k = kind(verdict)
    return k in (Kind.BETTER, Kind.WORSE, Kind.EQUIVALENT) and k.value == expect


def rules(verdict: object) -> bool:
    """Whether a comparison verdict rules on a claim of a difference (one of :data:`DECIDED`):
    if it does not match what the claim expects, it contradicts it."""
    return kind(verdict) in DECIDED


def kind(verdict: object) -> Kind | None:
    """The kind of a comparison verdict text, or None for no verdict (NaN, empty, unknown)."""
    if not isinstance(verdict, str):
        return None
    for k in Kind:
        if verdict == k.value or verdict.startswith(k.value + " "):
            return k
    return None


class ClaimKind(str, Enum):
    """The kind of a claim verdict; the value is the verdict's text up to its parameters."""

    SUPPORTED = "supported"
    PARTLY_SUPPORTED = "partly supported"
    CONTRADICTED = "contradicted"
    PARTLY_CONTRADICTED = "partly contradicted"
    MIXED = "mixed"
    INCONCLUSIVE = "inconclusive"
    PILOT = "pilot"
    NOT_TESTED_YET = "not tested by this ablation yet"
    NOT_TESTED = "not tested in this profile"
    UNTESTABLE = "untestable at this scale"
    UNDERPOWERED = "underpowered at this scale"
    WITHHELD = "withheld"
    PREMISE_FAILS = "premise fails here"
    NOT_TESTABLE = "not testable as stated"
    BY_CONDITION = "by condition"  # no text of its own: ``supported for Post-LN, contradicted for Pre-LN``


RULINGS = frozenset(
    {
        ClaimKind.SUPPORTED,
        ClaimKind.PARTLY_SUPPORTED,
        ClaimKind.CONTRADICTED,
        ClaimKind.PARTLY_CONTRADICTED,
        ClaimKind.MIXED,
        ClaimKind.BY_CONDITION,
    }
)
"""The claim verdicts that rule on a claim (for or against it): those a positive control that did
not pass withholds."""


IN_DIRECTION_ONLY = " in direction only (the effect is smaller than the smallest effect of interest)"
"""Appended to ``supported`` / ``partly supported`` when every supporting effect is below the sesoi."""


def claim_pilot() -> str:
    """``pilot (no verdict from a non-confirmatory profile)``."""
    return f"{ClaimKind.PILOT.value} (no verdict from a non-confirmatory profile)"


def claim_supported(all_of_them: bool, direction_only: bool) -> str:
    """``supported`` or ``partly supported``, ``in direction only`` when every supporting effect is small."""
    word = (ClaimKind.SUPPORTED if all_of_them else ClaimKind.PARTLY_SUPPORTED).value
    return word + (IN_DIRECTION_ONLY if direction_only else "")


def claim_contradicted(all_of_them: bool) -> str:
    """``contradicted`` or ``partly contradicted``."""
    return (ClaimKind.CONTRADICTED if all_of_them else ClaimKind.PARTLY_CONTRADICTED).value


def claim_mixed(supporting: int, contradicting: int, inline: bool = False) -> str:
    """``mixed: s comparison(s) support it, c contradict it``; ``inline`` (within a verdict per
    condition): ``mixed (1 comparison supports it and 1 contradicts it)``."""
    if inline:
        s, c = supporting, contradicting
        return (
            f"{ClaimKind.MIXED.value} ({s} comparison{'s' if s > 1 else ''} support{'' if s > 1 else 's'} it "
            f"and {c} contradict{'' if c > 1 else 's'} it)"
        )
    return f"{ClaimKind.MIXED.value}: {supporting} comparison(s) support it, {contradicting} contradict it"


def claim_underpowered(needed: int) -> str:
    """``underpowered at this scale (needs N seeds)``: every comparison the claim names was
    underpowered; ``needed``: the most seeds any of them needs."""
    return f"{ClaimKind.UNDERPOWERED.value} (needs {needed} seeds)"


def claim_withheld(controls: list[tuple[str, str]]) -> str:
    """``withheld (positive control ID: OUTCOME, ...)``: the tests ruled, but a control that guards
    the claim did not pass at this scale (``controls``: ("positive control ID" or "negative control
    NAME", outcome) of each that did not)."""
    return f"{ClaimKind.WITHHELD.value} (" + ", ".join(f"{c}: {o}" for c, o in controls) + ")"


def claim_premise_fails(setting: str, observed: str) -> str:
    """``premise fails here: SETTING cannot run (OBSERVED)``: the claim is about a setting that
    does not run here (no run of it finished), so nothing here rules on what it says happens there."""
    return f"{ClaimKind.PREMISE_FAILS.value}: {setting} cannot run ({observed})"


def claim_not_testable(reason: str) -> str:
    """``not testable as stated: REASON``: no comparison here tests the claim's effect or
    mechanism (every such part of its audit is ``not_tested``), whatever its other comparisons read."""
    return f"{ClaimKind.NOT_TESTABLE.value}: {reason}"


_FOR = " for "
_BETWEEN = ", "


def claim_by_condition(verdicts: list[tuple[str, str]]) -> str:
    """``supported for Post-LN, contradicted for Pre-LN``: the verdict under each condition
    (``(condition, claim verdict)``, in the order the claim lists them), when they differ in kind.
    A ``mixed`` one is written by ``claim_mixed(..., inline=True)`` (no comma), so that the text
    splits back at its commas (:func:`claim_kind`)."""
    return _BETWEEN.join(f"{v}{_FOR}{c}" for c, v in verdicts)


def claim_for_all(verdict: str, conditions: list[str]) -> str:
    """``contradicted for A and B``: one verdict over every comparison, where the conditions it was
    read under agree in kind, naming them (``A, B and C``), so that it says what it covers."""
    named = conditions[0] if len(conditions) == 1 else f"{', '.join(conditions[:-1])} and {conditions[-1]}"
    return f"{verdict}{_FOR}{named}"


def _by_condition(verdict: str) -> bool:
    """Whether ``verdict`` is a :func:`claim_by_condition` text: two or more ``VERDICT for CONDITION``."""
    pieces = verdict.split(_BETWEEN)
    return len(pieces) > 1 and all(_FOR in p and _single_kind(p.rsplit(_FOR, 1)[0]) is not None for p in pieces)


def _single_kind(verdict: str) -> ClaimKind | None:
    for k in sorted(ClaimKind, key=lambda c: -len(c.value)):
        if verdict == k.value or verdict.startswith((k.value + " ", k.value + ":")):
            return k
    return None


def claim_kind(verdict: str) -> ClaimKind | None:
    """The kind of a claim verdict text (longest match first: ``partly supported`` before
    ``supported``; a verdict per condition: :attr:`ClaimKind.BY_CONDITION`)."""
    if not verdict.startswith((ClaimKind.PREMISE_FAILS.value, ClaimKind.NOT_TESTABLE.value)) and _by_condition(verdict):
        return ClaimKind.BY_CONDITION
    return _single_kind(verdict)
