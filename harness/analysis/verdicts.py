"""Every word a comparison or a claim can be judged with, and :data:`RULES`, the rules that choose a
comparison's verdict from its :class:`Facts` (the first that holds wins; docs/statistics.md,
"Comparison verdicts", explains each in the same order). Claim verdicts: the ``claim_*``
constructors (docs/claims-audit.md). Verdicts are read back by :func:`kind` / :func:`claim_kind`,
never by matching a prefix elsewhere; the texts are what the committed reports print.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
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
    return BETTER if better else WORSE


def equivalent(sesoi: float) -> str:
    return f"{Kind.EQUIVALENT.value} (±{sesoi:g})"


def inconclusive(mde: float | None = None, perm_p_adj: float | None = None) -> str:
    """With the MDE, or, when the t-test alone rejects, the exact sign-flip test's adjusted p."""
    if perm_p_adj is not None:
        return f"{Kind.INCONCLUSIVE.value} (t-test only: exact sign-flip p adj {perm_p_adj:.3g})"
    if mde is not None:
        return f"{Kind.INCONCLUSIVE.value} (MDE {mde:.3g})"  # 3 significant digits: 2.95e-07, not 0.000
    return Kind.INCONCLUSIVE.value


def inconclusive_sequential(state: str) -> str:
    return f"{Kind.INCONCLUSIVE.value} ({state})"


def identical(n_pairs: int) -> str:
    return f"{Kind.IDENTICAL.value} in all {n_pairs} pairs"


def undefined_non_finite(non_finite: int, n_pairs: int) -> str:
    return f"{Kind.UNDEFINED.value} (a non-finite value in {non_finite} of {n_pairs} pairs)"


def same_outcome(n_pairs: int) -> str:
    return f"{Kind.SAME_OUTCOME.value} in all {n_pairs} pairs"


def not_learned_target(reached: int, planned: int, run: int | None = None) -> str:
    """``run``: the seeds the baseline has a run of, when fewer than ``planned`` (an unfinished grid)."""
    left = f"; {planned - run} not run" if run is not None and run < planned else ""
    return f"{Kind.NOT_LEARNED.value} ({reached}/{planned} seeds reached target{left})"


def not_learned_gate(passed: int, planned: int, whose: str = "") -> str:
    return f"{Kind.NOT_LEARNED.value} ({whose}{passed}/{planned} passed the gate)"


def negligible(sesoi: float) -> str:
    return f"{Kind.NEGLIGIBLE.value} (95% CI of Δ inside ±{sesoi:g})"


def at_ceiling(best: float, n_seeds: int) -> str:
    return f"{Kind.CEILING.value} (baseline {best:g} on all {n_seeds} seeds)"


NO_VERDICT = (Kind.NOT_LEARNED, Kind.CEILING)
"""Kinds of a comparison the experiment could not decide (a claim naming only such is untestable)."""


def underpowered(needed: int) -> str:
    return f"{Kind.UNDERPOWERED.value} (needs {needed} seeds)"


@dataclass(frozen=True)
class Facts:
    """What one comparison (a variant against the baseline, one metric) established: its test,
    adjusted in its family, and what else decides its verdict."""

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
    needed: int | None = None  # seeds for 80 % power at the sesoi, when more than it had (comparisons.primary_power)
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
        return self.p_adj < self.alpha and self.p_perm_adj < self.alpha

    @property
    def worse(self) -> bool:
        """The looks (a group-sequential design) or the tests say worse."""
        if self.sequential is not None:
            return kind(self.sequential) is Kind.WORSE
        return self.rejects and not self.better


class Rule(NamedTuple):
    name: str  # the rule's name in docs/statistics.md
    holds: Callable[[Facts], bool]
    verdict: Callable[[Facts], str | None]


