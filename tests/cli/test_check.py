"""``ablate check`` through the real CLI: the table, JSON, exit 1 on a failed contract (the broken
fixtures are in tests/contracts/test_broken_components.py) and exit 2 for a name that names nothing."""

from __future__ import annotations

import json
import time

import pytest
import torch

from helpers.cli import assert_refused, invoke

pytestmark = pytest.mark.usefixtures("cli_isolated")


def test_a_component_prints_its_table_and_exits_0():
    threads = torch.get_num_threads()
    result = invoke("check", "position=learned")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "model.position=learned (version 1): 13 pass" in out
    for contract in ("causality", "causality in use", "prefix", "finite fp16", "lengths", "gradients"):
        assert contract in out
    assert "time and memory" in out and "+512 vs sinusoidal" in out
    assert torch.get_num_threads() == threads  # --threads applies to the check only


def test_json_holds_every_contract_with_its_status_and_seconds():
    started = time.perf_counter()
    result = invoke("check", "task=copy", "kernel=linear", "--format", "json")
    wall = time.perf_counter() - started
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["threads"] == 1 and payload["torch"] == torch.__version__
    task, kernel = payload["checks"]
    assert (task["target"], task["kind"], task["version"], task["ok"]) == ("task=copy", "task", "1", True)
    assert [c["contract"] for c in task["contracts"]][:3] == ["version", "data", "shapes"]
    assert kernel["target"] == "attention.kernel=linear" and kernel["ok"] is True
    memory = next(c for c in kernel["contracts"] if c["contract"] == "time and memory")
    assert [r["seq_len"] for r in memory["data"]["rows"]] == [64, 256, 1024]
    assert all(c["status"] == "pass" for c in kernel["contracts"])
    # each contract's seconds are its own share of the command's wall time, not a constant
    seconds = [c["seconds"] for check in (task, kernel) for c in check["contracts"]]
    assert memory["seconds"] > 0 and sum(seconds) <= wall


def test_a_failed_contract_exits_1():
    result = invoke("check", "attention.mask_fill=-1e9")
    assert result.exit_code == 1, result.output
    assert "cannot be converted to type c10::Half without overflow" in result.stdout


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["check", "rop"], ["'rop'", "did you mean 'rope'?"]),
        (["check", "positon=rope"], ["unknown component family 'positon'", "did you mean 'position'"]),
        (["check", "position=rop"], ["unknown positional encoding 'rop'", "did you mean 'rope'?"]),
        (["check", "task=cpy"], ["unknown task 'cpy'", "did you mean 'copy'?"]),
        (["check", "task=copy", "rop"], ["'rop'"]),  # every name is resolved before any check runs
        (["check"], ["name a component or task to check"]),
        (["check", "--all", "rope"], ["--all checks every registered component and task; drop rope"]),
    ],
)
def test_a_name_that_names_nothing_exits_2_before_any_check(args, words):
    assert_refused(invoke(*args), *words)


def test_a_seed_too_large_for_torch_exits_2_before_any_check():
    # it ran every check, each failing in torch's manual_seed (Overflow when unpacking long long)
    result = invoke("check", "position=rope", "--seed", "99999999999999999999")
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--seed'" in result.output and "2147483647" in result.output
    assert "parameters" not in result.stdout
