"""What every registered task shares beyond the contract suite (tests/contracts/test_tasks.py runs
that, as ``ablate check task=NAME`` does): parameter validation and the arguments of ``sample``."""

from __future__ import annotations

import numpy as np
import pydantic
import pytest

from tasks import TASKS, Task, UnknownNameError, build_task

ALL_TASKS = TASKS.names()


@pytest.fixture(params=ALL_TASKS)
def task(request: pytest.FixtureRequest, shakespeare_dir) -> Task:
    return build_task(request.param, data_dir=shakespeare_dir)


def _seq_len(task: Task) -> int:
    return max(task.min_seq_len, 24)


def test_every_task_is_registered() -> None:
    assert {"copy", "reverse", "associative_recall", "tinyshakespeare"} <= set(ALL_TASKS)


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
