"""Attention kernels: contracts over every registered kernel, each against an independent reference
(the float64 masked formula for linear attention, the math kernel for the SDPA kernels)."""

import warnings

import pytest
import torch
import torch.nn.functional as F

from harness.modules import KERNELS, MASK_FILLS, POSITIONAL, TransformerConfig
from harness.modules.kernels import LinearAttention, hidden_keys
from helpers.kernels import available_kernels

H, T, D = 4, 7, 8
CPU = available_kernels("cpu", torch.float32)
SOFTMAX = [k for k in CPU if KERNELS.get(k).softmax]
BIAS = [k for k in CPU if k != "linear"]


def qkv(b=2, t=T, s=None, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    s = s or t
    return (
        torch.randn(b, H, t, D, generator=g).to(dtype),
        torch.randn(b, H, s, D, generator=g).to(dtype),
        torch.randn(b, H, s, D, generator=g).to(dtype),
    )


def alibi_bias(t, s):
    cfg = TransformerConfig(vocab_size=5, d_model=H * D, n_heads=H, position="alibi")
    return POSITIONAL.get("alibi")(cfg).attention_bias(t, s)


def padding(b=2, s=T, n_pad=3):
    mask = torch.zeros(b, s, dtype=torch.bool)
    mask[0, :n_pad] = True  # left padding of row 0: its first n_pad queries see no key
    return mask


def linear_reference(q, k, v, key_padding_mask=None, eps=LinearAttention.eps):
    """Katharopoulos et al. (2020), Eq. 4 with the causal mask, as an O(T S) float64 product."""
    t, s = q.size(-2), k.size(-2)
    fq, fk = F.elu(q.double()) + 1, F.elu(k.double()) + 1
    sim = fq @ fk.transpose(-2, -1)  # (B, H, T, S)
    sim = sim.masked_fill(hidden_keys(t, s, key_padding_mask, q.device), 0.0)
    return (sim @ v.double()) / (sim.sum(-1, keepdim=True) + eps)


# --- contracts over every kernel ---------------------------------------------------------------


@pytest.mark.parametrize("kernel", CPU)
@pytest.mark.parametrize("with_bias", [False, True])
def test_kernel_fewer_queries_than_keys(kernel, with_bias):
    """Queries are the last T of S positions (bottom-right causal alignment)."""
    if with_bias and kernel not in BIAS:
        pytest.skip(f"{kernel} takes no bias")
    q, k, v = qkv(t=3, s=6)
    bias = alibi_bias(6, 6) if with_bias else None
    full, _ = KERNELS.get(kernel)()(torch.cat([torch.randn(2, H, 3, D), q], dim=2), k, v, bias)
    part, _ = KERNELS.get(kernel)()(q, k, v, None if bias is None else bias[:, 3:])
    torch.testing.assert_close(part, full[:, :, 3:], atol=1e-5, rtol=0)


@pytest.mark.parametrize("kernel", CPU)
def test_kernel_keeps_bfloat16(kernel):
    q, k, v = qkv()
    want, _ = KERNELS.get(kernel)()(q, k, v)
    got, _ = KERNELS.get(kernel)()(q.bfloat16(), k.bfloat16(), v.bfloat16())
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), want, atol=5e-2, rtol=0)


@pytest.mark.parametrize("kernel", CPU)
def test_kernel_records_backend(kernel):
    attn = KERNELS.get(kernel)()
    attn(*qkv())
    assert attn.backends and "unknown" not in attn.backends
    if kernel == "flash":
        assert attn.backends == {"flash_attention"}


@pytest.mark.parametrize("kernel", SOFTMAX)
def test_softmax_kernel_dropout_only_in_training(kernel):
    q, k, v = qkv(b=1)
    attn = KERNELS.get(kernel)(dropout=0.5).eval()
    try:
        KERNELS.get(kernel).check_available("cpu", torch.float32, dropout=0.5)
    except ValueError:  # CPU flash has no dropout: refused before a run, and raises in training
        with pytest.raises(RuntimeError, match="No available kernel"):
            attn.train()(q, k, v)
        return
    torch.testing.assert_close(attn(q, k, v)[0], KERNELS.get("math")()(q, k, v)[0], atol=1e-5, rtol=0)
    attn.train()
    assert not torch.allclose(attn(q, k, v)[0], attn.eval()(q, k, v)[0])


@pytest.mark.parametrize("kernel", [k for k in KERNELS.names() if not KERNELS.get(k).returns_weights])
def test_kernels_without_weights_refuse_them(kernel):
    with pytest.raises(ValueError, match="use kernel 'math'"):
        KERNELS.get(kernel)()(*qkv(), need_weights=True)


