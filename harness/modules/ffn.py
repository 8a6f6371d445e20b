"""Position-wise feed-forward network and its activations (``ACTIVATIONS.get(name)()``); an
activation class with ``gated = True`` (``swiglu``) takes a hidden vector twice as wide."""

from __future__ import annotations

from typing import ClassVar

import torch.nn.functional as F
from torch import Tensor, nn

from harness.registry import ACTIVATIONS

# ReLU, as in Vaswani et al. (2017), Eq. 2.
ACTIVATIONS.builtin("relu")(nn.ReLU)
# GELU (Hendrycks & Gimpel, 2016), exact erf form, as in BERT and GPT-2 (which uses the tanh form).
ACTIVATIONS.builtin("gelu")(nn.GELU)


@ACTIVATIONS.builtin("swiglu")
class SwiGLU(nn.Module):
    """The gated linear unit with Swish (SiLU) of Shazeer (2020), "GLU Variants Improve
    Transformer", Eq. 6: ``FFN(x) = (Swish(x W) * (x V)) W2``. Here ``[x W, x V]`` is the output
    of the FFN's input projection, split in halves: ``silu(a) * b``, (..., 2F) -> (..., F).

    The FFN then has three C x F matrices instead of two: 1.5x the parameters at the same
    ``d_ff`` (Shazeer and LLaMA shrink it to 2/3). Unlike Shazeer we keep the projections' biases.
    """

    gated: ClassVar[bool] = True

    def forward(self, x: Tensor) -> Tensor:
        """(..., 2F) -> (..., F)."""
        a, b = x.chunk(2, dim=-1)
        return F.silu(a) * b


class FeedForward(nn.Module):
    """``Linear(C, d_ff) -> activation -> Linear(d_ff, C) -> dropout`` (Vaswani et al., 2017,
    §3.3), applied to each position independently. With a gated activation (``swiglu``) the
    input projection is ``Linear(C, 2 d_ff)``. (B, T, C) -> (B, T, C); ``d_ff`` is the hidden
    width F (after the gate). Raises ``UnknownNameError`` for an unknown activation.
    """

    def __init__(self, d_model: int, d_ff: int, activation: str = "gelu", dropout: float = 0.0) -> None:
        super().__init__()
        act_cls = ACTIVATIONS.get(activation)
        width = 2 * d_ff if getattr(act_cls, "gated", False) else d_ff
        self.fc_in = nn.Linear(d_model, width)
        self.act = act_cls()
        self.fc_out = nn.Linear(d_ff, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.drop(self.fc_out(self.act(self.fc_in(x))))  # hidden (B, T, d_ff) or (B, T, 2 d_ff)
