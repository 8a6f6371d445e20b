"""The per-step figures a run keeps without a host sync per step (harness/training/lit.py StepLog),
against the arithmetic of a check and a device sum after every step; and the checkpoint cadence of
harness/training/loop.py on a clock of our own."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from harness.errors import Diverged
from harness.training.lit import StepLog
from harness.training.loop import CHECKPOINT, RunMonitor


def _per_step_sums(norms: list[float]) -> list[float]:
    """The gradient-norm sums as a run accumulated them before the step log: a float32 device
    tensor updated after every step with [n, n * n, finite, not finite]."""
    stats = torch.zeros(4)
    for value in norms:
        norm = torch.tensor(value, dtype=torch.float32)
        finite = torch.isfinite(norm)
        n = torch.where(finite, norm, torch.zeros_like(norm))
        stats = stats + torch.stack([n, n * n, finite.float(), (~finite).float()])
    return stats.tolist()


def test_gradient_sums_equal_a_per_step_device_sum_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    norms = [float(np.float32(v)) for v in rng.lognormal(0.0, 2.0, size=203)]
    norms[17], norms[90], norms[91] = math.inf, math.nan, -math.inf
    log = StepLog(capacity=7)
    for i, value in enumerate(norms):
        log.add_grad_norm(torch.tensor(value, dtype=torch.float32))
        if i % 5 == 0:  # read back at arbitrary points, as validation passes do
            log.read_back()
    assert log.grad_state().tolist() == _per_step_sums(norms)
    assert log.grad_state().tolist()[3] == 3.0  # the non-finite steps, counted apart


def test_a_restored_log_ends_as_an_uninterrupted_one() -> None:
    norms = [float(np.float32(v)) for v in np.random.default_rng(1).uniform(0.1, 9.0, size=60)]
    whole, first = StepLog(4), StepLog(4)
    for value in norms:
        whole.add_grad_norm(torch.tensor(value))
    for value in norms[:23]:
        first.add_grad_norm(torch.tensor(value))
    resumed = StepLog(4)
    resumed.restore(first.grad_state(), 1.5)
    for value in norms[23:]:
        resumed.add_grad_norm(torch.tensor(value))
    assert resumed.grad_state().tolist() == whole.grad_state().tolist() == _per_step_sums(norms)
    assert resumed.last_finite == 1.5


def test_the_first_non_finite_loss_raises_with_its_step_and_the_last_finite_loss() -> None:
    log = StepLog(capacity=5)
    losses = [2.5, 2.25, 2.0, 1.75, 1.5, 1.25, float("nan"), 1.0, float("inf")]
    for step, value in enumerate(losses[:5], start=100):  # a resumed run starts mid-way
        log.add_loss(step, torch.tensor(value))
    assert log.read_back() == 1.5 and log.last_finite == 1.5
    for step, value in enumerate(losses[5:], start=105):
        log.add_loss(step, torch.tensor(value))
    with pytest.raises(Diverged) as caught:
        log.read_back()
    assert (caught.value.step, caught.value.last_finite) == (106, 1.25)
    assert "non-finite training loss at step 106" in str(caught.value)


def test_a_full_buffer_is_a_bug_not_a_silent_loss() -> None:
    log = StepLog(capacity=2)
    log.add_loss(0, torch.tensor(1.0))
    log.add_loss(1, torch.tensor(1.0))
    with pytest.raises(RuntimeError, match="read_back"):
        log.add_loss(2, torch.tensor(1.0))


class _Trainer:
    """What RunMonitor's checkpoint hook reads of a Trainer, and the files it asks to save."""

    sanity_checking = False

    def __init__(self) -> None:
        self.saved: list[Path] = []

    def save_checkpoint(self, path: Path) -> None:
        self.saved.append(Path(path))


def test_checkpoints_follow_the_wall_clock_at_validation_passes(tmp_path: Path) -> None:
    now = [0.0]
    monitor = RunMonitor(tmp_path, checkpoint_every_s=120.0, clock=lambda: now[0])
    trainer = _Trainer()
    passes = [30.0, 60.0, 119.0, 121.0, 150.0, 200.0, 245.0, 400.0]  # seconds at each validation end
    for t in passes:
        now[0] = t
        monitor.on_validation_end(trainer, None)
    assert trainer.saved == [tmp_path / CHECKPOINT] * 3  # at 121 (first past 120), 245 (past 121 + 120), 400
    now[0] = 0.0
    every, trainer = RunMonitor(tmp_path, checkpoint_every_s=0.0, clock=lambda: now[0]), _Trainer()
    for t in passes:
        now[0] = t
        every.on_validation_end(trainer, None)
    assert len(trainer.saved) == len(passes)
    none, trainer = RunMonitor(None, clock=lambda: now[0]), _Trainer()
    none.on_validation_end(trainer, None)
    assert trainer.saved == []
