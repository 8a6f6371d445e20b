"""Attention-kernel benchmarks (time and memory against sequence length).

``python -m harness.bench ARGS`` is ``ablate bench attention ARGS``."""
