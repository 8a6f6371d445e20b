"""What every registered task shares beyond the contract suite (tests/contracts/test_tasks.py runs
that, as ``ablate check task=NAME`` does): parameter validation and the arguments of ``sample``."""

from __future__ import annotations

import numpy as np
import pydantic
import pytest
import torch

from harness.tasks import TASKS, Task, UnknownNameError, build_task

ALL_TASKS = TASKS.names()
NEEDS_PARAMS = {"text": {"text-char": {"tokenizer": "char"}, "text-bpe": {"tokenizer": "bpe", "vocab_size": 300}}}
"""Tasks that cannot be built without params (a user's corpus: the first 100,000 characters of
Tiny Shakespeare), with the params each contract case uses."""
CASES = [(name, {}) for name in ALL_TASKS if name not in NEEDS_PARAMS] + [
    (name, params) for name, cases in NEEDS_PARAMS.items() for params in cases.values()
]
CASE_IDS = [n for n in ALL_TASKS if n not in NEEDS_PARAMS] + [i for cases in NEEDS_PARAMS.values() for i in cases]


@pytest.fixture(params=CASES, ids=CASE_IDS)
def task(request: pytest.FixtureRequest, shakespeare_dir, shakespeare_head) -> Task:
    name, params = request.param
    if name == "text":
        params = {"path": str(shakespeare_head), **params}
    return build_task(name, params, data_dir=shakespeare_dir)


def _seq_len(task: Task) -> int:
    return max(task.min_seq_len, 24)


def test_every_task_is_registered() -> None:
    assert {"copy", "reverse", "associative_recall", "tinyshakespeare", "text"} <= set(ALL_TASKS)


def test_token_bytes_when_stated_cover_the_vocabulary(task: Task) -> None:
    """Bits per byte need the bytes of every token id; a synthetic task states none."""
    if task.token_bytes is None:
        assert task.name != "text"
        return
    assert task.kind == "lm"
    assert task.token_bytes.shape == (task.vocab_size,) and task.token_bytes.dtype == torch.long
    assert (task.token_bytes >= 1).all()


@pytest.mark.parametrize("name", ALL_TASKS)
def test_unknown_param_is_named(name: str) -> None:
    with pytest.raises(ValueError, match="bogus_param") as info:
        build_task(name, {"bogus_param": 1})
    assert isinstance(info.value.__cause__, pydantic.ValidationError)


def test_unknown_task_suggests_closest() -> None:
    with pytest.raises(UnknownNameError, match="did you mean 'associative_recall'"):
        build_task("asociative_recall")
    with pytest.raises(ValueError, match="did you mean 'copy'"):  # also a ValueError
        build_task("cpy")


def test_bad_arguments_raise(task: Task) -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="seq_len"):
        task.sample(2, task.min_seq_len - 1, rng, "train")
    with pytest.raises(ValueError, match="n must be"):
        task.sample(0, _seq_len(task), rng, "train")
    with pytest.raises(ValueError, match="did you mean 'test'"):
        task.sample(2, _seq_len(task), rng, "tset")
