"""Left-padded copy: variable-length problems aligned to the end of the row, padding in front.

The task behind ablation ``mask_fill_fp16``. A row of length ``T`` holds one copy problem of
string length ``n`` (``x_1 .. x_n SEP x_1 .. x_n``, as in ``copy``) at its end, preceded by
``T - 2n`` PAD tokens. The task declares ``pad_id``: the training layer hides PAD tokens from
attention (a key padding mask), so every query at a padding position sees no key at all, a
*fully masked row*, as in a left-padded batch of a decoder. Scored, as ``copy``, only on the
``n`` positions that predict the copied string; padding is never scored.

Every split draws ``n`` uniformly from ``min_len .. T // 2`` (unlike ``copy``, whose evaluation
rows all use the longest string), so validation and test rows hold padding too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from harness.tasks import TASKS
from harness.tasks.base import IGNORE_INDEX, Split
from harness.tasks.copy import FIRST_SYMBOL, PAD, Copy, _build_sequences

if TYPE_CHECKING:  # torch is imported where tensors are made: `ablate list` stays fast
    from torch import Tensor


@TASKS.register("padded_copy")
class PaddedCopy(Copy):
    """``PAD .. PAD x SEP x``: copy, left-padded to the row length. Tokens as ``copy``
    (PAD 0, SEP 1, symbols ``2 .. n_symbols + 1``); ``pad_id`` = PAD."""

    name = "padded_copy"
    version = "1"
    pad_id: ClassVar[int] = PAD

    def _generate(self, n: int, seq_len: int, rng: np.random.Generator, split: Split) -> tuple[Tensor, Tensor]:
        max_len = seq_len // 2
        lengths = rng.integers(self.params.min_len, max_len + 1, size=n)  # (N,)
        symbols = rng.integers(FIRST_SYMBOL, self.vocab_size, size=(n, max_len))  # (N, n_max)
        seq = _build_sequences(symbols, lengths, seq_len + 1, False)  # (N, T + 1), x SEP y PAD..
        shift = (seq_len - 2 * lengths)[:, None]  # (N, 1): padding in front
        pos = np.arange(seq_len + 1)[None, :]  # (1, T + 1)
        src = pos - shift
        full = np.where(src >= 0, np.take_along_axis(seq, np.clip(src, 0, None), axis=1), PAD)  # (N, T + 1)
        p, lens = pos[:, :-1], lengths[:, None]
        scored = (p >= shift + lens) & (p < shift + 2 * lens)  # input positions whose next token is y_i
        targets = np.where(scored, full[:, 1:], IGNORE_INDEX)  # (N, T)
        import torch

        return torch.from_numpy(full[:, :-1].copy()), torch.from_numpy(targets)
