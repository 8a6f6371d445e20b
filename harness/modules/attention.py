"""Causal multi-head self-attention, its parts each chosen by name from a registry.

The parts: projections (``QKV``), head split (``HEAD_SPLITS``), score scale (``SCALES``) and kernel (``KERNELS``,
:mod:`harness.modules.kernels`).
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from harness.modules.positional import PositionalEncoding
from harness.registry import HEAD_SPLITS, KERNELS, QKV, SCALES

SCALES.builtin("d_head")(lambda d_model, n_heads: (d_model // n_heads) ** -0.5)  # Vaswani et al. (2017), Eq. 1
SCALES.builtin("d_model")(lambda d_model, n_heads: d_model**-0.5)  # the claimed mistake (claim scale-dk)


@QKV.builtin("separate")
class SeparateQKV(nn.Module):
    """Three projections ``q = x Wq + bq``, ``k = x Wk + bk``, ``v = x Wv + bv`` (3 C^2 weights).

    Every ``QKV`` entry is built as ``(d_model, bias)`` and maps x (B, T, C) to q, k, v (B, T, C).

    Args:
        d_model: The model width C.
        bias: Whether the projections add a bias.
    """

    def __init__(self, d_model: int, bias: bool = True) -> None:
        super().__init__()
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``x`` (B, T, C) through the three projections: q, k, v, each (B, T, C)."""
        return self.q_proj(x), self.k_proj(x), self.v_proj(x)


@QKV.builtin("fused")
class FusedQKV(nn.Module):
    """One (C, 3C) projection split into q, k, v (GPT-2's ``c_attn``).

    The same function as ``separate``, as one matrix multiply (rows ``[Wq; Wk; Wv]`` of the weight).

    Args:
        d_model: The model width C.
        bias: Whether the projection adds a bias.
    """

    def __init__(self, d_model: int, bias: bool = True) -> None:
        super().__init__()
        self.qkv_proj = nn.Linear(d_model, 3 * d_model, bias=bias)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``x`` (B, T, C) through the one projection, (B, T, 3C), cut in three: q, k, v, each (B, T, C)."""
        return self.qkv_proj(x).chunk(3, dim=-1)  # (B, T, 3C) -> 3 x (B, T, C)


@QKV.builtin("shared")
class SharedQKV(nn.Module):
    """One projection ``y = x W + b`` used as q, k and v alike (C^2 weights instead of 3 C^2).

    What claim ``qkv-shared`` says removes the difference between "what I look for" and "what I offer". The scores
    ``y y^T`` are then symmetric before the mask and positional hooks.

    Args:
        d_model: The model width C.
        bias: Whether the projection adds a bias.
    """

    def __init__(self, d_model: int, bias: bool = True) -> None:
        super().__init__()
        self.proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``x`` (B, T, C) through the one projection: ``(y, y, y)``, the same (B, T, C) tensor as q, k and v."""
        y = self.proj(x)
        return y, y, y


class HeadSplit:
    """How (B, T, C) is cut into heads (B, H, T, D) and put back, and how the heads are attended.

    A subclass defines the static methods ``split(x, n_heads)`` and ``merge(y)``, its exact inverse. ``attend`` is
    how the split heads are attended: by the kernel, over the T positions of each head, unless a subclass says
    otherwise.
    """

    @staticmethod
    def attend(kernel, q: Tensor, k: Tensor, v: Tensor, bias=None, need_weights=False, key_padding_mask=None):
        """Attend the split heads by ``kernel(q, k, v, bias, need_weights, key_padding_mask)``.

        q, k, v (B, H, T, D) as ``split`` gave them -> out (B, H, T, D) and the weights or ``None``, as the kernel
        (:class:`AttentionKernel`) returns them.
        """
        return kernel(q, k, v, bias, need_weights, key_padding_mask)


