"""Left-padded copy: variable-length problems aligned to the end of the row, padding in front.

The task behind ablation ``mask_fill_fp16``. A row of length ``T`` holds one copy problem of
string length ``n`` (``x_1 .. x_n SEP x_1 .. x_n``, as in ``copy``) at its end, preceded by
``T - 2n`` PAD tokens. The task declares ``pad_id``: the training layer hides PAD tokens from
attention (a key padding mask), so every query at a padding position sees no key at all, a
*fully masked row*, as in a left-padded batch of a decoder. Scored, as ``copy``, only on the
``n`` positions that predict the copied string; padding is never scored.

Every split draws ``n`` uniformly from ``min_len .. T // 2`` (unlike ``copy``, whose evaluation
rows all use the longest string), so validation and test rows hold padding too.

**Disjoint splits** (version 2). Short strings are few (``n_symbols`` strings of length 1), so
independent draws would repeat training problems in the test split (9 of 256 test rows at
T = 32 in version 1). Each problem ``(n, x)`` belongs to one split by a fixed hash of its length
and symbols (:func:`split_of`: 80 % train, 10 % val, 10 % test, the same at every row length);
a split draws ``(n, x)`` pairs and keeps those that are its own. A test row therefore never
equals a train or val row, at any length. The lengths stay uniform except where a length has
few strings: a split holds on average 10 % (val, test) of the strings of each length, and a
length none of whose strings is in the split is not drawn in it (e.g. some ``n = 1`` in val and
test with 16 symbols).
"""

from __future__ import annotations

import functools
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
    version = "2"  # 2: disjoint splits (a problem's split is split_of(n, x))
    pad_id: ClassVar[int] = PAD
    disjoint_splits: ClassVar[bool] = True

    def _generate(self, n: int, seq_len: int, rng: np.random.Generator, split: Split) -> tuple[Tensor, Tensor]:
        max_len = seq_len // 2
        lengths, symbols = self._draw(n, max_len, rng, split)  # (N,), (N, n_max)
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

    @functools.cached_property
    def min_seq_len(self) -> int:
        """The shortest row length at which every split holds at least one problem (``2 * min_len``
        unless the alphabet is tiny: with ``n_symbols = 1`` each length has one string, so one
        split holds it), found by listing the problems of each length while they are few; the
        pre-run checks refuse a shorter ``train.seq_len`` or evaluation length."""
        have: set[int] = set()
        n = self.params.min_len
        while True:
            count = self.params.n_symbols**n
            if count > ENUMERATE_UP_TO:  # every split holds ~10 % of thousands of strings
                return 2 * n
            strings = np.indices((self.params.n_symbols,) * n).reshape(n, -1).T + FIRST_SYMBOL  # (count, n)
            have |= set(split_of(strings, np.full(count, n)).tolist())
            if all(set(b) & have for b in SPLIT_BUCKETS.values()):
                return 2 * n
            n += 1

    def _draw(self, n: int, max_len: int, rng: np.random.Generator, split: Split) -> tuple[np.ndarray, np.ndarray]:
        """``n`` problems of ``split``: (N,) lengths uniform in ``min_len .. max_len`` and (N, n_max)
        symbols, drawn in rounds of candidates of which those :func:`split_of` gives to ``split``
        are kept, in the order drawn.

        Raises:
            ValueError: the parameters leave (next to) no problem to this split at this length
                (e.g. ``n_symbols = 1``: one string per length).
        """
        want = SPLIT_BUCKETS[split]
        lengths, symbols, have = [], [], 0
        for _ in range(MAX_ROUNDS):
            expected = -(-(n - have) * BUCKETS * 5 // (4 * len(want)))  # 1.25 x the candidates needed
            size = min(max(64, expected), max(64, MAX_CANDIDATE_TOKENS // max_len))
            cand_len = rng.integers(self.params.min_len, max_len + 1, size=size)  # (M,)
            cand_sym = rng.integers(FIRST_SYMBOL, self.vocab_size, size=(size, max_len))  # (M, n_max)
            keep = np.isin(split_of(cand_sym, cand_len), want)
            lengths.append(cand_len[keep])
            symbols.append(cand_sym[keep])
            have += int(keep.sum())
            if have >= n:
                return np.concatenate(lengths)[:n], np.concatenate(symbols)[:n]
        raise ValueError(
            f"task 'padded_copy' with {self.params!r}: too few distinct problems of length "
            f"{self.params.min_len}..{max_len} fall in the {split!r} split to draw {n} rows; "
            "raise n_symbols or seq_len"
        )


BUCKETS = 10
"""A problem's hash modulo ``BUCKETS`` picks its split (:data:`SPLIT_BUCKETS`)."""
SPLIT_BUCKETS: dict[str, tuple[int, ...]] = {"train": (0, 1, 2, 3, 4, 5, 6, 7), "val": (8,), "test": (9,)}
ENUMERATE_UP_TO = 4096
"""Strings of one length listed at most by :attr:`PaddedCopy.min_seq_len`."""
MAX_ROUNDS = 1000
"""Rounds of candidates before a split is declared (next to) empty at these parameters."""
MAX_CANDIDATE_TOKENS = 1 << 21
"""Symbols drawn per round at most (16 MiB of int64), however many rows are asked for."""


def _mix(h: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser (Steele et al., 2014) on uint64 values: every input bit reaches every
    output bit. Wrapping uint64 arithmetic, as in the reference C code."""
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def split_of(symbols: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The bucket ``0 .. BUCKETS - 1`` of each problem ``(n, x)``: a hash of its length and its
    first ``n`` symbols (the rest of the row is ignored), the same on every machine and at every
    row length.

    Args:
        symbols: (N, n_max) int symbols; row i uses its first ``lengths[i]``.
        lengths: (N,) string lengths.

    Returns:
        (N,) int64 buckets.
    """
    with np.errstate(over="ignore"):
        h = _mix(lengths.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15))  # (N,)
        for i in range(symbols.shape[1]):
            h = np.where(i < lengths, _mix(h ^ symbols[:, i].astype(np.uint64)), h)
        return (h % np.uint64(BUCKETS)).astype(np.int64)