RULES = (
    Rule("not learned", lambda f: f.unlearned is not None, lambda f: not_learned_target(*f.unlearned)),
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
    Rule("the looks", lambda f: f.sequential is not None, lambda f: f.sequential),
    Rule("pilot", lambda f: not f.confirmatory, lambda f: PILOT),
    Rule("better", lambda f: f.rejects, lambda f: direction(f.better)),
    Rule("equivalent", lambda f: f.sesoi is not None and f.p_tost_adj < f.alpha, lambda f: equivalent(f.sesoi)),
    Rule("underpowered", lambda f: f.needed is not None, lambda f: underpowered(f.needed)),
    Rule("t-test only", lambda f: f.p_adj < f.alpha, lambda f: inconclusive(perm_p_adj=f.p_perm_adj)),
    Rule("inconclusive", lambda f: True, lambda f: inconclusive(mde=f.mde if math.isfinite(f.mde) else None)),
)


def decide(facts: Facts) -> str | None:
    """The verdict of a comparison (None: no verdict) by the first of :data:`RULES` that holds."""
    return next(rule.verdict(facts) for rule in RULES if rule.holds(facts))


NO_EFFECT_OF_THAT_SIZE = (Kind.NEGLIGIBLE, Kind.EQUIVALENT)
"""Kinds that say the difference is inside the smallest effect of interest: for a claim of a material
effect neither support nor contradiction, only "no effect of that size"; for an equivalence, a match."""


def matches(verdict: object, expect: str) -> bool:
    """Whether a comparison verdict is the one a claim or a reproduction expects (``better``,
    ``worse`` or ``equivalent``, whatever its margin; a negligible difference is an equivalence)."""
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


class ClaimKind(str, Enum):
    NO_EFFECT = "no effect of that size"
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


RULINGS = frozenset(ClaimKind(k) for k in ("supported", "partly supported", "contradicted", "partly contradicted"))
RULINGS |= {ClaimKind.MIXED, ClaimKind.BY_CONDITION, ClaimKind.NO_EFFECT}
"""The claim verdicts that rule on a claim (for or against it): those a control that did not pass withholds."""


IN_DIRECTION_ONLY = " in direction only (the effect is smaller than the smallest effect of interest)"


def claim_pilot() -> str:
    return f"{ClaimKind.PILOT.value} (no verdict from a non-confirmatory profile)"


def claim_supported(all_of_them: bool, direction_only: bool) -> str:
    word = (ClaimKind.SUPPORTED if all_of_them else ClaimKind.PARTLY_SUPPORTED).value
    return word + (IN_DIRECTION_ONLY if direction_only else "")


def claim_contradicted(all_of_them: bool) -> str:
    return (ClaimKind.CONTRADICTED if all_of_them else ClaimKind.PARTLY_CONTRADICTED).value


def claim_mixed(supporting: int, contradicting: int, inline: bool = False) -> str:
    """``inline``: within a verdict per condition, with no comma."""
    if inline:
        s, c = supporting, contradicting
        return (
            f"{ClaimKind.MIXED.value} ({s} comparison{'s' if s > 1 else ''} support{'' if s > 1 else 's'} it "
            f"and {c} contradict{'' if c > 1 else 's'} it)"
        )
    return f"{ClaimKind.MIXED.value}: {supporting} comparison(s) support it, {contradicting} contradict it"


def claim_no_effect(sesoi: Iterable[float]) -> str:
    """Every comparison that decided lies inside its smallest effect of interest."""
    margins = ", ".join(f"±{m:g}" for m in sorted(set(sesoi)))
    return f"{ClaimKind.NO_EFFECT.value} (every comparison that decided lies inside {margins or 'its sesoi'})"


def claim_underpowered(needed: int) -> str:
    return f"{ClaimKind.UNDERPOWERED.value} (needs {needed} seeds)"


def claim_withheld(controls: list[tuple[str, str]]) -> str:
    """``controls``: ("positive control ID" or "negative control NAME", outcome) of each that did not pass."""
    return f"{ClaimKind.WITHHELD.value} (" + ", ".join(f"{c}: {o}" for c, o in controls) + ")"


def claim_premise_fails(setting: str, observed: str) -> str:
    return f"{ClaimKind.PREMISE_FAILS.value}: {setting} cannot run ({observed})"


def claim_not_testable(reason: str) -> str:
    return f"{ClaimKind.NOT_TESTABLE.value}: {reason}"


