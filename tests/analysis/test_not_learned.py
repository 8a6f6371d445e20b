"""A verdict needs a baseline that learned: in a confirmatory profile, every
comparison of a task whose baseline reached its convergence target on at most half of its planned
seeds reads ``not learned (k/n seeds reached target)``, a comparison beyond L of a variant with no
run above the gate reads ``not learned (0/n passed the gate)``, and a claim whose evidence is all
of that kind is ``untestable at this scale``. The report's warning says why, beside no verdict."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from harness.analysis import claim_verdicts as cv
from harness.analysis import verdicts as vd
from harness.analysis.claims import claim_verdict
from harness.analysis.comparisons import analyse
from harness.cli.report import report as write_report
from harness.experiment.ablation import load
from harness.experiment.selection import select
from helpers.fake_store import write_decl, write_runs
from helpers.mini_claims import claim_of

SEEDS = list(range(8))
LIFT = 0.1 + np.random.default_rng(3).normal(0, 0.01, 8)  # learned - sinusoidal per seed: clearly better


def _decl(folder: Path, gate: bool = False) -> Path:
    """write_decl's ablation (copy, primary acc@x2) with a convergence target, optionally a gate
    (acc@x1 >= 0.4), and a confirmatory profile ``confirm`` of 8 seeds and a pilot of 8."""
    path = write_decl(folder, confirm={"seeds": SEEDS}, pilot={"seeds": SEEDS, "confirmatory": False})
    decl = yaml.safe_load(path.read_text())
    decl["tasks"]["copy"]["target"] = {"metric": "acc", "min": 0.9}
    if gate:
        decl["tasks"]["copy"]["gate"] = {"metric": "acc@x1", "min": 0.4}
    decl["default_profile"] = "confirm"
    path.write_text(yaml.safe_dump(decl, sort_keys=False))
    return path


def _store(tmp: Path, profile: str, reached_by_baseline: int, rope: float = 0.5, gate: bool = False):
    """Baseline 0.5, learned 0.5 + LIFT, rope ``rope`` on every seed; the baseline reached its target
    on its first ``reached_by_baseline`` seeds, every other run on every seed."""
    decl = _decl(tmp / "decl", gate)

    def value(variant: str, seed: int) -> float:
        return {"sinusoidal": 0.5, "learned": 0.5 + LIFT[seed]}.get(variant, rope)

    def reached(variant: str, seed: int) -> dict[str, float]:
        return {"target_reached": float(variant != "sinusoidal" or seed < reached_by_baseline)}

    write_runs(tmp / "results", decl, profile, value, extra=reached)
    abl = load(str(decl))
    return abl, analyse(select(abl, profile, check_data=False), tmp / "results")


LEARNED = {"task": "copy", "metric": "acc@x2", "variant": "learned", "expect": "better"}
CLAIM = claim_of(evidence=[LEARNED])


def test_baseline_below_target_on_half_the_seeds_gives_no_verdict(tmp_path: Path) -> None:
    abl, result = _store(tmp_path, "confirm", reached_by_baseline=4)
    assert result.unlearned == {"copy": (4, 8, 8)}
    for metric in ("acc@x1", "acc@x2"):
        verdicts = list(result.table("copy", metric).frame["verdict"])
        assert verdicts == ["baseline"] + ["not learned (4/8 seeds reached target)"] * 2, (metric, verdicts)
    verdict, lines = claim_verdict(CLAIM, result)
    assert verdict == "untestable at this scale"
    assert cv.claim_kind(verdict) is cv.ClaimKind.UNTESTABLE
    assert lines == [
        "copy `acc@x2`, learned vs sinusoidal: not learned (4/8 seeds reached target); "
        "claim expects better: **untestable at this scale**"
    ]
    text = write_report(abl.source, "confirm", tmp_path / "results", tmp_path / "reports").read_text()
    assert "on 4 of its 8 planned seeds" in text and "each reads `not learned (4/8 seeds reached target)`" in text
    # no verdict beside the warning: the design's own decision names the verdict that holds instead
    assert "| better |" not in text and "| inconclusive" not in text
    assert "| better; verdict: not learned (4/8 seeds reached target) |" in text
    assert "Friedman χ²" not in text and "Nemenyi" not in text  # nor a test across the variants
    assert "Friedman test left out: the baseline did not learn the task (not learned (4/8" in text


def test_baseline_at_target_on_most_seeds_keeps_its_verdicts(tmp_path: Path) -> None:
    abl, result = _store(tmp_path, "confirm", reached_by_baseline=5)
    assert result.unlearned == {}
    frame = result.table("copy", "acc@x2").frame.set_index("variant")
    assert frame.loc["learned", "verdict"] == "better"
    assert vd.kind(frame.loc["rope", "verdict"]) is vd.Kind.IDENTICAL
    assert claim_verdict(CLAIM, result)[0] == "supported"
    text = write_report(abl.source, "confirm", tmp_path / "results", tmp_path / "reports").read_text()
    assert "Warning: on `copy`" not in text and "not learned" not in text
    assert "Friedman χ²(2)" in text  # the test across variants is there when the task was learned


def test_pilot_keeps_pilot_and_warns(tmp_path: Path) -> None:
    abl, result = _store(tmp_path, "pilot", reached_by_baseline=0)
    assert result.unlearned == {"copy": (0, 8, 8)}
    assert set(result.table("copy", "acc@x2").frame["verdict"][1:]) == {"pilot"}
    assert claim_verdict(CLAIM, result)[0].startswith("pilot")
    text = write_report(abl.source, "pilot", tmp_path / "results", tmp_path / "reports").read_text()
    assert "on 0 of its 8 planned seeds" in text and "a confirmatory run at this scale would give no verdict" in text


def test_an_unfinished_grid_does_not_say_the_scale_is_too_small(tmp_path: Path) -> None:
    """3 of 8 seeds run, the baseline at its target on all 3: the warning said "reached the
    convergence target on 3 of its 8 planned seeds within the step budget: this scale is too small
    to learn the task" (reports/mqar_pairs_16.md said it after 1 of 16 runs). It says how far the
    grid got and that the missing seeds decide; once they could not, it says the scale is too small."""
    import json
    import shutil

    def report(tmp: Path, reached: int, seeds_run: int) -> str:
        abl, _ = _store(tmp, "confirm", reached_by_baseline=reached)
        for record in (tmp / "results").glob("mini/confirm/*/record.json"):
            if json.loads(record.read_text())["seed"] >= seeds_run:
                shutil.rmtree(record.parent)
        sel = select(abl, "confirm", check_data=False)
        return write_report(sel.ablation.source, sel.profile, tmp / "results", tmp / "reports").read_text()

    text = report(tmp_path / "a", reached=8, seeds_run=3)
    assert (
        "**Warning: on `copy` the baseline has reached the convergence target (validation `acc >= 0.9`) on 3 "
        "of the 3 seeds run so far (8 planned): whether this scale learns the task is not known until its "
        "other 5 run(s) finish, and until then no comparison on it gets a verdict: each reads "
        "`not learned (3/8 seeds reached target; 5 not run)`.**"
    ) in text
    assert "| not learned (3/8 seeds reached target; 5 not run) |" in text  # 3 of 8, not 3 of 8 tried
    assert "too small" not in text
    text = report(tmp_path / "b", reached=0, seeds_run=6)  # 0 of 6: the 2 missing seeds cannot make 5 of 8
    assert "on 0 of its 8 planned seeds within the step budget: this scale is too small" in text
    assert "`not learned (0/8 seeds reached target; 2 not run)`" in text


def test_variant_that_never_passed_the_gate_is_not_learned_beyond_l(tmp_path: Path) -> None:
    """rope at 0.3 on every seed is below the gate (acc@x1 >= 0.4): its acc@x2 comparison reads
    ``not learned (0/8 passed the gate)``, not "too few pairs"; at L (acc@x1) it is compared."""
    abl, result = _store(tmp_path, "confirm", reached_by_baseline=8, rope=0.3, gate=True)
    beyond = result.table("copy", "acc@x2").frame.set_index("variant")
    assert beyond.loc["rope", "verdict"] == "not learned (0/8 passed the gate)"
    assert beyond.loc["learned", "verdict"] == "better"
    at_l = result.table("copy", "acc@x1").frame.set_index("variant")
    assert at_l.loc["rope", "verdict"] == "worse"
    rope = {**LEARNED, "variant": "rope"}
    assert claim_verdict(claim_of(evidence=[rope]), result)[0] == "untestable at this scale"
    both = claim_of(evidence=[LEARNED, rope])
    assert claim_verdict(both, result)[0] == "partly supported"


def test_a_task_without_a_convergence_target_gets_no_steps_to_target_table(tmp_path: Path) -> None:
    """Without a target every run's ``steps_to_target`` is its step budget: a table of it would say
    ``target never reached (censored)`` of a target nobody declared (the ln_grad_init probe did)."""
    path = write_decl(tmp_path / "decl", confirm={"seeds": SEEDS}, cpu={"seeds": SEEDS})
    budget = {"steps_to_target": 40.0, "target_reached": 0.0}
    write_runs(tmp_path / "results", path, "confirm", lambda v, s: 0.5, extra=lambda v, s: budget)
    abl = load(str(path))
    result = analyse(select(abl, "confirm", check_data=False), tmp_path / "results")
    assert "steps_to_target" not in {t.metric for t in result.tables}
    assert {t.metric for t in result.tables} >= {"acc@x1", "acc@x2"}

    decl = yaml.safe_load(path.read_text())  # the same runs, a target declared: the table is back
    decl["tasks"]["copy"]["target"] = {"metric": "acc", "min": 0.9}
    path.write_text(yaml.safe_dump(decl, sort_keys=False))
    abl = load(str(path))
    result = analyse(select(abl, "confirm", check_data=False), tmp_path / "results")
    assert "steps_to_target" in {t.metric for t in result.tables}


def test_a_probe_at_initialisation_and_a_speed_are_decided_though_the_baseline_did_not_learn(
    tmp_path: Path, monkeypatch
) -> None:
    """leak_logits_init is measured before any step and tokens/s is the machine's: what training learned cannot
    move either, so the not-learned rule leaves them be, while the trained metric still reads not learned."""
    from harness.experiment import claims as claims_mod
    from helpers.mini_claims import MINI_CLAIMS

    probe = {"task": "copy", "metric": "leak_logits_init", "variant": "learned", "expect": "worse"}
    speed = {"task": "copy", "metric": "train_tokens_per_s", "variant": "learned", "expect": "better"}
    leak = claim_of(evidence=[probe, speed])
    monkeypatch.setattr(claims_mod, "load_claims", lambda: {**MINI_CLAIMS, "leak": leak})
    decl = _decl(tmp_path / "decl")
    mini = yaml.safe_load(decl.read_text())
    mini["claims"] = ["leak"]
    decl.write_text(yaml.safe_dump(mini, sort_keys=False))

    def extra(variant: str, seed: int) -> dict[str, float]:
        speed = 1000.0 * (2 if variant == "learned" else 1) * (1 + seed)  # flash-like: twice as fast, any load
        return {
            "target_reached": float(variant != "sinusoidal" or seed < 2),
            "leak_logits_init": 0.0,
            "train_tokens_per_s": speed,
        }

    write_runs(
        tmp_path / "results", decl, "confirm", lambda v, s: 0.5 + (LIFT[s] if v == "learned" else 0), extra=extra
    )
    result = analyse(select(load(str(decl)), "confirm", check_data=False), tmp_path / "results")
    init = result.table("copy", "leak_logits_init").frame.set_index("variant")
    assert init.loc["learned", "verdict"] == "identical in all 8 pairs"
    assert result.table("copy", "train_tokens_per_s").frame.set_index("variant").loc["learned", "verdict"] == "better"
    trained = result.table("copy", "acc@x2").frame.set_index("variant")
    assert vd.kind(trained.loc["learned", "verdict"]) is vd.Kind.NOT_LEARNED
