"""Attention-kernel benchmarks (time and memory against sequence length); run by :mod:`.__main__`."""
