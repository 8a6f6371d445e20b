"""A run another ablation already made (same run id, same target) is copied, not trained again."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from harness.errors import TRAINED
from helpers.cli import invoke
from helpers.tiny_grid import records, write_tiny


def other_id(recs: dict, run_id: str) -> str:
    """The one run id of ``recs`` that is not ``run_id``."""
    (other,) = set(recs) - {run_id}
    return other


def _run(path: Path, results: Path):
    result = invoke("run", str(path), "--results-dir", str(results), "--workers", "1", "--wandb", "off")
    assert result.exit_code == 0, result.output
    return result


def _with_target(path: Path, minimum: float) -> None:
    decl = yaml.safe_load(path.read_text())
    decl["tasks"]["copy"]["target"] = {"metric": "acc", "min": minimum}
    path.write_text(yaml.safe_dump(decl))


def test_identical_run_is_copied_with_its_origin(tmp_path: Path) -> None:
    results = tmp_path / "results"
    first = write_tiny(tmp_path / "a", name="first", steps=20, seeds=(0,), positions=("sinusoidal", "learned"))
    second = write_tiny(tmp_path / "b", name="second", steps=20, seeds=(0,), positions=("sinusoidal", "rope"))
    decl = yaml.safe_load(second.read_text())
    decl["tasks"]["copy"]["primary"]["sesoi"] = 0.07  # another design (its fingerprint), the same runs
    second.write_text(yaml.safe_dump(decl))
    _run(first, results)
    out = _run(second, results).output
    assert "(1 copied from identical runs of first/cpu), 1 to run" in out, out

    made, copied = records(results, "first"), records(results, "second")
    shared = set(made) & set(copied)
    assert len(shared) == 1, (made.keys(), copied.keys())
    run_id = shared.pop()
    src, dst = made[run_id], copied[run_id]
    assert dst["reused_from"] == f"first/cpu/{run_id}"
    assert dst["ablation"] == "second" and dst["variant_label"] == "sinusoidal"
    # made under the copying profile's design, as a run trained there (no "design changed" warning for it)
    assert dst["design"] == copied[other_id(copied, run_id)]["design"] != src["design"]
    assert dst["metrics"] == src["metrics"] and dst["wall_time_s"] == src["wall_time_s"]
    assert (results / "second" / "cpu" / run_id / "history.csv").read_text() == (
        results / "first" / "cpu" / run_id / "history.csv"
    ).read_text()
    events = (results / "second" / "cpu" / run_id / "events.jsonl").read_text().splitlines()
    assert json.loads(events[-1])["event"] == "reuse"
    # the variant that only the second grid has was trained there
    (other,) = set(copied) - {run_id}
    assert "reused_from" not in copied[other] and copied[other]["status"] in TRAINED


def test_a_different_target_is_trained_again(tmp_path: Path) -> None:
    """steps_to_target depends on the ablation's target, which the run id does not hash."""
    results = tmp_path / "results"
    first = write_tiny(tmp_path / "a", name="first", steps=20, seeds=(0,), positions=("sinusoidal", "learned"))
    second = write_tiny(tmp_path / "b", name="second", steps=20, seeds=(0,), positions=("sinusoidal", "learned"))
    _with_target(first, 0.5)
    _with_target(second, 0.9)
    _run(first, results)
    out = _run(second, results).output
    assert "copied" not in out and "2 to run" in out, out
    recs = list(records(results, "second").values())
    assert len(recs) == 2
    for rec in recs:
        assert "reused_from" not in rec and rec["target"] == {"metric": "acc", "min": 0.9}  # as declared
