"""A speed metric is compared as per-seed ratios (the paired difference of logs): a machine load that
scales both arms of a seed alike cancels, as it does not in the absolute difference."""

from __future__ import annotations

import math

import numpy as np
import yaml

from harness.analysis.claims import claim_verdict
from harness.analysis.comparisons import analyse
from harness.experiment import metrics
from harness.experiment.ablation import load
from harness.experiment.selection import select
from helpers.fake_store import write_decl, write_runs
from helpers.mini_claims import claim_of

SEEDS = list(range(8))
LOAD = np.geomspace(1, 8, 8)  # the machine's speed on each seed's runs: 8x apart
NOISE = np.random.default_rng(0).normal(0, 0.005, (3, 8))
SPEED = {"sinusoidal": 1.0, "learned": 1.3, "rope": 1.0}  # learned 30 % faster, rope as fast
INDEX = {"sinusoidal": 0, "learned": 1, "rope": 2}
LOG_RATIO = math.log(1.3) + (NOISE[1] - NOISE[0]).mean()  # learned over sinusoidal, as the runs have it


def _result(tmp_path):
    decl = write_decl(tmp_path / "decl", cpu={"seeds": SEEDS})
    spec = yaml.safe_load(decl.read_text())
    spec["tasks"]["copy"]["primary"] = {"metric": "train_tokens_per_s", "higher_is_better": True, "sesoi": 0.05}
    decl.write_text(yaml.safe_dump(spec, sort_keys=False))

    def tokens(v: str, s: int) -> dict[str, float]:
        return {"train_tokens_per_s": 1000 * LOAD[s] * SPEED[v] * math.exp(NOISE[INDEX[v], s])}

    write_runs(tmp_path / "results", decl, "cpu", lambda v, s: 0.5, extra=tokens)
    return analyse(select(load(str(decl)), "cpu", check_data=False), tmp_path / "results")


def test_a_speed_is_compared_as_the_log_of_per_seed_ratios(tmp_path) -> None:
    assert metrics.is_ratio("train_tokens_per_s") and not metrics.is_ratio("loss@x1")
    frame = _result(tmp_path).table("copy", "train_tokens_per_s").frame.set_index("variant")
    low, high = frame.loc["learned", ["delta_ci_low", "delta_ci_high"]]
    assert low < LOG_RATIO < high and high - low < 0.02  # the load, 8x across seeds, cancels
    assert frame.loc["learned", "verdict"] == "better"
    rope_low, rope_high = frame.loc["rope", ["delta_ci_low", "delta_ci_high"]]
    assert rope_low < 0 < rope_high


def test_the_claim_line_gives_the_ratio_and_its_interval(tmp_path) -> None:
    evidence = [{"task": "copy", "metric": "train_tokens_per_s", "variant": "learned", "expect": "better"}]
    verdict, lines = claim_verdict(claim_of(evidence=evidence), _result(tmp_path))
    assert verdict == "supported"
    assert f"per-seed ratio learned / sinusoidal: ×{math.exp(LOG_RATIO):.3g}, 95% CI [×" in lines[0], lines[0]
