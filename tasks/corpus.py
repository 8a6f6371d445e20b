"""What every ``lm`` task on a corpus shares: :class:`CorpusTask`, its splits, the cache folder and the data folder.

Tiny Shakespeare (:mod:`harness.tasks.tinyshakespeare`) and a user's own corpus (:mod:`harness.tasks.text`) are
corpus tasks.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from harness.tasks.base import Chance, Split, Task

if TYPE_CHECKING:
    from torch import Tensor


def cache_dir() -> Path:
    """``$ABLATE_CACHE_DIR``, else ``$XDG_CACHE_HOME/ablate``, else ``~/.cache/ablate``."""
    if os.environ.get("ABLATE_CACHE_DIR"):
        return Path(os.environ["ABLATE_CACHE_DIR"]).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "ablate"


def split_bounds(n: int, val_fraction: float = 0.05, test_fraction: float = 0.05) -> dict[str, tuple[int, int]]:
    """``[start, stop)`` offsets of each split of ``n``: train, then val, then test.

    The default fractions give Tiny Shakespeare's 90 % train, then val and test halves.
    """
    n_test, n_val = round(n * test_fraction), round(n * val_fraction)
    train_end = n - n_val - n_test
    return {"train": (0, train_end), "val": (train_end, train_end + n_val), "test": (train_end + n_val, n)}


class CorpusTask(Task):
    """Base of the ``lm`` tasks on a corpus: a row is a random window of ``T + 1`` tokens of its split.

    Windows may overlap; every position is scored. A subclass gives :attr:`bounds`, the ``[start, stop)`` token
    offsets of each split, and :attr:`ids`, the corpus's (N,) token ids (read on first use).
    """

    kind = "lm"
    bounds: dict[str, tuple[int, int]]
    ids: Tensor

    def max_seq_len(self, split: Split) -> int:
        """The split's length in tokens less one: a row is a window of ``T + 1`` of them."""
        start, stop = self.bounds[split]
        return stop - start - 1

    @functools.cached_property
    def chance(self) -> Chance:
        """The unigram entropy of the training split's tokens (nats).

        The loss of a model that has learned their frequencies and nothing of their order (the data read here if not
        yet).
        """
        start, stop = self.bounds["train"]
        counts = np.bincount(self.ids[start:stop].numpy(), minlength=self.vocab_size)
        p = counts[counts > 0] / counts.sum()
        return Chance(float(-(p * np.log(p)).sum()), None, "unigram entropy of the training split's tokens")

    def _generate(self, n: int, seq_len: int, rng: np.random.Generator, split: Split) -> tuple[Tensor, Tensor]:
        import torch

        start, stop = self.bounds[split]
        offsets = start + rng.integers(0, stop - start - seq_len, size=n)  # (N,)
        idx = torch.from_numpy(offsets)[:, None] + torch.arange(seq_len + 1)  # (N, T + 1)
        windows = self.ids[idx].long()  # (N, T + 1)
        return windows[:, :-1].contiguous(), windows[:, 1:].contiguous()
