"""Claim verdicts: the words a claim can be judged with, and the two ordered rule tables that choose them.

The words: the ``claim_*`` constructors, read back by :func:`claim_kind`. The tables: :data:`EVIDENCE_RULES`
(what one evidence entry's comparison says of the claim) then :data:`CLAIM_RULES` (the claim's verdict from all of
them). docs/statistics.md lists both in this order; docs/claims-audit.md explains the words.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import Enum

from harness.analysis.verdicts import (
    NO_EFFECT_OF_THAT_SIZE,
    NO_VERDICT,
    Kind,
    Rule,
    _match,
    first,
    kind,
    matches,
    rules,
)


class ClaimKind(str, Enum):
    """The kind of a claim verdict; the value is its text up to its parameters (``by condition``: none of its own)."""

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
    """The ``pilot`` claim verdict: a non-confirmatory profile gives no verdict."""
    return f"{ClaimKind.PILOT.value} (no verdict from a non-confirmatory profile)"


def claim_supported(all_of_them: bool, direction_only: bool) -> str:
    """The ``supported`` claim verdict, or ``partly supported``.

    Args:
        all_of_them: every comparison judged supports the claim (else ``partly supported``).
        direction_only: every supporting Δ is below the sesoi: adds :data:`IN_DIRECTION_ONLY`.
    """
    word = (ClaimKind.SUPPORTED if all_of_them else ClaimKind.PARTLY_SUPPORTED).value
    return word + (IN_DIRECTION_ONLY if direction_only else "")


def claim_contradicted(all_of_them: bool) -> str:
    """``contradicted`` when all judged comparisons contradict it (``all_of_them``), else ``partly contradicted``."""
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
    """The ``underpowered at this scale`` claim verdict; ``needed``: the most seeds any of its comparisons needs."""
    return f"{ClaimKind.UNDERPOWERED.value} (needs {needed} seeds)"


def claim_withheld(controls: list[tuple[str, str]]) -> str:
    """``controls``: ("positive control ID" or "negative control NAME", outcome) of each that did not pass."""
    return f"{ClaimKind.WITHHELD.value} (" + ", ".join(f"{c}: {o}" for c, o in controls) + ")"


def claim_premise_fails(setting: str, observed: str) -> str:
    """The ``premise fails here`` claim verdict: a premise entry's ``setting`` cannot run (``observed``: its runs)."""
    return f"{ClaimKind.PREMISE_FAILS.value}: {setting} cannot run ({observed})"


def claim_not_testable(reason: str) -> str:
    """The ``not testable as stated`` claim verdict; ``reason``: ``PART: why`` of the first part untested."""
    return f"{ClaimKind.NOT_TESTABLE.value}: {reason}"


def claim_by_condition(verdicts: list[tuple[str, str]]) -> str:
    """``supported for Post-LN, contradicted for Pre-LN``: a verdict per condition, when they differ in kind.

    ``verdicts``: ``(condition, claim verdict)`` in the claim's order (a ``mixed`` one inline, so that the text
    splits back at its commas).
    """
    return ", ".join(f"{v} for {c}" for c, v in verdicts)


def claim_for_all(verdict: str, conditions: list[str]) -> str:
    """``contradicted for A and B``: one verdict where the conditions agree in kind, naming them."""
    named = conditions[0] if len(conditions) == 1 else f"{', '.join(conditions[:-1])} and {conditions[-1]}"
    return f"{verdict} for {named}"


def _single_kind(verdict: str) -> ClaimKind | None:
    return _match(sorted(ClaimKind, key=lambda c: -len(c.value)), verdict)  # partly supported before supported


def claim_kind(verdict: str) -> ClaimKind | None:
    """The kind of a claim verdict text.

    Longest match first: ``partly supported`` before ``supported``; a verdict per condition, two or more
    ``VERDICT for CONDITION`` of :func:`claim_by_condition`: :attr:`ClaimKind.BY_CONDITION`.
    """
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


EVIDENCE_RULES = (  # over an entry's EvidenceFacts, each giving its outcome
    Rule("untestable", lambda e: kind(e.verdict) in NO_VERDICT, lambda e: "untestable"),
    Rule("not run", lambda e: not e.paired, lambda e: "not run"),
    Rule("pilot", lambda e: kind(e.verdict) is Kind.PILOT or not e.confirmatory, lambda e: "pilot"),
    Rule("supported", lambda e: matches(e.verdict, e.expect), lambda e: "supported"),
    Rule("no effect of that size", lambda e: kind(e.verdict) in NO_EFFECT_OF_THAT_SIZE, lambda e: "negligible"),
    Rule("contradicted", lambda e: rules(e.verdict), lambda e: "contradicted"),
    Rule("underpowered", lambda e: kind(e.verdict) is Kind.UNDERPOWERED, lambda e: "underpowered"),
    Rule("inconclusive", lambda e: True, lambda e: "inconclusive"),
)


