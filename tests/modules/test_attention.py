"""Multi-head attention: projections, head split and scale by name, against torch.nn.MultiheadAttention
and against each other."""

import math

import pytest
import torch
from torch import nn

from harness.modules import HEAD_SPLITS, KERNELS, POSITIONAL, QKV, SCALES, MultiHeadAttention, TransformerConfig
from helpers.kernels import available_kernels

C, H, T = 16, 4, 7
SOFTMAX = [k for k in available_kernels("cpu") if KERNELS.get(k).softmax]


def positional(name: str, n_heads: int = H):
    cfg = TransformerConfig(vocab_size=5, d_model=C, n_heads=n_heads, max_len=32, position=name)
    return POSITIONAL.get(name)(cfg)


def mha_pair(kernel_a: str, kernel_b: str, **kw) -> tuple[MultiHeadAttention, MultiHeadAttention]:
    torch.manual_seed(0)
    a = MultiHeadAttention(C, H, kernel=kernel_a, **kw).eval()
    b = MultiHeadAttention(C, H, kernel=kernel_b, **kw).eval()
    b.load_state_dict(a.state_dict())
    return a, b


def n_params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("kernel", SOFTMAX)
def test_kernel_matches_torch_multihead_attention(kernel):
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(C, H, bias=True, batch_first=True).eval()
    nn.init.normal_(ref.in_proj_bias)
    nn.init.normal_(ref.out_proj.bias)
    ours = MultiHeadAttention(C, H, kernel=kernel).eval()
    wq, wk, wv = ref.in_proj_weight.chunk(3)
    bq, bk, bv = ref.in_proj_bias.chunk(3)
    with torch.no_grad():
        for proj, w, b in [(ours.qkv.q_proj, wq, bq), (ours.qkv.k_proj, wk, bk), (ours.qkv.v_proj, wv, bv)]:
            proj.weight.copy_(w)
            proj.bias.copy_(b)
        ours.out_proj.weight.copy_(ref.out_proj.weight)
        ours.out_proj.bias.copy_(ref.out_proj.bias)
    x = torch.randn(3, T, C)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)  # True: not allowed
    want, want_w = ref(x, x, x, attn_mask=mask, need_weights=True, average_attn_weights=False)
    got, _ = ours(x, positional("nope"))
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
    if KERNELS.get(kernel).returns_weights:
        _, got_w = ours(x, positional("nope"), need_weights=True)
        torch.testing.assert_close(got_w, want_w, atol=1e-5, rtol=0)


@pytest.mark.parametrize("position", POSITIONAL.names())
@pytest.mark.parametrize("kernel", [k for k in SOFTMAX if k != "math"])
@pytest.mark.parametrize("qkv", QKV.names())
def test_kernel_matches_math(kernel, position, qkv):
    ref, ours = mha_pair("math", kernel, qkv=qkv)
    pe = positional(position)
    x = torch.randn(2, T, C)
    torch.testing.assert_close(ours(x, pe)[0], ref(x, pe)[0], atol=1e-5, rtol=0)


# --- q/k/v projections -------------------------------------------------------------------------


def test_fused_equals_separate_as_functions():
    torch.manual_seed(0)
    sep = MultiHeadAttention(C, H, kernel="math", qkv="separate").eval()
    fused = MultiHeadAttention(C, H, kernel="math", qkv="fused").eval()
    with torch.no_grad():
        p = sep.qkv
        fused.qkv.qkv_proj.weight.copy_(torch.cat([p.q_proj.weight, p.k_proj.weight, p.v_proj.weight]))
        fused.qkv.qkv_proj.bias.copy_(torch.cat([p.q_proj.bias, p.k_proj.bias, p.v_proj.bias]))
        fused.out_proj.load_state_dict(sep.out_proj.state_dict())
    x = torch.randn(2, T, C)
    assert n_params(fused) == n_params(sep)
    torch.testing.assert_close(fused(x, positional("rope"))[0], sep(x, positional("rope"))[0], atol=1e-6, rtol=0)


def test_shared_uses_one_projection_for_q_k_v():
    sep, shared = MultiHeadAttention(C, H, qkv="separate"), MultiHeadAttention(C, H, qkv="shared")
    assert n_params(sep) - n_params(shared) == 2 * (C * C + C)  # C*C (+ bias) instead of 3*C*C
    q, k, v = shared.qkv(torch.randn(2, T, C))
    assert torch.equal(q, k) and torch.equal(k, v)


# --- head split --------------------------------------------------------------------------------


