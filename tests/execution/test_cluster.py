"""Ray (a local instance) and SLURM through submitit (its local executor): the same runs, the same
store, the same numbers as in-process execution, and the same progress of runs in flight."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from harness.cli import progress
from harness.cli import run as run_cmd
from harness.errors import TRAINED
from harness.execution.attempt import execute
from harness.experiment.ablation import load
from harness.experiment.grid import plan
from harness.run_options import RunOptions
from harness.store.record import Record
from harness.store.runs import scan
from helpers import unfinished
from helpers.tiny_grid import numbers, write_tiny


def _reference(path: Path, tmp_path: Path) -> dict[str, Record]:
    abl = load(str(path))
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return {s.run_id: execute(s, tmp_path / "reference", abl=abl) for s in plan(abl, "cpu")[1]}
    finally:
        torch.set_num_threads(before)


def _same_store(results: Path, reference: dict[str, Record]) -> None:
    found = scan(results, "tiny", "cpu")
    assert not found.problems and not unfinished(results, "tiny", "cpu")
    got = {r.run_id: r for r in found.records}
    assert sorted(got) == sorted(reference)
    for run_id, rec in got.items():
        assert rec.status in TRAINED and rec.torch_threads == 1
        assert numbers(rec) == numbers(reference[run_id])
        assert set(rec.to_json()) == set(reference[run_id].to_json())  # one record format, whatever the executor


def _shows_runs_in_flight(out: str) -> None:
    """The piped progress of runs in flight, read from the run folders the workers write."""
    lines = [line for line in out.splitlines() if line.startswith("running ")]
    assert lines and any("copy sinusoidal s0 " in line or "copy learned s0 " in line for line in lines), out
    assert all("/300" in line for line in lines)


@pytest.fixture
def _fast_display(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "POLL_S", 0.05)
    monkeypatch.setattr(progress, "PLAIN_EVERY_S", 0.05)


def test_ray_local_instance(tmp_path: Path, capsys, _fast_display) -> None:
    pytest.importorskip("ray")
    path = write_tiny(tmp_path / "decl", steps=300, val_every=100, seeds=(0,))
    results = tmp_path / "results"
    assert run_cmd.run(str(path), None, [], results, options=RunOptions(executor="ray")) == 0
    _shows_runs_in_flight(capsys.readouterr().out)
    _same_store(results, _reference(path, tmp_path))


@pytest.mark.parametrize("cluster", ["local", "debug"])
def test_submitit_without_slurm(tmp_path: Path, cluster: str, capsys, _fast_display) -> None:
    pytest.importorskip("submitit")
    path = write_tiny(tmp_path / "decl", steps=300, val_every=100, seeds=(0,))
    results = tmp_path / "results"
    options = RunOptions(executor="slurm", cluster=cluster, slurm_time=5)
    assert run_cmd.run(str(path), None, [], results, options=options) == 0
    _shows_runs_in_flight(capsys.readouterr().out)
    _same_store(results, _reference(path, tmp_path))
    if cluster == "local":
        assert any((results / ".submitit").iterdir())  # the job logs, beside the runs
