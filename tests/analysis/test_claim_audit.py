"""Claim verdicts that rule on what a claim says (docs/claims-audit.md): a setting that cannot run
is not evidence for the claim (``premise fails here``), a claim read under conditions that
disagree says so per condition, a comparison may be made against another variant than the
baseline, and a claim whose every effect is untested is ``not testable as stated``."""

from __future__ import annotations

import numpy as np
import pytest

from harness.analysis import claim_verdicts as cv
from harness.analysis.claims import claim_verdict
from harness.analysis.comparisons import analyse
from harness.experiment.ablation import load
from harness.experiment.claims import Claim
from harness.experiment.selection import select
from helpers.fake_store import write_decl, write_runs
from helpers.mini_claims import claim_of

SEEDS = list(range(8))
NOISE = np.random.default_rng(3).normal(0, 0.01, (3, 8))
ACC = {"sinusoidal": 0.5, "learned": 0.7, "rope": 0.3}  # acc@x2 per variant, plus noise per seed
INDEX = {"sinusoidal": 0, "learned": 1, "rope": 2}


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("audit")
    decl = write_decl(tmp / "decl", cpu={"seeds": SEEDS})
    write_runs(tmp / "results", decl, "cpu", lambda v, s: ACC[v] + NOISE[INDEX[v], s])
    return analyse(select(load(str(decl)), "cpu", check_data=False), tmp / "results")


def claim(parts: list[dict], evidence: list[dict]) -> Claim:
    return claim_of(parts=parts, evidence=evidence)


EFFECT = {"words": "helps", "kind": "effect"}


def ev(variant: str, expect: str, **kw) -> dict:
    return {"task": "copy", "metric": "acc@x2", "variant": variant, "expect": expect, "part": "helps", **kw}


def test_conditions_that_disagree_give_a_verdict_per_condition(result):
    c = claim([EFFECT], [ev("learned", "better", condition="Post-LN"), ev("rope", "better", condition="Pre-LN")])
    verdict, lines = claim_verdict(c, result)
    assert verdict == "supported for Post-LN, contradicted for Pre-LN"
    assert cv.claim_kind(verdict) is cv.ClaimKind.BY_CONDITION
    assert lines[0].startswith("Post-LN: copy `acc@x2`, learned vs sinusoidal") and lines[1].startswith("Pre-LN: ")
    # agreeing conditions: one verdict over all of them
    same = claim([EFFECT], [ev("learned", "better", condition="A"), ev("rope", "worse", condition="B")])
    assert claim_verdict(same, result)[0] == "supported for A and B"  # what it covers
    assert cv.claim_kind("supported for A and B") is cv.ClaimKind.SUPPORTED
    assert cv.claim_kind(cv.claim_for_all("contradicted", ["A", "B", "C"])) is cv.ClaimKind.CONTRADICTED


def test_a_mixed_condition_is_written_without_commas_and_reads_back(result):
    c = claim(
        [EFFECT],
        [
            ev("learned", "better", condition="Post-LN"),
            ev("rope", "better", condition="Post-LN"),
            ev("learned", "worse", condition="Pre-LN"),
        ],
    )
    verdict = claim_verdict(c, result)[0]
    assert verdict == "mixed (1 comparison supports it and 1 contradicts it) for Post-LN, contradicted for Pre-LN"
    assert cv.claim_kind(verdict) is cv.ClaimKind.BY_CONDITION
    assert cv.claim_kind("supported for Post-LN") is cv.ClaimKind.SUPPORTED  # one condition: its own kind


def test_a_comparison_against_another_variant_is_paired_with_it(result):
    c = claim([EFFECT], [ev("rope", "worse", against="learned")])
    verdict, lines = claim_verdict(c, result)
    assert verdict == "supported"
    delta = np.mean((ACC["rope"] + NOISE[2]) - (ACC["learned"] + NOISE[1]))
    assert f"copy `acc@x2`, rope vs learned: Δ = {delta:+.4g}" in lines[0], lines[0]
    assert "(exploratory (against learned, BH))" in lines[0] and "n = 8 seeds → worse" in lines[0]
    assert result.table("copy", "acc@x2").frame.iloc[0]["variant"] == "sinusoidal"  # the report's tables as before