def test_correct_split_matches_the_reference_layout():
    x = torch.randn(2, T, C)
    heads = HEAD_SPLITS.get("correct").split(x, H)
    for h in range(H):  # head h holds channels h*D .. (h+1)*D of every position
        assert torch.equal(heads[:, h], x[:, :, h * (C // H) : (h + 1) * (C // H)])


@pytest.mark.parametrize("kernel", available_kernels("cpu"))
def test_transpose_missing_computes_a_different_function(kernel):
    """The negative control: same shapes, same weights, different outputs (random weights)."""
    good, bad = mha_pair(kernel, kernel)
    bad.head_split = HEAD_SPLITS.get("transpose_missing")
    x = torch.randn(2, T, C)
    a, b = good(x, positional("nope"))[0], bad(x, positional("nope"))[0]
    assert a.shape == b.shape
    assert (a - b).abs().max() > 1e-2


class WriteUpWrongMHA(nn.Module):
    """The wrong multi-head attention of the write-up on multi-head attention, line for line, with
    its output projection and the inverse of its view to finish it: an independent reference."""

    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.Wq, self.Wk, self.Wv, self.Wo = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, query, key, value):
        B, T, C = query.shape
        q = self.Wq(query).view(B, T, self.num_heads, -1)
        k = self.Wk(key).view(B, T, self.num_heads, -1)
        v = self.Wv(value).view(B, T, self.num_heads, -1)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(k.size(-1))  # (B, T, H, H)
        context = torch.matmul(torch.softmax(scores, dim=-1), v)  # (B, T, H, D)
        return self.Wo(context.reshape(B, T, C))


@pytest.mark.parametrize("kernel", SOFTMAX)
def test_split_no_transpose_is_the_write_up_code(kernel):
    """``split_no_transpose`` computes the write-up's wrong attention (float64 reference), for any
    kernel: scores over the token's own heads, no mixing across tokens."""
    torch.manual_seed(0)
    ours = MultiHeadAttention(C, H, kernel=kernel, head_split="split_no_transpose").eval()
    ref = WriteUpWrongMHA(C, H).double().eval()
    with torch.no_grad():
        for theirs, mine in zip((ref.Wq, ref.Wk, ref.Wv, ref.Wo), (*ours.qkv.children(), ours.out_proj)):
            theirs.weight.copy_(mine.weight)
            theirs.bias.copy_(torch.randn_like(theirs.bias))
            mine.bias.copy_(theirs.bias)
    x = torch.randn(2, T, C)
    expected = ref(x.double(), x.double(), x.double())
    torch.testing.assert_close(ours(x, positional("nope"))[0].double(), expected, atol=1e-5, rtol=1e-5)  # float32
    # no token mixing: each position's output is that of the position alone
    alone = torch.cat([ours(x[:, i : i + 1], positional("nope"))[0] for i in range(T)], dim=1)
    torch.testing.assert_close(ours(x, positional("nope"))[0], alone)
    good = MultiHeadAttention(C, H, kernel=kernel).eval()
    good.load_state_dict(ours.state_dict())
    assert (good(x, positional("nope"))[0] - ours(x, positional("nope"))[0]).abs().max() > 1e-2


def test_split_no_transpose_refuses_a_bias_over_positions_and_weights():
    attn = MultiHeadAttention(C, H, kernel="math", head_split="split_no_transpose").eval()
    with pytest.raises(ValueError, match="attends over heads"):
        attn(torch.randn(1, T, C), positional("alibi"))
    with pytest.raises(ValueError, match="not over keys"):
        attn(torch.randn(1, T, C), positional("nope"), need_weights=True)


# --- scale -------------------------------------------------------------------------------------


def test_d_head_is_the_default_scale():
    assert MultiHeadAttention(C, H).kernel.scale == pytest.approx((C // H) ** -0.5)


def test_d_model_scale_divides_logits_by_sqrt_heads():
    """Claim scale-dk: 1/sqrt(C) instead of 1/sqrt(D) divides every logit by sqrt(H): flatter weights."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, H, T, C // H) * 3 for _ in range(3))
    logits = (q @ k.transpose(-2, -1)) * (C // H) ** -0.5  # (B, H, T, T), the reference
    logits = logits.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    w = {
        name: KERNELS.get("math")(scale=SCALES.get(name)(C, H))(q, k, v, need_weights=True)[1]
        for name in ("d_head", "d_model")
    }
    torch.testing.assert_close(w["d_head"], logits.softmax(-1))
    torch.testing.assert_close(w["d_model"], (logits / H**0.5).softmax(-1))
    entropy = {n: -(x * x.clamp_min(1e-12).log()).sum(-1).mean() for n, x in w.items()}
    assert entropy["d_model"] > entropy["d_head"]


def test_heads_must_divide_width():
    with pytest.raises(ValueError, match="d_model=16 is not divisible by n_heads=3"):
        MultiHeadAttention(16, 3)
