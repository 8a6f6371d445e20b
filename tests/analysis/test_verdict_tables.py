"""Every verdict goes through one rule table (harness.analysis.verdicts.RULES): the tables a claim asks
for with ``against``, the positive controls, and the claims themselves. Each test is a rule that would
have changed such a verdict while those tables were decided apart (docs/statistics.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from harness.analysis import claim_verdicts as cv
from harness.analysis import controls
from harness.analysis.claims import claim_verdict
from harness.analysis.comparisons import analyse
from harness.experiment import ablation as ablation_mod
from harness.experiment import claims as claims_mod
from harness.experiment.ablation import load
from harness.experiment.selection import select
from helpers.fake_store import write_decl, write_runs
from helpers.mini_claims import claim_of

SEEDS = list(range(8))
NOISE = np.random.default_rng(5).normal(0, 0.004, 8)


def _analysis(tmp: Path, value, target: bool = False, reached=lambda v, s: 1.0):
    """write_decl's ablation (copy, primary acc@x2, sesoi 0.05), 8 confirmatory seeds, runs ``value``."""
    path = write_decl(tmp / "decl", confirm={"seeds": SEEDS})
    decl = yaml.safe_load(path.read_text())
    decl["default_profile"] = "confirm"
    if target:
        decl["tasks"]["copy"]["target"] = {"metric": "acc", "min": 0.9}
    path.write_text(yaml.safe_dump(decl, sort_keys=False))
    write_runs(tmp / "results", path, "confirm", value, extra=lambda v, s: {"target_reached": reached(v, s)})
    return analyse(select(load(str(path)), "confirm", check_data=False), tmp / "results")


def _against(expect: str = "better") -> claims_mod.Claim:
    return claim_of(
        evidence=[{"task": "copy", "metric": "acc@x2", "variant": "rope", "against": "learned", "expect": expect}]
    )


def test_an_against_table_reads_not_learned_when_the_baseline_did_not_learn(tmp_path: Path) -> None:
    """Rule "not learned": the task's baseline reached its target on 3 of 8 seeds; rope against learned
    (a clear +0.2, which the table alone calls better) gives no verdict, as every comparison of the task."""
    result = _analysis(
        tmp_path,
        lambda v, s: {"sinusoidal": 0.3, "learned": 0.5, "rope": 0.7}[v] + NOISE[s],
        target=True,
        reached=lambda v, s: float(v != "sinusoidal" or s < 3),
    )
    table = result.table("copy", "acc@x2", "learned")
    assert table.frame.set_index("variant").loc["rope", "verdict"] == "not learned (3/8 seeds reached target)"
    assert claim_verdict(_against(), result)[0] == "untestable at this scale"


def test_an_against_table_reads_at_ceiling_where_the_reference_scored_the_best_value(tmp_path: Path) -> None:
    """Rule "at ceiling": learned, the reference, scored accuracy 1 on every seed and rope too; the
    table alone read identical values, which contradicted a claim of a difference."""
    result = _analysis(tmp_path, lambda v, s: 1.0 if v != "sinusoidal" else 0.5)
    table = result.table("copy", "acc@x2", "learned")
    assert table.frame.set_index("variant").loc["rope", "verdict"] == "at ceiling (baseline 1 on all 8 seeds)"
    assert claim_verdict(_against(), result)[0] == "untestable at this scale"


def test_an_against_table_reads_negligible_inside_the_sesoi(tmp_path: Path) -> None:
    """Rule "negligible": rope is above learned by 0.01 on every seed (both tests reject), a CI inside
    the task's sesoi of 0.05; the claim of a material effect reads no effect of that size, not supported."""
    result = _analysis(tmp_path, lambda v, s: {"sinusoidal": 0.3, "learned": 0.5, "rope": 0.51}[v] + NOISE[s] / 4)
    row = result.table("copy", "acc@x2", "learned").frame.set_index("variant").loc["rope"]
    assert 0 < row["delta_ci_low"] < row["delta_ci_high"] < 0.05 and row["p_adj"] < 0.05
    assert row["verdict"] == "negligible (95% CI of Δ inside ±0.05)"
    verdict, lines = claim_verdict(_against(), result)
    assert verdict == "no effect of that size (every comparison that decided lies inside ±0.05)"
    assert "**no effect of that size** (inside the smallest effect of interest ±0.05" in lines[0]
    assert cv.claim_kind(verdict) is cv.ClaimKind.NO_EFFECT
    assert claim_verdict(_against("equivalent"), result)[0] == "supported"  # a claim of no difference: a match


