"""The shape contract of each component family on the component alone.

One function per :class:`~harness.modules.ComponentFamily` key, ``fn(name, cfg)`` with the host model's config: it
raises :class:`~harness.contracts.result.ContractFailed` naming what came out wrong and returns a one-line summary of
what it checked. B batch, T length, H heads, D head dim, C model width.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

import harness.modules as m
from harness.contracts.result import ContractFailed

B, T = 2, 8


def expect(what: str, got: Tensor, shape: tuple[int, ...], dtype: torch.dtype) -> None:
    """Check that ``got`` is a tensor of ``shape`` and ``dtype``.

    Raises:
        ContractFailed: naming ``what``, the shape and dtype expected and what came instead.
    """
    if not isinstance(got, Tensor):
        raise ContractFailed(f"{what}: expected a tensor of shape {shape}, got {type(got).__name__}")
    if tuple(got.shape) != shape or got.dtype != dtype:
        raise ContractFailed(f"{what}: expected {shape} {dtype}, got {tuple(got.shape)} {got.dtype}")


def position(name: str, cfg: m.TransformerConfig) -> str:
    """Positional encoding ``name`` keeps shapes and dtypes in its hooks; its bias and position limit are well formed.

    ``add_to_embeddings`` keeps (B, T, C) and ``rotate_qk`` keeps q and k (B, H, T, D), each in float32 and bfloat16;
    ``attention_bias(T, T)`` is None or (H, T, T) float32; ``max_positions(cfg)`` is None or a positive int.
    """
    C, H, D = cfg.d_model, cfg.n_heads, cfg.d_head
    pe = m.POSITIONAL.get(name)(cfg)
    for dtype in (torch.float32, torch.bfloat16):
        expect(f"add_to_embeddings {dtype}", pe.add_to_embeddings(torch.randn(B, T, C, dtype=dtype)), (B, T, C), dtype)
        for which, x in zip("qk", pe.rotate_qk(*(torch.randn(B, H, T, D, dtype=dtype) for _ in "qk")), strict=True):
            expect(f"rotate_qk {which} {dtype}", x, (B, H, T, D), dtype)
    bias = pe.attention_bias(T, T)
    if bias is not None:
        expect("attention_bias(T, T)", bias, (H, T, T), torch.float32)
    limit = type(pe).max_positions(cfg)
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise ContractFailed(f"max_positions(cfg) must be None or a positive int, got {limit!r}")
    return (
        "hooks keep (B, T, C) and (B, H, T, D) in float32 and bfloat16; bias "
        f"{'(H, T, S) float32' if bias is not None else 'none'}"
    )


def kernel(name: str, cfg: m.TransformerConfig) -> str:
    """Kernel ``name`` maps q, k, v (B, H, T, D) float32 to an output (B, H, T, D) float32, and no weights.

    Built with no dropout, the default scale and the config's mask fill; no weights were asked for, so none may come.
    """
    H, D = cfg.n_heads, cfg.d_head
    attn = m.KERNELS.get(name)(dropout=0.0, scale=None, mask_fill=cfg.mask_fill)
    out, weights = attn(*(torch.randn(B, H, T, D) for _ in range(3)))
    expect("out", out, (B, H, T, D), torch.float32)
    if weights is not None:
        raise ContractFailed(f"returned attention weights {tuple(weights.shape)} though need_weights=False")
    return "(B, H, T, D) q, k, v -> (B, H, T, D) float32, no weights unless asked"


def qkv(name: str, cfg: m.TransformerConfig) -> str:
    """Projection ``name`` (with biases) maps x (B, T, C) to a tuple (q, k, v), each (B, T, C) float32."""
    out = m.QKV.get(name)(cfg.d_model, bias=True)(torch.randn(B, T, cfg.d_model))
    if not isinstance(out, tuple) or len(out) != 3:
        raise ContractFailed(f"expected (q, k, v), got {type(out).__name__} of length {len(out)}")
    for which, x in zip("qkv", out, strict=True):
        expect(which, x, (B, T, cfg.d_model), torch.float32)
    return "(B, T, C) -> q, k, v, each (B, T, C)"


def scale(name: str, cfg: m.TransformerConfig) -> str:
    """Scale ``name`` is a positive finite number for the config's ``d_model`` and ``n_heads``."""
    value = m.SCALES.get(name)(cfg.d_model, cfg.n_heads)
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ContractFailed(f"scale({cfg.d_model}, {cfg.n_heads}) must be a positive finite number, got {value!r}")
    return f"scale({cfg.d_model}, {cfg.n_heads}) = {value:.4g}"


