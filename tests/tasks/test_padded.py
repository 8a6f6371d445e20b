"""padded_copy: copy problems right-aligned behind PAD, so left padding gives fully masked rows."""

import numpy as np
import torch

from harness.tasks import IGNORE_INDEX, build_task
from harness.tasks.copy import PAD, SEP


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
