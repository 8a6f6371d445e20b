"""A run that never learned is an outcome (``stalled``), end to end: the rule, a run that cannot
learn recorded as stalled (and shown, retried, counted as not finished, compared with a flag), a
run that learned not stalled; and the detrended swing of the gradient norm."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from harness.analysis.comparisons import analyse
from harness.errors import STALL_FRACTION, stall_reason
from harness.experiment.ablation import load
from harness.experiment.selection import select
from harness.report.probes import stalled_lines
from harness.store.record import Record, parse_record
from harness.training.lit import swing
from helpers.cli import invoke
from helpers.fake_store import bare_record

CHANCE = 3.3090842752741243  # tinyshakespeare: the unigram entropy of its training characters (tests/tasks)

PROBE = """
name: stall_probe
question: does a run learn?
axes: {{train.lr: [1.0e-12, 1.0e-2]}}
baseline: {{train.lr: 1.0e-2}}
base: {{model.d_model: 32, model.n_heads: 2, model.n_layers: 1, train.steps: {steps}, train.seq_len: 32,
       train.batch_size: 32, train.val_every: 50, train.warmup_steps: 10, eval.n_examples: 32,
       eval.val_examples: 64}}
tasks:
  tinyshakespeare:
    primary: {{metric: loss@x1, sesoi: 0.05}}
default_profile: cpu
profiles:
  cpu: {{seeds: [0], confirmatory: false}}