def claim_by_condition(verdicts: list[tuple[str, str]]) -> str:
    """``supported for Post-LN, contradicted for Pre-LN``: ``(condition, claim verdict)`` in the claim's
    order, when they differ in kind (a ``mixed`` one inline, so that the text splits back at its commas)."""
    return ", ".join(f"{v} for {c}" for c, v in verdicts)


def claim_for_all(verdict: str, conditions: list[str]) -> str:
    """``contradicted for A and B``: one verdict where the conditions agree in kind, naming them."""
    named = conditions[0] if len(conditions) == 1 else f"{', '.join(conditions[:-1])} and {conditions[-1]}"
    return f"{verdict} for {named}"


def _single_kind(verdict: str) -> ClaimKind | None:
    return _match(sorted(ClaimKind, key=lambda c: -len(c.value)), verdict)  # partly supported before supported


def claim_kind(verdict: str) -> ClaimKind | None:
    """The kind of a claim verdict text (longest match first: ``partly supported`` before
    ``supported``; a verdict per condition, two or more ``VERDICT for CONDITION`` of
    :func:`claim_by_condition`: :attr:`ClaimKind.BY_CONDITION`)."""
    pieces = verdict.split(", ")
    fixed = verdict.startswith((ClaimKind.PREMISE_FAILS.value, ClaimKind.NOT_TESTABLE.value))
    if not fixed and len(pieces) > 1 and all(" for " in p and _single_kind(p.rsplit(" for ", 1)[0]) for p in pieces):
        return ClaimKind.BY_CONDITION
    return _single_kind(verdict)


# What one evidence entry's comparison says of the claim, then the claim's verdict: each an ordered rule
# table as :data:`RULES` (docs/statistics.md, "Claims and their verdicts", lists both in this order).


@dataclass(frozen=True)
class EvidenceFacts:
    """One evidence entry's comparison as a claim reads it."""

    verdict: object  # the comparison's verdict (None: no verdict)
    expect: str  # better | worse | equivalent
    paired: bool  # the comparison has paired runs (a Δ)
    confirmatory: bool


class EvidenceRule(NamedTuple):
    name: str
    holds: Callable[[EvidenceFacts], bool]
    outcome: str


EVIDENCE_RULES = (
    EvidenceRule("untestable", lambda e: kind(e.verdict) in NO_VERDICT, "untestable"),
    EvidenceRule("not run", lambda e: not e.paired, "not run"),
    EvidenceRule("pilot", lambda e: kind(e.verdict) is Kind.PILOT or not e.confirmatory, "pilot"),
    EvidenceRule("supported", lambda e: matches(e.verdict, e.expect), "supported"),
    EvidenceRule("no effect of that size", lambda e: kind(e.verdict) in NO_EFFECT_OF_THAT_SIZE, "negligible"),
    EvidenceRule("contradicted", lambda e: rules(e.verdict), "contradicted"),
    EvidenceRule("underpowered", lambda e: kind(e.verdict) is Kind.UNDERPOWERED, "underpowered"),
    EvidenceRule("inconclusive", lambda e: True, "inconclusive"),
)


def evidence_outcome(facts: EvidenceFacts) -> str:
    """What one comparison says of a claim, by the first of :data:`EVIDENCE_RULES` that holds."""
    return next(rule.outcome for rule in EVIDENCE_RULES if rule.holds(facts))


@dataclass(frozen=True)
class Judged:
    """One comparison's outcome for the claim (:data:`EVIDENCE_RULES`); ``small``: the sesoi a supporting
    effect is below; ``sesoi``: the margin a negligible one lies inside."""

    outcome: str
    condition: str | None = None
    needs: int | None = None
    small: float | None = None
    sesoi: float | None = None


