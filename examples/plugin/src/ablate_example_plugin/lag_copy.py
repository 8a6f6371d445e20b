"""Lagged copy: every token repeats the one ``lag`` positions back.

A row is ``lag`` random symbols repeated to the row's length: ``x_t = x_(t - lag)``. The first
``lag`` tokens cannot be predicted; every later one is a copy of the token exactly ``lag``
positions earlier, so the task asks for one fixed relative offset and nothing else, at any
length. An encoding that represents relative distance (T5's bias, RoPE, ALiBi) can carry it
beyond the training length; absolute positions (learned, sinusoidal) must learn it at each
position anew. Every split draws its rows the same way (from the generator it is given).

Registered as ``lag_copy`` by :mod:`ablate_example_plugin.plugin`; this module registers nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pydantic

from harness.plugin import IGNORE_INDEX, Split, Task, TaskParams

if TYPE_CHECKING:  # torch is imported where tensors are made
    from torch import Tensor


class LagCopyParams(TaskParams):
    """Parameters of ``lag_copy``."""

    n_symbols: int = pydantic.Field(16, ge=2, description="alphabet size (token ids 0 .. n_symbols - 1)")
    lag: int = pydantic.Field(8, ge=1, description="every token repeats the one this many positions back")


class LagCopy(Task):
    """``x_1 .. x_lag x_1 .. x_lag x_1 ..``: repeat the token ``lag`` positions back. Tokens
    ``0 .. n_symbols - 1``, drawn uniformly; scored on every position whose next token is a
    copy (``t >= lag - 1``): ``T - lag + 1`` answers per row."""

    name = "lag_copy"
    version = "1"
    kind = "synthetic"
    Params = LagCopyParams

    @property
    def vocab_size(self) -> int:
        return self.params.n_symbols

    @property
    def min_seq_len(self) -> int:
        """One scored position: the row must reach the first copy."""
        return self.params.lag

    def max_seq_len(self, split: Split) -> None:
        """No bound: rows are generated at any length."""

    def _generate(self, n: int, seq_len: int, rng: np.random.Generator, split: Split) -> tuple[Tensor, Tensor]:
        lag = self.params.lag
        head = rng.integers(0, self.params.n_symbols, size=(n, lag))  # (N, lag)
        seq = head[:, np.arange(seq_len + 1) % lag].astype(np.int64)  # (N, T + 1): x_t = x_(t - lag)
        scored = np.arange(seq_len)[None, :] >= lag - 1  # (1, T): the next token is a copy
        targets = np.where(scored, seq[:, 1:], IGNORE_INDEX)  # (N, T)
        import torch

        return torch.from_numpy(seq[:, :-1].copy()), torch.from_numpy(targets)
