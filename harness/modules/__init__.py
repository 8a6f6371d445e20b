"""Pure-PyTorch model components (never imports Lightning).

Shape notation, used in every docstring and at every reshape of this package:

    B  batch size
    T  query length (sequence length)
    S  key length (== T without a KV cache, which this package does not implement)
    H  attention heads
    D  head dim (d_head = C / H)
    C  model width (d_model)
    V  vocabulary size

Importing this package registers every built-in entry (``@REG.builtin``) into the registries
declared in :mod:`harness.registry`, whose first lookup of a built-in imports this package.
"""

from harness.modules.attention import HEAD_SPLITS, KERNELS, QKV, SCALES, MultiHeadAttention
from harness.modules.families import COMPONENT_FAMILIES, ComponentFamily
from harness.modules.kernels import MASK_FILLS, AttentionKernel
from harness.modules.positional import POSITIONAL, PositionalEncoding
from harness.modules.transformer import ACTIVATIONS, BLOCKS, INITS, NORMS, FeedForward, TransformerConfig, TransformerLM

__all__ = [
    "ACTIVATIONS",
    "BLOCKS",
    "COMPONENT_FAMILIES",
    "HEAD_SPLITS",
    "INITS",
    "KERNELS",
    "MASK_FILLS",
    "NORMS",
    "POSITIONAL",
    "QKV",
    "SCALES",
    "AttentionKernel",
    "ComponentFamily",
    "FeedForward",
    "MultiHeadAttention",
    "PositionalEncoding",
    "TransformerConfig",
    "TransformerLM",
]