@dataclass(frozen=True)
class ClaimFacts:
    """What a claim's evidence gave in one profile: the entries' outcomes (``judged``: those in the
    profile's grid, premises apart), a premise's failure, and the claim's audit."""

    evidence: int = 0  # evidence entries the claim names
    premise_fails: str | None = None  # a premise entry's verdict
    judged: tuple[Judged, ...] = ()
    not_testable: str | None = None  # every effect and mechanism of its wording untested: the first, and why
    confirmatory: bool = True
    inline: bool = False  # composed within a verdict per condition

    def count(self, outcome: str) -> int:
        return sum(j.outcome == outcome for j in self.judged)

    @property
    def conditions(self) -> list[str | None]:
        return list(dict.fromkeys(j.condition for j in self.judged))

    def per_condition(self) -> list[tuple[str, str]]:
        """(condition, the verdict of its comparisons alone) for each condition, in order."""
        return [
            (c, decide_claim(replace(self, judged=tuple(j for j in self.judged if j.condition == c), inline=True)))
            for c in self.conditions
        ]


class ClaimRule(NamedTuple):
    name: str
    holds: Callable[[ClaimFacts], bool]
    verdict: Callable[[ClaimFacts], str]


def _composed(c: ClaimFacts) -> str:
    """The verdict over every comparison (conditions pooled), as inline text."""
    return decide_claim(replace(c, inline=True), start=_FIRST_COMPOSED)


CLAIM_RULES = (
    ClaimRule("premise fails", lambda c: c.premise_fails is not None, lambda c: c.premise_fails),
    ClaimRule(
        "not testable as stated", lambda c: c.not_testable is not None, lambda c: claim_not_testable(c.not_testable)
    ),
    ClaimRule("not tested yet", lambda c: c.evidence == 0, lambda c: ClaimKind.NOT_TESTED_YET.value),
    ClaimRule("not tested in this profile", lambda c: not c.judged, lambda c: ClaimKind.NOT_TESTED.value),
    ClaimRule(
        "pilot", lambda c: not c.confirmatory or any(j.outcome == "pilot" for j in c.judged), lambda c: claim_pilot()
    ),
    ClaimRule(
        "by condition",
        lambda c: not c.inline and len(c.conditions) > 1 and len({claim_kind(v) for _, v in c.per_condition()}) > 1,
        lambda c: claim_by_condition(c.per_condition()),
    ),
    ClaimRule(
        "for every condition",
        lambda c: not c.inline and len(c.conditions) > 1,
        lambda c: claim_for_all(_composed(c), [str(x) for x in c.conditions]),
    ),
    ClaimRule(
        "mixed",
        lambda c: c.count("supported") and c.count("contradicted"),
        lambda c: claim_mixed(c.count("supported"), c.count("contradicted"), c.inline),
    ),
    ClaimRule(
        "supported",
        lambda c: c.count("supported") > 0,
        lambda c: claim_supported(
            c.count("supported") == len(c.judged),
            sum(j.small is not None for j in c.judged) == c.count("supported"),
        ),
    ),
    ClaimRule(
        "contradicted",
        lambda c: c.count("contradicted") > 0,
        lambda c: claim_contradicted(c.count("contradicted") == len(c.judged)),
    ),
    ClaimRule(
        "no effect of that size",
        lambda c: c.count("negligible") > 0,
        lambda c: claim_no_effect(j.sesoi for j in c.judged if j.outcome == "negligible" and j.sesoi is not None),
    ),
    ClaimRule("untestable", lambda c: c.count("untestable") == len(c.judged), lambda c: ClaimKind.UNTESTABLE.value),
    ClaimRule(
        "underpowered",
        lambda c: c.count("underpowered") == len(c.judged) and any(j.needs is not None for j in c.judged),
        lambda c: claim_underpowered(max(j.needs for j in c.judged if j.needs is not None)),
    ),
    ClaimRule("inconclusive", lambda c: True, lambda c: ClaimKind.INCONCLUSIVE.value),
)
_FIRST_COMPOSED = [r.name for r in CLAIM_RULES].index("mixed")


def decide_claim(facts: ClaimFacts, start: int = 0) -> str:
    """A claim's verdict by the first of :data:`CLAIM_RULES` (from ``start``) that holds."""
    return next(rule.verdict(facts) for rule in CLAIM_RULES[start:] if rule.holds(facts))
