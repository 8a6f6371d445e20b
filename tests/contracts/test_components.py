"""The contract suite over every registered component: the repository's own contract tests, the
same code as ``ablate check`` (harness/contracts). Each (component, contract) is one test."""

from __future__ import annotations

import dataclasses
import functools

import pytest
import torch

import harness.modules as modules
from harness.config import RunConfig, get_path, valid_paths
from harness.contracts.components import CONTRACTS, build, check, host_config, model_cost
from harness.contracts.result import CheckReport
from harness.contracts.targets import everything, resolve
from harness.errors import AblateError
from harness.registry import Registry
from helpers import contract_result

COMPONENTS = [t.label for t in everything() if t.family is not None]

# What the suite finds in the built-in components on purpose, each a documented negative control
# or limit. Any other failure or refusal fails its test.
EXPECTED_FAILURES = {
    # claim mask-1e9-fp16 (ablation mask_fill_fp16): -1e9 does not fit float16 scores
    ("attention.mask_fill=-1e9", "finite fp16"): "cannot be converted to type c10::Half without overflow",
    # claim head-split-bug: the heads are cut from the whole sequence, so position i's output
    # depends on T (never on later tokens: causality passes)
    ("attention.head_split=transpose_missing", "prefix"): "first offending position",
}
EXPECTED_REFUSALS: dict[tuple[str, str], str] = {}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """As ``ablate check`` (--threads 1): two threads on two shared cores make small calls far slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@functools.cache
def report(label: str) -> CheckReport:
    return check(label, lengths=None)


@pytest.mark.parametrize("contract", [c for c in CONTRACTS if c != "time and memory"])
@pytest.mark.parametrize("label", COMPONENTS)
def test_every_component_meets_every_contract(label: str, contract: str) -> None:
    result = contract_result(report(label), contract)
    if (label, contract) in EXPECTED_FAILURES:
        assert result.status == "fail" and EXPECTED_FAILURES[label, contract] in result.detail, result
    elif (label, contract) in EXPECTED_REFUSALS:
        assert result.status == "refused" and EXPECTED_REFUSALS[label, contract] in result.detail, result
    else:
        assert result.status == "pass", result


def test_the_lengths_checked_cover_every_registered_ablation() -> None:
    """``causality in use`` and ``lengths`` check every multiplier of L and the longest evaluation
    (in tokens) that a profile of a registered ablation runs, at the default batch size."""
    from harness.contracts.components import LONGEST, MULTIPLIERS, RUN_BATCH
    from harness.experiment import ablation, grid

    multipliers, longest = set(), 0
    for name in ablation.available():
        abl = ablation.load(name)
        for profile in abl.profiles:
            for spec in grid.plan(abl, profile, check_data=False)[1]:
                multipliers |= set(spec.config.eval.length_multipliers)
                longest = max(longest, *spec.config.eval_lengths())
    assert multipliers <= set(MULTIPLIERS) and longest <= LONGEST, (multipliers, longest)
    assert RunConfig().train.batch_size == RUN_BATCH


def test_every_registry_of_the_modules_is_a_family_with_its_config_key_and_default() -> None:
    registries = {id(getattr(modules, n)) for n in modules.__all__ if isinstance(getattr(modules, n), Registry)}
    assert registries == {id(f.registry) for f in modules.COMPONENT_FAMILIES}
    defaults = RunConfig()
    for fam in modules.COMPONENT_FAMILIES:
        assert fam.config_key in valid_paths()
        assert get_path(defaults, fam.config_key) == fam.default, fam.config_key


def test_names_as_overrides_short_keys_bare_names_and_aliases() -> None:
    assert resolve("model.position=rope").label == "model.position=rope"
    assert resolve("position=rope") == resolve("rope") == resolve("model.position=rope")
    assert resolve("attention.kernel=linear").label == resolve("linear").label == "attention.kernel=linear"
    assert resolve("block.norm=rmsnorm").label == "block.norm=rmsnorm"
    assert resolve("mqar").label == resolve("task=mqar").label == "task=associative_recall"
    assert resolve(" task = copy ").label == "task=copy"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("rop", ["no component or task is registered as 'rop'", "did you mean 'rope'?"]),
        ("positon=rope", ["unknown component family 'positon'", "did you mean 'position'"]),
        ("position=rop", ["unknown positional encoding 'rop'", "did you mean 'rope'?"]),
        ("attention.kernel=flsh", ["unknown attention kernel 'flsh'", "did you mean 'flash'?"]),
        ("task=cpy", ["unknown task 'cpy'", "did you mean 'copy'?"]),
        ("", ["name a component or task"]),
    ],
)
def test_a_name_that_names_nothing_suggests_the_closest(text: str, words: list[str]) -> None:
    with pytest.raises(AblateError) as info:
        resolve(text)
    for w in words:
        assert w in str(info.value)


def test_a_bare_name_in_two_families_asks_which(register) -> None:
    register(modules.NORMS, "rope", torch.nn.LayerNorm)
    with pytest.raises(
        AblateError, match="registered in several families; name one: model.position=rope or block.norm=rope"
    ):
        resolve("rope")
    assert resolve("norm=rope").label == "block.norm=rope"


def test_memory_is_what_the_forward_saves_for_backward() -> None:
    """Against the math kernel's own arithmetic: it saves its (B, H, T, T) float32 weights in every
    layer (for the backward of weights @ v), which SDPA's fused kernel never materialises."""
    t = 128
    cfg = host_config(modules.COMPONENT_FAMILIES[1], "sdpa")
    sdpa = model_cost(build(cfg, 0).train(), t)
    math = model_cost(build(dataclasses.replace(cfg, kernel="math"), 0).train(), t)
    weights_mib = cfg.n_layers * cfg.n_heads * t * t * 4 / 2**20
    assert math["mib_saved"] - sdpa["mib_saved"] >= weights_mib
    assert sdpa["ms"] > 0 and math["ms"] > 0


def test_time_and_memory_beside_the_default_and_refused_lengths() -> None:
    rep = check("position=alibi", lengths=(16, 32))
    res = contract_result(rep, "time and memory")
    assert res.status == "pass" and "sinusoidal" in res.detail
    rows = res.data["rows"]
    assert [r["seq_len"] for r in rows] == [16, 32]
    assert all(r["ms"] > 0 and r["default_ms"] > 0 for r in rows)
    assert rows[1]["mib_saved"] > rows[1]["default_mib_saved"]  # ALiBi's (H, T, T) bias per layer
    own = contract_result(check("position=sinusoidal", lengths=(16,)), "time and memory")
    assert "this is the default" in own.detail and "default_ms" not in own.data["rows"][0]
