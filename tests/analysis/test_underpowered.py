"""Enough seeds for the question: each primary comparison's power at its task's
smallest effect of interest, the seeds it needs (``ablate plan``'s computation), the verdict
``underpowered at this scale (needs N seeds)`` for an inconclusive comparison that had fewer, and the
report's setup line. N and the power are checked against statsmodels' ``TTestPower`` directly."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from statsmodels.stats.power import TTestPower

from harness.analysis import claim_verdicts as cv
from harness.analysis import paired as pw
from harness.analysis import verdicts as vd
from harness.analysis.claims import claim_verdict
from harness.analysis.comparisons import analyse
from harness.cli.report import report as write_report
from harness.experiment.ablation import load
from harness.experiment.claims import Claim
from harness.experiment.selection import select
from helpers.fake_store import write_decl, write_runs
from helpers.mini_claims import claim_of

SESOI = 0.05  # write_decl's copy task: primary acc@x2, sesoi 0.05, higher is better
# paired differences (variant - sinusoidal) per seed: learned spreads widely (SD 0.094), rope
# tightly enough for 80 % power at 8 seeds in a Holm family of 2; neither decides
NOISY = np.array([0.12, -0.08, 0.15, -0.1, 0.02, 0.09, -0.05, 0.01])
TIGHT = np.array([0.06, -0.02, 0.07, -0.01, 0.06, 0.0, 0.05, 0.0])


def _seeds_needed(sd: float, alpha: float, power: float = 0.8) -> int:
    """statsmodels' solve_power rounded up, and the fewest seeds at which the exact sign-flip test
    can reject (its smallest p is 2 / 2**m), whichever is more."""
    n = TTestPower().solve_power(effect_size=SESOI / sd, nobs=None, alpha=alpha, power=power, alternative="two-sided")
    floor = next(m for m in itertools.count(1) if 2 / 2**m < alpha)
    return max(math.ceil(float(n) - 1e-6), floor)


def _store(tmp: Path, profile: str, seeds: list[int], diffs: dict[str, np.ndarray], target: bool = False):
    folder = tmp / "decl"
    path = write_decl(folder, cpu={"seeds": seeds}, pilot={"seeds": seeds, "confirmatory": False})
    if target:
        decl = yaml.safe_load(path.read_text())
        decl["tasks"]["copy"]["target"] = {"metric": "acc", "min": 0.9}
        path.write_text(yaml.safe_dump(decl, sort_keys=False))

    def value(variant: str, seed: int) -> float:
        return 0.5 + 0.01 * seed + (diffs[variant][seed] if variant in diffs else 0.0)

    reached = (lambda v, s: {"target_reached": 0.0}) if target else None  # nobody reached it
    write_runs(tmp / "results", path, profile, value, extra=reached)
    abl = load(str(path))
    sel = select(abl, profile, check_data=False)
    return sel, analyse(sel, tmp / "results")


def _claim(*variants: str) -> Claim:
    return claim_of(evidence=[{"task": "copy", "metric": "acc@x2", "variant": v, "expect": "better"} for v in variants])


def test_power_and_seeds_needed_agree_with_statsmodels(tmp_path: Path) -> None:
    _, result = _store(tmp_path, "cpu", list(range(8)), {"learned": NOISY, "rope": TIGHT})
    power = {p.variant: p for p in result.power}
    assert set(power) == {"learned", "rope"}
    for variant, diffs in (("learned", NOISY), ("rope", TIGHT)):
        p = power[variant]
        sd = float(np.std(diffs, ddof=1))
        assert (p.task, p.metric, p.sesoi, p.n_pairs, p.family_size) == ("copy", "acc@x2", SESOI, 8, 2)
        assert p.alpha_each == pytest.approx(0.025)
        assert p.sd_diff == pytest.approx(sd)
        direct = TTestPower().power(SESOI / sd, nobs=8, alpha=0.025, alternative="two-sided")
        assert p.power == pytest.approx(direct, rel=1e-9)
        assert p.needed == _seeds_needed(sd, 0.025)
    assert power["learned"].power < 0.8 and power["learned"].needed == 36
    assert power["rope"].power >= 0.8 and power["rope"].needed == 8


def test_inconclusive_below_80_percent_power_is_underpowered(tmp_path: Path) -> None:
    _, result = _store(tmp_path, "cpu", list(range(8)), {"learned": NOISY, "rope": TIGHT})
    frame = result.table("copy", "acc@x2").frame.set_index("variant")
    needed = _seeds_needed(float(np.std(NOISY, ddof=1)), 0.025)
    assert frame.loc["learned", "verdict"] == f"underpowered at this scale (needs {needed} seeds)"
    # power 0.81 at 8 seeds: inconclusive stays inconclusive (the design could have seen the sesoi)
    assert vd.kind(frame.loc["rope", "verdict"]) is vd.Kind.INCONCLUSIVE
    # the exploratory length (acc@x1) has no sesoi: never underpowered
    assert all(vd.kind(v) is not vd.Kind.UNDERPOWERED for v in result.table("copy", "acc@x1").frame["verdict"])


def test_too_few_seeds_for_the_sign_flip_test_is_underpowered(tmp_path: Path) -> None:
    """5 seeds with differences far above the sesoi: the t-test has all the power it needs, but
    in a family of 2 the exact sign-flip test needs 7 seeds (2 / 2**7 < 0.025) to reject."""
    lift = np.array([0.2, 0.22, 0.19, 0.21, 0.2])
    _, result = _store(tmp_path, "cpu", list(range(5)), {"learned": lift, "rope": lift + 0.01})
    for variant in ("learned", "rope"):
        (p,) = [p for p in result.power if p.variant == variant]
        assert p.power > 0.99 and p.needed == 7 == _seeds_needed(p.sd_diff, 0.025)
    frame = result.table("copy", "acc@x2").frame.set_index("variant")
    assert list(frame["verdict"][1:]) == ["underpowered at this scale (needs 7 seeds)"] * 2


def test_claim_verdicts_carry_it_through(tmp_path: Path) -> None:
    _, result = _store(tmp_path, "cpu", list(range(8)), {"learned": NOISY, "rope": TIGHT})
    verdict, lines = claim_verdict(_claim("learned"), result)
    assert verdict == "underpowered at this scale (needs 36 seeds)"
    assert cv.claim_kind(verdict) is cv.ClaimKind.UNDERPOWERED
    assert lines[0].endswith("→ underpowered at this scale (needs 36 seeds); claim expects better: **underpowered**")
    assert claim_verdict(_claim("rope"), result)[0] == "inconclusive"
    assert claim_verdict(_claim("learned", "rope"), result)[0] == "inconclusive"  # not all underpowered


def test_a_pilot_gets_no_power_verdict_and_no_power_line(tmp_path: Path) -> None:
    sel, result = _store(tmp_path, "pilot", list(range(8)), {"learned": NOISY, "rope": TIGHT})
    assert set(result.table("copy", "acc@x2").frame["verdict"][1:]) == {"pilot"}
    text = write_report(sel.ablation.source, sel.profile, tmp_path / "results", tmp_path / "reports").read_text()
    assert "- Power at the smallest effect of interest" not in text and "| underpowered" not in text


def test_not_learned_wins_over_underpowered(tmp_path: Path) -> None:
    _, result = _store(tmp_path, "cpu", list(range(8)), {"learned": NOISY, "rope": TIGHT}, target=True)
    verdicts = set(result.table("copy", "acc@x2").frame["verdict"][1:])
    assert verdicts == {"not learned (0/8 seeds reached target)"}
    assert claim_verdict(_claim("learned"), result)[0] == "untestable at this scale"


def test_report_setup_says_the_power(tmp_path: Path) -> None:
    sel, result = _store(tmp_path, "cpu", list(range(8)), {"learned": NOISY, "rope": TIGHT})
    text = write_report(sel.ablation.source, sel.profile, tmp_path / "results", tmp_path / "reports").read_text()
    setup = text.split("## Setup", 1)[1].split("\n## ", 1)[0]
    (line,) = [x for x in setup.splitlines() if x.startswith("- Power at the smallest effect of interest")]
    learned = next(p for p in result.power if p.variant == "learned").power
    rope = next(p for p in result.power if p.variant == "rope").power
    assert "alpha 0.05 / 2 primary comparisons = 0.025" in line and "at least 7 seeds" in line
    assert f"`copy` `acc@x2`: learned power {learned:.2f} at Δ = 0.05 with 8 seeds (needs 36), " in line
    assert f"rope power {rope:.2f} at Δ = 0.05 with 8 seeds." in line
    assert "| underpowered at this scale (needs 36 seeds)" in text


def test_power_at_a_large_effect_over_sd_is_a_number() -> None:
    """8.5 SD at 4 pairs: statsmodels' two-sided power is NaN there (scipy's noncentral t in the far
    lower tail); the upper tail alone (one-sided at alpha / 2) is the power to 1e-15."""
    es = SESOI / 0.005859375
    assert math.isnan(TTestPower().power(es, nobs=4, alpha=0.025, alternative="two-sided"))
    upper = TTestPower().power(es, nobs=4, alpha=0.0125, alternative="larger")
    assert pw.power_at(SESOI, 0.005859375, 4, 0.025) == pytest.approx(upper, abs=1e-15)
    for es, n in ((0.5, 8), (1.0, 4), (2.0, 3)):  # elsewhere: statsmodels' two-sided power
        direct = TTestPower().power(es, nobs=n, alpha=0.025, alternative="two-sided")
        assert pw.power_at(es, 1.0, n, 0.025) == pytest.approx(direct, rel=1e-12)
