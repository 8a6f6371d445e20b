"""Probes: causal leakage, attention on masked keys and gradient norms per layer."""

import pytest
import torch

from harness.modules import BLOCKS, MASK_FILLS, TransformerConfig, TransformerLM
from harness.modules.probes import causal_leakage, grad_norm_per_layer, masked_attention
from helpers.kernels import available_kernels

V = 11


def model(**kw) -> TransformerLM:
    torch.manual_seed(0)
    base = {"vocab_size": V, "d_model": 16, "n_heads": 2, "n_layers": 2, "max_len": 16, "kernel": "math"}
    return TransformerLM(TransformerConfig(**{**base, **kw})).eval()


def batch(left_pad: int = 0):
    idx = torch.randint(1, V, (3, 10), generator=torch.Generator().manual_seed(1))
    pad = torch.zeros_like(idx, dtype=torch.bool)
    pad[0, :left_pad] = True
    idx[pad] = 0
    return idx, (pad if left_pad else None)


@pytest.mark.parametrize("kernel", available_kernels("cpu"))
def test_no_leak_without_padding(kernel):
    idx, _ = batch()
    out = causal_leakage(model(kernel=kernel), idx, t=4)
    assert out == {"leak_logits": 0.0, "leak_grad": 0.0, "nonfinite_logits": 0.0, "nonfinite_grad": 0.0}


def test_leak_probe_detects_a_non_causal_model():
    m = model()
    for block in m.blocks:  # a mask that hides nothing: every query sees the future
        block.attn.kernel.forward = lambda q, k, v, bias=None, need_weights=False, key_padding_mask=None: (
            (q @ k.transpose(-2, -1)).softmax(-1) @ v,
            None,
        )
    out = causal_leakage(m, batch()[0], t=4)
    assert out["leak_logits"] > 1e-4 and out["leak_grad"] > 1e-6


@pytest.mark.parametrize("fill", MASK_FILLS.names())
def test_fully_masked_rows_per_fill(fill):
    """-inf: NaN rows that spread to the whole sequence; finite fills: the padding rows attend
    uniformly to every key, future ones included (a leak confined to padding positions)."""
    idx, pad = batch(left_pad=4)
    m = model(mask_fill=fill)
    attn = masked_attention(m, idx, pad)
    leak = causal_leakage(m, idx, t=5, key_padding_mask=pad)
    assert attn["attn_fully_masked_rows"] == pytest.approx(4 / 30)
    assert attn["attn_masked_max"] == 0.0  # rows with a visible key never attend to hidden ones
    if fill == "-inf":
        assert attn["attn_nonfinite_rows"] > 0 and leak["nonfinite_logits"] > 0
    else:
        assert attn["attn_fully_masked_mass"] == pytest.approx(1.0)
        assert attn["attn_nonfinite_rows"] == 0 and leak["nonfinite_logits"] == 0
        assert leak["leak_logits"] > 0  # through the padding rows
        assert leak["leak_logits_real"] == 0.0 and leak["leak_grad_real"] == 0.0  # never into real positions


def test_masked_attention_needs_weights():
    idx, pad = batch(left_pad=2)
    out = masked_attention(model(kernel="sdpa"), idx, pad)
    assert all(v != v for v in out.values())  # NaN: sdpa returns no weights


@pytest.mark.parametrize("block", BLOCKS.names())
def test_grad_norm_per_layer(block):
    m = model(norm_position=block, n_layers=3)
    idx, _ = batch()
    norms = grad_norm_per_layer(m, idx, idx)
    assert len(norms) == 3 and all(n > 0 for n in norms)
    assert all(p.grad is None for p in m.parameters())


def test_post_ln_gradients_grow_toward_the_top_at_init():
    """Xiong et al. (2020): at init Post-LN's gradient norm is largest in the last layers."""
    idx = torch.randint(0, V, (16, 12), generator=torch.Generator().manual_seed(0))
    post = grad_norm_per_layer(model(norm_position="post", n_layers=6), idx, idx)
    pre = grad_norm_per_layer(model(norm_position="pre", n_layers=6), idx, idx)
    assert post[-1] / post[0] > pre[-1] / pre[0]
