"""Probes: causal leakage, attention on masked keys and gradient norms per layer."""

import pytest
import torch
import torch.nn.functional as F

from harness.modules import BLOCKS, MASK_FILLS, TransformerConfig, TransformerLM
from harness.modules.probes import causal_leakage, init_gradients, masked_attention
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
def test_init_gradients_match_autograd_on_the_same_parameters(block):
    """Each norm against torch.autograd.grad on the parameters it names: every parameter of block
    i, and block i's FFN output weight alone (W^(2), one per block whatever the norm position)."""
    m = model(norm_position=block, n_layers=3)
    idx, _ = batch()
    got = init_gradients(m, idx, idx)
    loss = F.cross_entropy(m(idx).flatten(0, 1), idx.flatten())
    for i, b in enumerate(m.blocks):
        grads = torch.autograd.grad(loss, list(b.parameters()), retain_graph=True)
        assert got.block[i] == pytest.approx(torch.cat([g.flatten() for g in grads]).norm().item(), rel=1e-5)
        (w2,) = torch.autograd.grad(loss, [b.ffn.fc_out.weight], retain_graph=True)
        assert got.ffn_out[i] == pytest.approx(w2.norm().item(), rel=1e-5)
        assert 0 < got.ffn_out[i] < got.block[i]
    assert all(p.grad is None for p in m.parameters())


@pytest.mark.parametrize("block", BLOCKS.names())
def test_stream_growth_is_the_last_block_output_over_the_first_block_input(block):
    m = model(norm_position=block, n_layers=3)
    idx, _ = batch()
    with torch.no_grad():
        x0 = m.pos.add_to_embeddings(m.tok_emb(idx) * 16**0.5)  # (B, T, C)
        x = x0
        for b in m.blocks:
            x = b(x, m.pos)
    assert init_gradients(m, idx, idx).stream_growth == pytest.approx((x.norm() / x0.norm()).item(), rel=1e-5)


def test_pre_ln_stream_grows_with_depth_under_xavier_only():
    """Xiong et al. (2020, Lemma 2): at Xavier initialisation a Pre-LN stream's squared norm grows
    linearly with depth; at N(0, 0.02) with tokens at unit scale each sub-layer adds next to
    nothing (d_model 64: std 0.02 against 1/sqrt(64))."""
    idx = torch.randint(0, V, (8, 12), generator=torch.Generator().manual_seed(0))
    kw = {"d_model": 64, "n_heads": 4, "n_layers": 12, "norm_position": "pre"}
    assert init_gradients(m := model(**kw, init="xavier"), idx, idx).stream_growth > 1.5, m.cfg
    assert init_gradients(model(**kw), idx, idx).stream_growth == pytest.approx(1.0, abs=0.05)
