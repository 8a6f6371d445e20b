"""ablate: controlled, repeated, statistically honest ablations of Transformer design choices."""

__version__ = "0.1.0"
