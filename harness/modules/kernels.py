"""Attention kernels: how causal ``softmax(q k^T * scale + bias) v`` is computed.

Each is built as ``KERNELS.get(name)(dropout=p, scale=s, mask_fill=f)`` and called as
:meth:`AttentionKernel.forward`. A query whose visible keys are all hidden (a left-padding position) has a *fully
masked row*.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from harness.modules.config import TransformerConfig
from harness.registry import KERNELS, MASK_FILLS, POSITIONAL

# The value written into masked scores, as a function of the scores' dtype.
MASK_FILLS.builtin("-inf")(lambda dtype: float("-inf"))  # exact: exp(-inf) = 0; a fully masked row is NaN
MASK_FILLS.builtin("-1e9")(lambda dtype: -1e9)  # overflows float16: masked_fill raises
MASK_FILLS.builtin("-1e4")(lambda dtype: -1e4)  # fits float16 (max 65504)
MASK_FILLS.builtin("dtype_min")(lambda dtype: torch.finfo(dtype).min)  # as Hugging Face


def hidden_keys(t: int, s: int, key_padding_mask: Tensor | None, device: torch.device) -> Tensor:
    """True where a query may not see a key: the causal mask, or'ed with padding keys.

    The causal mask hides key ``j`` after query ``i``, which sits at position ``i + S - T``.

    Args:
        t: The number of queries T, the last T of the S positions.
        s: The number of keys S.
        key_padding_mask: (B, S) bool, True at padding keys; or ``None``.
        device: Where the mask is made.

    Returns:
        (T, S) bool without ``key_padding_mask``, (B, 1, T, S) with a (B, S) one.

    Raises:
        ValueError: For ``T > S`` (a query with no key).
    """
    if t > s:
        raise ValueError(f"causal attention needs T <= S, got T={t}, S={s}")
    mask = torch.ones(t, s, dtype=torch.bool, device=device).triu(s - t + 1)  # (T, S)
    if key_padding_mask is None:
        return mask
    return mask[None, None] | key_padding_mask[:, None, None, :].to(torch.bool)  # (B, 1, T, S)


class AttentionKernel(nn.Module):
    """Base: causal scaled dot-product attention with an optional additive bias.

    ``backends``: the backends that computed its outputs so far.

    Args:
        dropout: Dropout probability on the weights, in training only.
        scale: Multiplies ``q k^T`` (``None``: ``1 / sqrt(D)``, Vaswani et al., 2017).
        mask_fill: Names the value written into masked scores (kernels with ``honours_mask_fill`` only); an
            unknown name raises ``UnknownNameError``.
    """

    softmax: ClassVar[bool] = True  # computes softmax attention (agrees with ``math``)
    honours_mask_fill: ClassVar[bool] = False  # writes ``mask_fill`` into explicit scores
    returns_weights: ClassVar[bool] = False  # honours ``need_weights``

    def __init__(self, dropout: float = 0.0, scale: float | None = None, mask_fill: str = "-inf") -> None:
        super().__init__()
        self.dropout, self.scale = dropout, scale
        self.mask_fill = MASK_FILLS.canonical(mask_fill)
        self.backends: set[str] = set()

    @classmethod
    def check_config(cls, cfg: TransformerConfig) -> None:
        """Raise ``ValueError`` for a model config this kernel cannot compute faithfully."""
        if not cls.honours_mask_fill and MASK_FILLS.canonical(cfg.mask_fill) != "-inf":
            raise ValueError(
                f"attention.mask_fill={cfg.mask_fill} needs explicit scores (kernel 'math'); kernel "
                f"'{cfg.kernel}' masks on its own"
            )

    @classmethod
    def check_available(
        cls, device: torch.device | str, dtype: torch.dtype, with_mask=False, dropout=0.0, mask_requires_grad=False
    ):
        """Raise ``ValueError`` if the kernel cannot run on ``device`` with inputs of ``dtype``; the base always can.

        Args:
            device: The device the run uses.
            dtype: The dtype of q, k and v.
            with_mask: With a float attention mask: a bias or padding.
            dropout: With attention dropout in training.
            mask_requires_grad: With a mask that requires a gradient: a learned bias,
                ``PositionalEncoding.bias_requires_grad``.
        """

    def scale_for(self, q: Tensor) -> float:
        """The factor of ``q k^T`` for queries ``q`` (..., D): ``scale``, else ``1 / sqrt(D)``."""
        return self.scale if self.scale is not None else q.size(-1) ** -0.5

    def forward(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        bias: Tensor | None = None,
        need_weights: bool = False,
        key_padding_mask: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Causal attention of the queries over the keys and values, with an additive bias and padding.

        Args:
            q: (B, H, T, D) queries, the last T of the S key positions.
            k: (B, H, S, D) keys.
            v: (B, H, S, D) values.
            bias: (H, T, S) additive float bias, or ``None``.
            need_weights: Whether to return the weights.
            key_padding_mask: (B, S) bool, True for keys no query may see; or ``None``.

        Returns:
            out (B, H, T, D) and, with ``need_weights``, the weights (B, H, T, S) before dropout, else ``None``.

        Raises:
            ValueError: With ``need_weights``, from a kernel that returns none.
            NotImplementedError: Always, in this base class: each kernel computes it its own way.
        """
        raise NotImplementedError


