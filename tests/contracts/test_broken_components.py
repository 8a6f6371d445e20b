"""Each contract fails a component built to break it, registered for one test only (as a plugin
registers: through the registry, in this process), with the place it breaks in the message."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from harness.contracts.components import check
from harness.modules import ACTIVATIONS, KERNELS, POSITIONAL, PositionalEncoding
from harness.modules.kernels import MathAttention
from helpers import contract_result
from helpers.cli import invoke


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


class PeekNext(PositionalEncoding):
    """Adds the next token's embedding to each position: position t sees token t + 1."""

    def add_to_embeddings(self, x: Tensor) -> Tensor:
        return x + F.pad(x[:, 1:], (0, 0, 0, 1))  # (B, T, C): row t gets x[t + 1]


class PeekKernel(MathAttention):
    """The math kernel with its mask shifted by one: query i sees key i + 1."""

    def forward(self, q, k, v, bias=None, need_weights=False, key_padding_mask=None):
        t, s = q.size(-2), k.size(-2)
        scores = (q @ k.transpose(-2, -1)) * self.scale_for(q)  # (B, H, T, S)
        scores = scores.masked_fill(torch.ones(t, s, dtype=torch.bool).triu(2), float("-inf"))
        return F.softmax(scores, dim=-1) @ v, None


class PeekBeyondL(PositionalEncoding):
    """Position t sees token t + 1 only when the sequence is longer than the small model's training
    length L 16: invisible at L, a free answer at every evaluation length beyond it."""

    def add_to_embeddings(self, x: Tensor) -> Tensor:
        return x + F.pad(x[:, 1:], (0, 0, 0, 1)) if x.size(1) > 16 else x  # (B, T, C)


class PeekInTraining(PositionalEncoding):
    """Position t sees token t + 1 in training mode only: training is easy, evaluation is not."""

    def add_to_embeddings(self, x: Tensor) -> Tensor:
        return x + F.pad(x[:, 1:], (0, 0, 0, 1)) if self.training else x  # (B, T, C)


class NaNFrom100(PositionalEncoding):
    """NaN from absolute position 100 on: finite at every length up to 4 L = 64 of the small model."""

    def add_to_embeddings(self, x: Tensor) -> Tensor:
        bad = torch.arange(x.size(1), device=x.device)[None, :, None] >= 100  # (1, T, 1)
        return x.masked_fill(bad, float("nan"))


def assert_fails(label: str, contract: str, *words: str) -> None:
    result = contract_result(check(label, lengths=None), contract)
    assert result.status == "fail", result
    for w in words:
        assert w in result.detail, (w, result.detail)


def test_a_position_that_peeks_at_the_next_token_fails_causality_at_position_0(register):
    register(POSITIONAL, "peek_next", PeekNext)
    assert_fails(
        "position=peek_next",
        "causality",
        "first offending position 0: its output changes when the tokens from position 1 on change",
    )


def test_a_kernel_that_peeks_at_the_next_key_fails_causality_at_position_0(register):
    register(KERNELS, "peek_math", PeekKernel)
    assert_fails("attention.kernel=peek_math", "causality", "first offending position 0", "from position 1 on")


@pytest.mark.usefixtures("cli_isolated")
def test_ablate_check_exits_1_and_names_the_offending_position(register):
    register(POSITIONAL, "peek_next", PeekNext)
    result = invoke("check", "position=peek_next")
    assert result.exit_code == 1, result.output
    assert "first offending position 0" in result.stdout and "fail" in result.stdout
    result = invoke("check", "peek_next", "--format", "json")
    assert result.exit_code == 1
    (rep,) = json.loads(result.stdout)["checks"]
    assert rep["target"] == "model.position=peek_next" and rep["ok"] is False
    causal = next(c for c in rep["contracts"] if c["contract"] == "causality")
    assert causal["status"] == "fail" and "first offending position 0" in causal["detail"]


@pytest.mark.parametrize(
    ("name", "cls", "words"),
    [
        ("peek_beyond_l", PeekBeyondL, "at T=32 (2 x L) in train mode: first offending position 0"),
        ("peek_in_training", PeekInTraining, "at T=16 (1 x L) in train mode: first offending position 0"),
    ],
)
def test_a_conditional_leak_fails_causality_in_use_naming_length_and_mode(register, name, cls, words):
    """Both pass the exact ``causality`` contract (at L, in eval mode), as they passed every contract
    before ``causality in use``."""
    register(POSITIONAL, name, cls)
    rep = check(f"position={name}", lengths=None)
    assert contract_result(rep, "causality").status == "pass"
    assert_fails(f"position={name}", "causality in use", words)


def test_nan_beyond_4l_fails_lengths_at_its_first_position(register):
    register(POSITIONAL, "nan_from_100", NaNFrom100)
    rep = check("position=nan_from_100", lengths=None)
    assert contract_result(rep, "finite fp32").status == contract_result(rep, "prefix").status == "pass"
    assert_fails("position=nan_from_100", "lengths", "logits at T=128 not finite")
    assert_fails("position=nan_from_100", "causality in use", "at T=128 (8 x L) in train mode", "not finite")


