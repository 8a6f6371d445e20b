"""Normalisation layers, built as ``NORMS.get(name)(d_model)``, (..., C) -> (..., C); a norm class
says whether it rescales with the class attribute ``normalises`` (default True)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from harness.registry import NORMS

# Layer normalisation (Ba et al., 2016): centre and scale over C, learned gain and bias, eps 1e-5.
NORMS.builtin("layernorm")(nn.LayerNorm)


@NORMS.builtin("rmsnorm")
class RMSNorm(nn.Module):
    """Root-mean-square layer normalisation (Zhang & Sennrich, NeurIPS 2019):
    ``y = x / sqrt(mean(x^2) + eps) * g``, no centring and no bias. Normalises in float32 and
    casts back to the input dtype (as LLaMA does); ``eps`` is added to the mean square.
    """

    def __init__(self, d_model: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: Tensor) -> Tensor:
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (xf * self.weight.float()).to(x.dtype)

    def extra_repr(self) -> str:
        return f"{self.weight.numel()}, eps={self.eps}"


@NORMS.builtin("none")
class NoNorm(nn.Identity):
    """No normalisation, ``y = x`` (the arm without LayerNorm of claim ``layernorm-needed``).
    With Pre-LN the residual stream and the final projection then see unnormalised activations;
    with Post-LN the block is a plain residual block. ``d_model`` is unused.
    """

    normalises = False

    def __init__(self, d_model: int, eps: float = 0.0) -> None:
        super().__init__()
