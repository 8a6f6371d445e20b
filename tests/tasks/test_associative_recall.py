"""Multi-query associative recall: every query's answer is the value paired with its key."""

from __future__ import annotations

import numpy as np
import pytest

from harness.tasks import IGNORE_INDEX, build_task
from harness.tasks.associative_recall import FILLER


def _check_rows(inputs, targets, n_pairs: int, n_keys: int, n_values: int) -> list[list[int]]:
    """Assert the MQAR layout of every row; return each row's query positions."""
    all_positions = []
    for row_in, row_tg in zip(inputs.tolist(), targets.tolist()):
        keys, values = row_in[0 : 2 * n_pairs : 2], row_in[1 : 2 * n_pairs : 2]
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
        assert all(positions[i + 1] - positions[i] >= 2 for i in range(n_pairs - 1)), "2-token slots"
        rest = [tok for i, tok in enumerate(row_in[2 * n_pairs :], start=2 * n_pairs) if i not in positions]
        assert all(tok == FILLER for tok in rest), "after the pairs: queries and filler, never an answer"
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
    positions = np.array(_check_rows(inputs, targets, 2, 16, 16))  # (N, 2)
    assert set(positions[:, 0]) == set(range(4, 18)), "first query anywhere it fits"
    assert set(positions[:, 1]) == set(range(6, 20)), "last query anywhere, up to T - 1"
    assert (np.diff(positions, axis=1) == 2).any(), "adjacent queries allowed"


@pytest.mark.parametrize(
    "params, field",
    [
        ({"n_pairs": -1}, "n_pairs"),
        ({"n_keys": 0}, "n_keys"),
        ({"n_pairs": 5, "n_keys": 4}, "n_keys"),
        ({"npairs": 4}, "did you mean 'n_pairs'"),
    ],
)
def test_bad_params_name_the_field(params: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        build_task("associative_recall", params)


@pytest.mark.parametrize("seq_len", [16, 32, 64])
def test_dict_lookup_solver_is_perfect_and_metric_scores_exactly_the_answers(seq_len: int) -> None:
    """An independent solver (a dict over the row's pairs) answers every scored position, and the
    training metric scores exactly the positions that hold a query key, nothing else."""
    import torch

    from harness.training.scoring import score

    n_pairs, n_keys = 4, 16
    task = build_task("associative_recall", {"n_pairs": n_pairs, "n_keys": n_keys, "n_values": 16})
    inputs, targets = task.sample(200, seq_len, np.random.default_rng(7), "train")
    solver = torch.full_like(targets, IGNORE_INDEX)
    for i, row in enumerate(inputs.tolist()):
        pairs = dict(zip(row[0 : 2 * n_pairs : 2], row[1 : 2 * n_pairs : 2]))
        for t in range(2 * n_pairs, seq_len):
            if 1 <= row[t] <= n_keys:  # a key after the pairs is a query
                solver[i, t] = pairs[row[t]]
    assert torch.equal(solver, targets), "scored positions = query positions, answers = dict lookup"

    logits = torch.nn.functional.one_hot(solver.clamp(min=0), task.vocab_size).float()  # (N, T, V)
    wrong_elsewhere = logits.clone()
    wrong_elsewhere[targets == IGNORE_INDEX] = torch.eye(task.vocab_size)[0]  # filler
    sums = score(wrong_elsewhere, targets)
    assert sums["tokens"] == 200 * n_pairs and sums["correct"] == 200 * n_pairs
    assert sums["exact"] == sums["seqs"] == 200
    one_wrong = logits.clone()
    row, pos = 3, int((targets[3] != IGNORE_INDEX).nonzero()[0])
    one_wrong[row, pos] = torch.eye(task.vocab_size)[0]
    sums = score(one_wrong, targets)
    assert (sums["correct"], sums["exact"]) == (200 * n_pairs - 1, 199)
