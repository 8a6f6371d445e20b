"""Positional encodings, built as ``POSITIONAL.get(name)(cfg)`` from a ``TransformerConfig``.

One instance is shared by all layers. Each variant overrides the one hook where it acts: ``add_to_embeddings``
(sinusoidal, learned, learned_clamp), ``rotate_qk`` (rope) or ``attention_bias`` (alibi); ``nope`` none.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from harness.modules.config import TransformerConfig
from harness.registry import POSITIONAL


class PositionalEncoding(nn.Module):
    """Base: every hook is the identity. A variant overrides only what it needs.

    Args:
        cfg: The model's config; :meth:`check_config` raises ``ValueError`` for one the encoding cannot serve.
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.check_config(cfg)
        self.n_heads, self.d_model, self.d_head = cfg.n_heads, cfg.d_model, cfg.d_head

    @classmethod
    def check_config(cls, cfg: TransformerConfig) -> None:
        """Raise ``ValueError`` if ``cfg`` cannot be used with this encoding (called by the config)."""

    @classmethod
    def max_positions(cls, cfg: TransformerConfig) -> int | None:
        """Longest sequence the encoding can represent; ``None`` for any length."""

    @classmethod
    def adds_bias(cls) -> bool:
        """Whether this encoding overrides :meth:`attention_bias` (kernels without a bias refuse it)."""
        return cls.attention_bias is not PositionalEncoding.attention_bias

    @classmethod
    def bias_requires_grad(cls, cfg: TransformerConfig) -> bool:
        """Whether :meth:`attention_bias` is trained (as T5's learned table; not ALiBi's slopes).

        A kernel that takes only a fixed mask (``flash`` on CPU) refuses it before any run. Asks an encoding built on
        the CPU, its random draws undone, for a 1 x 1 bias (the ``meta`` device would import torch's compiler: ~1.5 s
        in every plan).
        """
        if not cls.adds_bias():
            return False
        with torch.random.fork_rng(devices=[]), torch.enable_grad():
            bias = cls(cfg).attention_bias(1, 1)
        return bias is not None and bias.requires_grad

    def add_to_embeddings(self, x: Tensor) -> Tensor:
        """(B, T, C) -> (B, T, C)."""
        return x

    def rotate_qk(self, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
        """(B, H, T, D), (B, H, S, D) -> same shapes."""
        return q, k

    def attention_bias(self, t: int, s: int) -> Tensor | None:
        """Additive float32 bias of shape (H, T, S) for T queries and S keys, or ``None``."""
        return None


@POSITIONAL.builtin("sinusoidal")
class Sinusoidal(PositionalEncoding):
    """Fixed sinusoids added to the embeddings (Vaswani et al., 2017, §3.5).

    ``PE[p, 2i] = sin(p / 10000^(2i/C))``, ``PE[p, 2i+1] = cos(p / 10000^(2i/C))``.

    Computed for any length on every forward, in float64 rounded once to float32. An odd ``C``
    drops the last cosine column.
    """

    def add_to_embeddings(self, x: Tensor) -> Tensor:
        """``x`` (B, T, C) plus ``PE`` of positions ``0 .. T - 1``, in ``x``'s dtype: (B, T, C)."""
        t, device = x.size(1), x.device
        pos = torch.arange(t, dtype=torch.float64, device=device)[:, None]  # (T, 1)
        two_i = torch.arange(0, self.d_model, 2, dtype=torch.float64, device=device)  # (ceil(C/2),)
        angle = pos * torch.exp(two_i * (-math.log(10000.0) / self.d_model))  # (T, ceil(C/2))
        pe = torch.empty(t, self.d_model, dtype=torch.float64, device=device)  # (T, C)
        pe[:, 0::2] = torch.sin(angle)
        pe[:, 1::2] = torch.cos(angle[:, : self.d_model // 2])
        return x + pe.float().to(x.dtype)


@POSITIONAL.builtin("learned")
class Learned(PositionalEncoding):
    """A trained table of absolute position embeddings (GPT-style; Gehring et al., 2017).

    One row per position up to ``cfg.max_len``, initialised N(0, ``cfg.learned_init_std``).

    Positions beyond ``max_len`` raise ``ValueError``. Rows never seen in training keep their
    initial values exactly (no weight decay on embeddings, a zero gradient, a zero AdamW update):
    beyond the training length it reads random rows, the extrapolation failure the harness measures.
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__(cfg)
        self.max_len: int = cfg.max_len  # type: ignore[assignment]  # checked by check_config
        self.table = nn.Embedding(self.max_len, cfg.d_model)
        nn.init.normal_(self.table.weight, mean=0.0, std=cfg.learned_init_std)

    @classmethod
    def check_config(cls, cfg: TransformerConfig) -> None:
        """Raise ``ValueError`` without ``cfg.max_len``, the number of table rows."""
        if cfg.max_len is None:
            raise ValueError("position 'learned' needs max_len (the number of table rows)")

    @classmethod
    def max_positions(cls, cfg: TransformerConfig) -> int | None:
        """``cfg.max_len``: the table has no row beyond it."""
        return cfg.max_len

    def add_to_embeddings(self, x: Tensor) -> Tensor:
        """``x`` (B, T, C) plus the table row each position reads (:meth:`rows`), in ``x``'s dtype: (B, T, C).

        Raises:
            ValueError: For T beyond ``max_len``.
        """
        t = x.size(1)
        if t > self.max_len:
            raise ValueError(f"sequence length T={t} exceeds max_len={self.max_len} of the learned table")
        return x + self.table(self.rows(t, x.device)).to(x.dtype)  # (T, C) broadcast

    def rows(self, t: int, device: torch.device) -> Tensor:
        """(T,): the table row each position reads, its own."""
        return torch.arange(t, device=device)


@POSITIONAL.builtin("learned_n01")
class LearnedN01(Learned):
    """``learned`` initialised N(0, 1), ``nn.Embedding``'s default, as the write-ups' own code builds its table.

    Their code: ``self.pos_embedding = nn.Embedding(max_len, d_model)``, no init call. Rows at the scale of the token
    embeddings (unit scale here), where ``learned``'s N(0, 0.02) rows are 50x smaller. ``cfg.learned_init_std`` is
    not read; otherwise as ``learned`` (rows never trained keep their draws, so beyond the training length it reads
    unit-scale noise).
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__(cfg)
        nn.init.normal_(self.table.weight, mean=0.0, std=1.0)


@POSITIONAL.builtin("learned_clamp")
class LearnedClamp(Learned):
    """``learned`` with every position beyond the training length reading the row of the last trained position.

    ``row(p) = min(p, T_train - 1)``, as implementations that clamp position ids do. ``T_train`` (a buffer) is the
    longest sequence of a training step so far; before any, every position reads its own row. Otherwise as
    ``learned`` (same table, same ``ValueError``).
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__(cfg)
        self.register_buffer("trained_len", torch.zeros((), dtype=torch.long))

    def rows(self, t: int, device: torch.device) -> Tensor:
        """(T,): ``min(p, T_train - 1)``; ``T_train`` grows to ``t`` in a training step."""
        if self.training and torch.is_grad_enabled() and t > int(self.trained_len):
            self.trained_len.fill_(t)
        pos = torch.arange(t, device=device)
        trained = int(self.trained_len)
        return pos.clamp(max=trained - 1) if trained else pos


@POSITIONAL.builtin("rope")
class RoPE(PositionalEncoding):
    """Rotary position embedding (Su et al., 2021, RoFormer), rotate-half convention of GPT-NeoX / LLaMA (Hugging Face).

    Dimension ``i`` is paired with ``i + D/2`` and the pair is rotated by ``p * base^(-2i/D)``, base 10000, applied
    to q and k of every head in every layer.

    Angles, cos and sin are computed in float64 and rounded once to float32, whatever the dtype of
    q/k (float32 angles are off by up to 7e-5 in cos/sin at position 4096); the rotation is done
    in float32 and cast back. Requires an even head dim. No cache of cos/sin.
    """

    base: float = 10000.0

    @classmethod
    def check_config(cls, cfg: TransformerConfig) -> None:
        """Raise ``ValueError`` for an odd head dim: dimensions are rotated in pairs."""
        if cfg.d_head % 2:
            raise ValueError(f"position 'rope' needs an even head dim, got d_head={cfg.d_head}")

    def cos_sin(self, positions: Tensor) -> tuple[Tensor, Tensor]:
        """(N,) integer positions -> cos and sin of their angles, (N, D) float32 each."""
        two_i = torch.arange(0, self.d_head, 2, dtype=torch.float64, device=positions.device)
        inv_freq = self.base ** (-two_i / self.d_head)  # (D/2,)
        angle = positions.double()[:, None] * inv_freq[None, :]  # (N, D/2)
        angle = torch.cat([angle, angle], dim=-1)  # (N, D): pair i and i + D/2 share an angle
        return angle.cos().float(), angle.sin().float()

    def _rotate(self, x: Tensor, positions: Tensor) -> Tensor:
        cos, sin = self.cos_sin(positions)  # (N, D) each, float32
        xf = x.float()
        x1, x2 = xf.chunk(2, dim=-1)
        return (xf * cos + torch.cat([-x2, x1], dim=-1) * sin).to(x.dtype)  # rotate_half: [x1, x2] -> [-x2, x1]

    def rotate_qk(self, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
        """Rotate q (B, H, T, D) at positions ``S - T .. S - 1`` and k (B, H, S, D) at ``0 .. S - 1``; shapes kept."""
        t, s = q.size(-2), k.size(-2)
        k_pos = torch.arange(s, device=k.device)  # (S,)
        return self._rotate(q, k_pos[s - t :]), self._rotate(k, k_pos)


def alibi_slopes(n: int) -> list[float]:
    """Per-head ALiBi slopes, as ``get_slopes`` of ofirpress/attention_with_linear_biases.

    ``n`` of them, for ``n`` heads: the geometric sequence with start and ratio ``2^(-8/n)`` for ``n`` a power of
    two; otherwise those of the closest lower power of two ``m``, then every other slope of ``2m``, ``n - m`` of
    them.

    Raises:
        ValueError: For ``n`` < 1.
    """
    if n < 1:
        raise ValueError(f"number of heads must be positive, got {n}")
    m = 2 ** math.floor(math.log2(n))
    start = 2.0 ** (-8.0 / m)
    slopes = [start ** (i + 1) for i in range(m)]
    if m == n:
        return slopes
    return slopes + alibi_slopes(2 * m)[0::2][: n - m]


@POSITIONAL.builtin("alibi")
class ALiBi(PositionalEncoding):
    """Attention with Linear Biases (Press et al., ICLR 2022): a fixed per-head penalty proportional to distance.

    The penalty is proportional to query-key distance, ``bias[h, i, j] = -slope_h * (i - j)``, added to the scores;
    no parameters; slopes as in the paper (:func:`alibi_slopes`). The bias is float32 on the module's device;
    entries above the diagonal (``j > i``) are left positive: the kernel masks them.
    """

    slopes: Tensor

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__(cfg)
        self.slope_values = alibi_slopes(cfg.n_heads)
        self.register_buffer("slopes", torch.tensor(self.slope_values, dtype=torch.float32), persistent=False)

    def _apply(self, fn, recurse=True):
        # Module.to(dtype) / .half() would round the slopes; rebuild them exactly in float32.
        super()._apply(fn, recurse)
        self.slopes = torch.tensor(self.slope_values, dtype=torch.float32, device=self.slopes.device)
        return self

    def attention_bias(self, t: int, s: int) -> Tensor:
        """(H, T, S) float32; query ``i`` sits at position ``i + S - T``."""
        dev = self.slopes.device
        q_pos = torch.arange(s - t, s, device=dev, dtype=torch.float32)  # (T,)
        k_pos = torch.arange(s, device=dev, dtype=torch.float32)  # (S,)
        distance = q_pos[:, None] - k_pos[None, :]  # (T, S)
        return -self.slopes[:, None, None] * distance  # (H, T, S)


@POSITIONAL.builtin("nope")
class NoPE(PositionalEncoding):
    """No positional information (Kazemnejad et al., NeurIPS 2023).

    A causal decoder can still infer positions from the mask alone. Every hook is the identity.
    """
