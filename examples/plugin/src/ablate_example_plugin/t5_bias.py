"""T5's relative position bias (Raffel et al., "Exploring the Limits of Transfer Learning with a
Unified Text-to-Text Transformer", JMLR 2020, §2.1): a learned scalar per head and per bucket of
relative position, added to the attention scores.

"Each 'embedding' is simply a scalar that is added to the corresponding logit used for computing
the attention weights [...] we use 32 embeddings for all of our models with ranges that increase
in size logarithmically up to an offset of 128 beyond which we assign all relative positions to
the same embedding." The bucketing is :func:`relative_position_bucket`, mesh-tensorflow's
``_relative_position_bucket`` (``mesh_tensorflow/transformer/transformer_layers.py``), which the
T5 code and Hugging Face's ``T5Attention`` share. A decoder uses the unidirectional buckets: half
of them for the exact distances ``0 .. 15``, the other half log-spaced up to ``max_distance``.

Registered as ``t5_bias`` by :mod:`ablate_example_plugin.plugin`; this module registers nothing.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from harness.plugin import PositionalEncoding, TransformerConfig


def relative_position_bucket(
    relative_position: Tensor, bidirectional: bool = False, num_buckets: int = 32, max_distance: int = 128
) -> Tensor:
    """The bucket of each relative position, as mesh-tensorflow's ``_relative_position_bucket``.

    With ``n`` the distance back (``-relative_position``, clipped at 0 when unidirectional),
    distances below ``max_exact = num_buckets // 2`` get a bucket each; a larger one gets
    ``max_exact + floor(log(n / max_exact) / log(max_distance / max_exact) * (num_buckets - max_exact))``,
    at most ``num_buckets - 1``. Bidirectional: half of the buckets for keys after the query.
    The logarithm is taken in float64 (mesh-tensorflow: float32, which gives the same buckets
    for distances up to 3000 at 8 to 64 buckets; tested against exact integer boundaries).

    Args:
        relative_position: integer tensor of ``key position - query position``, any shape.
        bidirectional: whether keys after the query are seen (False for a causal decoder).
        num_buckets: the number of buckets (both directions together when bidirectional).
        max_distance: the distance beyond which every position shares the last bucket.

    Returns:
        int64 tensor of the same shape, values in ``[0, num_buckets)``.
    """
    ret = torch.zeros_like(relative_position, dtype=torch.long)
    n = -relative_position.long()
    if bidirectional:
        num_buckets //= 2
        ret = ret + (n < 0).long() * num_buckets
        n = n.abs()
    else:
        n = n.clamp(min=0)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    scaled = torch.log(n.clamp(min=max_exact).double() / max_exact) / math.log(max_distance / max_exact)
    if_large = (max_exact + (scaled * (num_buckets - max_exact)).long()).clamp(max=num_buckets - 1)
    return ret + torch.where(is_small, n, if_large)


class T5RelativeBias(PositionalEncoding):
    """T5's relative position bias for a causal decoder (unidirectional buckets): bias
    ``[h, i, j] = table[bucket(j - i), h]``, one learned scalar per head and bucket, shared by
    all layers (as T5, which computes it in the first layer and reuses it).

    Differences from T5: the bias is added to scores already scaled by ``1 / sqrt(D)`` (T5 folds
    that scale into its initialisation and scales nothing); the table is initialised
    ``N(0, d_model^-1/2)``, as Hugging Face's ``T5PreTrainedModel._init_weights``. The buckets of
    each ``(T, S)`` are computed once and kept (they hold no parameter); the bias is gathered
    anew on every call, as it must be for gradients. Works at any length (distances beyond ``max_distance`` share the
    last bucket); kernels without an additive bias (``linear``) refuse it before any run. Kernel ``flash`` on
    CPU (torch 2.13) refuses an attention mask that requires a gradient: the pre-run check asks
    it with one (``bias_requires_grad``), so ``flash`` with this learned bias is refused before
    any run; use ``sdpa`` or ``math``.

    Args:
        cfg: the model config (``n_heads``, ``d_model``).
    """

    num_buckets: int = 32
    max_distance: int = 128

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__(cfg)
        self.table = nn.Embedding(self.num_buckets, cfg.n_heads)  # (buckets, H)
        nn.init.normal_(self.table.weight, mean=0.0, std=cfg.d_model**-0.5)
        self._buckets: dict[tuple[int, int, torch.device], Tensor] = {}

    def buckets(self, t: int, s: int) -> Tensor:
        """(T, S) int64 buckets; query ``i`` sits at position ``i + S - T`` (the last T keys)."""
        dev = self.table.weight.device
        if (t, s, dev) not in self._buckets:
            q_pos = torch.arange(s - t, s, device=dev)  # (T,)
            k_pos = torch.arange(s, device=dev)  # (S,)
            rel = k_pos[None, :] - q_pos[:, None]  # (T, S): key position - query position
            self._buckets[t, s, dev] = relative_position_bucket(rel, False, self.num_buckets, self.max_distance)
        return self._buckets[t, s, dev]

    def attention_bias(self, t: int, s: int) -> Tensor:
        """(H, T, S) float32, differentiable in the table; keys after the query get bucket 0,
        which the kernel masks (always causal)."""
        # indexing the (H, buckets) table: half the time of an embedding lookup and a permute
        return self.table.weight.t()[:, self.buckets(t, s)].float()  # (H, buckets)[:, (T, S)] -> (H, T, S)