"""


def test_stall_rule_is_a_tenth_below_chance() -> None:
    bar = (1 - STALL_FRACTION) * CHANCE
    assert stall_reason(bar, 50, CHANCE) is None  # at the bar: clear of chance
    assert stall_reason(bar - 1e-9, 50, CHANCE) is None
    why = stall_reason(bar + 1e-6, 350, CHANCE, "unigram entropy")
    assert why == (
        f"validation loss never got clear of chance: best {bar + 1e-6:.4g} nats/token (step 350) > {bar:.4g} = "
        f"0.9 x the chance level {CHANCE:.4g} (unigram entropy)"
    )
    assert stall_reason(math.nan, None, CHANCE) is None  # no finite validation loss: cannot be told
    assert stall_reason(5.0, 50, None) is None  # a task that states no chance level


def test_swing_is_zero_for_a_smooth_trend_and_measures_swings_about_it() -> None:
    steps = np.arange(600)
    trend = 5.0 * np.exp(-steps / 150)  # the fall of the norm as the loss falls: no swing at all
    assert np.std(trend) / np.mean(trend) > 1  # what std / mean over every step reads of it
    assert swing(trend, warmup=0) == pytest.approx(0.0, abs=1e-12)
    assert swing(np.full(600, 0.7), warmup=0) == 0.0
    noise = np.random.default_rng(0).normal(0.0, 0.2, size=600)
    assert swing(trend * np.exp(noise), warmup=0) == pytest.approx(0.2, abs=0.03)
    spiky = np.full(600, 1.0)
    spiky[:100:2] = 10.0  # swings inside the warm-up are not counted
    assert swing(spiky, warmup=100) == 0.0 and swing(spiky, warmup=0) > 0.5
    assert math.isnan(swing(np.array([1.0, np.nan, 2.0]), warmup=1))  # one finite step after it


def _probe(tmp_path: Path, steps: int) -> Path:
    path = tmp_path / "stall_probe.yaml"
    path.write_text(PROBE.format(steps=steps))
    return path


def test_a_run_that_cannot_learn_is_stalled_and_one_that_learns_is_not(tmp_path: Path, data_dir: Path) -> None:
    yaml, results = _probe(tmp_path, 300), tmp_path / "results"
    ran = invoke("run", str(yaml), "--results-dir", str(results), "--wandb", "off")
    assert ran.exit_code == 0, ran.output  # a stalled run is a result, not a failure
    records = {}
    for folder in (results / "stall_probe" / "cpu").iterdir():
        rec, why = parse_record(json.loads((folder / "record.json").read_text()), folder.name)
        assert rec is not None, why
        records[rec.config.train.lr] = rec
    dead, learned = records[1.0e-12], records[1.0e-2]
    assert dead.status == "stalled" and "never got clear of chance" in dead.reason
    assert dead.metrics["chance_loss"] == pytest.approx(CHANCE)
    assert dead.metrics["val_loss_best"] > (1 - STALL_FRACTION) * CHANCE  # kept, with every other metric
    assert {"loss@x1", "grad_norm_cv_detrended"} <= set(dead.metrics)
    assert learned.status == "ok" and learned.reason is None
    assert learned.metrics["val_loss_best"] < (1 - STALL_FRACTION) * CHANCE
    assert "stalled" in ran.output

    result = analyse(select(load(str(yaml)), "cpu"), results)
    outcome = next(t for t in result.tables if t.metric == "finished")
    assert dict(zip(outcome.frame["variant"], outcome.frame["mean"])) == {"0.01": 1.0, "1e-12": 0.0}
    loss = next(t for t in result.tables if t.metric == "loss@x1")
    row = loss.frame.set_index("variant").loc["1e-12"]
    assert row["stalled"] == 1 and row["n"] == 1 and row["not_ok"] == 0  # compared, flagged: its loss is its outcome

    status = invoke("status", str(yaml), "--results-dir", str(results))
    assert status.exit_code == 0, status.output
    assert "stalled" in status.output and "never got clear of chance" in status.output

    again = invoke("run", str(yaml), "--results-dir", str(results), "--wandb", "off", "--retry", "stalled")
    assert again.exit_code == 0, again.output
    attempts = {f.name for f in (results / "stall_probe" / "cpu" / dead.run_id).iterdir()}
    assert "record.attempt-1.json" in attempts  # the stalled attempt archived, the run trained again


def test_a_stalled_record_keeps_its_metrics_and_an_old_record_reads_as_stored() -> None:
    stalled, why = parse_record(bare_record(status="stalled", reason="never clear", metrics={"val_loss_best": 3.3}))
    assert why is None and stalled.status == "stalled" and stalled.metric("val_loss_best") == 3.3
    assert parse_record(bare_record(status="stalled", reason="never clear"))[1] == "a stalled record without metrics"
    old, why = parse_record(bare_record(status="ok", metrics={"loss@x1": 3.3}))  # written before stalled existed
    assert why is None and old.status == "ok"


def test_the_report_counts_stalled_runs_beside_the_chance_level() -> None:
    def rec(seed: int, status: str, best: float) -> Record:
        fields = {"status": status, "seed": seed, "run_id": f"r{seed}", "reason": "x" if status != "ok" else None}
        return Record.model_validate(bare_record(**fields, metrics={"val_loss_best": best, "chance_loss": 2.0}))

    lines = stalled_lines([rec(0, "stalled", 1.95), rec(1, "ok", 0.5), rec(2, "stalled", 1.85), rec(3, "diverged", 9)])
    assert lines[0].startswith("Stalled: 2 of 4 runs of `copy` (best validation loss 1.85 to 1.95 nats/token")
    assert "against the chance level 2; stalled above 1.8)" in lines[0]
    assert stalled_lines([rec(1, "ok", 0.5)]) == []


def test_the_margin_figures_of_the_docs_from_the_committed_confirm_data() -> None:
    """docs/statistics.md, "Outcomes": in norm_placement's confirm data file, the runs that learned
    nothing and those that learned, by their best validation loss against the chance level."""
    import io
    import tarfile

    import pandas as pd

    path = Path(__file__).resolve().parents[2] / "reports" / "data" / "norm_placement.confirm.tar.gz"
    with tarfile.open(path) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}
    best = {}
    for name, data in files.items():
        if name.endswith("/record.json") and (history := name.replace("record.json", "history.csv")) in files:
            rec = json.loads(data)
            best[(rec["variant_label"], rec["seed"])] = pd.read_csv(io.BytesIO(files[history]))["loss"].min()
    bar = (1 - STALL_FRACTION) * CHANCE
    dead = {k: v for k, v in best.items() if v > bar}
    learned = [v for v in best.values() if v <= bar]
    assert len(best) == 72 and len(dead) == 11
    assert {variant for variant, _ in dead} == {"norm_position=post,n_layers=6,warmup_steps=0,norm=layernorm"}
    assert min(dead.values()) == pytest.approx(3.245, abs=5e-4) and max(dead.values()) == pytest.approx(3.357, abs=5e-4)
    assert max(learned) == pytest.approx(2.586, abs=5e-4) and max(learned) / CHANCE < 0.79  # 22 % below chance
