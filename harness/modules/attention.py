"""Causal attention: kernels (how softmax(q k^T / sqrt(D) + bias) v is computed) and the
multi-head layer that wires projections, positional hooks and a kernel.

Kernels are built as ``KERNELS.get(name)(dropout=p)``; every kernel is causal and takes the
additive float bias (H, T, S) of the positional encoding. Queries are the last T of the S key
positions (T == S without a KV cache, which this package does not implement).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from harness.modules.positional import PositionalEncoding
from harness.registry import Registry

KERNELS: Registry[type[AttentionKernel]] = Registry("attention kernel")


def causal_mask(t: int, s: int, device: torch.device | None = None) -> Tensor:
    """Boolean (T, S), True where key ``j`` lies after query ``i`` (at position ``i + S - T``).

    Raises:
        ValueError: ``T > S`` (some queries would have no key).
    """
    if t > s:
        raise ValueError(f"causal attention needs T <= S, got T={t}, S={s}")
    return torch.ones(t, s, dtype=torch.bool, device=device).triu(s - t + 1)


class AttentionKernel(nn.Module):
    """Base: causal scaled dot-product attention with an optional additive bias.

    Args:
        dropout: dropout probability on the attention weights, applied only in training.
    """

    def __init__(self, dropout: float = 0.0) -> None:
        super().__init__()
        self.dropout = dropout

    def forward(
        self, q: Tensor, k: Tensor, v: Tensor, bias: Tensor | None = None, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """Causal attention.

        Args:
            q: (B, H, T, D) queries.
            k: (B, H, S, D) keys.
            v: (B, H, S, D) values.
            bias: additive float (H, T, S), cast to the scores' dtype; ``None`` for no bias.
            need_weights: also return the attention weights.

        Returns:
            out (B, H, T, D) and weights (B, H, T, S) before dropout, or ``None``.
        """
        raise NotImplementedError


@KERNELS.register("math")
class MathAttention(AttentionKernel):
    """Explicit scores, as written in Vaswani et al. (2017), Eq. 1: ``q @ k^T / sqrt(D) + bias``,
    causal mask filled with -inf in the scores' dtype, softmax in float32 then cast back.
    The reference kernel; the only one that returns weights. Memory O(B H T S).
    """

    def forward(
        self, q: Tensor, k: Tensor, v: Tensor, bias: Tensor | None = None, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        t, s = q.size(-2), k.size(-2)
        scores = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5  # (B, H, T, S)
        if bias is not None:
            scores = scores + bias.to(scores.dtype)  # (H, T, S) broadcast over B
        scores = scores.masked_fill(causal_mask(t, s, q.device), float("-inf"))
        weights = F.softmax(scores.float(), dim=-1).to(q.dtype)  # (B, H, T, S)
        out = F.dropout(weights, self.dropout, self.training) @ v  # (B, H, T, D)
        return out, (weights if need_weights else None)


@KERNELS.register("sdpa")
class SDPAttention(AttentionKernel):
    """``torch.nn.functional.scaled_dot_product_attention``, which dispatches to a fused kernel
    (FlashAttention, memory-efficient or math) for the device and dtype. Without a bias and with
    T == S it uses ``is_causal=True``; otherwise the bias and the causal mask are folded into one
    float ``attn_mask`` (-inf above the diagonal). Does not return weights.
    """

    def forward(
        self, q: Tensor, k: Tensor, v: Tensor, bias: Tensor | None = None, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        if need_weights:
            raise ValueError("kernel 'sdpa' does not return attention weights; use kernel 'math'")
        t, s = q.size(-2), k.size(-2)
        p = self.dropout if self.training else 0.0
        if bias is None and t == s:
            return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True), None
        mask = causal_mask(t, s, q.device)  # (T, S)
        if bias is None:
            attn_mask = torch.zeros(t, s, dtype=q.dtype, device=q.device)  # (T, S)
        else:
            attn_mask = bias.to(q.dtype)  # (H, T, S)
        attn_mask = attn_mask.masked_fill(mask, float("-inf"))
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=p), None


class MultiHeadAttention(nn.Module):
    """Causal multi-head self-attention (Vaswani et al., 2017, §3.2.2) with separate q/k/v
    projections, positional hooks (``rotate_qk``, ``attention_bias``) and a registered kernel.

    Args:
        d_model: C, the model width.
        n_heads: H; must divide ``d_model``.
        kernel: a ``KERNELS`` name.
        dropout: on the attention weights (inside the kernel) and on the output projection.
        bias: whether the projections have biases.

    Raises:
        ValueError: ``d_model`` not divisible by ``n_heads``.
        UnknownNameError: unknown kernel.
    """

    def __init__(
        self, d_model: int, n_heads: int, kernel: str = "sdpa", dropout: float = 0.0, bias: bool = True
    ) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.kernel = KERNELS.get(kernel)(dropout=dropout)
        self.resid_drop = nn.Dropout(dropout)

    def forward(
        self, x: Tensor, pos: PositionalEncoding, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """Self-attention over ``x``.

        Args:
            x: (B, T, C).
            pos: the positional encoding shared by all layers.
            need_weights: also return the weights (kernel 'math' only).

        Returns:
            out (B, T, C) and weights (B, H, T, T) or ``None``.
        """
        B, T, C = x.shape
        H, D = self.n_heads, C // self.n_heads
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        k = self.k_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        v = self.v_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        q, k = pos.rotate_qk(q, k)
        bias = pos.attention_bias(T, T)  # (H, T, T) or None
        y, weights = self.kernel(q, k, v, bias, need_weights)  # (B, H, T, D)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.resid_drop(self.out_proj(y)), weights