@pytest.mark.usefixtures("cli_isolated")
@pytest.mark.parametrize(
    ("name", "cls", "contract", "words"),
    [
        ("peek_beyond_l", PeekBeyondL, "causality in use", "at T=32 (2 x L) in train mode"),
        ("peek_in_training", PeekInTraining, "causality in use", "at T=16 (1 x L) in train mode"),
        ("nan_from_100", NaNFrom100, "lengths", "logits at T=128 not finite"),
    ],
)
def test_ablate_check_refuses_a_leak_or_nan_beyond_l(register, name, cls, contract, words):
    register(POSITIONAL, name, cls)
    result = invoke("check", f"position={name}", "--format", "json")
    assert result.exit_code == 1, result.output
    (rep,) = json.loads(result.stdout)["checks"]
    failed = {c["contract"]: c["detail"] for c in rep["contracts"] if c["status"] == "fail"}
    assert words in failed[contract], failed


def test_a_position_whose_outputs_depend_on_the_length_fails_prefix(register):
    class LengthScaled(PositionalEncoding):
        def add_to_embeddings(self, x: Tensor) -> Tensor:
            return x * (1 + 1 / x.size(1))

    register(POSITIONAL, "length_scaled", LengthScaled)
    rep = check("position=length_scaled", lengths=None)
    assert contract_result(rep, "causality").status == "pass"
    assert contract_result(rep, "prefix").status == "fail"
    assert (
        "first offending position 0" in contract_result(rep, "prefix").detail
        and "from 8 to 16" in contract_result(rep, "prefix").detail
    )


def test_noise_in_the_forward_fails_determinism(register):
    class Noisy(PositionalEncoding):
        def add_to_embeddings(self, x: Tensor) -> Tensor:
            return x + torch.randn_like(x)

    register(POSITIONAL, "noisy", Noisy)
    assert_fails("position=noisy", "determinism", "other logits")


def test_a_parameter_no_gradient_reaches_fails_gradients(register):
    class Unused(PositionalEncoding):
        def __init__(self, cfg):
            super().__init__(cfg)
            self.unused = nn.Parameter(torch.ones(3))

    register(POSITIONAL, "unused", Unused)
    assert_fails("position=unused", "gradients", "1 get no gradient: pos.unused")


def test_a_tensor_outside_the_state_dict_fails_parameters(register):
    class Hidden(PositionalEncoding):
        def __init__(self, cfg):
            super().__init__(cfg)
            self.offsets = torch.randn(cfg.d_model)  # neither parameter nor buffer

        def add_to_embeddings(self, x: Tensor) -> Tensor:
            return x + self.offsets

    register(POSITIONAL, "hidden", Hidden)
    assert_fails("position=hidden", "parameters", "outside the checkpoint")


def test_an_overflow_in_float16_fails_finite_fp16_only(register):
    class Shifted(nn.Module):
        def forward(self, x: Tensor) -> Tensor:
            return x + 1e5  # beyond float16's 65504

    register(ACTIVATIONS, "shifted", Shifted)
    rep = check("activation=shifted", lengths=None)
    assert contract_result(rep, "finite fp32").status == contract_result(rep, "finite bf16").status == "pass"
    assert contract_result(rep, "finite fp16").status == "fail"
    assert "not finite under fp16" in contract_result(rep, "finite fp16").detail


def test_an_undeclared_length_limit_fails_lengths(register):
    class Table(PositionalEncoding):
        def __init__(self, cfg):
            super().__init__(cfg)
            self.table = nn.Embedding(32, cfg.d_model)

        def add_to_embeddings(self, x: Tensor) -> Tensor:
            return x + self.table(torch.arange(x.size(1)))

    register(POSITIONAL, "table32", Table)
    assert_fails("position=table32", "lengths", "raised IndexError")


def test_a_bias_of_the_wrong_dtype_fails_shapes(register):
    class WideBias(PositionalEncoding):
        def attention_bias(self, t: int, s: int) -> Tensor:
            return torch.zeros(self.n_heads, t, s, dtype=torch.float64)

    register(POSITIONAL, "wide_bias", WideBias)
    assert_fails("position=wide_bias", "shapes", "attention_bias(T, T): expected (4, 8, 8) torch.float32")


def test_a_config_the_component_refuses_skips_the_rest(register):
    class Picky(PositionalEncoding):
        @classmethod
        def check_config(cls, cfg):
            raise ValueError("position 'picky' needs d_model 4096")

    register(POSITIONAL, "picky", Picky)
    rep = check("position=picky")
    assert (
        contract_result(rep, "config").status == "fail"
        and "needs d_model 4096" in contract_result(rep, "config").detail
    )
    assert {r.status for r in rep.results[1:]} == {"skipped"} and rep.results[-1].contract == "time and memory"
