"""T5's relative position bias against independent computations: the bucket of every distance
from exact integer arithmetic (no floating point) and a table of the boundaries it gives at T5's
setting, the paper's stated properties, and the bias of every head, query and key from a float64
loop. Part of the project's test suite; skipped where the plugin is not installed
(``pip install -e examples/plugin``, as .ci/run does)."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "ablate_example_plugin", reason="the example plugin is not installed: pip install -e examples/plugin"
)

import torch  # noqa: E402
from ablate_example_plugin.t5_bias import T5RelativeBias, relative_position_bucket  # noqa: E402

from harness.plugin import TransformerConfig  # noqa: E402


def exact_bucket(relative_position: int, bidirectional: bool, num_buckets: int, max_distance: int) -> int:
    """mesh-tensorflow's ``_relative_position_bucket`` for one position, in integers: with
    ``m = max_exact`` and ``r = num_buckets - m``, ``floor(log(n / m) / log(D / m) * r) >= k``
    exactly when ``n^r * m^k >= D^k * m^r``, so no logarithm is taken."""
    ret, n = 0, -relative_position
    if bidirectional:
        num_buckets //= 2
        ret += num_buckets if n < 0 else 0
        n = abs(n)
    else:
        n = max(n, 0)
    m = num_buckets // 2
    if n < m:
        return ret + n
    r = num_buckets - m
    k = 0
    while k + 1 <= r - 1 and n**r * m ** (k + 1) >= max_distance ** (k + 1) * m**r:
        k += 1
    return ret + m + k


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize(("num_buckets", "max_distance"), [(32, 128), (64, 256), (16, 64), (8, 20)])
def test_buckets_equal_the_exact_integer_computation(bidirectional, num_buckets, max_distance):
    rel = torch.arange(-3000, 3001)
    got = relative_position_bucket(rel, bidirectional, num_buckets, max_distance).tolist()
    assert got == [exact_bucket(r, bidirectional, num_buckets, max_distance) for r in rel.tolist()]


# the first distance of buckets 16 .. 31 at T5's setting (32 unidirectional buckets, max distance
# 128): the smallest n with n^16 >= 16^16 * 8^k, k = 0 .. 15
FIRST_DISTANCE = [16, 19, 21, 24, 27, 31, 35, 40, 46, 52, 59, 67, 77, 87, 99, 113]


def test_t5_setting_bucket_boundaries_and_the_paper_s_properties():
    distance = torch.arange(0, 5000)
    bucket = relative_position_bucket(-distance)  # keys before the query: relative position -n
    assert bucket[:16].tolist() == list(range(16))  # one bucket per distance below 16
    starts = [int(distance[bucket == b][0]) for b in range(16, 32)]
    assert starts == FIRST_DISTANCE
    assert set(bucket.tolist()) == set(range(32))  # "we use 32 embeddings" (Raffel et al. 2020, §2.1)
    assert (bucket[128:] == 31).all()  # "up to an offset of 128 beyond which [...] the same embedding"
    assert (relative_position_bucket(torch.arange(1, 50)) == 0).all()  # keys after the query: masked anyway


def _cfg(n_heads=4, d_model=16):
    return TransformerConfig(vocab_size=8, d_model=d_model, n_heads=n_heads, position="nope")


@pytest.mark.parametrize(("t", "s"), [(7, 7), (3, 9), (200, 200)])
def test_bias_equals_a_float64_loop(t, s):
    torch.manual_seed(0)
    pe = T5RelativeBias(_cfg())
    table = pe.table.weight.detach().double()  # (32, H)
    got = pe.attention_bias(t, s)
    assert got.shape == (4, t, s) and got.dtype == torch.float32
    want = torch.empty(4, t, s, dtype=torch.float64)
    for i in range(t):
        for j in range(s):
            b = exact_bucket(j - (i + s - t), False, 32, 128)  # query i sits at position i + S - T
            want[:, i, j] = table[b]
    torch.testing.assert_close(got.double(), want, atol=0, rtol=0)


def test_the_table_is_learned_and_initialised_as_hugging_face():
    torch.manual_seed(0)
    pe = T5RelativeBias(_cfg(n_heads=8, d_model=256))
    assert pe.table.weight.shape == (32, 8)
    assert abs(pe.table.weight.std().item() - 256**-0.5) < 0.2 * 256**-0.5  # N(0, d_model^-1/2)
    pe.attention_bias(20, 20).sum().backward()
    grad = pe.table.weight.grad
    assert (grad[:18] != 0).all() and (grad[18:] == 0).all()  # distances 0..19: buckets 0..17 (19, 20: 17)
