"""Pure-PyTorch model components (never imports Lightning).

Shape notation, used in docstrings and at every reshape:

    B  batch size
    T  query length (sequence length)
    S  key length (== T without a KV cache, which this package does not implement)
    H  attention heads
    D  head dim (d_head = C / H)
    C  model width (d_model)
    V  vocabulary size

Each component family is a ``harness.registry.Registry`` defined in registries.py (below the
components and ``TransformerConfig``, config.py, which checks names against them); importing
this package registers every entry: ``POSITIONAL`` (positional.py), ``KERNELS`` and ``MASK_FILLS`` (kernels.py,
linear_attention.py), ``QKV``, ``SCALES`` and ``HEAD_SPLITS`` (attention.py), ``NORMS``
(norms.py), ``ACTIVATIONS`` (ffn.py), ``INITS`` (inits.py) and ``BLOCKS`` (transformer.py). Probes that measure a
model rather than train it (causal leakage, attention on masked keys, gradient norms per layer)
are in probes.py.
"""

from harness.modules.attention import (
    HEAD_SPLITS,
    KERNELS,
    MASK_FILLS,
    QKV,
    SCALES,
    AttentionKernel,
    MultiHeadAttention,
)
from harness.modules.ffn import ACTIVATIONS, FeedForward
from harness.modules.inits import INITS
from harness.modules.norms import NORMS
from harness.modules.positional import POSITIONAL, PositionalEncoding
from harness.modules.transformer import BLOCKS, TransformerConfig, TransformerLM

__all__ = [
    "ACTIVATIONS",
    "BLOCKS",
    "HEAD_SPLITS",
    "INITS",
    "KERNELS",
    "MASK_FILLS",
    "NORMS",
    "POSITIONAL",
    "QKV",
    "SCALES",
    "AttentionKernel",
    "FeedForward",
    "MultiHeadAttention",
    "PositionalEncoding",
    "TransformerConfig",
    "TransformerLM",
]
