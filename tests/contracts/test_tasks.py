"""The task contracts over every registered task (the same code as ``ablate check task=NAME``),
and a task built to break each one, registered for one test only."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest

from harness.contracts.result import CheckReport
from harness.contracts.tasks import CONTRACTS, check_task
from harness.tasks import IGNORE_INDEX, TASKS, Task, TaskParams
from harness.tasks.copy import FIRST_SYMBOL, Copy
from harness.tasks.padded import PaddedCopy
from harness.tasks.tinyshakespeare import URL, TinyShakespeare
from helpers import contract_result
from helpers.cli import invoke


@functools.cache
def report(name: str, data_dir: Path) -> CheckReport:
    return check_task(name, data_dir=data_dir)


@pytest.mark.parametrize("contract", CONTRACTS)
@pytest.mark.parametrize("name", TASKS.names())
def test_every_task_meets_every_contract(name: str, contract: str, data_dir: Path) -> None:
    result = contract_result(report(name, data_dir), contract)
    assert result.status == "pass", result


def test_the_version_is_reported(data_dir: Path) -> None:
    rep = report("associative_recall", data_dir)
    assert rep.version == "2" and contract_result(rep, "version").data == {"version": "2"}


def test_the_lengths_contract_names_each_bound(data_dir: Path) -> None:
    """A file-backed task states its longest length per split and refuses one token more, naming
    the bound (the message of ``Task.sample``); a synthetic task has none."""
    assert (
        "train 1,003,853, val 55,769, test 55,769"
        in contract_result(report("tinyshakespeare", data_dir), "lengths").detail
    )
    with pytest.raises(ValueError, match="provides at most seq_len 55769 from its 'test' split"):
        TASKS.get("tinyshakespeare")(data_dir=data_dir).sample(1, 55_770, np.random.default_rng(0), "test")
    assert "any length" in contract_result(report("copy", data_dir), "lengths").detail


def failing(name: str, contract: str) -> str:
    result = contract_result(check_task(name), contract)
    assert result.status == "fail", result
    return result.detail


class OutOfVocab(Copy):
    name = "out_of_vocab"

    def _generate(self, n, seq_len, rng, split):
        inputs, targets = super()._generate(n, seq_len, rng, split)
        inputs[0, 0] = self.vocab_size  # one token past the vocabulary
        return inputs, targets


class IgnoresSeed(Copy):
    name = "ignores_seed"

    def _generate(self, n, seq_len, rng, split):
        return super()._generate(n, seq_len, np.random.default_rng(0), split)


class NoAnswer(Copy):
    name = "no_answer"

    def _generate(self, n, seq_len, rng, split):
        inputs, targets = super()._generate(n, seq_len, rng, split)
        targets[0] = IGNORE_INDEX  # row 0 scores nothing
        return inputs, targets


class LeakyShakespeare(TinyShakespeare):
    """The test split drawn from the train split: every test window is training text."""

    name = "leaky_shakespeare"

    def _generate(self, n, seq_len, rng, split):
        return super()._generate(n, seq_len, rng, "train" if split == "test" else split)


class OverlappingPadded(PaddedCopy):
    """padded_copy as version 1 drew it: independent draws, so short problems repeat across splits."""

    name = "overlapping_padded"

    def _draw(self, n, max_len, rng, split):
        lengths = rng.integers(self.params.min_len, max_len + 1, size=n)
        return lengths, rng.integers(FIRST_SYMBOL, self.vocab_size, size=(n, max_len))


class Echo(Task):
    """Random tokens, never one twice in a row; the target at t is the input at t + ``offset``
    (scored wherever that is in the row), declared as hiding its answers. Offset 0 is a task whose
    target is its own input; each passed every contract before ``answers`` read the input for it."""

    name, version, kind, answers_in_input, offset = "echo", "1", "synthetic", False, 0
    Params = TaskParams
    vocab_size, min_seq_len = 16, 4

    def max_seq_len(self, split):
        return None

    def _generate(self, n, seq_len, rng, split):
        import torch

        steps = rng.integers(1, self.vocab_size, size=(n, seq_len + self.offset))  # never 0: no repeat
        x = np.cumsum(steps, axis=1) % self.vocab_size  # (N, T + offset)
        y = np.full((n, seq_len), IGNORE_INDEX)
        y[:, : seq_len - self.offset] = x[:, self.offset : seq_len]
        return torch.from_numpy(x[:, :seq_len].copy()), torch.from_numpy(y)


class EchoLater(Echo):
    name, offset = "echo_later", 2


class Unversioned(Copy):
    name = "unversioned"
    version = ""


@pytest.mark.parametrize(
    ("cls", "contract", "words"),
    [
        (OutOfVocab, "vocabulary", "input token 18 outside [0, 18)"),
        (IgnoresSeed, "determinism", "seeds 0 and 1 gave the same data"),
        (NoAnswer, "answers", "row 0 has no scored position"),
        (Unversioned, "version", "version must be a non-empty str"),
        (OverlappingPadded, "splits", "rows are also train rows, although the task declares disjoint splits"),
    ],
)
def test_a_broken_task_fails_its_contract(register, cls: type[Task], contract: str, words: str) -> None:
    register(TASKS, cls.name, cls)
    assert words in failing(cls.name, contract)


@pytest.mark.parametrize(
    ("cls", "words"),
    [
        (Echo, "the scored target at t is readable from the input token at its own position"),
        (EchoLater, "readable from the input token at position t + 2 (a lookup from it gets 100%"),
    ],
)
def test_a_target_readable_from_the_input_fails_answers_only(register, cls: type[Task], words: str) -> None:
    register(TASKS, cls.name, cls)
    rep = check_task(cls.name)
    assert words in contract_result(rep, "answers").detail, contract_result(rep, "answers")
    assert [r.contract for r in rep.results if r.status != "pass"] == ["answers"]


@pytest.mark.usefixtures("cli_isolated")
def test_ablate_check_refuses_a_task_whose_target_is_its_input(register) -> None:
    register(TASKS, "echo", Echo)
    result = invoke("check", "task=echo", "--format", "json")
    assert result.exit_code == 1, result.output
    (rep,) = json.loads(result.stdout)["checks"]
    answers = next(c for c in rep["contracts"] if c["contract"] == "answers")
    assert answers["status"] == "fail" and "the model sees its answer" in answers["detail"]


def test_test_windows_found_in_the_train_split_fail_splits(register, data_dir: Path) -> None:
    register(TASKS, "leaky_shakespeare", LeakyShakespeare)
    detail = contract_result(check_task("leaky_shakespeare", data_dir=data_dir), "splits").detail
    assert "windows of the test split occur in the train split" in detail


def test_missing_data_fails_data_and_skips_the_rest(monkeypatch, tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    monkeypatch.setenv("ABLATE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ABLATE_DATA_DIR", raising=False)

    def no_network(*args, **kwargs):
        raise urllib.error.URLError("network disabled in tests")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    rep = check_task("tinyshakespeare", data_dir=tmp_path)
    assert (
        contract_result(rep, "data").status == "fail"
        and "could not be found or downloaded" in contract_result(rep, "data").detail
        and contract_result(rep, "data").detail.endswith(f"tinyshakespeare.txt {URL}")  # the fix, whole
    )
    assert {r.status for r in rep.results[2:]} == {"skipped"}
