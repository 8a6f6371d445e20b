"""Positional encodings against closed forms, published values and their defining properties (the
contracts every encoding meets, shapes included, are in tests/contracts/test_components.py)."""

import math

import pytest
import torch

from harness.modules import POSITIONAL, PositionalEncoding, TransformerConfig
from harness.modules.positional import ALiBi, RoPE, alibi_slopes


def make_cfg(position: str, **kw) -> TransformerConfig:
    base = {"vocab_size": 7, "d_model": 16, "n_heads": 4, "max_len": 32, "position": position}
    return TransformerConfig(**{**base, **kw})


def make(position: str, **kw) -> PositionalEncoding:
    return POSITIONAL.get(position)(make_cfg(position, **kw))


# --- sinusoidal ------------------------------------------------------------------------------


@pytest.mark.parametrize("d_model", [16, 15])
def test_sinusoidal_equals_float64_closed_form(d_model):
    pe = make("sinusoidal", d_model=d_model, n_heads=1)
    t = 2048
    got = pe.add_to_embeddings(torch.zeros(1, t, d_model))[0]
    assert got.dtype == torch.float32
    want = torch.zeros(t, d_model, dtype=torch.float64)
    for p in range(0, t, 97):  # rows spread over the length, from the paper's formula
        for j in range(d_model):
            angle = p / 10000 ** ((j - j % 2) / d_model)
            want[p, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    rows = list(range(0, t, 97))
    torch.testing.assert_close(got[rows].double(), want[rows], atol=1e-6, rtol=0)


# --- learned ---------------------------------------------------------------------------------


def test_learned_table_init_and_limit():
    pe = make("learned", d_model=16, max_len=8, learned_init_std=0.5)
    assert pe.table.weight.shape == (8, 16)
    assert 0.3 < pe.table.weight.std().item() < 0.7
    pe.add_to_embeddings(torch.zeros(1, 8, 16))
    with pytest.raises(ValueError, match=r"T=9.*max_len=8"):
        pe.add_to_embeddings(torch.zeros(1, 9, 16))


def test_learned_n01_draws_as_nn_embedding_default():
    """The write-ups' table, ``nn.Embedding(max_len, d_model)`` with no init call: the same draws
    as torch's default N(0, 1) from the same generator state, whatever ``learned_init_std``."""
    torch.manual_seed(3)
    pe = make("learned_n01", d_model=16, max_len=512, learned_init_std=0.02)
    torch.manual_seed(3)
    make("learned", d_model=16, max_len=512)  # the draws of the table before its re-initialisation
    reference = torch.nn.Embedding(512, 16).weight  # default init: N(0, 1)
    torch.testing.assert_close(pe.table.weight, reference)
    assert 0.95 < pe.table.weight.std().item() < 1.05
    with pytest.raises(ValueError, match=r"T=513.*max_len=512"):
        pe.add_to_embeddings(torch.zeros(1, 513, 16))


# --- RoPE ------------------------------------------------------------------------------------


def rope_reference(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotate-half RoPE as complex multiplication in float64: z_i = x_i + i x_{i+D/2}."""
    d = x.size(-1)
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (D/2,)
    z = torch.complex(x[..., : d // 2].double(), x[..., d // 2 :].double())
    z = z * torch.polar(torch.ones_like(theta), positions.double()[:, None] * theta)
    return torch.cat([z.real, z.imag], dim=-1)


def test_rope_matches_complex_reference():
    pe = make("rope")
    q, k = torch.randn(2, 4, 6, 4), torch.randn(2, 4, 6, 4)
    q2, k2 = pe.rotate_qk(q, k)
    pos = torch.arange(6)
    torch.testing.assert_close(q2.double(), rope_reference(q, pos), atol=1e-6, rtol=0)
    torch.testing.assert_close(k2.double(), rope_reference(k, pos), atol=1e-6, rtol=0)


def test_rope_preserves_norms():
    pe = make("rope")
    q, k = torch.randn(2, 4, 50, 4), torch.randn(2, 4, 50, 4)
    q2, k2 = pe.rotate_qk(q, k)
    torch.testing.assert_close(q2.norm(dim=-1), q.norm(dim=-1), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(k2.norm(dim=-1), k.norm(dim=-1), atol=1e-5, rtol=1e-5)


def test_rope_dot_product_depends_only_on_offset():
    pe = make("rope", d_model=32, n_heads=2)  # D = 16
    t = 40
    q = torch.randn(16).expand(1, 1, t, 16)  # the same vector at every position
    k = torch.randn(16).expand(1, 1, t, 16)
    q2, k2 = pe.rotate_qk(q, k)
    dots = (q2[0, 0] @ k2[0, 0].T).double()  # (T, T): dots[m, n] = q_m . k_n
    for m, n, s in [(5, 2, 7), (3, 9, 20), (0, 0, 33), (10, 1, 25)]:
        assert dots[m + s, n + s].item() == pytest.approx(dots[m, n].item(), abs=1e-4)
    assert not torch.allclose(dots[5, 2], dots[5, 3])  # and it does depend on the offset


def test_rope_angles_float32_under_bfloat16():
    pe = make("rope", d_model=32, n_heads=2)  # D = 16
    cos, sin = pe.cos_sin(torch.arange(4001))
    assert cos.dtype == sin.dtype == torch.float32

    q = torch.randn(1, 1, 4001, 16).bfloat16()
    q2, _ = pe.rotate_qk(q, q)
    assert q2.dtype == torch.bfloat16
    want = rope_reference(q.double(), torch.arange(4001))[0, 0, -1]  # position 4000
    err = (q2[0, 0, -1].double() - want).abs().max().item()
    assert err < 0.05 * want.abs().max().item()  # bf16 rounding of the result only

    # against float64 cos/sin at position 4000, float32 angles are accurate; bf16 angles are not
    theta = 10000.0 ** (-torch.arange(0, 16, 2, dtype=torch.float64) / 16)
    true = 4000.0 * theta  # (D/2,)
    err_cos = (cos[-1, :8].double() - true.cos()).abs().max()
    err_ours = max(err_cos, (sin[-1, :8].double() - true.sin()).abs().max())
    angle_bf16 = (torch.tensor(4000.0).bfloat16() * theta.bfloat16()).double()
    err_bf16 = (angle_bf16.cos() - true.cos()).abs().max()
    assert err_ours < 1e-3
    assert err_bf16 > 0.3 and err_bf16 > 100 * err_ours


def test_rope_cos_sin_equal_float64_over_4096_positions():
    """Angles p * 10000^(-2i/D) from numpy float64, not from the code under test; float32 angles
    were off by up to 6.9e-5 (first above 1e-6 at position 84)."""
    import numpy as np

    pe = make("rope", d_model=128, n_heads=2)  # D = 64
    cos, sin = pe.cos_sin(torch.arange(4096))
    assert cos.dtype == sin.dtype == torch.float32
    inv_freq = 10000.0 ** (-np.arange(0, 64, 2, dtype=np.float64) / 64)
    angle = np.arange(4096, dtype=np.float64)[:, None] * inv_freq[None, :]  # (4096, 32)
    angle = np.concatenate([angle, angle], axis=1)
    torch.testing.assert_close(cos.double(), torch.from_numpy(np.cos(angle)), atol=1e-6, rtol=0)
    torch.testing.assert_close(sin.double(), torch.from_numpy(np.sin(angle)), atol=1e-6, rtol=0)


def test_rope_needs_even_head_dim():
    with pytest.raises(ValueError, match="even head dim"):
        TransformerConfig(vocab_size=7, d_model=12, n_heads=4, position="rope")  # D = 3
    cfg = TransformerConfig(vocab_size=7, d_model=12, n_heads=4)
    with pytest.raises(ValueError, match="even head dim"):
        RoPE(cfg)


# --- ALiBi -----------------------------------------------------------------------------------


def slopes_reference(n: int) -> list[float]:
    """The paper's rule restated: slope_k = 2^(-8k/n) for a power of two n; otherwise those of the
    largest power of two m < n, then the odd-indexed slopes 2^(-8(2j+1)/(2m)) of 2m."""
    m = 1 << (n.bit_length() - 1)
    out = [2.0 ** (-8.0 * k / m) for k in range(1, m + 1)]
    out += [2.0 ** (-8.0 * (2 * j + 1) / (2 * m)) for j in range(n - m)]
    return out


def test_alibi_slopes_power_of_two():
    assert alibi_slopes(8) == [1 / 2**k for k in range(1, 9)]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 7, 12, 16, 20, 24])
def test_alibi_slopes_match_reference_rule(n):
    assert alibi_slopes(n) == pytest.approx(slopes_reference(n), rel=1e-12)


def test_alibi_slopes_published_values():
    assert alibi_slopes(6) == pytest.approx([0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125])
    assert alibi_slopes(12)[8:] == pytest.approx(
        [0.7071067811865476, 0.35355339059327373, 0.17677669529663687, 0.08838834764831845]
    )


def test_alibi_bias_values_and_dtype():
    pe = make("alibi", d_model=16, n_heads=8)
    bias = pe.attention_bias(5, 5)
    assert bias.dtype == torch.float32 and bias.shape == (8, 5, 5)
    for h, slope in enumerate(alibi_slopes(8)):
        for i in range(5):
            for j in range(i + 1):
                assert bias[h, i, j].item() == pytest.approx(-slope * (i - j))
    torch.testing.assert_close(pe.attention_bias(2, 5), bias[:, 3:])  # queries are the last T


def test_alibi_slopes_stay_exact_float32_after_casts():
    pe = make("alibi", d_model=24, n_heads=6)
    pe.to(torch.bfloat16)
    assert isinstance(pe, ALiBi) and pe.slopes.dtype == torch.float32
    assert pe.slopes.tolist() == pytest.approx(alibi_slopes(6), rel=1e-7)


@pytest.mark.parametrize("n_heads", [8, 12])
def test_alibi_bias_within_one_float32_ulp_of_float64_over_4096_positions(n_heads):
    """The float32 bias -slope * distance against the float64 product of the reference slopes:
    exact for power-of-two head counts (slopes are powers of two), and within one float32 ulp
    (relative 2^-23) otherwise; a float32 table cannot be closer than half an ulp."""
    import numpy as np

    pe = make("alibi", d_model=8 * n_heads, n_heads=n_heads, max_len=4096)
    bias = pe.attention_bias(1, 4096)[:, 0].double()  # (H, S): query at 4095, every distance
    distance = 4095.0 - np.arange(4096, dtype=np.float64)
    want = torch.from_numpy(-np.array(slopes_reference(n_heads))[:, None] * distance[None, :])
    if n_heads == 8:
        assert torch.equal(bias, want)
    torch.testing.assert_close(bias, want, rtol=2.0**-23, atol=0)


class _LearnedBias(PositionalEncoding):
    """One learned scalar per head added to every score: a trained bias, as T5's table."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__(cfg)
        self.per_head = torch.nn.Parameter(torch.randn(cfg.n_heads))

    def attention_bias(self, t: int, s: int) -> torch.Tensor:
        return self.per_head[:, None, None].expand(-1, t, s).float()


def test_bias_requires_grad_only_for_a_learned_bias_and_draws_no_random_numbers():
    """The pre-run kernel check asks it (flash on CPU refuses a mask that requires a gradient);
    it builds the encoding on the meta device, so the global generator is left as it was."""
    state = torch.get_rng_state()
    assert _LearnedBias.bias_requires_grad(make_cfg("nope"))
    assert torch.equal(torch.get_rng_state(), state)
    assert not POSITIONAL.get("alibi").bias_requires_grad(make_cfg("alibi"))  # fixed slopes
    for name in ("sinusoidal", "learned", "rope", "nope"):  # no bias at all
        assert not POSITIONAL.get(name).bias_requires_grad(make_cfg(name, max_len=64)), name
    with torch.no_grad():  # asked inside evaluation code, the answer is the training one
        assert _LearnedBias.bias_requires_grad(make_cfg("nope"))


def test_learned_clamp_reads_the_last_trained_row_beyond_the_training_length():
    clamp, learned = make("learned_clamp", max_len=32), make("learned", max_len=32)
    clamp.load_state_dict({**learned.state_dict(), "trained_len": torch.tensor(0)})
    x = torch.zeros(1, 32, 16)
    with torch.no_grad():  # training mode without a training step (a probe at init) does not set T_train
        torch.testing.assert_close(clamp.add_to_embeddings(x), learned.add_to_embeddings(x))  # its own rows
    assert int(clamp.trained_len) == 0
    clamp.add_to_embeddings(torch.zeros(1, 8, 16))  # a training step at T = 8
    clamp.eval()
    got, own = clamp.add_to_embeddings(x)[0], learned.add_to_embeddings(x)[0]
    torch.testing.assert_close(got[:8], own[:8])  # within L: the same function as learned
    torch.testing.assert_close(got[8:], own[7].expand(24, 16))  # beyond L: row L - 1, not rows 8..31
    assert int(clamp.state_dict()["trained_len"]) == 8  # saved with the weights
    clamp.add_to_embeddings(torch.zeros(1, 16, 16))  # evaluation at 2L does not move it
    assert int(clamp.trained_len) == 8
