"""Causal linear attention (Katharopoulos et al., ICML 2020, "Transformers are RNNs"), kernel
``linear``. Registered in ``KERNELS`` when :mod:`harness.modules` is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import Tensor

from harness.modules.kernels import KERNELS, AttentionKernel
from harness.modules.positional import POSITIONAL

if TYPE_CHECKING:
    from harness.modules.config import TransformerConfig


def feature_map(x: Tensor) -> Tensor:
    """``phi(x) = elu(x) + 1`` (Katharopoulos et al., 2020, Eq. 7), positive everywhere."""
    return F.elu(x) + 1


@KERNELS.register("linear")
class LinearAttention(AttentionKernel):
    """Softmax replaced by the kernel ``phi(q) . phi(k)``, ``phi = elu + 1``:

        ``out_i = phi(q_i)^T S_i / (phi(q_i)^T z_i + eps)``, ``S_i = sum_{j<=i} phi(k_j) v_j^T``,
        ``z_i = sum_{j<=i} phi(k_j)`` (Eqs. 5-6 with the causal mask of Eq. 8-9).

    Computed chunk by chunk (chunk size ``chunk``): within a chunk the masked (c, c) product,
    across chunks the running state ``S`` (D x D) and normaliser ``z``, so memory is
    O(B H (T c + T/c D^2)) and time O(T (c + D) D), linear in T. Computed in float32 whatever the
    input dtype (prefix sums in bfloat16 lose too much), cast back. Padding keys (``key_padding_mask``)
    contribute nothing; a query that sees no key returns 0.

    Does not do: an additive bias (ALiBi), attention dropout, a score scale (``phi`` is not
    scale-equivariant; ``attention.scale`` is ignored by the paper's formula), returning weights.
    The config refuses the first three (:meth:`check_config`).

    Args:
        dropout: must be 0.
        scale: ignored (see above); accepted for the common constructor.
        mask_fill: must be ``-inf`` (there are no scores to fill).
        chunk: chunk length c.
    """

    softmax = False
    eps = 1e-6

    def __init__(
        self, dropout: float = 0.0, scale: float | None = None, mask_fill: str = "-inf", chunk: int = 64
    ) -> None:
        if dropout:
            raise ValueError("kernel 'linear' has no attention weights to drop out; set model.dropout=0")
        super().__init__(0.0, None, mask_fill)
        self.chunk = chunk

    @classmethod
    def check_config(cls, cfg: TransformerConfig) -> None:
        super().check_config(cfg)
        if POSITIONAL.get(cfg.position).adds_bias():
            raise ValueError(
                f"kernel 'linear' cannot add the attention bias of position '{cfg.position}'; "
                "use rope, sinusoidal, learned or nope"
            )
        if cfg.dropout:
            raise ValueError("kernel 'linear' has no attention weights to drop out; set model.dropout=0")
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
        if need_weights:
            raise ValueError("kernel 'linear' does not return attention weights; use kernel 'math'")
        if bias is not None:
            raise ValueError("kernel 'linear' cannot add an attention bias")
        B, H, T, D = q.shape
        S, Dv = k.size(-2), v.size(-1)
        if T > S:
            raise ValueError(f"causal attention needs T <= S, got T={T}, S={S}")
        fq, fk, vf = feature_map(q.float()), feature_map(k.float()), v.float()
        if key_padding_mask is not None:
            fk = fk * (~key_padding_mask.to(torch.bool))[:, None, :, None]  # (B, H, S, D): hidden keys are 0
        fq = F.pad(fq, (0, 0, S - T, 0))  # (B, H, S, D): queries sit at the last T positions
        c = min(self.chunk, S)
        n = -(-S // c)
        pad = n * c - S  # zero keys and queries at the end; dropped below
        fq, fk, vf = (F.pad(x, (0, 0, 0, pad)).view(B, H, n, c, -1) for x in (fq, fk, vf))  # (B, H, n, c, *)
        kv = fk.transpose(-2, -1) @ vf  # (B, H, n, D, Dv): each chunk's sum of phi(k) v^T
        z = fk.sum(-2)  # (B, H, n, D)
        zero_kv, zero_z = torch.zeros_like(kv[:, :, :1]), torch.zeros_like(z[:, :, :1])
        kv_prev = torch.cat([zero_kv, kv.cumsum(2)[:, :, :-1]], dim=2)  # (B, H, n, D, Dv): earlier chunks
        z_prev = torch.cat([zero_z, z.cumsum(2)[:, :, :-1]], dim=2)  # (B, H, n, D)
        a = (fq @ fk.transpose(-2, -1)).tril()  # (B, H, n, c, c): within the chunk, j <= i
        num = fq @ kv_prev + a @ vf  # (B, H, n, c, Dv)
        den = (fq * z_prev[..., None, :]).sum(-1) + a.sum(-1)  # (B, H, n, c)
        out = (num / (den[..., None] + self.eps)).reshape(B, H, n * c, Dv)  # (B, H, S + pad, Dv)
        self.backends.add("linear")
        return out[:, :, S - T : S].to(q.dtype), None  # (B, H, T, Dv)
