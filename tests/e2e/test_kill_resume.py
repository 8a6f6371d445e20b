"""No run lost, none run twice: ``kill -9`` at random moments, and two ``ablate run`` at once.

Both tests start ``ablate run`` (the function behind it, in processes forked from the
harness's own forkserver, so each start costs milliseconds instead of an import of torch and
Lightning; tests/cli/test_cli_errors.py runs the installed script). The kill test kills it with
SIGKILL at seeded random moments, each soon after a fresh checkpoint (so mostly while a run is
between two checkpoints), and finally lets it finish. The store must then hold every run exactly once, each
record parseable and complete, with the same numbers as runs that were never interrupted, and
the same logged curve from step 0 (the CSV log, and the W&B run of the last attempt, under one
W&B run id per run kept across resumes).
"""

from __future__ import annotations

import csv
import os
import random
import re
import signal
import sys
import time
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from harness.cli import run as run_cmd
from harness.cli.app import app
from harness.errors import TRAINED
from harness.execution.attempt import execute, wandb_run_id
from harness.execution.local import pool_context
from harness.experiment.ablation import load
from harness.experiment.grid import plan
from harness.run_options import RunOptions
from harness.store.runs import load_record, scan
from harness.training import lit
from harness.training.wandb_upload import offline_runs
from helpers import unfinished
from helpers.events import read_events
from helpers.tiny_grid import numbers, write_tiny
from helpers.wandb_runs import curve, read_run

OFTEN = RunOptions(checkpoint_every=0.05)
"""The checkpoint cadence of the killed runs: by wall clock, as by default, but in tenths of a
second (a run of this grid lasts about one), so most runs are killed between two checkpoints."""


def _store_is_complete(
    results: Path, specs: list, reference: dict[str, dict] | None = None, reference_store: Path | None = None
) -> dict[str, list]:
    """Every run once, parseable and complete (with the numbers of ``reference``, the records of
    uninterrupted runs, and the CSV curves of ``reference_store``); returns each run's events."""
    found = scan(results, "tiny", "cpu")
    assert not found.problems and not unfinished(results, "tiny", "cpu")
    assert sorted(r.run_id for r in found.records) == sorted(s.run_id for s in specs)
    events = {}
    for spec in specs:
        folder = results / "tiny" / "cpu" / spec.run_id
        rec, problem = load_record(folder)
        assert problem is None and rec.status in TRAINED, (spec.run_id, problem)
        for key in ("metrics", "config", "versions", "torch_threads", "device", "attempt", "finished_at"):
            assert key in rec.model_fields_set
        assert not (folder / "checkpoints").exists() and not (folder / "lease.lock").exists()
        assert not list(folder.glob("record.attempt-*"))
        events[spec.run_id] = [e["event"] for e in read_events(folder)]
        # executed to the end once (a kill between the record and its event may drop the event)
        assert events[spec.run_id].count("finish") <= 1
        if reference is not None:
            assert numbers(rec) == numbers(reference[spec.run_id]), spec.run_id
        if reference_store is not None:  # the logged curve from step 0, as if never interrupted
            assert _curve(folder) == _curve(reference_store / "tiny" / "cpu" / spec.run_id), spec.run_id
    return events