def mask_fill(name: str, cfg: m.TransformerConfig) -> str:
    """Mask fill ``name`` is a negative number (or -inf) for float32, bfloat16 and float16."""
    fill = m.MASK_FILLS.get(name)
    values = {str(d).removeprefix("torch."): fill(d) for d in (torch.float32, torch.bfloat16, torch.float16)}
    bad = {d: v for d, v in values.items() if not isinstance(v, (int, float)) or not v < 0}
    if bad:
        raise ContractFailed(f"a mask fill must be a negative number (or -inf) per dtype, got {bad}")
    return "fill per dtype: " + ", ".join(f"{d} {v:.4g}" for d, v in values.items())


def head_split(name: str, cfg: m.TransformerConfig) -> str:
    """Head split ``name`` maps (B, T, C) to (B, H, T, D) float32, and its ``merge`` is the exact inverse."""
    C, H, D = cfg.d_model, cfg.n_heads, cfg.d_head
    split, x = m.HEAD_SPLITS.get(name), torch.randn(B, T, C)
    expect("split", heads := split.split(x, H), (B, H, T, D), torch.float32)
    if not torch.equal(split.merge(heads), x):
        raise ContractFailed("merge(split(x)) != x: merge is not the inverse of split")
    return "(B, T, C) -> (B, H, T, D), merge the exact inverse"


def norm(name: str, cfg: m.TransformerConfig) -> str:
    """Norm ``name`` (of width C) maps (B, T, C) to (B, T, C) of the same dtype, in float32 and bfloat16."""
    C, layer = cfg.d_model, m.NORMS.get(name)(cfg.d_model)
    for dtype in (torch.float32, torch.bfloat16):
        expect(f"{dtype}", layer.to(dtype)(torch.randn(B, T, C, dtype=dtype)), (B, T, C), dtype)
    return "(B, T, C) -> (B, T, C) in float32 and bfloat16"


def norm_position(name: str, cfg: m.TransformerConfig) -> str:
    """Block ``name``, built from ``cfg`` and given its positional encoding, maps (B, T, C) to (B, T, C) float32."""
    C, block = cfg.d_model, m.BLOCKS.get(name)(cfg)
    expect("block", block(torch.randn(B, T, C), m.POSITIONAL.get(cfg.position)(cfg)), (B, T, C), torch.float32)
    return "block (B, T, C) -> (B, T, C)"


def activation(name: str, cfg: m.TransformerConfig) -> str:
    """The FFN with activation ``name`` maps (B, T, C) to (B, T, C) float32, position-wise.

    The FFN: :class:`~harness.modules.FeedForward` of hidden width ``cfg.ffn_dim``, in eval mode. Position-wise:
    position 2 alone gives the output it gets within the sequence (to atol 1e-6, rtol 1e-5).
    """
    m.ACTIVATIONS.get(name)
    ffn, x = m.FeedForward(cfg.d_model, cfg.ffn_dim, name).eval(), torch.randn(B, T, cfg.d_model)
    expect("ffn", y := ffn(x), (B, T, cfg.d_model), torch.float32)
    if not torch.allclose(ffn(x[:, 2:3]), y[:, 2:3], atol=1e-6, rtol=1e-5):
        raise ContractFailed("the FFN is not position-wise: position 2 alone differs from position 2 in the sequence")
    return "FFN (B, T, C) -> (B, T, C), position-wise"


def init(name: str, cfg: m.TransformerConfig) -> str:
    """Initialisation ``name`` fills an ``nn.Linear`` in place, shapes and dtype kept, with a finite non-zero weight.

    The layer maps C to ``cfg.ffn_dim``, with a bias; its parameters must stay the same tensors.
    """
    C, linear = cfg.d_model, torch.nn.Linear(cfg.d_model, cfg.ffn_dim)
    weight, bias = linear.weight, linear.bias
    with torch.no_grad():
        m.INITS.get(name)(linear)
    if linear.weight is not weight or linear.bias is not bias:
        raise ContractFailed("the initialisation replaced the layer's parameters instead of filling them in place")
    expect("weight", linear.weight, (cfg.ffn_dim, C), torch.float32)
    expect("bias", linear.bias, (cfg.ffn_dim,), torch.float32)
    if not torch.isfinite(weight).all() or not weight.abs().sum():
        raise ContractFailed("the initialised weight is not finite, or all zero")
    return "nn.Linear filled in place, shapes and dtype kept, finite non-zero weight"
