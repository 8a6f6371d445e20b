"""The lagged-copy task: every row rebuilt from its first ``lag`` tokens, and its scored positions.
Skipped where the plugin is not installed (``pip install -e examples/plugin``, as .ci/run does)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip(
    "ablate_example_plugin", reason="the example plugin is not installed: pip install -e examples/plugin"
)

from ablate_example_plugin.lag_copy import LagCopy  # noqa: E402

from harness.plugin import IGNORE_INDEX  # noqa: E402


@pytest.mark.parametrize(("lag", "seq_len"), [(1, 1), (3, 3), (8, 17), (8, 64)])
def test_rows_repeat_the_token_lag_positions_back(lag, seq_len):
    task = LagCopy({"n_symbols": 5, "lag": lag})
    for split in ("train", "val", "test"):
        inputs, targets = task.sample(32, seq_len, np.random.default_rng(3), split)
        for row_in, row_tg in zip(inputs.tolist(), targets.tolist()):
            full = row_in + [row_in[seq_len - lag]]  # the token after the row is a copy too
            assert all(full[t] == full[t - lag] for t in range(lag, seq_len + 1))
            assert all(0 <= tok < 5 for tok in row_in)
            assert row_tg[: lag - 1] == [IGNORE_INDEX] * (lag - 1)
            assert row_tg[lag - 1 :] == full[lag:]  # T - lag + 1 answers, each the next token


def test_same_generator_same_rows_and_the_first_lag_tokens_are_uniform():
    task = LagCopy({"n_symbols": 4, "lag": 6})
    a = task.sample(8, 20, np.random.default_rng(0))
    b = task.sample(8, 20, np.random.default_rng(0))
    assert all((x == y).all() for x, y in zip(a, b))
    heads = task.sample(20000, 6, np.random.default_rng(1))[0]
    counts = np.bincount(heads.flatten().numpy(), minlength=4) / heads.numel()
    assert np.abs(counts - 0.25).max() < 0.01


def test_params_and_lengths():
    task = LagCopy({"lag": 5})
    assert task.vocab_size == 16 and task.min_seq_len == 5 and task.max_seq_len("test") is None
    with pytest.raises(ValueError, match="needs seq_len >= 5"):
        task.sample(1, 4, np.random.default_rng(0))
    with pytest.raises(ValueError, match="unknown param 'lags'"):
        LagCopy({"lags": 3})