def _curve(folder: Path) -> list[dict[str, str]]:
    """The CSV log of a run: every row Lightning's CSVLogger wrote (train loss/lr, validation)."""
    with open(folder / "csv" / "metrics.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def _logged(folder: Path) -> list[tuple[int, dict[str, float]]]:
    """The CSV log of a run as :func:`helpers.wandb_runs.curve` gives a W&B run's: (step, metrics)."""
    return [(int(r["step"]), {k: float(v) for k, v in r.items() if k != "step" and v}) for r in _curve(folder)]


def _wait_for_a_checkpoint(results: Path, proc, since: float, timeout: float = 60) -> None:
    """Until the process has written a checkpoint (a run is under way and has progressed)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.is_alive():
        for ckpt in results.glob("tiny/cpu/*/checkpoints/last.ckpt"):
            try:
                if ckpt.stat().st_mtime >= since:
                    return
            except FileNotFoundError:
                continue
        time.sleep(0.005)


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory):
    """The tiny grid (4 runs of 60 steps, a checkpoint every 10) and its uninterrupted records."""
    root = tmp_path_factory.mktemp("grid")
    path = write_tiny(root / "decl", steps=60, val_every=10)
    abl = load(str(path))
    specs = plan(abl, "cpu")[1]
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        reference = {s.run_id: execute(s, root / "reference", abl=abl) for s in specs}
    finally:
        torch.set_num_threads(before)
    assert _curve(root / "reference" / "tiny" / "cpu" / specs[0].run_id)[0]["step"] == "9"  # the first row
    return path, specs, reference, root / "reference"


def test_kill_9_at_random_moments_then_rerun_completes_every_run_exactly_once(grid, tmp_path: Path) -> None:
    path, specs, reference, reference_store = grid
    results, rng, ctx, kills = tmp_path / "results", random.Random(6), pool_context(), 0
    for _ in range(6):
        proc = ctx.Process(target=_run_with_its_own_wandb_service, args=(str(path), results))
        since = time.time()
        proc.start()
        _wait_for_a_checkpoint(results, proc, since)
        time.sleep(rng.uniform(0.0, 0.25))
        if proc.is_alive():
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.join()
    assert kills >= 3
    assert run_cmd.run(str(path), None, [], results, workers=1, wandb="offline", options=OFTEN) == 0
    events = _store_is_complete(results, specs, reference, reference_store)
    assert sum(e.count("resume") for e in events.values()) >= 1  # killed mid-run, resumed, same numbers
    for spec in specs:  # every attempt's W&B log kept, all under the run's one W&B id
        folder = results / "tiny" / "cpu" / spec.run_id
        assert load_record(folder)[0].wandb_id == wandb_run_id(spec.run_id, 1)
        logs = list((folder / "wandb").glob("offline-run-*"))
        # offline-run-<start second>-<id>, and W&B's own -N after it when two attempts start in one second
        own = re.compile(rf"offline-run-\d{{8}}_\d{{6}}-{re.escape(wandb_run_id(spec.run_id, 1))}(-\d+)?")
        assert logs and all(own.fullmatch(p.name) for p in logs), logs
        if "resume" in events[spec.run_id]:  # the last attempt's W&B run holds the whole curve, once
            assert len(logs) >= 2 and curve(read_run(offline_runs(folder)[-1])) == _logged(folder)
    assert sum(e.count("takeover") for e in events.values()) >= 1  # a dead process's lease taken over


def _run_with_its_own_wandb_service(decl: str, results: Path) -> None:
    """``ablate run`` in a child process that starts its own W&B service, which dies with it as a
    killed ``ablate run``'s does (one inherited from the test process would keep the killed run's
    id "in use" for the rerun)."""
    os.environ.pop("WANDB_SERVICE", None)
    run_cmd.run(decl, None, [], results, workers=1, wandb="offline", options=OFTEN)


def _killed_at(step: int, decl: str, results: Path) -> None:
    """Train the first run of ``decl`` with W&B offline, a checkpoint at every validation pass,
    and SIGKILL this process as training step ``step`` begins."""
    train = lit.LitLM.training_step

    def step_or_die(self, batch, batch_idx):
        if self.global_step == step:
            os.kill(os.getpid(), signal.SIGKILL)
        return train(self, batch, batch_idx)

    lit.LitLM.training_step = step_or_die  # in this child process only
    # its own W&B service, which dies with it as a killed `ablate run`'s does: one inherited from
    # the test process (an earlier test's W&B run) would keep the killed run's id "in use"
    os.environ.pop("WANDB_SERVICE", None)
    abl = load(decl)
    execute(plan(abl, "cpu")[1][0], results, wandb_mode="offline", abl=abl, options=RunOptions(checkpoint_every=0))


def test_a_killed_run_resumed_holds_its_whole_curve_in_one_wandb_run(tmp_path: Path) -> None:
    """Killed at step 45 (checkpoint at 40), resumed: the resumed attempt's W&B run holds every row
    of the CSV log from the first, once each, at the same steps under the same names (the killed
    attempt's log holds little or none of it: W&B writes its log a block at a time); ``ablate
    sync`` uploads the resumed attempt's folder alone."""
    decl = write_tiny(tmp_path / "decl", steps=60, val_every=10, seeds=(0,))
    abl, results = load(str(decl)), tmp_path / "results"
    spec = plan(abl, "cpu")[1][0]
    proc = pool_context().Process(target=_killed_at, args=(45, str(decl), results))
    proc.start()
    proc.join(120)
    assert proc.exitcode == -signal.SIGKILL
    rec = execute(spec, results, wandb_mode="offline", abl=abl, options=RunOptions(checkpoint_every=0))
    assert rec.status in TRAINED and rec.resumed_from_step == 40
    folder = results / "tiny" / "cpu" / spec.run_id
    killed, resumed = offline_runs(folder)  # one W&B run id, two attempts' folders
    assert {killed.name[-len(rec.wandb_id) :], resumed.name[-len(rec.wandb_id) :]} == {rec.wandb_id}
    logged = _logged(folder)
    assert logged[0][0] == 9 and logged[-1][0] == 59
    assert curve(read_run(resumed)) == logged
    out = CliRunner().invoke(app, ["sync", "--results-dir", str(results), "--dry-run"])
    assert out.exit_code == 0, out.output
    assert "skipped 1 " in out.output and "1 offline W&B run(s) would be uploaded" in out.output, out.output
    assert str(resumed.relative_to(results)) + "\n" in out.output
    assert str(killed.relative_to(results)) + "\n" not in out.output


def _ablate_run(*args, **kwargs) -> None:
    """``ablate run`` in a child process: its exit code is the command's."""
    sys.exit(run_cmd.run(*args, **kwargs))


def test_two_ablate_processes_on_one_grid_never_run_the_same_run(tmp_path: Path) -> None:
    path = write_tiny(tmp_path / "decl", steps=30, val_every=10, seeds=(0, 1, 2))
    results = tmp_path / "results"
    ctx = pool_context()
    procs = [
        ctx.Process(target=_ablate_run, args=(str(path), None, [], results), kwargs={"workers": 1}) for _ in range(2)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(300)
    assert [p.exitcode for p in procs] == [0, 0]
    specs = plan(load(str(path)), "cpu")[1]
    events = _store_is_complete(results, specs)
    assert all(e == ["lease", "finish"] for e in events.values()), events  # one lease each: never run twice
    finishers = {
        e["pid"] for s in specs for e in read_events(results / "tiny" / "cpu" / s.run_id) if e["event"] == "finish"
    }
    assert finishers <= {p.pid for p in procs}


def test_two_workers_give_the_numbers_of_one(grid, tmp_path: Path) -> None:
    path, specs, reference, _ = grid
    assert run_cmd.run(str(path), None, [], tmp_path / "results", workers=2) == 0
    events = _store_is_complete(tmp_path / "results", specs, reference)
    pids = {e["pid"] for s in specs for e in read_events(tmp_path / "results" / "tiny" / "cpu" / s.run_id)}
    assert len(pids) == 2 and os.getpid() not in pids and all(e == ["lease", "finish"] for e in events.values())


def test_a_kill_after_the_record_leaves_nothing_behind_once_run_again(tmp_path: Path) -> None:
    """A kill -9 between writing a finished run's record and its clean-up left its lease and
    checkpoints for good: a later ``ablate run`` skips finished runs before any attempt, so nothing
    removed them (the random kills above caught this now and then). The next run tidies them; a
    lease of a live process is left alone."""
    import json
    import socket

    path = write_tiny(tmp_path / "decl", steps=20, val_every=10, seeds=(0, 1))
    results = tmp_path / "results"
    assert run_cmd.run(str(path), None, [], results, workers=1) == 0
    dead, live = sorted((results / "tiny" / "cpu").iterdir())[:2]
    gone = {"host": socket.gethostname(), "pid": 2**22 + 7, "owner": "killed"}  # above pid_max: no such process
    held = {"host": socket.gethostname(), "pid": os.getppid(), "owner": "alive"}  # a live process, not this one
    for folder, lease in ((dead, gone), (live, held)):
        (folder / "checkpoints").mkdir()
        (folder / "checkpoints" / "last.ckpt").write_bytes(b"x")
        (folder / "lease.lock").write_text(json.dumps(lease))
    held_before = (live / "lease.lock").read_text()
    assert run_cmd.run(str(path), None, [], results, workers=1) == 0
    assert not (dead / "lease.lock").exists() and not (dead / "checkpoints").exists()
    assert "takeover" in [e["event"] for e in read_events(dead)]
    assert (live / "lease.lock").read_text() == held_before and (live / "checkpoints" / "last.ckpt").exists()
