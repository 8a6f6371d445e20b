"""Where a finite mask fill does let future positions leak in float16: the setting the claim
``mask-1e9-fp16`` names cannot run here (torch refuses to write -1e9 into float16 scores), and in
the mask_fill_fp16 runs no leak into real positions was measured. A finite fill that fits float16
(-1e4) leaks once the real scores of a row fall below it, both as the math kernel writes it
(``masked_fill``) and as an additive mask bias (``scores + (1 - mask) * -1e4``, BERT's); a float64
softmax with -inf is the reference with no leak. Scores of 1e4 need unscaled or large
activations: the trained runs never reach them."""

import pytest
import torch
import torch.nn.functional as F

from harness.modules import KERNELS

T, D = 4, 8


def future_weight(out_a: torch.Tensor, out_b: torch.Tensor) -> float:
    """How much the outputs at positions < T - 1 moved when only the last value changed."""
    return (out_a[..., : T - 1, :].double() - out_b[..., : T - 1, :].double()).abs().max().item()


def qkv(real: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q, k and v of one head whose every visible (causal) score is about ``real`` and whose
    future scores are as large: q = (1, 0, ...), k rows = real."""
    q = torch.zeros(1, 1, T, D)
    q[..., 0] = 1.0
    k = torch.zeros(1, 1, T, D)
    k[..., 0] = real
    v = torch.randn(1, 1, T, D, generator=torch.Generator().manual_seed(0))
    return q, k, v


def changed(v: torch.Tensor) -> torch.Tensor:
    w = v.clone()
    w[..., T - 1, :] += 100.0  # only the last (future for every earlier query) value changes
    return w


@pytest.mark.parametrize("real", [-5.0, -3e4])
def test_a_minus_1e4_fill_in_float16_leaks_only_below_the_fill(real):
    kernel = KERNELS.get("math")(scale=1.0, mask_fill="-1e4")
    q, k, v = (x.half() for x in qkv(real))
    a = kernel(q, k, v)[0]
    b = kernel(q, k, changed(v).half())[0]
    ref = lambda vv: (
        F.softmax(  # noqa: E731  float64, -inf: the reference
            (q.double() @ k.double().transpose(-2, -1)).masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf")), -1
        )
        @ vv.double()
    )
    assert future_weight(ref(v), ref(changed(v))) == 0.0
    if real > -1e4:
        assert future_weight(a, b) == 0.0  # real scores above the fill: exp(-1e4 - real) is 0 in float32
    else:
        assert future_weight(a, b) > 10.0  # every real score below -1e4: the masked keys win the softmax


def test_an_additive_minus_1e4_bias_in_float16_leaks_when_a_future_score_is_large():
    q, k, v = qkv(0.0)
    k[..., T - 1, 0] = 2e4  # one future key scores 2e4; the visible ones 0
    q, k = q.half(), k.half()
    mask = torch.ones(T, T).tril()  # 1 visible, 0 hidden
    bias = ((1.0 - mask) * -1e4).half()  # as BERT builds its extended attention mask

    def attend(vv: torch.Tensor) -> torch.Tensor:
        scores = q @ k.transpose(-2, -1) + bias  # float16: 2e4 - 1e4 = 1e4 beats 0
        return F.softmax(scores.float(), -1).half() @ vv.half()

    assert future_weight(attend(v), attend(changed(v))) > 10.0


def test_minus_1e9_cannot_be_written_into_float16_scores():
    kernel = KERNELS.get("math")(mask_fill="-1e9")
    q, k, v = (x.half() for x in qkv(1.0))
    with pytest.raises(RuntimeError, match="c10::Half without overflow"):
        kernel(q, k, v)
