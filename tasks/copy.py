"""Copy and reverse, and running sums: ``x_1 .. x_n SEP y_1 .. y_n``, scored only on the ``n`` positions of ``y``.

Copy and reverse are the standard probe of length generalisation for positional encodings (e.g. Kazemnejad et al.,
NeurIPS 2023). ``y = x``, ``reversed(x)`` or ``y_i = x_1 + .. + x_i`` modulo the alphabet; the scored positions are
those that predict ``y``; rows are padded at the end. Training rows draw ``n`` uniformly from
``min_len .. T // 2``; evaluation rows all use ``n = T // 2``, so evaluating at ``2T`` and ``4T`` measures
extrapolation to longer strings. No curriculum, no EOS token.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np
import pydantic

from harness.tasks import TASKS
from harness.tasks.base import IGNORE_INDEX, Chance, Split, Task, TaskParams

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
        """``n_symbols + 2``: PAD, SEP and the symbols."""
        return self.params.n_symbols + FIRST_SYMBOL

    @property
    def min_seq_len(self) -> int:
        """``2 * min_len``: the shortest ``x SEP y`` without ``y``'s last symbol, which is only ever a target."""
        return 2 * self.params.min_len

    @property
    def chance(self) -> Chance:
        """Every scored target is a symbol drawn uniformly: ln(n_symbols) nats, accuracy 1 / n_symbols."""
        return Chance.uniform(self.params.n_symbols, "symbols")

    def _generate(self, n: int, seq_len: int, rng: np.random.Generator, split: Split) -> tuple[Tensor, Tensor]:
        lengths, symbols = self._draw(n, seq_len // 2, rng, split)  # (N,), (N, n_max)
        lens = lengths[:, None]  # (N, 1)
        # each position relative to x_1: ``x SEP y`` from 0, the left padding (pad_id only) before it
        pos = np.arange(seq_len + 1)[None, :] - ((seq_len - 2 * lens) if self.pad_id is not None else 0)
        src = np.where(pos < lens, pos, 2 * lens - pos if self.reverse else pos - lens - 1)  # index into x or y
        src = np.clip(src, 0, symbols.shape[1] - 1)
        x, y = (np.take_along_axis(a, src, axis=1) for a in (symbols, self._answers(symbols)))
        seq = np.where(pos < lens, x, y).astype(np.int64)
        seq[pos == lens] = SEP
        seq[(pos < 0) | (pos > 2 * lens)] = PAD  # (N, T + 1)
        p = pos[:, :-1]
        targets = np.where((p >= lens) & (p < 2 * lens), seq[:, 1:], IGNORE_INDEX)  # (N, T): those predicting y
        inputs = np.where(p < 2 * lens, seq[:, :-1], PAD)  # y_n is only ever a target
        import torch

        return torch.from_numpy(inputs), torch.from_numpy(targets)

    def _answers(self, symbols: np.ndarray) -> np.ndarray:
        """The answer string of each row's symbols (N, n_max), read at ``y``'s positions: ``x`` itself."""
        return symbols

    def _draw(self, n: int, max_len: int, rng: np.random.Generator, split: Split) -> tuple[np.ndarray, np.ndarray]:
        """(N,) string lengths (all ``max_len`` outside training) and (N, n_max) symbols."""
        train = split == "train"
        lengths = rng.integers(self.params.min_len, max_len + 1, size=n) if train else np.full(n, max_len)
        return lengths, rng.integers(FIRST_SYMBOL, self.vocab_size, size=(n, max_len))


@TASKS.register("reverse")
class Reverse(Copy):
    """Reverse a random string: ``x SEP reversed(x)``. Same tokens and scoring as ``copy``."""

    name = "reverse"
    version = "1"
    reverse = True


@TASKS.register("prefix_sum")
class PrefixSum(Copy):
    """Running sums: ``x SEP y`` with ``y_i = (x_1 + .. + x_i) mod n_symbols``.

    Symbol ``k`` stands for the value ``k - 2``. Same tokens and scoring as ``copy``. Each answer is the one before it
    plus one input, a chain of ``n`` dependent steps, so an exact match (``exact@x1``) needs every step of the chain
    right: the multi-step probe of the running-sum / parity family (Anil et al., "Exploring Length Generalization in
    Large Language Models", NeurIPS 2022). Each ``y_i`` is uniform, as ``x_i``.
    """

    name = "prefix_sum"
    version = "1"

    def _answers(self, symbols: np.ndarray) -> np.ndarray:
        n = self.params.n_symbols
        return FIRST_SYMBOL + np.cumsum(symbols - FIRST_SYMBOL, axis=1) % n
