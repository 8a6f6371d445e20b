"""Position-wise feed-forward network and its activations (``ACTIVATIONS.get(name)()``)."""
from __future__ import annotations

from torch import Tensor, nn

from harness.registry import Registry

ACTIVATIONS: Registry[type[nn.Module]] = Registry("activation")

# ReLU, as in Vaswani et al. (2017), Eq. 2.
ACTIVATIONS.register("relu")(nn.ReLU)
# GELU (Hendrycks & Gimpel, 2016), exact erf form, as in BERT and GPT-2 (which uses the tanh form).
ACTIVATIONS.register("gelu")(nn.GELU)


class FeedForward(nn.Module):
    """``Linear(C, d_ff) -> activation -> Linear(d_ff, C) -> dropout`` (Vaswani et al., 2017,
    §3.3), applied to each position independently. Ungated: a gated unit (SwiGLU) would need its
    own module, not just an activation.

    Args:
        d_model: C.
        d_ff: hidden width.
        activation: an ``ACTIVATIONS`` name.
        dropout: on the output.

    Raises:
        UnknownNameError: unknown activation.
    """

    def __init__(self, d_model: int, d_ff: int, activation: str = "gelu", dropout: float = 0.0) -> None:
        super().__init__()
        self.fc_in = nn.Linear(d_model, d_ff)
        self.act = ACTIVATIONS.get(activation)()
        self.fc_out = nn.Linear(d_ff, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        """(B, T, C) -> (B, T, C)."""
        return self.drop(self.fc_out(self.act(self.fc_in(x))))  # hidden (B, T, d_ff)
