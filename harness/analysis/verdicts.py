"""The verdict vocabulary: every word a comparison or a claim can be judged with, in one place.

A comparison verdict (one row of a comparison table, :mod:`harness.analysis.comparisons`) and a
claim verdict (:func:`harness.analysis.claims.claim_verdict`) are written by the
constructors here and read back by :func:`kind` / :func:`claim_kind`, never by matching a prefix
elsewhere. The texts are what reports print; changing one changes every committed report. How the
tests behind each word are made, for a reader: docs/statistics.md.

Comparison verdicts (:class:`Kind`):

- ``better`` / ``worse``: the paired t-test and the exact sign-flip test both reject after adjustment.
- ``equivalent (±sesoi)``: TOST within the smallest effect of interest.
- ``inconclusive``, ``inconclusive (MDE x)``, ``inconclusive (t-test only: exact sign-flip p adj x)``.
- ``identical in all n pairs``: no pair differs (nothing to test).
- ``undefined (a non-finite value in k of n pairs)``: a run's value is infinite (a loss that
  overflowed), so the mean difference and every test of it are undefined
  (:mod:`harness.analysis.paired`).
- ``same outcome in all n pairs``: outcome tables (finished or not), every pair agrees.
- ``pilot``: not a confirmatory profile, no verdict.
- ``too few pairs``: fewer than 2 seeds paired with the baseline.
- ``target never reached (censored)``: ``steps_to_target`` where neither arm reached the target.
- ``not learned (k/n seeds reached target)``: the baseline reached the task's convergence target
  on at most half of its planned seeds; ``not learned (k/n passed the gate)``:
  a comparison beyond L where the variant (or the baseline) never passed the task's gate.
- ``at ceiling (baseline 1 on all n seeds)``: the baseline scored the metric's best value on every
  seed, so no variant can be better and an equal score says only that the task is too easy at this
  scale: a comparison that would otherwise read identical, equivalent, inconclusive or
  underpowered gets no verdict (``worse`` stands: a variant can still fall below the ceiling).
- ``underpowered at this scale (needs N seeds)``: a primary comparison of a confirmatory profile
  that is inconclusive and had less than 80 % power at the task's smallest effect of interest;
  N is what ``ablate plan`` says the family needs.
- ``baseline``: the baseline's own row.

Claim verdicts (:class:`ClaimKind`; docs/claims-audit.md): ``supported`` / ``partly supported``
(``in direction only``), ``contradicted`` / ``partly contradicted``, ``mixed``, ``inconclusive``,
``pilot``, ``untestable at this scale``, ``underpowered at this scale (needs N seeds)``, ``not
tested ...``, ``withheld (...)``; and, for what a claim says rather than what its cells did:
``premise fails here: SETTING cannot run (...)`` (the claim's setting does not run here: no
evidence for or against it), ``not testable as stated: PART: reason`` (no comparison tests its
effect or mechanism), and a verdict per condition, ``supported for Post-LN, contradicted for
Pre-LN`` (:attr:`ClaimKind.BY_CONDITION`), when conditions disagree.
"""

from __future__ import annotations

from enum import Enum


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
    """``inconclusive (STATE)``: a primary comparison of a group-sequential design that no look
    decided (``open: next look 2 at 16 seeds``, ``stopped for futility at look 1, 8 seeds``,
    ``not decided by the last look, 32 seeds``; :mod:`harness.analysis.looks`)."""
    return f"{Kind.INCONCLUSIVE.value} ({state})"


def identical(n_pairs: int) -> str:
    """``identical in all n pairs``."""
    return f"{Kind.IDENTICAL.value} in all {n_pairs} pairs"


def undefined_non_finite(non_finite: int, n_pairs: int) -> str:
    """``undefined (a non-finite value in k of n pairs)``: no test of the mean difference exists."""
    return f"{Kind.UNDEFINED.value} (a non-finite value in {non_finite} of {n_pairs} pairs)"


def same_outcome(n_pairs: int) -> str:
    """``same outcome in all n pairs`` (outcome tables)."""
    return f"{Kind.SAME_OUTCOME.value} in all {n_pairs} pairs"


def not_learned_target(reached: int, planned: int, run: int | None = None) -> str:
    """``not learned (k/n seeds reached target)``: the baseline reached the task's convergence target
    on ``reached`` of its ``planned`` seeds, not more than half; ``run``: the seeds it has a run of,
    when fewer (an unfinished grid: ``not learned (0/8 seeds reached target; 5 not run)``)."""
    left = f"; {planned - run} not run" if run is not None and run < planned else ""
    return f"{Kind.NOT_LEARNED.value} ({reached}/{planned} seeds reached target{left})"


def not_learned_gate(passed: int, planned: int, whose: str = "") -> str:
    """``not learned (k/n passed the gate)``; ``whose``: ``"baseline "`` when it is the baseline's runs."""
    return f"{Kind.NOT_LEARNED.value} ({whose}{passed}/{planned} passed the gate)"


def at_ceiling(best: float, n_seeds: int) -> str:
    """``at ceiling (baseline 1 on all n seeds)``: the baseline scored the metric's best value
    ``best`` on each of its ``n_seeds`` seeds."""
    return f"{Kind.CEILING.value} (baseline {best:g} on all {n_seeds} seeds)"


NO_VERDICT = (Kind.NOT_LEARNED, Kind.CEILING)
"""Kinds of a comparison the experiment could not decide: a claim that names only such comparisons
is ``untestable at this scale``."""


def underpowered(needed: int) -> str:
    """``underpowered at this scale (needs N seeds)``: inconclusive, and the design had less than
    80 % power at the smallest effect of interest; ``needed``: the seeds it would take."""
    return f"{Kind.UNDERPOWERED.value} (needs {needed} seeds)"


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
