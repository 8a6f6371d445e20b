"""A store that never loses a run, in one process: resume from checkpoints, timeouts, retries,
runs leased elsewhere (harness/execution/attempt.py, attempts.py, training.py).

The multi-process guarantees (kill -9, two ``ablate run`` at once) are in test_kill_resume.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness.cli import inspect as inspect_cmd
from harness.cli import run as run_cmd
from harness.errors import TRAINED
from harness.execution.attempt import execute
from harness.experiment.ablation import load
from harness.experiment.grid import plan
from harness.run_options import RunOptions
from harness.store.runs import load_record, run_dir
from harness.training import loop as training
from helpers.events import read_events
from helpers.tiny_grid import numbers, records, write_tiny


class _Killed(BaseException):
    """Stands for SIGKILL: nothing in the harness catches it."""


@pytest.fixture
def tiny(tmp_path: Path):
    abl = load(str(write_tiny(tmp_path / "decl", steps=40, val_every=10, seeds=(0,))))
    return abl, plan(abl, "cpu")[1]


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _kill_at(monkeypatch: pytest.MonkeyPatch, step: int) -> None:
    original = training.LitLM.training_step

    def step_or_die(self, batch, batch_idx):
        if self.global_step == step:
            raise _Killed()
        return original(self, batch, batch_idx)

    monkeypatch.setattr(training.LitLM, "training_step", step_or_die)


def test_interrupted_run_resumes_from_its_last_checkpoint_with_identical_results(tiny, tmp_path, monkeypatch):
    abl, specs = tiny
    reference = execute(specs[0], tmp_path / "ref", abl=abl)
    every_pass = RunOptions(checkpoint_every=0)  # a checkpoint at every validation pass
    with monkeypatch.context() as m:
        _kill_at(m, 25)
        with pytest.raises(_Killed):
            execute(specs[0], tmp_path / "int", abl=abl, options=every_pass)
    folder = run_dir(tmp_path / "int", "tiny", "cpu", specs[0].run_id)
    assert (folder / "checkpoints" / "last.ckpt").is_file() and not (folder / "record.json").exists()
    shown = []  # the progress the resumed attempt writes: its rate counts its own steps only
    monkeypatch.setattr(training, "write_progress", lambda folder, progress: shown.append(progress))
    resumed = execute(specs[0], tmp_path / "int", abl=abl, options=every_pass)
    assert (shown[0].start_step, shown[0].step, shown[-1].step, shown[-1].total) == (20, 21, 40, 40)
    assert resumed.status in TRAINED and resumed.resumed_from_step == 20
    assert (resumed.devices, resumed.strategy, resumed.attempt) == (
        1,
        "auto",
        1,
    )  # Lightning's, passed through
    assert numbers(resumed) == numbers(reference)  # bit for bit
    ref_hist = (run_dir(tmp_path / "ref", "tiny", "cpu", specs[0].run_id) / "history.csv").read_text()
    assert (folder / "history.csv").read_text() == ref_hist
    assert not (folder / "checkpoints").exists()  # a finished run keeps what the report needs
    assert [e["event"] for e in read_events(folder)] == ["lease", "lease", "resume", "finish"]


def test_a_lease_left_on_a_finished_run_is_cleared_when_the_grid_runs_again(tiny, tmp_path):
    """A process killed after writing a run's record but before releasing its lease leaves a
    lease on a finished run; running the grid again clears it and keeps the record."""
    abl, specs = tiny
    first = execute(specs[0], tmp_path, abl=abl)
    folder = run_dir(tmp_path, "tiny", "cpu", specs[0].run_id)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lease = {"owner": "x", "host": socket.gethostname(), "pid": dead.pid, "pid_start": None, "token": "t"}
    (folder / "lease.lock").write_text(json.dumps(lease))
    again = execute(specs[0], tmp_path, abl=abl)
    assert again.finished_at == first.finished_at and not (folder / "lease.lock").exists()
    assert [e["event"] for e in read_events(folder)][-1] == "takeover"


def test_no_resume_starts_afresh_and_keep_checkpoints_keeps_them(tiny, tmp_path, monkeypatch):
    abl, specs = tiny
    with monkeypatch.context() as m:
        _kill_at(m, 15)
        with pytest.raises(_Killed):
            execute(specs[0], tmp_path, abl=abl)
    rec = execute(specs[0], tmp_path, abl=abl, options=RunOptions(resume=False, keep_checkpoints=True))
    assert rec.status in TRAINED and rec.resumed_from_step is None
    ckpt = run_dir(tmp_path, "tiny", "cpu", specs[0].run_id) / "checkpoints" / "last.ckpt"
    state = torch.load(ckpt, weights_only=True)
    assert state["global_step"] == 40 and len(state["ablate"]["history"]) == 4


def test_unloadable_checkpoint_is_dropped_and_the_run_starts_afresh(tiny, tmp_path):
    abl, specs = tiny
    folder = run_dir(tmp_path, "tiny", "cpu", specs[0].run_id)
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "checkpoints" / "last.ckpt").write_bytes(b"PK\x03\x04 not a checkpoint")
    rec = execute(specs[0], tmp_path, abl=abl)
    assert rec.status in TRAINED and rec.resumed_from_step is None


def test_run_over_its_time_limit_is_recorded_as_timeout_and_retried(tmp_path, capsys):
    path = write_tiny(tmp_path / "decl", steps=40, seeds=(0,))
    results = tmp_path / "results"
    slow = RunOptions(run_timeout=1e-3)
    assert run_cmd.run(str(path), None, [], results, workers=1, options=slow) == 1
    recs = records(results)
    assert [r["status"] for r in recs.values()] == ["timeout", "timeout"]
    assert all("run timeout 0.001 s" in r["reason"] and r["timeout_step"] <= 1 for r in recs.values())
    assert "timeout" in capsys.readouterr().out
    inspect_cmd.status(str(path), None, results)
    assert "timeout" in capsys.readouterr().out
    assert run_cmd.run(str(path), None, [], results, workers=1, options=RunOptions(retry="timeout")) == 0
    for run_id, rec in records(results).items():
        folder = results / "tiny" / "cpu" / run_id
        assert rec["status"] in TRAINED and rec["attempt"] == 2
        assert json.loads((folder / "record.attempt-1.json").read_text())["status"] == "timeout"


def test_retry_reruns_only_the_listed_statuses_and_keeps_every_attempt(tmp_path, monkeypatch):
    path = write_tiny(tmp_path / "decl", steps=20, seeds=(0,))
    results = tmp_path / "results"
    original = training.TransformerLM.forward

    def fail_learned(self, idx, *args, **kwargs):
        if self.cfg.position == "learned":
            raise RuntimeError("CUDA out of memory (simulated)")
        return original(self, idx, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(training.TransformerLM, "forward", fail_learned)
        assert run_cmd.run(str(path), None, [], results, workers=1) == 1
    first = records(results)
    assert sorted(r["status"] in TRAINED for r in first.values()) == [False, True]  # one failed
    # nothing of those statuses: nothing rerun, nothing touched; the failed run is still there,
    # so the command says so and exits 1 (as the run that made it did)
    assert run_cmd.run(str(path), None, [], results, workers=1, options=RunOptions(retry="diverged,timeout")) == 1
    assert records(results) == first
    assert run_cmd.run(str(path), None, [], results, workers=1, options=RunOptions(retry="failed")) == 0
    second = records(results)
    for run_id, rec in second.items():
        folder = results / "tiny" / "cpu" / run_id
        if first[run_id]["status"] in TRAINED:
            assert rec == first[run_id]
        else:
            assert rec["status"] in TRAINED and rec["attempt"] == 2
            assert json.loads((folder / "record.attempt-1.json").read_text()) == first[run_id]
            assert "out of memory" in (folder / "traceback.attempt-1.txt").read_text()


def test_a_run_leased_by_a_live_process_is_left_alone(tiny, tmp_path, capsys):
    abl, specs = tiny
    folder = run_dir(tmp_path, "tiny", "cpu", specs[0].run_id)
    folder.mkdir(parents=True)
    lease = {"owner": "bob@gpu-box:123", "host": socket.gethostname(), "pid": os.getppid(), "token": "x"}
    (folder / "lease.lock").write_text(json.dumps(lease))
    rec = execute(specs[0], tmp_path, abl=abl)
    assert rec.status == "leased" and "bob@gpu-box:123" in rec.reason
    assert sorted(p.name for p in folder.iterdir()) == ["lease.lock"]
    inspect_cmd.status(abl.source, None, tmp_path)
    out = capsys.readouterr().out
    assert "running (leased by bob@gpu-box:123" in out


def test_options_are_checked_before_anything_runs(tmp_path):
    from harness.errors import AblateError

    path = write_tiny(tmp_path / "decl")
    for options, words in [
        (RunOptions(retry="failed,divergd"), "did you mean 'diverged'"),
        (RunOptions(retry="ok"), "'ok' is not a status that can be retried"),
        (RunOptions(run_timeout=0), "--run-timeout must be a positive"),
        (RunOptions(lease_timeout=5), "--lease-timeout must be at least 60 s"),
        (RunOptions(address="auto"), "--address is the Ray cluster"),
        (RunOptions(executor="ray", address="not an address"), "is not a Ray address"),
        (RunOptions(partition="gpu"), "applies only to --executor slurm"),
        (
            RunOptions(executor="slurm"),  # the engine missing (no slurm extra) or SLURM missing
            "sbatch not found" if importlib.util.find_spec("submitit") else "needs the submitit package",
        ),
    ]:
        with pytest.raises(AblateError, match=words):
            run_cmd.run(str(path), None, [], tmp_path / "results", workers=1, options=options)
    assert not (tmp_path / "results").exists()


def test_load_record_rejects_what_readers_cannot_use(tiny, tmp_path):
    abl, specs = tiny
    rec = execute(specs[0], tmp_path, abl=abl)
    folder = run_dir(tmp_path, "tiny", "cpu", specs[0].run_id)
    assert load_record(folder) == (rec, None)
    rec = rec.to_json()
    for bad, why in [
        ({**rec, "status": "weird"}, "status 'weird'"),
        ({**rec, "seed": "0"}, "field 'seed'"),
        ({**rec, "metrics": {"acc@x1": "high"}}, "metrics must map"),
        ([1, 2], "a JSON list"),
        ({**rec, "run_id": "abc"}, "does not match its folder"),
    ]:
        (folder / "record.json").write_text(json.dumps(bad))
        assert load_record(folder)[0] is None and why in load_record(folder)[1]
