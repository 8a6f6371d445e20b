"""A task too easy at this scale decides nothing: where the baseline scored the metric's
best value (accuracy 1) on every seed, a variant that also did, or came within the smallest
effect of interest, reads ``at ceiling (baseline 1 on all n seeds)`` instead of ``identical`` or
``equivalent``, and a claim that names only such comparisons is ``untestable at this scale``. A
variant that falls below the ceiling is still ``worse``: that effect the task did show."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.analysis import verdicts as vd
from harness.analysis.claims import claim_verdict
from harness.analysis.comparisons import analyse
from harness.experiment import metrics
from harness.experiment.ablation import load
from harness.experiment.selection import select
from helpers.fake_store import write_decl, write_runs
from helpers.mini_claims import claim_of

SEEDS = list(range(8))
DROP = 0.3 + np.random.default_rng(7).normal(0, 0.02, 8)  # rope's accuracy below 1, per seed


def _analysis(tmp: Path, baseline: float | list[float], confirmatory: bool = True, learned_seeds: int = 8):
    """Copy task, acc@x1 = acc@x2: sinusoidal (baseline) ``baseline``, learned 1 on its first
    ``learned_seeds`` seeds (no run on the others), rope 1 - DROP (clearly worse)."""
    decl = write_decl(tmp / "decl", confirm={"seeds": SEEDS, "confirmatory": confirmatory}, cpu={"seeds": [0]})

    def value(variant: str, seed: int) -> float:
        if variant == "sinusoidal":
            return baseline if isinstance(baseline, float) else baseline[seed]
        if variant == "learned":
            return 1.0 if seed < learned_seeds else None
        return 1.0 - float(DROP[seed])

    write_runs(tmp / "results", decl, "confirm", value)
    return analyse(select(load(str(decl)), "confirm", check_data=False), tmp / "results")


def _verdicts(result, metric: str = "acc@x2") -> dict[str, str]:
    frame = result.table("copy", metric).frame
    return dict(zip(frame["variant"], frame["verdict"]))


def test_baseline_at_ceiling_on_every_seed_leaves_equal_variants_undecided(tmp_path: Path) -> None:
    result = _analysis(tmp_path, 1.0)
    for metric in ("acc@x1", "acc@x2"):
        got = _verdicts(result, metric)
        assert got["learned"] == "at ceiling (baseline 1 on all 8 seeds)", got
        assert vd.kind(got["learned"]) is vd.Kind.CEILING
        assert got["rope"] == "worse", got  # falling below the ceiling is an effect the task shows


def test_the_ceiling_counts_the_seeds_of_the_pairs_while_a_grid_is_unfinished(tmp_path: Path) -> None:
    """The baseline is at 1 on 8 seeds, learned has run on 5: its comparison has 5 pairs, so its
    verdict says 5 seeds, as its n does (it said 8 beside n = 5). The fixed design's one look waits for
    every seed, so rope, clearly worse, is not decided yet: at the ceiling, not worse."""
    result = _analysis(tmp_path, 1.0, learned_seeds=5)
    frame = result.table("copy", "acc@x2").frame.set_index("variant")
    assert frame.loc["learned", "verdict"] == "at ceiling (baseline 1 on all 5 seeds)"
    assert frame.loc["learned", "n_pairs"] == 5
    assert frame.loc["rope", "verdict"] == "at ceiling (baseline 1 on all 8 seeds)"
    assert result.sequential.reached == 0 and result.sequential.waits_for(result.sequential.comparisons[1]).startswith(
        "open"
    )


def test_claim_naming_only_ceiling_comparisons_is_untestable(tmp_path: Path) -> None:
    result = _analysis(tmp_path, 1.0)
    better = claim_of(evidence=[{"task": "copy", "metric": "acc@x2", "variant": "learned", "expect": "better"}])
    verdict, lines = claim_verdict(better, result)
    assert verdict == "untestable at this scale"
    assert lines == [
        "copy `acc@x2`, learned vs sinusoidal: at ceiling (baseline 1 on all 8 seeds); "
        "claim expects better: **untestable at this scale**"
    ]
    # beside a comparison that rules, the ceiling one is left out of the verdict: one of two contradicts
    both = claim_of(
        evidence=[
            {"task": "copy", "metric": "acc@x2", "variant": "learned", "expect": "worse"},
            {"task": "copy", "metric": "acc@x2", "variant": "rope", "expect": "better"},
        ]
    )
    assert claim_verdict(both, result)[0] == "partly contradicted"


def test_baseline_below_ceiling_on_one_seed_is_judged_as_usual(tmp_path: Path) -> None:
    result = _analysis(tmp_path, [1.0] * 7 + [0.99])
    got = _verdicts(result)
    assert vd.kind(got["learned"]) is not vd.Kind.CEILING, got
    assert got["rope"] == "worse"


def test_pilot_profile_is_not_marked(tmp_path: Path) -> None:
    assert _verdicts(_analysis(tmp_path, 1.0, confirmatory=False))["learned"] == "pilot"


def test_only_bounded_metrics_have_a_ceiling() -> None:
    assert metrics.best_value("acc@x4") == 1.0 and metrics.best_value("exact@x1") == 1.0
    assert metrics.best_value("loss@x1") is None and metrics.best_value("finished") is None
    assert metrics.best_value("no_such_metric") is None
