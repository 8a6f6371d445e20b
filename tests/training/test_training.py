"""Training layer and runner: determinism, seed pairing, bad runs recorded as data, W&B runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from harness.errors import TRAINED
from harness.execution.attempt import execute
from harness.execution.local import run_grid
from harness.experiment.ablation import load
from harness.experiment.grid import plan
from harness.training import loop as training
from harness.training.lit import TaskData, lr_factor
from harness.training.model_and_devices import transformer_config

TINY = """
name: tiny
question: tiny?
axes: {model.position: [sinusoidal, learned]}
baseline: {model.position: sinusoidal}
base: {model.d_model: 16, model.n_heads: 2, model.n_layers: 1, train.steps: 12, train.seq_len: 8,
       train.val_every: 6, train.warmup_steps: 2, eval.length_multipliers: [1, 2], eval.n_examples: 16,
       eval.val_examples: 16}
tasks:
  copy:
    params: {n_symbols: 6}
    primary: {metric: acc@x2, higher_is_better: true, sesoi: 0.05}
    target: {metric: acc, min: 0.01}  # met at the first validation (chance is 1/6)
profiles:
  cpu: {seeds: [0, 1]}
"""

TIMING = {"train_tokens_per_s"}


@pytest.fixture
def tiny(tmp_path: Path):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    abl = load(str(path))
    _, specs = plan(abl, "cpu")
    return abl, specs


def test_same_config_and_seed_give_identical_metrics(tiny, tmp_path: Path) -> None:
    abl, specs = tiny
    torch.set_num_threads(1)
    a = execute(specs[0], tmp_path / "a", abl=abl)
    b = execute(specs[0], tmp_path / "b", abl=abl)
    assert a.status == b.status == "stalled"  # 6 steps: trained to the end, learned nothing
    strip = lambda m: {k: v for k, v in m.items() if k not in TIMING}
    assert strip(a.metrics) == strip(b.metrics)  # bit for bit
    c = execute(specs[2], tmp_path / "c", abl=abl)  # same variant, seed 1
    assert strip(c.metrics) != strip(a.metrics)


def test_every_variant_sees_the_same_batches_and_eval_sets(
    tiny, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    abl, specs = tiny
    sin, learned = specs[0], specs[1]
    assert sin.seed == learned.seed and sin.variant_label != learned.variant_label
    seen: dict[str, list[torch.Tensor]] = {}
    original = training.LitLM.training_step

    def spy(self, batch, batch_idx):
        seen.setdefault(self.model.cfg.position, []).append(batch[0].clone())
        return original(self, batch, batch_idx)

    monkeypatch.setattr(training.LitLM, "training_step", spy)
    recs = [execute(s, tmp_path, abl=abl) for s in (sin, learned)]
    assert recs[0].n_params != recs[1].n_params  # the learned table consumes the init stream differently
    assert len(seen["sinusoidal"]) == len(seen["learned"]) == 12
    for x, y in zip(seen["sinusoidal"], seen["learned"]):
        assert torch.equal(x, y)
    from harness.tasks import build_task

    task = build_task("copy", {"n_symbols": 6})
    for loaders in zip(
        TaskData(task, sin.config, 0).test_dataloader(), TaskData(task, learned.config, 0).test_dataloader()
    ):
        assert all(torch.equal(a, b) for a, b in zip(loaders[0].dataset.tensors, loaders[1].dataset.tensors))


def test_divergence_is_recorded_and_grid_goes_on(tiny, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    abl, specs = tiny
    original = training.TransformerLM.forward

    def nan_after_step_3(self, idx):
        out = original(self, idx)
        if self.training and self.cfg.position == "learned":
            nan_after_step_3.calls += 1
            if nan_after_step_3.calls > 3:
                return out * float("nan")
        return out

    nan_after_step_3.calls = 0
    monkeypatch.setattr(training.TransformerLM, "forward", nan_after_step_3)
    recs = run_grid(specs[:2], tmp_path, abl, workers=1)
    assert [r.status for r in recs] == ["stalled", "diverged"]
    assert recs[1].diverged_step == 3 and recs[1].last_finite_loss > 0
    assert "non-finite" in recs[1].reason


def test_exception_is_recorded_with_traceback(tiny, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    abl, specs = tiny

    def boom(*args, **kwargs):
        raise RuntimeError("value cannot be converted to type c10::Half without overflow")

    monkeypatch.setattr(training, "TransformerLM", boom)
    rec = execute(specs[0], tmp_path, abl=abl)
    assert rec.status == "failed" and "RuntimeError: value cannot be converted" in rec.reason
    folder = tmp_path / "tiny" / "cpu" / specs[0].run_id
    assert "Traceback" in (folder / "traceback.txt").read_text()
    assert json.loads((folder / "record.json").read_text())["status"] == "failed"


def test_finished_run_is_never_overwritten_and_interrupted_one_is_redone(tiny, tmp_path: Path) -> None:
    abl, specs = tiny
    first = execute(specs[0], tmp_path, abl=abl)
    again = execute(specs[0], tmp_path, abl=abl)
    assert again.finished_at == first.finished_at
    half = tmp_path / "tiny" / "cpu" / specs[1].run_id
    half.mkdir(parents=True)
    (half / "csv").mkdir()  # an attempt killed before its record was written
    assert execute(specs[1], tmp_path, abl=abl).status in TRAINED


def test_wandb_offline_one_run_per_training_run(tiny, tmp_path: Path) -> None:
    abl, specs = tiny
    recs = [execute(s, tmp_path, wandb_mode="offline", abl=abl) for s in specs[:2]]
    assert all(r.status in TRAINED for r in recs)
    ids = [r.wandb_id for r in recs]
    assert len(set(ids)) == 2 and None not in ids
    for rec in recs:
        runs = list((tmp_path / "tiny" / "cpu" / rec.run_id / "wandb").glob("offline-run-*"))
        assert len(runs) == 1 and runs[0].name.endswith(rec.wandb_id)


def test_lr_schedule() -> None:
    assert lr_factor(0, 10, 100, 0.1) == pytest.approx(0.1)
    assert lr_factor(9, 10, 100, 0.1) == pytest.approx(1.0)
    assert lr_factor(100, 10, 100, 0.1) == pytest.approx(0.1)
    assert lr_factor(55, 10, 100, 0.1) == pytest.approx(0.55)
    # min_lr_ratio 1: a constant rate after the warm-up, and throughout without one
    assert [lr_factor(s, 10, 100, 1.0) for s in (0, 9, 10, 55, 99, 100)] == pytest.approx([0.1, 1, 1, 1, 1, 1])
    assert all(lr_factor(s, 0, 100, 1.0) == 1.0 for s in range(101))


def test_model_config_carries_the_resolved_max_len(tiny) -> None:
    _, specs = tiny
    mcfg = transformer_config(specs[1].config, 8)
    assert mcfg.max_len == 16 and mcfg.position == "learned"


def test_throughput_times_training_steps_not_validation_or_checkpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each validation pass is made to sleep 0.1 s more: that time lies inside ``trainer.fit`` and
    outside every training step, so the step timer's seconds stay below ``fit_s`` by at least the
    time slept (a timer around ``trainer.fit`` would read them equal). Durations of one process,
    so a loaded machine moves both sides alike."""
    import time

    from harness.training.lit import LitLM
    from helpers.tiny_grid import write_tiny

    slept = []
    end_of_pass = LitLM.on_validation_epoch_end

    def slow_end_of_pass(self) -> None:
        t0 = time.perf_counter()
        time.sleep(0.1)
        slept.append(time.perf_counter() - t0)
        end_of_pass(self)

    monkeypatch.setattr(LitLM, "on_validation_epoch_end", slow_end_of_pass)
    abl = load(str(write_tiny(tmp_path, steps=40, val_every=4, seeds=(0,))))
    r = execute(plan(abl, "cpu")[1][0], tmp_path / "results", abl=abl)
    assert r.status in TRAINED and len(slept) >= 10
    assert r.fit_s - r.train_step_s >= sum(slept), (r.fit_s, r.train_step_s, sum(slept))
    assert r.train_step_s < r.fit_s < r.wall_time_s
    assert r.metrics["train_tokens_per_s"] == pytest.approx(40 * 8 * 8 / r.train_step_s)
