"""Multi-query associative recall (MQAR).

After Arora, Eyuboglu et al. 2023, "Zoology: Measuring and Improving Recall in Efficient Language
Models" (HazyResearch/zoology, ``zoology/data/multiquery_ar.py``). A row opens with ``n_pairs``
key-value pairs ``k_1 v_1 .. k_P v_P``; every key is then queried once, in random order, and the
model must produce the value paired with it earlier in the row. As in Zoology, the answer is only
a target: the input token after a query is filler (why: version 2 in docs/tasks.md).

Deliberately unlike Zoology: filler is the single token 0; query positions are uniform over all
non-overlapping 2-token slots (Zoology: power-law gaps); values are drawn with replacement. The
number of pairs is the same at every length (longer rows, longer query distances) and in every split.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pydantic

from harness.tasks import TASKS
from harness.tasks.base import IGNORE_INDEX, Chance, Split, Task, TaskParams

if TYPE_CHECKING:
    from torch import Tensor

FILLER = 0


class AssociativeRecallParams(TaskParams):
    """Parameters of ``associative_recall``."""

    n_pairs: int = pydantic.Field(4, ge=1, description="key-value pairs (and queries) per row")
    n_keys: int = pydantic.Field(16, ge=1, description="size of the key vocabulary")
    n_values: int = pydantic.Field(16, ge=1, description="size of the value vocabulary")

    @pydantic.model_validator(mode="after")
    def _enough_keys(self) -> AssociativeRecallParams:
        if self.n_keys < self.n_pairs:
            raise ValueError(
                f"n_keys ({self.n_keys}) must be >= n_pairs ({self.n_pairs}): keys are distinct within a row"
            )
        return self


@TASKS.register("associative_recall", aliases=("mqar",))
class AssociativeRecall(Task):
    """MQAR: recall the value paired, earlier in the row, with each queried key.

    Tokens: filler 0, keys ``1 .. n_keys``, values ``n_keys + 1 .. n_keys + n_values``. Loss only at the ``n_pairs``
    query positions. Needs ``T >= 4 * n_pairs``: ``2P`` tokens of pairs, ``P`` 2-token slots (query, filler).
    """

    name = "associative_recall"
    version = "2"
    kind = "synthetic"
    answers_in_input = False
    Params = AssociativeRecallParams

    @property
    def vocab_size(self) -> int:
        """``1 + n_keys + n_values``: the filler, the keys and the values."""
        return 1 + self.params.n_keys + self.params.n_values

    @property
    def min_seq_len(self) -> int:
        """``4 * n_pairs``: ``2P`` tokens of pairs, then ``P`` 2-token slots (query, filler)."""
        return 4 * self.params.n_pairs

    @property
    def chance(self) -> Chance:
        """Every scored target is a value drawn uniformly: ln(n_values) nats, accuracy 1 / n_values."""
        return Chance.uniform(self.params.n_values, "values")

    def _generate(self, n: int, seq_len: int, rng: np.random.Generator, split: Split) -> tuple[Tensor, Tensor]:
        p, n_pairs = self.params, self.params.n_pairs
        keys = _distinct(rng, n, p.n_keys, n_pairs) + 1  # (N, P)
        values = rng.integers(p.n_keys + 1, p.n_keys + p.n_values + 1, size=(n, n_pairs))
        order = _distinct(rng, n, n_pairs, n_pairs)  # (N, P)
        # P disjoint 2-token slots after the pairs, uniform over all placements: P of the
        # span - P positions, the i-th (sorted) shifted by i
        span = seq_len + 1 - 2 * n_pairs
        query_pos = 2 * n_pairs + np.sort(_distinct(rng, n, span - n_pairs, n_pairs), axis=1) + np.arange(n_pairs)

        seq = np.full((n, seq_len + 1), FILLER, dtype=np.int64)  # (N, T + 1)
        seq[:, 0 : 2 * n_pairs : 2] = keys
        seq[:, 1 : 2 * n_pairs : 2] = values
        rows = np.arange(n)[:, None]  # (N, 1)
        seq[rows, query_pos] = np.take_along_axis(keys, order, axis=1)  # slot: query, filler

        targets = np.full((n, seq_len), IGNORE_INDEX, dtype=np.int64)  # (N, T)
        targets[rows, query_pos] = np.take_along_axis(values, order, axis=1)
        import torch

        return torch.from_numpy(seq[:, :-1].copy()), torch.from_numpy(targets)


def _distinct(rng: np.random.Generator, n: int, high: int, k: int) -> np.ndarray:
    """(N, k) int64: per row, ``k`` distinct integers from ``0 .. high - 1`` in random order."""
    return np.argsort(rng.random((n, high)), axis=1)[:, :k]
