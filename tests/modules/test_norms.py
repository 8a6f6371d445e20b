"""Norms: every registered norm normalises (or is the declared identity), RMSNorm against a float64
formula; shapes and dtypes are a contract (tests/contracts/test_components.py)."""

import pytest
import torch

from harness.modules import NORMS


@pytest.mark.parametrize("name", NORMS.names())
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_norm_normalises_scale_or_is_the_identity(name, dtype):
    norm = NORMS.get(name)(16).to(dtype)
    x = (torch.randn(2, 5, 16) * 30 + 3).to(dtype)
    y = norm(x)
    if not getattr(norm, "normalises", True):  # the norm-free arm: the identity, bit for bit
        assert torch.equal(y, x)
        return
    rms = y.float().pow(2).mean(-1).sqrt()
    torch.testing.assert_close(rms, torch.ones_like(rms), atol=2e-2, rtol=0)


def test_only_the_identity_norm_declares_it_does_not_normalise():
    assert [n for n in NORMS.names() if not getattr(NORMS.get(n), "normalises", True)] == ["none"]


def test_rmsnorm_matches_float64_formula():
    norm = NORMS.get("rmsnorm")(16, eps=1e-5)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(16))
    x = torch.randn(3, 4, 16) * 5
    x64, g64 = x.double(), norm.weight.detach().double()
    want = x64 / torch.sqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-5) * g64
    torch.testing.assert_close(norm(x).double(), want, atol=1e-5, rtol=1e-6)
