"""Feed-forward network over every registered activation (shapes and acting on each position alone
are a contract: tests/contracts/test_components.py)."""

import pytest
import torch

from harness.modules import ACTIVATIONS, FeedForward
from harness.registry import UnknownNameError


def test_feedforward_matches_formula():
    ffn = FeedForward(8, 32, "relu")
    x = torch.randn(4, 8)
    want = torch.relu(x @ ffn.fc_in.weight.T + ffn.fc_in.bias) @ ffn.fc_out.weight.T + ffn.fc_out.bias
    torch.testing.assert_close(ffn(x), want)


def test_swiglu_matches_shazeer_formula():
    """Shazeer (2020), Eq. 6: (Swish(xW) * xV) W2, with our biases."""
    torch.manual_seed(0)
    ffn = FeedForward(8, 12, "swiglu")
    with torch.no_grad():
        for p in ffn.parameters():
            p.normal_()
    x = torch.randn(4, 8)
    W, V = ffn.fc_in.weight[:12], ffn.fc_in.weight[12:]
    bW, bV = ffn.fc_in.bias[:12], ffn.fc_in.bias[12:]
    a, b = x @ W.T + bW, x @ V.T + bV
    want = (a * torch.sigmoid(a) * b) @ ffn.fc_out.weight.T + ffn.fc_out.bias
    torch.testing.assert_close(ffn(x), want)


@pytest.mark.parametrize("activation", ACTIVATIONS.names())
def test_parameter_count_documented(activation):
    """Ungated: 2 C F weights; gated (swiglu): 3 C F, i.e. 1.5x at the same d_ff (plus biases)."""
    c, f = 8, 32
    n = sum(p.numel() for p in FeedForward(c, f, activation).parameters())
    gated = getattr(ACTIVATIONS.get(activation), "gated", False)
    assert n == (3 * c * f + 2 * f + c if gated else 2 * c * f + f + c)


def test_unknown_activation_suggests():
    with pytest.raises(UnknownNameError, match="gelu"):
        FeedForward(8, 32, "gelus")