@dataclass(frozen=True)
class Judged:
    """One comparison's outcome for the claim (:data:`EVIDENCE_RULES`).

    ``small``: the sesoi a supporting effect is below; ``sesoi``: the margin a negligible one lies inside.
    """

    outcome: str
    condition: str | None = None
    needs: int | None = None
    small: float | None = None
    sesoi: float | None = None


@dataclass(frozen=True)
class ClaimFacts:
    """What a claim's evidence gave in one profile.

    The entries' outcomes (``judged``: those in the profile's grid, premises apart), a premise's failure, and the
    claim's audit.
    """

    evidence: int = 0  # evidence entries the claim names
    premise_fails: str | None = None  # a premise entry's verdict
    judged: tuple[Judged, ...] = ()
    not_testable: str | None = None  # every effect and mechanism of its wording untested: the first, and why
    confirmatory: bool = True
    inline: bool = False  # composed within a verdict per condition

    def count(self, outcome: str) -> int:
        """How many of the judged comparisons have the outcome ``outcome``."""
        return sum(j.outcome == outcome for j in self.judged)

    @property
    def conditions(self) -> list[str | None]:
        """The conditions of the judged comparisons, each once, in their order (None: an entry with none)."""
        return list(dict.fromkeys(j.condition for j in self.judged))

    def per_condition(self) -> list[tuple[str, str]]:
        """(condition, the verdict of its comparisons alone) for each condition, in order."""
        return [
            (c, decide_claim(replace(self, judged=tuple(j for j in self.judged if j.condition == c), inline=True)))
            for c in self.conditions
        ]


def _composed(c: ClaimFacts) -> str:
    """The verdict over every comparison (conditions pooled), as inline text."""
    return decide_claim(replace(c, inline=True), start=_FIRST_COMPOSED)


CLAIM_RULES = (  # over a claim's ClaimFacts
    Rule("premise fails", lambda c: c.premise_fails is not None, lambda c: c.premise_fails),
    Rule("not testable as stated", lambda c: c.not_testable is not None, lambda c: claim_not_testable(c.not_testable)),
    Rule("not tested yet", lambda c: c.evidence == 0, lambda c: ClaimKind.NOT_TESTED_YET.value),
    Rule("not tested in this profile", lambda c: not c.judged, lambda c: ClaimKind.NOT_TESTED.value),
    Rule("pilot", lambda c: not c.confirmatory or c.count("pilot") > 0, lambda c: claim_pilot()),
    Rule(
        "by condition",
        lambda c: not c.inline and len(c.conditions) > 1 and len({claim_kind(v) for _, v in c.per_condition()}) > 1,
        lambda c: claim_by_condition(c.per_condition()),
    ),
    Rule(
        "for every condition",
        lambda c: not c.inline and len(c.conditions) > 1,
        lambda c: claim_for_all(_composed(c), [str(x) for x in c.conditions]),
    ),
    Rule(
        "mixed",
        lambda c: c.count("supported") and c.count("contradicted"),
        lambda c: claim_mixed(c.count("supported"), c.count("contradicted"), c.inline),
    ),
    Rule(
        "supported",
        lambda c: c.count("supported") > 0,
        lambda c: claim_supported(
            c.count("supported") == len(c.judged),
            sum(j.small is not None for j in c.judged) == c.count("supported"),
        ),
    ),
    Rule(
        "contradicted",
        lambda c: c.count("contradicted") > 0,
        lambda c: claim_contradicted(c.count("contradicted") == len(c.judged)),
    ),
    Rule(
        "no effect of that size",
        lambda c: c.count("negligible") > 0,
        lambda c: claim_no_effect(j.sesoi for j in c.judged if j.outcome == "negligible" and j.sesoi is not None),
    ),
    Rule("untestable", lambda c: c.count("untestable") == len(c.judged), lambda c: ClaimKind.UNTESTABLE.value),
    Rule(
        "underpowered",
        lambda c: c.count("underpowered") == len(c.judged) and any(j.needs is not None for j in c.judged),
        lambda c: claim_underpowered(max(j.needs for j in c.judged if j.needs is not None)),
    ),
    Rule("inconclusive", lambda c: True, lambda c: ClaimKind.INCONCLUSIVE.value),
)
_FIRST_COMPOSED = [r.name for r in CLAIM_RULES].index("mixed")


def decide_claim(facts: ClaimFacts, start: int = 0) -> str:
    """A claim's verdict by the first of :data:`CLAIM_RULES` (from ``start``) that holds."""
    return first(CLAIM_RULES[start:], facts)
