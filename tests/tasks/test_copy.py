"""copy, reverse and prefix_sum: reconstruct every row and check the targets against it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harness.tasks import IGNORE_INDEX, build_task
from harness.tasks.copy import PAD, SEP


def _answer(name: str, x: list[int], n_symbols: int) -> list[int]:
    """The answer string, computed here as its definition says, one step at a time."""
    if name == "prefix_sum":
        total, y = 0, []
        for s in x:
            total = (total + s - 2) % n_symbols
            y.append(total + 2)
        return y
    return x[::-1] if name == "reverse" else x


def _check_rows(inputs: torch.Tensor, targets: torch.Tensor, name: str, n_symbols: int) -> list[int]:
    """Assert each row is ``x SEP y PAD..`` with y scored; return the string lengths."""
    lengths = []
    t = inputs.shape[1]
    for row_in, row_tg in zip(inputs.tolist(), targets.tolist()):
        n = row_in.index(SEP)
        x = row_in[:n]
        y = _answer(name, x, n_symbols)
        assert all(2 <= s < n_symbols + 2 for s in x)
        assert row_in[n + 1 : 2 * n] == y[:-1]
        assert all(tok == PAD for tok in row_in[2 * n :])
        assert row_tg[n : 2 * n] == y
        assert all(tok == IGNORE_INDEX for tok in row_tg[:n] + row_tg[2 * n :])
        assert 2 * n <= t
        lengths.append(n)
    return lengths


@pytest.mark.parametrize("name", ["copy", "reverse", "prefix_sum"])
@pytest.mark.parametrize("seq_len", [8, 9, 32])
def test_rows_reconstruct(name: str, seq_len: int) -> None:
    task = build_task(name, {"n_symbols": 8})
    for split in ("train", "val", "test"):
        inputs, targets = task.sample(64, seq_len, np.random.default_rng(5), split)
        lengths = _check_rows(inputs, targets, name, 8)
        assert (targets != IGNORE_INDEX).sum(dim=1).tolist() == lengths


@pytest.mark.parametrize("name", ["copy", "reverse", "prefix_sum"])
@pytest.mark.parametrize("seq_len", [16, 32, 64, 65])
def test_eval_splits_use_full_length(name: str, seq_len: int) -> None:
    task = build_task(name)
    for split in ("val", "test"):
        inputs, targets = task.sample(32, seq_len, np.random.default_rng(0), split)
        lengths = _check_rows(inputs, targets, name, 16)
        assert set(lengths) == {seq_len // 2}


def test_train_lengths_cover_min_len_to_half() -> None:
    task = build_task("copy", {"min_len": 3})
    inputs, targets = task.sample(2000, 16, np.random.default_rng(0), "train")
    lengths = _check_rows(inputs, targets, "copy", 16)
    assert set(lengths) == set(range(3, 9))


def test_vocab_and_min_seq_len_follow_params() -> None:
    task = build_task("reverse", {"n_symbols": 10, "min_len": 4})
    assert task.vocab_size == 12
    assert task.min_seq_len == 8
    with pytest.raises(ValueError, match="seq_len >= 8"):
        task.sample(2, 7, np.random.default_rng(0), "train")


def test_copy_and_reverse_share_inputs_before_sep() -> None:
    copy, reverse = build_task("copy"), build_task("reverse")
    a, _ = copy.sample(4, 12, np.random.default_rng(9), "test")
    b, _ = reverse.sample(4, 12, np.random.default_rng(9), "test")
    assert torch.equal(a[:, :7], b[:, :7]) and not torch.equal(a, b)


@pytest.mark.parametrize(
    "params, field",
    [({"n_symbols": 0}, "n_symbols"), ({"min_len": -1}, "min_len"), ({"n_symbol": 8}, "did you mean 'n_symbols'")],
)
def test_bad_params_name_the_field(params: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        build_task("copy", params)
