"""padded_copy: copy problems right-aligned behind PAD, so left padding gives fully masked rows."""

import numpy as np
import pytest
import torch

from harness.tasks import IGNORE_INDEX, build_task
from harness.tasks.copy import PAD, SEP
from harness.tasks.padded import split_of


def test_rows_are_left_padded_copies_in_every_split():
    task = build_task("padded_copy", {"n_symbols": 6})
    assert task.pad_id == PAD
    for split in ("train", "val", "test"):
        x, y = task.sample(64, 12, np.random.default_rng(0), split)
        assert (x[:, 0] == PAD).any()  # some rows start with padding, in every split
        for row, tgt in zip(x.tolist(), y.tolist()):
            n_pad = next(i for i, tok in enumerate(row) if tok != PAD)
            body = row[n_pad:]
            n = len(body) // 2
            assert len(body) == 2 * n and body[n] == SEP
            scored = [t for t in tgt if t != IGNORE_INDEX]
            assert scored == body[:n]  # the copied string, each predicted once
            assert all(t == IGNORE_INDEX for t in tgt[: n_pad + n])


def test_deterministic():
    task = build_task("padded_copy")
    a = task.sample(8, 16, np.random.default_rng(3), "train")
    b = task.sample(8, 16, np.random.default_rng(3), "train")
    assert all(torch.equal(u, v) for u, v in zip(a, b))


def _problems(x: torch.Tensor) -> set[tuple[int, ...]]:
    """The copied strings ``x`` of the rows (padding and the answer dropped)."""
    out = set()
    for row in x.tolist():
        body = row[next(i for i, tok in enumerate(row) if tok != PAD) :]
        out.add(tuple(body[: len(body) // 2]))
    return out


def test_no_val_or_test_row_equals_a_train_row():
    """Version 1 drew every split independently: 9 of 256 test rows were train rows at T = 32
    (short strings are few). Each problem now belongs to one split, at every row length."""
    task = build_task("padded_copy")
    assert task.version == "2" and task.disjoint_splits
    for seq_len in (4, 12, 32):
        train_x = task.sample(20_000, seq_len, np.random.default_rng(0), "train")[0]
        train_rows = {tuple(r) for r in train_x.tolist()}
        assert len(train_rows) > 1_000 or seq_len == 4  # the check has train rows to hit
        for split in ("val", "test"):
            held = task.sample(2_000, seq_len, np.random.default_rng(1), split)[0]
            assert not {tuple(r) for r in held.tolist()} & train_rows, (seq_len, split)
    # across lengths: a problem of a test row at 2 T is no training problem at T
    train = _problems(task.sample(20_000, 16, np.random.default_rng(2), "train")[0])
    test = _problems(task.sample(2_000, 32, np.random.default_rng(3), "test")[0])
    assert not {p for p in test if len(p) <= 8} & train
    assert {p for p in test if len(p) <= 2}  # short problems are still drawn in the test split


def _splitmix64_reference(x: int) -> int:
    """SplitMix64's finaliser in Python integers (Steele et al., 2014; Vigna's C reference)."""
    m = (1 << 64) - 1
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & m
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & m
    return x ^ (x >> 31)


def test_split_of_is_the_documented_hash():
    """Against a pure-Python reference (unbounded integers masked to 64 bits), so that the split of
    a problem is the same with any numpy build; the buckets share out as 80 / 10 / 10."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 9, size=500)
    symbols = rng.integers(2, 18, size=(500, 8))
    got = split_of(symbols, lengths)
    for row, n, bucket in zip(symbols.tolist(), lengths.tolist(), got.tolist()):
        h = _splitmix64_reference((n + 0x9E3779B97F4A7C15) & ((1 << 64) - 1))
        for s in row[:n]:
            h = _splitmix64_reference(h ^ s)
        assert bucket == h % 10
    symbols[np.arange(8)[None, :] >= lengths[:, None]] = 2  # symbols past n are ignored
    assert np.array_equal(split_of(symbols, lengths), got)
    share = np.bincount(split_of(rng.integers(2, 18, size=(20_000, 8)), np.full(20_000, 8)), minlength=10) / 20_000
    assert abs(share[:8].sum() - 0.8) < 0.01 and abs(share[8] - 0.1) < 0.01 and abs(share[9] - 0.1) < 0.01


def test_a_tiny_alphabet_raises_the_shortest_length_so_every_split_has_a_problem():
    """With one symbol each length holds one string, in one split: below the length at which each
    split has one, sampling is refused (the pre-run checks read ``min_seq_len``)."""
    task = build_task("padded_copy", {"n_symbols": 1})
    assert task.min_seq_len == 18
    for split in ("train", "val", "test"):
        assert task.sample(4, 18, np.random.default_rng(0), split)[0].shape == (4, 18)
    with pytest.raises(ValueError, match="needs seq_len >= 18, got 16"):
        task.sample(4, 16, np.random.default_rng(0), "train")
    assert build_task("padded_copy").min_seq_len == 2  # 16 symbols: the 16 strings of length 1 suffice