@HEAD_SPLITS.builtin("correct")
class CorrectSplit(HeadSplit):
    """The split ``x.view(B, T, H, D).transpose(1, 2)`` (Vaswani et al., 2017; nanoGPT).

    Head h holds channels ``h*D .. h*D + D - 1`` of every position.
    """

    @staticmethod
    def split(x: Tensor, n_heads: int) -> Tensor:
        """``x`` (B, T, C) cut into ``n_heads`` heads: (B, H, T, D), head h holding channels ``h*D .. h*D + D - 1``."""
        return x.unflatten(-1, (n_heads, -1)).transpose(1, 2)  # (B, T, H, D) -> (B, H, T, D)

    @staticmethod
    def merge(y: Tensor) -> Tensor:
        """The heads ``y`` (B, H, T, D) put back side by side: (B, T, C), the exact inverse of :meth:`split`."""
        return y.transpose(1, 2).flatten(2)  # (B, T, H, D) -> (B, T, C)


@HEAD_SPLITS.builtin("transpose_missing")
class TransposeMissingSplit(HeadSplit):
    """The bug of claim ``head-split-bug``, kept as a negative control: ``x.view(B, H, T, D)`` without the transpose.

    Shapes are right, so nothing fails; but "position" i of head h is the piece ``(h*T + i) mod H`` of token
    ``(h*T + i) // H``. Token order is kept within a head, so the model stays causal (a worse function, not a leak),
    but which tokens a head sees depends on T (the ``prefix`` contract of ``ablate check`` fails). Merge is its
    inverse.
    """

    @staticmethod
    def split(x: Tensor, n_heads: int) -> Tensor:
        """``x`` (B, T, C) viewed as ``n_heads`` heads (B, H, T, D) without the transpose: right in shape only."""
        B, T, _ = x.shape
        return x.reshape(B, n_heads, T, -1)  # (B, H, T, D) in shape only

    @staticmethod
    def merge(y: Tensor) -> Tensor:
        """``y`` (B, H, T, D) viewed back as (B, T, C): the exact inverse of :meth:`split`."""
        B, _, T, _ = y.shape
        return y.reshape(B, T, -1)  # (B, T, C)


@HEAD_SPLITS.builtin("split_no_transpose")
class SplitNoTransposeSplit(CorrectSplit):
    """The head-split bug as the write-up on multi-head attention writes it, kept as a negative control.

    Claim ``head-split-bug``; the write-up's code::

        q = self.Wq(query).view(B, T, self.num_heads, -1)   # (B, T, H, D): no .transpose(1, 2)
        k = self.Wk(key).view(B, T, self.num_heads, -1)
        v = self.Wv(value).view(B, T, self.num_heads, -1)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(k.size(-1))   # (B, T, H, H)

    so ``softmax(scores) @ v`` (B, T, H, D) mixes each token's own H heads and never another
    token: attention carries nothing between positions (causal trivially, whatever the mask),
    and the model is a per-position network fed by its token and the positional encoding. The
    write-up's causal mask has shape (T, T) and cannot apply to (H, H) scores, so none is applied;
    the scale is the kernel's (``1 / sqrt(D)`` by default, as ``math.sqrt(k.size(-1))``). Split and
    merge are ``correct``'s (the (B, H, T, D) tensor is the buggy view transposed, so the positional
    hooks see token positions); the bug is in :meth:`attend`, which computes in float32 and casts
    back, with the kernel's dropout on the weights. An attention bias (ALiBi) has no (H, H) form:
    ``ValueError``; ``key_padding_mask`` is moot (no token sees another); no weights are returned
    (they are (B, T, H, H), not over keys): ``ValueError`` with ``need_weights``.
    """

    @staticmethod
    def attend(kernel, q: Tensor, k: Tensor, v: Tensor, bias=None, need_weights=False, key_padding_mask=None):
        """Attend each token's own H heads to one another, as the write-up does: no token sees another.

        Args:
            kernel: The :class:`AttentionKernel` whose score scale (``scale_for``) and dropout are used.
            q: (B, H, T, D) queries, as :meth:`split` gave them.
            k: (B, H, T, D) keys.
            v: (B, H, T, D) values.
            bias: Must be ``None``: an attention bias over positions has no (H, H) form.
            need_weights: Must be False: the weights are (B, T, H, H), not over keys.
            key_padding_mask: Unused: no token sees another.

        Returns:
            out (B, H, T, D) in ``q``'s dtype (computed in float32), to be merged as ``correct``'s, and ``None``.

        Raises:
            ValueError: For a ``bias`` or ``need_weights``.
        """
        if bias is not None:
            raise ValueError(
                "head split 'split_no_transpose' attends over heads: an attention bias over positions does not apply"
            )
        if need_weights:
            raise ValueError("head split 'split_no_transpose' has weights over heads (B, T, H, H), not over keys")
        qt, kt, vt = (t.transpose(1, 2).float() for t in (q, k, v))  # (B, T, H, D): the write-up's view
        scores = (qt @ kt.transpose(-2, -1)) * kernel.scale_for(q)  # (B, T, H, H)
        weights = F.softmax(scores, dim=-1)  # over the token's own heads
        out = F.dropout(weights, kernel.dropout, kernel.training) @ vt  # (B, T, H, D)
        return out.transpose(1, 2).to(q.dtype), None  # (B, H, T, D), merged as ``correct``


