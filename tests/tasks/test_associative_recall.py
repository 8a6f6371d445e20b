"""Multi-query associative recall: every query's answer is the value paired with its key."""
from __future__ import annotations

import numpy as np
import pytest

from tasks import IGNORE_INDEX, build_task
from tasks.associative_recall import FILLER


def _check_rows(inputs, targets, n_pairs: int, n_keys: int, n_values: int) -> list[list[int]]:
    """Assert the MQAR layout of every row; return each row's query positions."""
    all_positions = []
    t = inputs.shape[1]
    for row_in, row_tg in zip(inputs.tolist(), targets.tolist()):
        keys, values = row_in[0:2 * n_pairs:2], row_in[1:2 * n_pairs:2]
        assert len(set(keys)) == n_pairs, "keys distinct within a row"
        assert all(1 <= k <= n_keys for k in keys)
        assert all(n_keys < v <= n_keys + n_values for v in values)
        pairs = dict(zip(keys, values))
        positions = [p for p, tok in enumerate(row_tg) if tok != IGNORE_INDEX]
        assert len(positions) == n_pairs
        assert positions[0] >= 2 * n_pairs, "queries come after the key-value section"
        assert sorted(row_in[p] for p in positions) == sorted(keys), "each key queried once"
        for p in positions:
            assert row_tg[p] == pairs[row_in[p]]
            if p + 1 < t:
                assert row_in[p + 1] == row_tg[p]
        answers = {p + 1 for p in positions}
        rest = [tok for i, tok in enumerate(row_in[2 * n_pairs:], start=2 * n_pairs)
                if i not in positions and i not in answers]
        assert all(tok == FILLER for tok in rest)
        all_positions.append(positions)
    return all_positions


@pytest.mark.parametrize("seq_len", [16, 32, 64, 128])
@pytest.mark.parametrize("split", ["train", "test"])
def test_layout_at_train_and_longer_lengths(seq_len: int, split: str) -> None:
    task = build_task("associative_recall")
    inputs, targets = task.sample(64, seq_len, np.random.default_rng(seq_len), split)
    _check_rows(inputs, targets, 4, 16, 16)


@pytest.mark.parametrize("params", [{"n_pairs": 1}, {"n_pairs": 8, "n_keys": 8, "n_values": 3}])
def test_other_params_and_min_seq_len(params: dict) -> None:
    task = build_task("associative_recall", params)
    p = task.params
    assert task.vocab_size == 1 + p.n_keys + p.n_values
    assert task.min_seq_len == 4 * p.n_pairs
    for seq_len in (task.min_seq_len, 3 * task.min_seq_len):
        inputs, targets = task.sample(32, seq_len, np.random.default_rng(0), "train")
        _check_rows(inputs, targets, p.n_pairs, p.n_keys, p.n_values)
    with pytest.raises(ValueError, match="seq_len"):
        task.sample(2, task.min_seq_len - 1, np.random.default_rng(0), "train")


def test_query_positions_spread_over_the_sequence() -> None:
    task = build_task("associative_recall", {"n_pairs": 2})
    inputs, targets = task.sample(500, 20, np.random.default_rng(0), "train")
    positions = np.array(_check_rows(inputs, targets, 2, 16, 16))          # (N, 2)
    assert set(positions[:, 0]) == set(range(4, 18)), "first query anywhere it fits"
    assert set(positions[:, 1]) == set(range(6, 20)), "last query anywhere, up to T - 1"
    assert (np.diff(positions, axis=1) == 2).any(), "adjacent queries allowed"


@pytest.mark.parametrize("params, field", [({"n_pairs": -1}, "n_pairs"),
                                           ({"n_keys": 0}, "n_keys"),
                                           ({"n_pairs": 5, "n_keys": 4}, "n_keys"),
                                           ({"npairs": 4}, "did you mean 'n_pairs'")])
def test_bad_params_name_the_field(params: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        build_task("associative_recall", params)