@KERNELS.builtin("math")
class MathAttention(AttentionKernel):
    """Explicit scores, as written in Vaswani et al. (2017), Eq. 1, and as a hand-written implementation does it.

    ``scores = q @ k^T * scale + bias`` in the inputs' dtype, then ``scores.masked_fill(hidden, fill)`` *in the
    scores' dtype* (so ``-1e9`` on float16 scores raises torch's overflow error, and ``-inf`` makes a fully masked
    row NaN), softmax in float32 then cast back. The reference kernel; the only one that returns weights (with its
    subclass ``additive_mask``). Memory O(B H T S).
    """

    honours_mask_fill = True
    returns_weights = True
    backend = "math"  # what ``backends`` gets

    def forward(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        bias: Tensor | None = None,
        need_weights: bool = False,
        key_padding_mask: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Explicit scores masked by :meth:`masked`, softmax in float32; as :meth:`AttentionKernel.forward`."""
        scores = (q @ k.transpose(-2, -1)) * self.scale_for(q)  # (B, H, T, S)
        if bias is not None:
            scores = scores + bias.to(scores.dtype)  # (H, T, S) broadcast over B
        hidden = hidden_keys(q.size(-2), k.size(-2), key_padding_mask, q.device)  # (T, S) or (B, 1, T, S)
        weights = F.softmax(self.masked(scores, hidden).float(), dim=-1).to(q.dtype)  # (B, H, T, S)
        out = F.dropout(weights, self.dropout, self.training) @ v  # (B, H, T, D)
        self.backends.add(self.backend)
        return out, (weights if need_weights else None)

    def masked(self, scores: Tensor, hidden: Tensor) -> Tensor:
        """``scores`` (B, H, T, S) with ``mask_fill`` written where ``hidden``, in the scores' dtype."""
        return scores.masked_fill(hidden, MASK_FILLS.get(self.mask_fill)(scores.dtype))


@KERNELS.builtin("additive_mask")
class AdditiveMaskAttention(MathAttention):
    """Explicit scores with the mask *added*, as the write-up on Transformer internals passes its causal mask.

    The write-up calls ``nn.MultiheadAttention(...)(src, src, src, attn_mask=src_mask)`` with a float (S, S)
    ``src_mask``, 0 where a key is visible and the fill (``-inf`` there; ``-1e9`` the alternative it warns against)
    where it is hidden. As torch does with such a mask, it is built in float32, cast to the scores' dtype and added:
    ``scores = q @ k^T * scale + bias + mask``; softmax in float32, cast back. So ``-1e9`` becomes ``-inf`` in
    float16 (it overflows in the cast; ``masked_fill`` of ``math`` raises instead) and stays finite in bfloat16
    (-998244352), where ``exp`` of it is exactly 0 beside any visible key: no weight reaches a future key. A fully
    masked row (left padding) is NaN with ``-inf``, uniform with a finite fill. Returns weights.
    """

    backend = "additive_mask"

    def masked(self, scores: Tensor, hidden: Tensor) -> Tensor:
        """``scores`` plus the float mask: 0 where visible, ``mask_fill`` in float32 cast to the scores' dtype."""
        fill = MASK_FILLS.get(self.mask_fill)(torch.float32)
        return scores + torch.zeros(hidden.shape, device=scores.device).masked_fill(hidden, fill).to(scores.dtype)


@KERNELS.builtin("sdpa")
class SDPAttention(AttentionKernel):
    """``torch.nn.functional.scaled_dot_product_attention``, which dispatches to a fused kernel.

    Torch picks the kernel for the device, dtype and mask: ``is_causal=True`` without a bias or padding and with
    T == S, else one float ``attn_mask`` (-inf where hidden). Fully masked rows are zeros on CPU. Does not return
    weights. ``backends`` gets the backend torch picks (``torch._fused_sdp_choice``).
    """

    forced: ClassVar[SDPBackend | None] = None  # the only backend torch may use

    def forward(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        bias: Tensor | None = None,
        need_weights: bool = False,
        key_padding_mask: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Attention by ``F.scaled_dot_product_attention`` (the ``forced`` backend only, if set): out and ``None``.

        Arguments and shapes as :meth:`AttentionKernel.forward`.

        Raises:
            ValueError: With ``need_weights``: this kernel returns no weights.
        """
        if need_weights:
            raise ValueError(f"kernel '{type(self).__name__}' does not return attention weights; use kernel 'math'")
        t, s = q.size(-2), k.size(-2)
        p = self.dropout if self.training else 0.0
        attn_mask = None
        if bias is not None or key_padding_mask is not None or t != s:
            hidden = hidden_keys(t, s, key_padding_mask, q.device)  # (T, S) or (B, 1, T, S)
            # (1, H, T, S), not (H, T, S): flash on CPU takes 2-D or 4-D masks only
            base = bias.to(q.dtype)[None] if bias is not None else torch.zeros(t, s, dtype=q.dtype, device=q.device)
            attn_mask = base.masked_fill(hidden, float("-inf"))  # (T, S), (1, H, T, S) or (B, H|1, T, S)
        causal, scale = attn_mask is None, self.scale_for(q)
        with sdpa_kernel(self.forced) if self.forced is not None else contextlib.nullcontext():
            try:  # private API: best effort only
                choice = torch._fused_sdp_choice(q, k, v, attn_mask, p, causal, scale=scale)
                self.backends.add(SDPBackend(choice).name.lower())
            except (AttributeError, RuntimeError, TypeError, ValueError):
                self.backends.add("unknown")
            return F.scaled_dot_product_attention(q, k, v, attn_mask, p, causal, scale=scale), None


@KERNELS.builtin("flash")
class FlashAttention(SDPAttention):
    """SDPA restricted to the FlashAttention backend (Dao et al., 2022), raising instead of falling back.

    Where torch has no flash kernel for the device, dtype or mask, it raises. On CPU (torch 2.13) flash runs in
    float32, bfloat16 and float16, with or without masks, never with dropout; on CUDA it needs float16/bfloat16 and
    no float mask. :meth:`check_available` tries it before a run.
    """

    forced = SDPBackend.FLASH_ATTENTION

    @classmethod
    def check_available(
        cls, device: torch.device | str, dtype: torch.dtype, with_mask=False, dropout=0.0, mask_requires_grad=False
    ):
        """Run one tiny forced-flash forward and backward on ``device`` in ``dtype``, as training would.

        With a mask if ``with_mask`` or ``mask_requires_grad``, with ``dropout``: CPU flash has no dropout, and no
        mask that requires a gradient (a learned bias).

        Raises:
            ValueError: Where torch has no flash kernel there; it says what to use instead.
        """
        q = torch.randn(1, 1, 8, 16, device=device, dtype=dtype, requires_grad=True)
        masked = with_mask or mask_requires_grad
        mask = torch.zeros(8, 8, device=device, dtype=dtype, requires_grad=mask_requires_grad) if masked else None
        # torch warns its reasons (UserWarning, several lines) and raises "No available kernel":
        # the reasons go into the one-line refusal, never to the terminal on their own
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    F.scaled_dot_product_attention(q, q, q, mask, dropout, is_causal=mask is None).sum().backward()
                return
            except RuntimeError as exc:
                error = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        # each warning as one line, without torch's "(Triggered internally at ...)"
        reasons = [" ".join(str(w.message).split()).split(" (Triggered internally")[0].strip() for w in caught]
        reasons = [r for r in reasons if r and not r.endswith("not used because:")]
        extra = " and a learned attention bias (a mask that requires a gradient)" if mask_requires_grad else ""
        extra = extra or (" and an attention mask" if with_mask else "")
        extra += f" and dropout {dropout}" if dropout else ""
        raise ValueError(
            f"kernel 'flash' is not available on {device} with {dtype}{extra} "
            f"({'; '.join([error, *reasons])}); use attention.kernel=sdpa, or a precision/device flash "
            "supports"
        )


@KERNELS.builtin("linear")
class LinearAttention(AttentionKernel):
    """Causal linear attention (Katharopoulos et al., ICML 2020, "Transformers are RNNs").

    Softmax replaced by the kernel ``phi(q) . phi(k)``, ``phi(x) = elu(x) + 1`` (Eq. 7):

        ``out_i = phi(q_i)^T S_i / (phi(q_i)^T z_i + eps)``, ``S_i = sum_{j<=i} phi(k_j) v_j^T``,
        ``z_i = sum_{j<=i} phi(k_j)`` (Eqs. 5-6 with the causal mask of Eq. 8-9).

    Computed chunk by chunk (``chunk`` c): within a chunk the masked (c, c) product, across chunks
    the running state ``S`` (D x D) and normaliser ``z``: time O(T (c + D) D), linear in T. In
    float32 whatever the input dtype, cast back. Padding keys contribute nothing; a query that sees
    no key returns 0.

    Does not do (and the config refuses): an additive bias (ALiBi), attention dropout (``dropout``
    must be 0), a score scale (``phi`` is not scale-equivariant: ``scale`` is ignored), a
    ``mask_fill`` other than ``-inf``; nor does it return weights.

    Args:
        dropout: Must be 0 (else ``ValueError``).
        scale: Ignored.
        mask_fill: As :class:`AttentionKernel`'s.
        chunk: The chunk length c.
    """

    softmax = False
    eps = 1e-6
    no_dropout = "kernel 'linear' has no attention weights to drop out; set model.dropout=0"

    def __init__(
        self, dropout: float = 0.0, scale: float | None = None, mask_fill: str = "-inf", chunk: int = 64
    ) -> None:
        if dropout:
            raise ValueError(self.no_dropout)
        super().__init__(0.0, None, mask_fill)
        self.chunk = chunk

    @classmethod
    def check_config(cls, cfg: TransformerConfig) -> None:
        """Raise ``ValueError`` for what the base refuses, and for what this kernel does not do.

        That is: a position that adds an attention bias, a dropout, or a score scale other than ``d_head``.
        """
        super().check_config(cfg)
        if POSITIONAL.get(cfg.position).adds_bias():
            raise ValueError(
                f"kernel 'linear' cannot add the attention bias of position '{cfg.position}'; use rope, "
                "sinusoidal, learned or nope"
            )
        if cfg.dropout:
            raise ValueError(cls.no_dropout)
        if cfg.scale != "d_head":
            raise ValueError(f"kernel 'linear' has no score scale; attention.scale={cfg.scale} would be ignored")

    def forward(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        bias: Tensor | None = None,
        need_weights: bool = False,
        key_padding_mask: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Causal linear attention in float32, chunk by chunk, cast back; as :meth:`AttentionKernel.forward`.

        Returns:
            out (B, H, T, Dv), 0 for a query that sees no key (padding keys contribute nothing), and ``None``.

        Raises:
            ValueError: With ``need_weights``, a ``bias``, or ``T > S``.
        """
        if need_weights:
            raise ValueError("kernel 'linear' does not return attention weights; use kernel 'math'")
        if bias is not None:
            raise ValueError("kernel 'linear' cannot add an attention bias")
        B, H, T, D = q.shape
        S, Dv = k.size(-2), v.size(-1)
        if T > S:
            raise ValueError(f"causal attention needs T <= S, got T={T}, S={S}")
        fq, fk, vf = F.elu(q.float()) + 1, F.elu(k.float()) + 1, v.float()  # phi(q), phi(k)
        if key_padding_mask is not None:
            fk = fk * (~key_padding_mask.to(torch.bool))[:, None, :, None]  # (B, H, S, D): hidden keys are 0
        fq = F.pad(fq, (0, 0, S - T, 0))  # (B, H, S, D): queries sit at the last T positions
        c = min(self.chunk, S)
        n = -(-S // c)
        pad = n * c - S  # zero keys and queries at the end; dropped below
        fq, fk, vf = (F.pad(x, (0, 0, 0, pad)).view(B, H, n, c, -1) for x in (fq, fk, vf))  # (B, H, n, c, *)
        kv = fk.transpose(-2, -1) @ vf  # (B, H, n, D, Dv): each chunk's sum of phi(k) v^T
        z = fk.sum(-2)  # (B, H, n, D)
        # the sums over the earlier chunks: (B, H, n, D, Dv) and (B, H, n, D)
        kv_prev, z_prev = (torch.cat([torch.zeros_like(x[:, :, :1]), x.cumsum(2)[:, :, :-1]], dim=2) for x in (kv, z))
        a = (fq @ fk.transpose(-2, -1)).tril()  # (B, H, n, c, c): within the chunk, j <= i
        num = fq @ kv_prev + a @ vf  # (B, H, n, c, Dv)
        den = (fq * z_prev[..., None, :]).sum(-1) + a.sum(-1)  # (B, H, n, c)
        out = (num / (den[..., None] + self.eps)).reshape(B, H, n * c, Dv)  # (B, H, S + pad, Dv)
        self.backends.add("linear")
        return out[:, :, S - T : S].to(q.dtype), None  # (B, H, T, Dv)