def test_more_queries_than_keys_raises():
    for kernel in CPU:
        with pytest.raises(ValueError, match="T <= S"):
            KERNELS.get(kernel)()(*qkv(t=4, s=3))


# --- softmax kernels agree with math -----------------------------------------------------------


@pytest.mark.parametrize("kernel", SOFTMAX)
@pytest.mark.parametrize(("dtype", "atol"), [(torch.float32, 1e-5), (torch.bfloat16, 3e-2)])
@pytest.mark.parametrize("case", ["plain", "bias", "padding", "scale"])
def test_softmax_kernels_agree_with_math(kernel, dtype, atol, case):
    q, k, v = qkv(dtype=dtype)
    kw = {"bias": alibi_bias(T, T)} if case == "bias" else {}
    kw |= {"key_padding_mask": padding(n_pad=0) | (torch.arange(T) == 2)} if case == "padding" else {}
    scale = 0.1 if case == "scale" else None
    ref, _ = KERNELS.get("math")(scale=scale)(q.float(), k.float(), v.float(), **kw)
    got, _ = KERNELS.get(kernel)(scale=scale)(q, k, v, **kw)
    torch.testing.assert_close(got.float(), ref, atol=atol, rtol=0)


def test_flash_check_available_on_cpu_and_clear_error(monkeypatch):
    KERNELS.get("flash").check_available("cpu", torch.float32)
    KERNELS.get("flash").check_available("cpu", torch.bfloat16)

    def refuse(*args, **kwargs):
        raise RuntimeError("No available kernel. Aborting execution.")

    monkeypatch.setattr(F, "scaled_dot_product_attention", refuse)
    with pytest.raises(ValueError, match="kernel 'flash' is not available on cpu.*No available kernel"):
        KERNELS.get("flash").check_available("cpu", torch.float32)
    assert "flash" not in available_kernels("cpu", torch.float32)


def test_flash_refuses_a_learned_bias_on_cpu_before_a_run_as_training_would():
    """CPU flash (torch 2.13) takes a fixed float mask but none that requires a gradient: the
    check asks with one, and training itself fails the same way ("No available kernel")."""
    KERNELS.get("flash").check_available("cpu", torch.float32, with_mask=True)
    with warnings.catch_warnings(record=True) as escaped:  # torch's reasons stay in the one line
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="with torch.float32 and a learned attention bias .*No available kernel"):
            KERNELS.get("flash").check_available("cpu", torch.float32, with_mask=True, mask_requires_grad=True)
        with pytest.raises(ValueError, match=r"and dropout 0.1 \(No available kernel.*; Both fused kernels do not"):
            KERNELS.get("flash").check_available("cpu", torch.float32, dropout=0.1)
    assert [str(w.message) for w in escaped] == []
    q, k, v = qkv()
    bias = torch.zeros(q.size(1), T, T, requires_grad=True)
    out, _ = KERNELS.get("flash")()(q, k, v, bias=bias.detach())  # a fixed bias runs
    with pytest.raises(RuntimeError, match="No available kernel"):
        KERNELS.get("flash")()(q, k, v, bias=bias)
    for kernel in ("math", "sdpa"):  # the kernels the message names instead
        KERNELS.get(kernel).check_available("cpu", torch.float32, with_mask=True, mask_requires_grad=True)
        KERNELS.get(kernel)()(q, k, v, bias=bias)[0].sum().backward()
        assert bias.grad is not None and bias.grad.abs().sum() > 0
        bias.grad = None


# --- linear attention --------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 3, 64])
@pytest.mark.parametrize("with_pad", [False, True])
def test_linear_matches_float64_reference(chunk, with_pad):
    q, k, v = qkv(t=11)
    pad = padding(s=11) if with_pad else None
    got, _ = LinearAttention(chunk=chunk)(q, k, v, key_padding_mask=pad)
    torch.testing.assert_close(got.double(), linear_reference(q, k, v, pad), atol=1e-5, rtol=1e-5)


def test_linear_fewer_queries_matches_reference():
    q, k, v = qkv(t=4, s=9)
    got, _ = LinearAttention(chunk=2)(q, k, v)
    torch.testing.assert_close(got.double(), linear_reference(q, k, v), atol=1e-5, rtol=1e-5)


def test_linear_fully_masked_rows_are_zero_and_refusals():
    q, k, v = qkv()
    out, _ = LinearAttention()(q, k, v, key_padding_mask=padding())
    assert torch.isfinite(out).all() and (out[0, :, :3] == 0).all()
    with pytest.raises(ValueError, match="no attention weights to drop"):
        LinearAttention(dropout=0.1)
    with pytest.raises(ValueError, match="cannot add an attention bias"):
        LinearAttention()(q, k, v, bias=alibi_bias(T, T))


