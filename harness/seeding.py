"""Separate random streams (numpy ``SeedSequence``) for weight init, data order, evaluation data and dropout.

They make seed ``s`` of every variant see the same batches and evaluation set.
"""

from __future__ import annotations

import numpy as np

# Permanent stream ids: changing one changes every stored result.
STREAMS = {"init": 1, "data": 2, "val": 3, "test": 4, "dropout": 5}


def stream_seed(seed: int, stream: str, *extra: int) -> int:
    """A 63-bit integer seed for ``stream`` of run seed ``seed`` (``extra`` adds sub-streams)."""
    seq = np.random.SeedSequence([seed, STREAMS[stream], *extra])
    return int(seq.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


def numpy_rng(seed: int, stream: str, *extra: int) -> np.random.Generator:
    """A numpy ``Generator`` for ``stream`` of run seed ``seed`` (``extra`` adds sub-streams)."""
    return np.random.default_rng(np.random.SeedSequence([seed, STREAMS[stream], *extra]))