class MultiHeadAttention(nn.Module):
    """Causal multi-head self-attention (Vaswani et al., 2017, §3.2.2) with the positional hooks.

    Args:
        d_model: The model width C.
        n_heads: The number of heads H; must divide ``d_model``.
        kernel: A ``KERNELS`` entry: how the attention is computed.
        dropout: Dropout probability on the attention weights and on the output projection.
        bias: Whether the projections (q, k, v and output) add a bias.
        qkv: A ``QKV`` entry: the q, k, v projections.
        scale: A ``SCALES`` entry: the score scale.
        mask_fill: A ``MASK_FILLS`` entry: the value written into masked scores.
        head_split: A ``HEAD_SPLITS`` entry: how (B, T, C) is cut into heads.

    Raises:
        ValueError: If ``n_heads`` does not divide ``d_model``.
        UnknownNameError: For a name no registry holds.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        kernel: str = "sdpa",
        dropout: float = 0.0,
        bias: bool = True,
        qkv: str = "separate",
        scale: str = "d_head",
        mask_fill: str = "-inf",
        head_split: str = "correct",
    ) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        self.qkv = QKV.get(qkv)(d_model, bias=bias)
        self.head_split = HEAD_SPLITS.get(head_split)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.kernel = KERNELS.get(kernel)(
            dropout=dropout, scale=SCALES.get(scale)(d_model, n_heads), mask_fill=mask_fill
        )
        self.resid_drop = nn.Dropout(dropout)

    def forward(
        self, x: Tensor, pos: PositionalEncoding, need_weights: bool = False, key_padding_mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None]:
        """Causal self-attention of ``x`` (B, T, C): out (B, T, C), and the weights with ``need_weights``.

        Args:
            x: (B, T, C) input.
            pos: The positional encoding shared by all layers (its ``rotate_qk`` and ``attention_bias`` hooks).
            need_weights: Whether to return the attention weights (a kernel that returns them only: 'math',
                'additive_mask').
            key_padding_mask: (B, T) bool, True for padding tokens no query may attend to.

        Returns:
            out (B, T, C) and, with ``need_weights``, the weights (B, H, T, T), else ``None``.
        """
        q, k, v = (self.head_split.split(t, self.n_heads) for t in self.qkv(x))  # (B, H, T, D) each
        q, k = pos.rotate_qk(q, k)
        bias = pos.attention_bias(x.size(1), x.size(1))  # (H, T, T) or None
        y, weights = self.head_split.attend(self.kernel, q, k, v, bias, need_weights, key_padding_mask)  # (B, H, T, D)
        y = self.head_split.merge(y)  # (B, T, C)
        return self.resid_drop(self.out_proj(y)), weights
