"""Left-padded copy (ablation ``mask_fill_fp16``): a copy problem at the end of a row of PAD tokens.

One copy problem ``x SEP x`` of string length ``n`` at the end of a row of length ``T``, preceded by ``T - 2n`` PAD
tokens. The training layer hides PAD from attention (``pad_id``), so every query at a padding position sees no key at
all, a *fully masked row*, as in a left-padded batch of a decoder. Scored as ``copy``; padding never. Every split
draws ``n`` uniformly from ``min_len .. T // 2``, so evaluation rows hold padding too.

**Disjoint splits** (version 2; version 1 repeated 9 of 256 test rows at T = 32): each problem
``(n, x)`` belongs to one split by a fixed hash (:func:`split_of`: 80 % train, 10 % val, 10 %
test); a split draws ``(n, x)`` pairs and keeps its own, so a short length may be missing from it.
"""

from __future__ import annotations

import functools
from typing import ClassVar

import numpy as np

from harness.tasks import TASKS
from harness.tasks.base import Split
from harness.tasks.copy import FIRST_SYMBOL, PAD, Copy


@TASKS.register("padded_copy")
class PaddedCopy(Copy):
    """``PAD .. PAD x SEP x``: copy, left-padded to the row length.

    Tokens as ``copy`` (PAD 0, SEP 1, symbols ``2 .. n_symbols + 1``); ``pad_id`` = PAD.
    """

    name = "padded_copy"
    version = "2"  # 2: disjoint splits (a problem's split is split_of(n, x))
    pad_id: ClassVar[int] = PAD
    disjoint_splits: ClassVar[bool] = True

    @functools.cached_property
    def min_seq_len(self) -> int:
        """The shortest row length at which every split holds a problem (``2 * min_len`` unless the alphabet is tiny).

        Found by listing the problems of each length while they are few.
        """
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
        """``n`` problems of ``split``: (N,) lengths and (N, n_max) symbols.

        Drawn in rounds of candidates of which those :func:`split_of` gives to ``split`` are kept, in the order drawn.

        Raises:
            ValueError: When the parameters leave (next to) no problem to this split at this length.
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
            f"{self.params.min_len}..{max_len} fall in the {split!r} split to draw {n} rows; raise "
            "n_symbols or seq_len"
        )


BUCKETS = 10  # a problem's hash modulo BUCKETS picks its split
SPLIT_BUCKETS: dict[str, tuple[int, ...]] = {"train": (0, 1, 2, 3, 4, 5, 6, 7), "val": (8,), "test": (9,)}
ENUMERATE_UP_TO = 4096  # strings of one length listed at most by PaddedCopy.min_seq_len
MAX_ROUNDS = 1000  # rounds of candidates before a split is declared (next to) empty
MAX_CANDIDATE_TOKENS = 1 << 21  # symbols drawn per round at most (16 MiB of int64)


def _mix(h: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser (Steele et al., 2014) on uint64 values, wrapping as the reference C code."""
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def split_of(symbols: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """(N,) int64: the bucket ``0 .. BUCKETS - 1`` of each problem, the same on every machine.

    The bucket is a hash of the problem's length (``lengths`` (N,)) and its first ``n`` symbols (of ``symbols``
    (N, n_max)).
    """
    with np.errstate(over="ignore"):
        h = _mix(lengths.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15))  # (N,)
        for i in range(symbols.shape[1]):
            h = np.where(i < lengths, _mix(h ^ symbols[:, i].astype(np.uint64)), h)
        return (h % np.uint64(BUCKETS)).astype(np.int64)