# --- mask fills (math kernel) ------------------------------------------------------------------


@pytest.mark.parametrize("fill", MASK_FILLS.names())
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_mask_fill_in_the_scores_dtype(fill, dtype):
    """As a hand-written implementation: -1e9 does not fit float16 and masked_fill raises."""
    q, k, v = qkv(dtype=dtype)
    attn = KERNELS.get("math")(mask_fill=fill)
    if fill == "-1e9" and dtype == torch.float16:
        with pytest.raises(RuntimeError, match="cannot be converted to type c10::Half without overflow"):
            attn(q, k, v)
        return
    out, w = attn(q, k, v, need_weights=True)
    assert torch.isfinite(out).all()
    assert (w.float().triu(1) == 0).all()  # no fill leaks at all with a visible key in every row
    ref, _ = KERNELS.get("math")()(q.float(), k.float(), v.float())
    torch.testing.assert_close(out.float(), ref, atol=3e-2 if dtype != torch.float32 else 1e-6, rtol=0)


@pytest.mark.parametrize("fill", MASK_FILLS.names())
def test_mask_fill_on_fully_masked_rows(fill):
    """-inf: NaN (softmax of all -inf); finite fills: uniform over every key, the future included."""
    q, k, v = qkv()
    _, w = KERNELS.get("math")(mask_fill=fill)(q, k, v, need_weights=True, key_padding_mask=padding())
    rows = w[0, :, :3]  # (H, 3, S): fully masked
    if fill == "-inf":
        assert torch.isnan(rows).all()
    else:
        torch.testing.assert_close(rows, torch.full_like(rows, 1 / T))
    assert torch.isfinite(w[0, :, 3:]).all() and torch.isfinite(w[1]).all()


@pytest.mark.parametrize("fill", MASK_FILLS.names())
def test_mask_fill_only_math_honours_it(fill):
    for kernel in KERNELS.names():
        honours = KERNELS.get(kernel).honours_mask_fill or fill == "-inf"
        if honours:
            TransformerConfig(vocab_size=5, kernel=kernel, mask_fill=fill)
        else:
            with pytest.raises(ValueError, match="needs explicit scores"):
                TransformerConfig(vocab_size=5, kernel=kernel, mask_fill=fill)


# --- the mask added as a float attn_mask (additive_mask) -----------------------------------------


@pytest.mark.parametrize("fill", ["-inf", "-1e9"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_additive_mask_is_nn_multihead_attention_with_a_float_attn_mask(fill, dtype):
    """The write-up's route: nn.MultiheadAttention given the causal ``src_mask`` (0 visible, the fill
    hidden) as a float (S, S) attn_mask, in the inputs' dtype. Same weights and outputs as torch's;
    -1e9 is -inf once cast to float16 and finite in bfloat16, and no weight reaches a future key."""
    torch.manual_seed(0)
    c, h = 16, 4
    ref = torch.nn.MultiheadAttention(c, h, batch_first=True).to(dtype).eval()
    x = torch.randn(2, T, c, dtype=dtype)
    src_mask = torch.zeros(T, T).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float(fill)).to(dtype)
    want, want_w = ref(x, x, x, attn_mask=src_mask, need_weights=True, average_attn_weights=False)
    q, k, v = (x @ w.T + b for w, b in zip(ref.in_proj_weight.chunk(3), ref.in_proj_bias.chunk(3)))
    q, k, v = (t.view(2, T, h, c // h).transpose(1, 2) for t in (q, k, v))  # (B, H, T, D)
    out, w = KERNELS.get("additive_mask")(mask_fill=fill)(q, k, v, need_weights=True)
    got = ref.out_proj(out.transpose(1, 2).reshape(2, T, c))
    tol = {"atol": 1e-5, "rtol": 1e-5} if dtype == torch.float32 else {"atol": 3e-2, "rtol": 0}
    torch.testing.assert_close(w, want_w, **tol)
    torch.testing.assert_close(got, want, **tol)
    assert (w.triu(1) == 0).all() and (want_w.triu(1) == 0).all()  # nothing from the future, exactly
    if fill == "-1e9":
        assert torch.isinf(src_mask.min()) == (dtype == torch.float16)  # overflows in the cast


def test_additive_mask_fully_masked_rows():
    """Left padding: -inf gives NaN rows, as math; -1e9 (finite) gives uniform rows, as math."""
    q, k, v = qkv()
    for fill in ("-inf", "-1e9"):
        _, got = KERNELS.get("additive_mask")(mask_fill=fill)(q, k, v, need_weights=True, key_padding_mask=padding())
        _, want = KERNELS.get("math")(mask_fill=fill)(q, k, v, need_weights=True, key_padding_mask=padding())
        torch.testing.assert_close(got, want, equal_nan=True)
