"""Contract tests run over every registered task."""

from __future__ import annotations

import numpy as np
import pydantic
import pytest
import torch

from tasks import IGNORE_INDEX, SPLITS, TASKS, Task, TaskParams, UnknownNameError, build_task

ALL_TASKS = TASKS.names()


@pytest.fixture(params=ALL_TASKS)
def task(request: pytest.FixtureRequest, shakespeare_dir) -> Task:
    return build_task(request.param, data_dir=shakespeare_dir)


def _seq_len(task: Task) -> int:
    return max(task.min_seq_len, 24)


def test_every_task_is_registered() -> None:
    assert {"copy", "reverse", "associative_recall", "tinyshakespeare"} <= set(ALL_TASKS)


@pytest.mark.parametrize("name", ALL_TASKS)
def test_class_attributes(name: str) -> None:
    cls = TASKS.get(name)
    assert cls.name == name
    assert isinstance(cls.version, str) and cls.version
    assert cls.kind in ("synthetic", "lm")
    assert issubclass(cls.Params, TaskParams)
    assert cls.Params.model_config.get("extra") == "forbid"


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


@pytest.mark.parametrize("split", SPLITS)
def test_shapes_dtypes_and_vocab_bounds(task: Task, split: str) -> None:
    t = _seq_len(task)
    inputs, targets = task.sample(8, t, np.random.default_rng(0), split)
    assert inputs.shape == targets.shape == (8, t)
    assert inputs.dtype == targets.dtype == torch.long
    assert inputs.min() >= 0 and inputs.max() < task.vocab_size
    scored = targets != IGNORE_INDEX
    assert scored.any(dim=1).all(), "every row has an answer"
    assert targets[scored].min() >= 0 and targets[scored].max() < task.vocab_size
    if task.kind == "lm":
        assert scored.all()


def test_targets_are_next_tokens(task: Task) -> None:
    """A scored target reappears as the next input, except at a row's last scored position
    (after which a task may pad); a task that hides its answers never shows one there."""
    inputs, targets = task.sample(8, _seq_len(task), np.random.default_rng(1), "train")
    scored = targets != IGNORE_INDEX
    last = scored.shape[1] - 1 - scored.flip(1).int().argmax(dim=1)  # (N,)
    scored[torch.arange(len(last)), last] = False
    following = inputs[:, 1:][scored[:, :-1]]
    if task.answers_in_input:
        assert torch.equal(targets[:, :-1][scored[:, :-1]], following)
    else:
        assert following.numel() and not (targets[:, :-1][scored[:, :-1]] == following).any()


def test_determinism(task: Task) -> None:
    t = _seq_len(task)
    a = task.sample(16, t, np.random.default_rng(123), "train")
    b = task.sample(16, t, np.random.default_rng(123), "train")
    c = task.sample(16, t, np.random.default_rng(124), "train")
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


def test_bad_arguments_raise(task: Task) -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="seq_len"):
        task.sample(2, task.min_seq_len - 1, rng, "train")
    with pytest.raises(ValueError, match="n must be"):
        task.sample(0, _seq_len(task), rng, "train")
    with pytest.raises(ValueError, match="did you mean 'test'"):
        task.sample(2, _seq_len(task), rng, "tset")


def test_min_seq_len_works(task: Task) -> None:
    inputs, _ = task.sample(4, task.min_seq_len, np.random.default_rng(0), "test")
    assert inputs.shape == (4, task.min_seq_len)


def test_check_available(task: Task) -> None:
    task.check_available()


@pytest.mark.parametrize("split", SPLITS)
def test_every_task_states_its_longest_length(task: Task, split: str) -> None:
    """Synthetic tasks generate rows of any length (None); a file-backed task draws up to its bound
    and refuses one token more, naming the bound."""
    longest = task.max_seq_len(split)
    if task.kind == "synthetic":
        assert longest is None
        length = 4096
    else:
        assert isinstance(longest, int) and longest >= task.min_seq_len
        length = longest
        with pytest.raises(ValueError, match=f"at most seq_len {longest}"):
            task.sample(1, longest + 1, np.random.default_rng(0), split)
    inputs, _ = task.sample(1, length, np.random.default_rng(0), split)
    assert inputs.shape == (1, length)