@pytest.fixture
def mini(tmp_path, monkeypatch):
    folder = tmp_path / "ablations"
    decl = write_decl(folder, cpu={"seeds": SEEDS})
    monkeypatch.setattr(ablation_mod, "ABLATIONS_DIR", folder)
    return decl


def _control(results: Path, **comparison) -> controls.ComparisonResult:
    comp = {"ablation": "mini", "profile": "cpu", "task": "copy", "metric": "acc@x2"} | comparison
    entry = claims_mod.parse(
        [
            {
                "id": "x2020",
                "paper": "X et al. 2020",
                "source": "Table 1",
                "setting": "s",
                "result": "r",
                "expected": "e",
                "differences": "d",
                "comparisons": [comp],
            }
        ]
    )[0]
    controls.check(entry)
    (o,) = controls.evaluate(entry, results).outcomes
    return o


def test_a_positive_control_reads_negligible_inside_the_sesoi(mini, tmp_path: Path) -> None:
    """Rule "negligible" for a control: rope 0.01 above learned on every seed passed as better before;
    a published effect seen only inside the sesoi is not seen at the size that matters."""
    results = tmp_path / "results"
    write_runs(results, mini, "cpu", lambda v, s: {"sinusoidal": 0.3, "learned": 0.5, "rope": 0.51}[v] + NOISE[s] / 4)
    o = _control(results, variant="rope", reference="learned", expect="better")
    assert (o.verdict, o.outcome) == ("negligible (95% CI of Δ inside ±0.05)", "fail")
    assert _control(results, variant="rope", reference="learned", expect="equivalent").outcome == "pass"


def test_a_positive_control_at_ceiling_is_decided_by_the_table_not_after_it(mini, tmp_path: Path) -> None:
    """Rule "at ceiling": the verdict itself reads at ceiling (it read identical, then was overwritten)."""
    results = tmp_path / "results"
    write_runs(results, mini, "cpu", lambda v, s: 1.0 if v != "sinusoidal" else 0.5)
    o = _control(results, variant="rope", reference="learned", expect="better")
    assert o.verdict == "at ceiling (baseline 1 on all 8 seeds)"
    assert o.text == "inconclusive (reference at ceiling on all 8 seeds)"


def test_each_claim_rule_is_the_first_that_holds() -> None:
    """The claim rules in order: a supported and a negligible comparison read partly supported (the
    negligible one is no contradiction); negligible ones alone read no effect of that size; with a
    contradicting one, contradicted."""
    s, n, c = (
        cv.Judged(o, sesoi=0.05 if o == "negligible" else None) for o in ("supported", "negligible", "contradicted")
    )
    assert cv.decide_claim(cv.ClaimFacts(evidence=2, judged=(s, n))) == "partly supported"
    assert cv.decide_claim(cv.ClaimFacts(evidence=2, judged=(n, n))).startswith("no effect of that size")
    assert cv.decide_claim(cv.ClaimFacts(evidence=2, judged=(n, c))) == "partly contradicted"
    assert cv.decide_claim(cv.ClaimFacts(evidence=2, judged=(s, c))).startswith("mixed")
    assert cv.decide_claim(cv.ClaimFacts(evidence=2, judged=(s, c), confirmatory=False)).startswith("pilot")
    assert cv.decide_claim(cv.ClaimFacts(evidence=1)) == "not tested in this profile"
