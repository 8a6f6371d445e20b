"""``TransformerConfig``: the architecture a ``TransformerLM`` is built from.

A leaf that imports no component (the registries it checks names against are declared in :mod:`harness.registry`),
so that every component module can take one without an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass

import harness.registry as reg
from harness.config import FFN_MULT


@dataclass(frozen=True)
class TransformerConfig:
    """Architecture of a ``TransformerLM``; string fields name registry entries.

    Raises:
        ValueError: When built with non-positive sizes, ``d_model % n_heads != 0``, dropout outside [0, 1) or a
            config the positional encoding or the kernel rejects (their ``check_config``).
        UnknownNameError: When built with a name no registry holds (suggesting the closest names).
    """

    vocab_size: int
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int | None = None  # None -> FFN_MULT (4) * d_model
    max_len: int | None = None  # positions a bounded encoding (learned) must cover
    position: str = "sinusoidal"  # POSITIONAL registry
    kernel: str = "sdpa"  # KERNELS registry
    qkv: str = "separate"  # QKV registry
    scale: str = "d_head"  # SCALES registry
    mask_fill: str = "-inf"  # MASK_FILLS registry (kernel math only)
    head_split: str = "correct"  # HEAD_SPLITS registry
    norm: str = "layernorm"  # NORMS registry
    norm_position: str = "pre"  # BLOCKS registry
    activation: str = "gelu"  # ACTIVATIONS registry
    init: str = "normal_0.02"  # INITS registry: the linear layers' initialisation
    dropout: float = 0.0
    learned_init_std: float = 0.02  # init std of the learned position table
    tie_embeddings: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_len"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        registries = (reg.QKV, reg.SCALES, reg.MASK_FILLS, reg.HEAD_SPLITS, reg.NORMS, reg.BLOCKS)
        names = (self.qkv, self.scale, self.mask_fill, self.head_split, self.norm, self.norm_position)
        for registry, name in zip((*registries, reg.ACTIVATIONS, reg.INITS), (*names, self.activation, self.init)):
            registry.canonical(name)
        reg.POSITIONAL.get(self.position).check_config(self)
        reg.KERNELS.get(self.kernel).check_config(self)

    @property
    def d_head(self) -> int:
        """D = C / H."""
        return self.d_model // self.n_heads

    @property
    def ffn_dim(self) -> int:
        """Hidden width of the feed-forward network: ``d_ff`` or ``FFN_MULT * d_model`` (4 x)."""
        return self.d_ff if self.d_ff is not None else FFN_MULT * self.d_model
