"""What a run keeps of every training step, without a host-device sync per step.

Each step's training loss and gradient norm are copied into a small buffer on the run's device;
:meth:`StepLog.read_back` brings the buffer to the host every few steps (at each logging point,
before a validation pass or a checkpoint, and at the end) and folds it in, in step order:

- the first non-finite loss raises :class:`~harness.errors.Diverged` with its step and the last finite loss
  before it, exactly as a check after every step would (the steps run between that step and the
  read-back train on NaNs and are thrown away with the run);
- the gradient-norm sums (sum, sum of squares, count of finite norms, count of non-finite ones)
  are accumulated one step at a time in float32, the arithmetic of a per-step ``stats += [n,
  n * n, finite, not finite]`` on the device, so the figures are the same to the last bit.

Torch and numpy only; no Lightning.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from harness.errors import Diverged


class StepLog:
    """Per-step loss and gradient norm, buffered on the device and read back every few steps.

    Args:
        capacity: steps the buffer holds; it must be read back at least this often (the
            logging interval).
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self.last_finite: float | None = None  # the last finite training loss read back
        self.grad_sums = np.zeros(4, dtype=np.float32)  # sum, sum of squares, finite steps, non-finite steps
        self._losses: torch.Tensor | None = None
        self._norms: torch.Tensor | None = None
        self._n_losses = self._n_norms = 0
        self._first_step = 0  # the step of the buffer's first loss

    def _buffers(self, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self._losses is None or self._losses.device != like.device:
            self._losses = torch.empty(self.capacity, dtype=torch.float32, device=like.device)
            self._norms = torch.empty(self.capacity, dtype=torch.float32, device=like.device)
        return self._losses, self._norms  # type: ignore[return-value]

    def add_loss(self, step: int, loss: torch.Tensor) -> None:
        """Buffer the training loss (a 0-dim tensor) of ``step``; no sync."""
        losses, _ = self._buffers(loss)
        if self._n_losses == 0:
            self._first_step = step
        if self._n_losses == self.capacity:
            raise RuntimeError("StepLog full: read_back() was not called within its capacity")
        losses[self._n_losses].copy_(loss.detach())
        self._n_losses += 1

    def add_grad_norm(self, norm: torch.Tensor) -> None:
        """Buffer the gradient norm (a 0-dim tensor) of the step being taken; no sync."""
        _, norms = self._buffers(norm)
        if self._n_norms == self.capacity:
            self._fold_norms()
        norms[self._n_norms].copy_(norm)
        self._n_norms += 1

    def read_back(self) -> float | None:
        """Bring the buffers to the host and fold them in; returns the latest loss read back
        (None when no loss was buffered).

        Raises:
            Diverged: a buffered loss is NaN or inf (the first one in step order).
        """
        latest = None
        if self._n_losses:
            values = self._losses[: self._n_losses].tolist()  # type: ignore[index]
            self._n_losses = 0
            for i, value in enumerate(values):
                if not math.isfinite(value):
                    raise Diverged(self._first_step + i, self.last_finite)
                self.last_finite = latest = value
        self._fold_norms()
        return latest

    def _fold_norms(self) -> None:
        if not self._n_norms:
            return
        norms = self._norms[: self._n_norms].cpu().numpy()  # type: ignore[index]
        self._n_norms = 0
        s = self.grad_sums
        one = np.float32(1)
        for n in norms:  # float32, one step at a time: the order of a per-step device sum
            if np.isfinite(n):
                s[0], s[1], s[2] = s[0] + n, s[1] + n * n, s[2] + one
            else:
                s[3] = s[3] + one

    def grad_state(self) -> torch.Tensor:
        """The gradient-norm sums as the float32 tensor a checkpoint holds (read back first)."""
        self._fold_norms()
        return torch.from_numpy(self.grad_sums.copy())

    def restore(self, grad_state: torch.Tensor, last_finite: float | None) -> None:
        """Continue from a checkpoint's sums and last finite loss."""
        self.grad_sums = grad_state.detach().cpu().to(torch.float32).numpy().copy()
        self.last_finite = last_finite
        self._n_losses = self._n_norms = 0