def test_a_setting_that_cannot_run_is_no_evidence_for_the_claim(result):
    runs = result.runs.copy()
    rope = runs["variant"] == "rope"
    runs.loc[rope, ["status", "reason"]] = ["failed", "RuntimeError: value cannot be converted"]
    failed = type(result)(**{**result.__dict__, "runs": runs})
    setting = {"words": "rope positions", "kind": "condition"}
    premise = {
        "task": "copy",
        "metric": "finished",
        "variant": "rope",
        "premise": "a rope model",
        "part": "rope positions",
    }
    c = claim([setting, {**EFFECT, "not_tested": "the setting cannot run"}], [premise])
    verdict, lines = claim_verdict(c, failed)
    assert verdict == (
        "premise fails here: a rope model cannot run (0/8 runs finished; 8 failed: RuntimeError: value "
        "cannot be converted)"
    )
    assert cv.claim_kind(verdict) is cv.ClaimKind.PREMISE_FAILS and cv.claim_kind(verdict) not in cv.RULINGS
    assert "**fails here**" in lines[0]
    # where the setting runs, the premise holds and the untested effect leaves nothing to rule on
    verdict, lines = claim_verdict(c, result)
    assert "premise (a rope model) holds here: 8/8 runs finished" in lines[0]
    assert verdict == "not testable as stated: helps: the setting cannot run"


def test_a_claim_whose_every_effect_is_untested_is_not_testable_as_stated(result):
    cond = {"words": "on copy", "kind": "condition"}
    c = claim(
        [cond, {**EFFECT, "not_tested": "no such measure"}],
        [{**ev("learned", "better"), "part": "on copy"}],
    )
    assert claim_verdict(c, result)[0] == "not testable as stated: helps: no such measure"


@pytest.mark.parametrize(
    ("parts", "evidence", "words"),
    [
        ([EFFECT], [ev("learned", "better", part="hurts")], "evidence.0.part: 'hurts' is not the words of a part"),
        ([EFFECT, {"words": "on copy", "kind": "condition"}], [ev("learned", "better")], "'on copy' has no comparison"),
        ([{**EFFECT, "not_tested": "x"}], [ev("learned", "better")], "'helps' is not_tested, yet evidence names it"),
        ([EFFECT], [ev("learned", "better", condition="A"), ev("rope", "worse")], "give every comparison a condition"),
        ([EFFECT], [{**ev("learned", "better"), "premise": "p"}], "give expect"),
    ],
)
def test_an_audit_that_does_not_add_up_is_refused(parts, evidence, words):
    from harness.errors import AblateError

    with pytest.raises(AblateError) as exc:
        claim(parts, evidence)
    assert words in str(exc.value) and "claim c" in str(exc.value)


def test_a_pilot_gives_no_verdict_under_any_condition(tmp_path):
    decl = write_decl(tmp_path / "decl", cpu={"seeds": SEEDS[:3], "confirmatory": False})
    write_runs(tmp_path / "results", decl, "cpu", lambda v, s: ACC[v] + NOISE[INDEX[v], s])
    pilot = analyse(select(load(str(decl)), "cpu", check_data=False), tmp_path / "results")
    c = claim([EFFECT], [ev("learned", "better", condition="Post-LN"), ev("rope", "better", condition="Pre-LN")])
    assert claim_verdict(c, pilot)[0] == cv.claim_pilot()


def test_an_entry_for_one_profile_is_read_in_that_profile_only(result):
    """A setting only one profile runs (a fixed learning rate): its entry names the profile, and another
    profile's grid, holding the same labels, does not answer for it."""
    c = claim([EFFECT], [ev("learned", "better", profile="fixed_lr"), ev("rope", "worse")])
    verdict, lines = claim_verdict(c, result)
    assert lines[0] == "copy acc@x2, learned vs sinusoidal: read in the `fixed_lr` profile (its report), not in `cpu`"
    assert verdict == "supported"  # rope worse, the only entry this profile reads
    assert claim_verdict(claim([EFFECT], [ev("learned", "better", profile="cpu")]), result)[0] == "supported"
