"""A fixed confirmatory profile's primary comparisons are decided by the rule of a group-sequential
profile's looks, at one look of all its seeds (harness.analysis.looks.fixed_design): the hull of the
paired t and bootstrap-t intervals with the skew guard, not the t-test with the exact sign-flip check,
whose error rate does not hold on skewed differences (docs/statistics.md, "Tests that hold without
normality")."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.analysis import paired
from harness.analysis.comparisons import analyse
from harness.experiment.ablation import load
from harness.experiment.selection import select
from helpers.fake_store import symmetric_noise, write_decl, write_runs

SEEDS = list(range(8))
# rope - sinusoidal per seed: worse by about 0.3, with one long tail to the right (skewness 1.6)
SKEWED = np.array([-0.300, -0.305, -0.295, -0.300, -0.310, -0.290, -0.300, -0.260])


def _frame(tmp: Path, rope: np.ndarray, learned: np.ndarray):
    decl = write_decl(tmp / "decl", confirm={"seeds": SEEDS}, cpu={"seeds": [0]})
    lift = {"sinusoidal": np.zeros(8), "learned": learned, "rope": rope}
    write_runs(tmp / "results", decl, "confirm", lambda v, s: 0.5 + float(lift[v][s]))
    result = analyse(select(load(str(decl)), "confirm", check_data=False), tmp / "results")
    return result.table("copy", "acc@x2").frame.set_index("variant")


def test_skewed_differences_that_both_old_tests_reject_are_held_back(tmp_path: Path) -> None:
    frame = _frame(tmp_path, SKEWED, 0.2 + symmetric_noise(0.01))
    rope = frame.loc["rope"]
    # the rule it replaced: both tests reject after Holm over 2 (t p ~1e-6, every sign alike: 2 / 2^8)
    assert rope["p_adj"] < 0.05 and rope["p_perm_adj"] < 0.05
    assert rope["verdict"].startswith("inconclusive (skewed differences held a verdict back (pooled skewness ")
    assert frame.loc["learned", "verdict"] == "better"  # the other side of the skew is decided


def test_symmetric_differences_are_decided_as_before(tmp_path: Path) -> None:
    frame = _frame(tmp_path, -0.3 + symmetric_noise(0.02, seed=4), 0.2 + symmetric_noise(0.01))
    assert list(frame["verdict"][1:]) == ["better", "worse"]


def test_one_comparison_at_8_seeds_decides_nothing(tmp_path: Path) -> None:
    """8 differences cannot show their skewness: the guard holds every verdict back, and says why."""
    only = {"seeds": SEEDS, "only_variants": ["sinusoidal", "learned"]}
    decl = write_decl(tmp_path / "decl", confirm=only, cpu={"seeds": [0]})
    lift = 0.2 + symmetric_noise(0.01)
    write_runs(tmp_path / "results", decl, "confirm", lambda v, s: 0.5 + (float(lift[s]) if v == "learned" else 0.0))
    result = analyse(select(load(str(decl)), "confirm", check_data=False), tmp_path / "results")
    verdict = result.table("copy", "acc@x2").frame.set_index("variant").loc["learned", "verdict"]
    assert verdict == "inconclusive (a verdict held back: 8 differences cannot show their skewness)"


def test_skewed_helper_is_skewed() -> None:
    """The fixture's premise: its differences are right-skewed beyond the guard at 8 pairs (0.5)."""
    d = SKEWED - SKEWED.mean()
    assert (d**3).mean() / (d**2).mean() ** 1.5 > 1.5 and paired.sign_flip_min_seeds(0.025) <= 8
