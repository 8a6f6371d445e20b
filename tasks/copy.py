"""Copy and reverse (the standard probe of length generalisation for positional encodings, e.g.
Kazemnejad et al., NeurIPS 2023): ``x_1 .. x_n SEP y_1 .. y_n`` with ``y = x`` or ``reversed(x)``,
scored only on the ``n`` positions that predict ``y``, padded at the end. Training rows draw ``n``
uniformly from ``min_len .. T // 2``; evaluation rows all use ``n = T // 2``, so evaluating at
``2T`` and ``4T`` measures extrapolation to longer strings. No curriculum, no EOS token.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np
import pydantic

from harness.tasks import TASKS
from harness.tasks.base import IGNORE_INDEX, Split, Task, TaskParams

if TYPE_CHECKING:
    from torch import Tensor

PAD = 0
SEP = 1
FIRST_SYMBOL = 2


class CopyParams(TaskParams):
    """Parameters of ``copy`` and ``reverse``."""

    n_symbols: int = pydantic.Field(16, ge=1, description="alphabet size of the strings")
    min_len: int = pydantic.Field(1, ge=1, description="shortest string in training rows")


@TASKS.register("copy")
class Copy(Task):
    """Copy a random string: ``x SEP x``. Tokens: PAD 0, SEP 1, symbols ``2 .. n_symbols + 1``.

    Symbols are drawn uniformly with replacement. Loss only on the ``n`` copied positions.
    """

    name = "copy"
    version = "1"
    kind = "synthetic"
    Params = CopyParams
    reverse: ClassVar[bool] = False

    @property
    def vocab_size(self) -> int:
        return self.params.n_symbols + FIRST_SYMBOL

    @property
    def min_seq_len(self) -> int:
        return 2 * self.params.min_len

    def _generate(self, n: int, seq_len: int, rng: np.random.Generator, split: Split) -> tuple[Tensor, Tensor]:
        max_len = seq_len // 2
        if split == "train":
            lengths = rng.integers(self.params.min_len, max_len + 1, size=n)  # (N,)
        else:
            lengths = np.full(n, max_len)
        symbols = rng.integers(FIRST_SYMBOL, self.vocab_size, size=(n, max_len))  # (N, n_max)
        seq = _build_sequences(symbols, lengths, seq_len + 1, self.reverse)  # (N, T + 1)

        pos = np.arange(seq_len)[None, :]  # (1, T)
        lens = lengths[:, None]  # (N, 1)
        scored = (pos >= lens) & (pos < 2 * lens)  # input positions whose next token is y_i
        targets = np.where(scored, seq[:, 1:], IGNORE_INDEX)  # (N, T)
        inputs = np.where(pos < 2 * lens, seq[:, :-1], PAD)  # y_n is only ever a target
        import torch

        return torch.from_numpy(inputs), torch.from_numpy(targets)


@TASKS.register("reverse")
class Reverse(Copy):
    """Reverse a random string: ``x SEP reversed(x)``. Same tokens and scoring as ``copy``."""

    name = "reverse"
    version = "1"
    reverse = True


def _build_sequences(symbols: np.ndarray, lengths: np.ndarray, total: int, reverse: bool) -> np.ndarray:
    """(N, total) int64 rows ``x SEP y PAD ..``: row i's ``x`` is the first ``lengths[i]`` of
    ``symbols[i]`` (N, n_max); ``total`` is at least ``2 * n_max + 1``."""
    pos = np.arange(total)[None, :]  # (1, total)
    lens = lengths[:, None]  # (N, 1)
    copy_idx = 2 * lens - pos if reverse else pos - lens - 1  # index into x, for y
    src = np.where(pos < lens, pos, copy_idx)
    src = np.clip(src, 0, symbols.shape[1] - 1)
    seq = np.take_along_axis(symbols, src, axis=1).astype(np.int64)  # (N, total)
    seq[pos == lens] = SEP  # broadcast mask (N, total)
    seq[pos > 2 * lens] = PAD
    return seq
