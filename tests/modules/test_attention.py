"""Attention kernels against each other and against torch.nn.MultiheadAttention."""
import pytest
import torch
from torch import nn

from harness.modules import KERNELS, POSITIONAL, MultiHeadAttention, TransformerConfig

C, H, T = 16, 4, 7


def positional(name: str, n_heads: int = H):
    cfg = TransformerConfig(vocab_size=5, d_model=C, n_heads=n_heads, max_len=32, position=name)
    return POSITIONAL.get(name)(cfg)


def mha_pair(kernel_a: str, kernel_b: str) -> tuple[MultiHeadAttention, MultiHeadAttention]:
    torch.manual_seed(0)
    a = MultiHeadAttention(C, H, kernel=kernel_a).eval()
    b = MultiHeadAttention(C, H, kernel=kernel_b).eval()
    b.load_state_dict(a.state_dict())
    return a, b


@pytest.mark.parametrize("kernel", KERNELS.names())
def test_kernel_matches_torch_multihead_attention(kernel):
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(C, H, bias=True, batch_first=True).eval()
    nn.init.normal_(ref.in_proj_bias)
    nn.init.normal_(ref.out_proj.bias)
    ours = MultiHeadAttention(C, H, kernel=kernel).eval()
    wq, wk, wv = ref.in_proj_weight.chunk(3)
    bq, bk, bv = ref.in_proj_bias.chunk(3)
    with torch.no_grad():
        for proj, w, b in [(ours.q_proj, wq, bq), (ours.k_proj, wk, bk), (ours.v_proj, wv, bv)]:
            proj.weight.copy_(w)
            proj.bias.copy_(b)
        ours.out_proj.weight.copy_(ref.out_proj.weight)
        ours.out_proj.bias.copy_(ref.out_proj.bias)
    x = torch.randn(3, T, C)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)  # True: not allowed
    want, want_w = ref(x, x, x, attn_mask=mask, need_weights=True, average_attn_weights=False)
    got, _ = ours(x, positional("nope"))
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
    if kernel == "math":
        _, got_w = ours(x, positional("nope"), need_weights=True)
        torch.testing.assert_close(got_w, want_w, atol=1e-5, rtol=0)


@pytest.mark.parametrize("position", POSITIONAL.names())
@pytest.mark.parametrize("kernel", [k for k in KERNELS.names() if k != "math"])
def test_kernel_matches_math(kernel, position):
    ref, ours = mha_pair("math", kernel)
    pe = positional(position)
    x = torch.randn(2, T, C)
    torch.testing.assert_close(ours(x, pe)[0], ref(x, pe)[0], atol=1e-5, rtol=0)


@pytest.mark.parametrize("kernel", KERNELS.names())
@pytest.mark.parametrize("with_bias", [False, True])
def test_kernel_fewer_queries_than_keys(kernel, with_bias):
    """Queries are the last T of S positions (bottom-right causal alignment)."""
    torch.manual_seed(0)
    q, k, v = torch.randn(2, H, 3, 4), torch.randn(2, H, 6, 4), torch.randn(2, H, 6, 4)
    bias = positional("alibi").attention_bias(6, 6) if with_bias else None
    full, _ = KERNELS.get("math")()(torch.cat([torch.randn(2, H, 3, 4), q], dim=2), k, v, bias)
    part, _ = KERNELS.get(kernel)()(q, k, v, None if bias is None else bias[:, 3:])
    torch.testing.assert_close(part, full[:, :, 3:], atol=1e-5, rtol=0)


@pytest.mark.parametrize("kernel", KERNELS.names())
def test_kernel_bfloat16_with_float32_bias(kernel):
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, H, T, 8) for _ in range(3))
    bias = positional("alibi").attention_bias(T, T)
    want, _ = KERNELS.get("math")()(q, k, v, bias)
    got, _ = KERNELS.get(kernel)()(q.bfloat16(), k.bfloat16(), v.bfloat16(), bias)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), want, atol=5e-2, rtol=0)


@pytest.mark.parametrize("kernel", KERNELS.names())
def test_kernel_dropout_only_in_training(kernel):
    q, k, v = (torch.randn(1, H, T, 8) for _ in range(3))
    attn = KERNELS.get(kernel)(dropout=0.5).eval()
    torch.testing.assert_close(attn(q, k, v)[0], KERNELS.get("math")()(q, k, v)[0], atol=1e-5, rtol=0)
    attn.train()
    assert not torch.allclose(attn(q, k, v)[0], attn.eval()(q, k, v)[0])


def test_math_weights_are_causal_and_normalised():
    q, k, v = (torch.randn(2, H, T, 8) for _ in range(3))
    _, w = KERNELS.get("math")()(q, k, v, need_weights=True)
    assert w.shape == (2, H, T, T)
    assert (w.triu(1) == 0).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(2, H, T))


def test_sdpa_refuses_weights():
    q = torch.randn(1, H, T, 8)
    with pytest.raises(ValueError, match="use kernel 'math'"):
        KERNELS.get("sdpa")()(q, q, q, need_weights=True)


def test_more_queries_than_keys_raises():
    with pytest.raises(ValueError, match="T <= S"):
        KERNELS.get("math")()(torch.randn(1, 1, 4, 2), torch.randn(1, 1, 3, 2), torch.randn(1, 1, 3, 2))


def test_heads_must_divide_width():
    with pytest.raises(ValueError, match="d_model=16 is not divisible by n_heads=3"):
        MultiHeadAttention(16, 3)
