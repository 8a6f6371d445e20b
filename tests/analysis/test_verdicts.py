"""The verdict vocabulary (harness/analysis/verdicts.py and claim_verdicts.py): every text a constructor writes is read
back as its own kind, and the texts are the ones the committed reports print."""

from __future__ import annotations

import math

import pytest

from harness.analysis import claim_verdicts as cv
from harness.analysis import verdicts as vd
from harness.analysis.comparisons import why_not_finished
from harness.errors import Diverged, stall_reason

COMPARISONS = [
    (vd.direction(True), vd.Kind.BETTER, "better"),
    (vd.direction(False), vd.Kind.WORSE, "worse"),
    (vd.equivalent(0.05), vd.Kind.EQUIVALENT, "equivalent (±0.05)"),
    (vd.inconclusive(), vd.Kind.INCONCLUSIVE, "inconclusive"),
    (vd.inconclusive(mde=0.0212), vd.Kind.INCONCLUSIVE, "inconclusive (MDE 0.0212)"),
    (vd.inconclusive(mde=2.95e-07), vd.Kind.INCONCLUSIVE, "inconclusive (MDE 2.95e-07)"),  # was "(MDE 0.000)"
    (
        vd.inconclusive(perm_p_adj=0.0625),
        vd.Kind.INCONCLUSIVE,
        "inconclusive (t-test only: exact sign-flip p adj 0.0625)",
    ),
    (vd.identical(8), vd.Kind.IDENTICAL, "identical in all 8 pairs"),
    (vd.same_outcome(8), vd.Kind.SAME_OUTCOME, "same outcome in all 8 pairs"),
    (vd.PILOT, vd.Kind.PILOT, "pilot"),
    (vd.TOO_FEW, vd.Kind.TOO_FEW, "too few pairs"),
    (vd.CENSORED, vd.Kind.CENSORED, "target never reached (censored)"),
    (vd.not_learned_target(3, 8), vd.Kind.NOT_LEARNED, "not learned (3/8 seeds reached target)"),
    (vd.not_learned_gate(0, 8), vd.Kind.NOT_LEARNED, "not learned (0/8 passed the gate)"),
    (vd.underpowered(36), vd.Kind.UNDERPOWERED, "underpowered at this scale (needs 36 seeds)"),
    (vd.BASELINE, vd.Kind.BASELINE, "baseline"),
]


@pytest.mark.parametrize(("text", "kind", "expected"), COMPARISONS)
def test_comparison_verdicts_read_back_as_their_kind(text: str, kind: vd.Kind, expected: str) -> None:
    assert text == expected
    assert vd.kind(text) is kind


def test_no_verdict_has_no_kind() -> None:
    assert vd.kind(math.nan) is None and vd.kind("") is None and vd.kind("betterish") is None


def test_matches_and_rules() -> None:
    assert vd.matches("equivalent (±0.05)", "equivalent") and vd.matches("better", "better")
    assert not vd.matches("worse", "better") and not vd.matches("inconclusive (MDE 0.1)", "equivalent")
    assert vd.rules("identical in all 8 pairs") and vd.rules("same outcome in all 4 pairs") and vd.rules("worse")
    for text in (
        "pilot",
        "too few pairs",
        "inconclusive",
        "not learned (0/8 passed the gate)",
        vd.CENSORED,
        vd.underpowered(36),
    ):
        assert not vd.rules(text), text


CLAIMS = [
    (cv.claim_supported(True, False), cv.ClaimKind.SUPPORTED, "supported"),
    (cv.claim_supported(False, False), cv.ClaimKind.PARTLY_SUPPORTED, "partly supported"),
    (
        cv.claim_supported(True, True),
        cv.ClaimKind.SUPPORTED,
        "supported in direction only (the effect is smaller than the smallest effect of interest)",
    ),
    (cv.claim_contradicted(True), cv.ClaimKind.CONTRADICTED, "contradicted"),
    (cv.claim_contradicted(False), cv.ClaimKind.PARTLY_CONTRADICTED, "partly contradicted"),
    (cv.claim_mixed(2, 1), cv.ClaimKind.MIXED, "mixed: 2 comparison(s) support it, 1 contradict it"),
    (cv.claim_pilot(), cv.ClaimKind.PILOT, "pilot (no verdict from a non-confirmatory profile)"),
    (cv.ClaimKind.UNTESTABLE.value, cv.ClaimKind.UNTESTABLE, "untestable at this scale"),
    (cv.claim_underpowered(36), cv.ClaimKind.UNDERPOWERED, "underpowered at this scale (needs 36 seeds)"),
    (cv.ClaimKind.NOT_TESTED.value, cv.ClaimKind.NOT_TESTED, "not tested in this profile"),
]


@pytest.mark.parametrize(("text", "kind", "expected"), CLAIMS)
def test_claim_verdicts_read_back_as_their_kind(text: str, kind: cv.ClaimKind, expected: str) -> None:
    assert text == expected
    assert cv.claim_kind(text) is kind


def test_runs_that_did_not_finish_are_counted_by_reason_not_by_their_own_figures() -> None:
    """Stalled runs differ in their best loss and step, diverged runs in their last finite loss: each
    kind is counted once over all its runs, the most common first."""
    stalled = [stall_reason(3.3 + i / 100, 100 * i, 3.309) for i in range(1, 4)]
    diverged = [str(Diverged(12, loss)) for loss in (2.5, 7.1)]
    found = why_not_finished(["stalled"] * 3 + ["diverged"] * 2 + ["ok"], [*stalled, *diverged, None])
    assert found == [
        ("stalled: validation loss never got clear of chance", 3),
        ("diverged: non-finite training loss at step 12", 2),
    ]
