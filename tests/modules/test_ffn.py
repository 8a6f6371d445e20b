"""Feed-forward network over every registered activation."""
import pytest
import torch

from harness.modules import ACTIVATIONS, FeedForward
from harness.registry import UnknownNameError


@pytest.mark.parametrize("activation", ACTIVATIONS.names())
def test_feedforward_shape_and_position_wise(activation):
    ffn = FeedForward(8, 32, activation).eval()
    x = torch.randn(2, 5, 8)
    y = ffn(x)
    assert y.shape == x.shape
    torch.testing.assert_close(ffn(x[:, 2:3]), y[:, 2:3])  # each position independently


def test_feedforward_matches_formula():
    ffn = FeedForward(8, 32, "relu")
    x = torch.randn(4, 8)
    want = torch.relu(x @ ffn.fc_in.weight.T + ffn.fc_in.bias) @ ffn.fc_out.weight.T + ffn.fc_out.bias
    torch.testing.assert_close(ffn(x), want)


def test_unknown_activation_suggests():
    with pytest.raises(UnknownNameError, match="gelu"):
        FeedForward(8, 32, "gelus")
