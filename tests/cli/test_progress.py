"""The progress of runs in flight (harness/cli/progress.py, harness/training/progress.py): read from
the run folders, shown as a plain line when piped, fed by a real run in this process."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from harness.cli import progress
from harness.cli import run as run_cmd
from harness.store.runs import run_dir
from harness.training.progress import PROGRESS, RunProgress, read_progress, write_progress
from helpers.fake_store import write_runs
from helpers.tiny_grid import write_tiny


def _spec(run_id: str, seed: int = 0) -> SimpleNamespace:
    return SimpleNamespace(run_id=run_id, ablation="tiny", profile="cpu", task="copy", variant_label="rope", seed=seed)


def _write(folder: Path, step: int, total: int = 3000, loss: float | None = 1.25, age_s: float = 0.0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    progress = RunProgress(
        step=step, total=total, loss=loss, start_step=0, elapsed_s=step * 0.01, updated_at=time.time() - age_s
    )
    write_progress(folder, progress)


def test_progress_file_round_trips_and_gives_an_eta(tmp_path: Path) -> None:
    _write(tmp_path, 1200)
    got = read_progress(tmp_path)
    assert (got.step, got.total, got.loss) == (1200, 3000, 1.25)
    assert got.eta_s() == pytest.approx(18.0)  # 1800 steps left at 12 s per 1200 steps
    assert [p.name for p in tmp_path.iterdir()] == [PROGRESS]  # the temporary file was renamed
    assert read_progress(tmp_path, stale_s=60) is not None
    _write(tmp_path, 1200, age_s=300)
    assert read_progress(tmp_path, stale_s=60) is None  # an attempt that died long ago
    (tmp_path / PROGRESS).write_text("{not json")
    assert read_progress(tmp_path) is None
    _write(tmp_path, 5, loss=float("nan"))
    assert json.loads((tmp_path / PROGRESS).read_text())["loss"] is None  # strict JSON


def test_progress_never_makes_a_run_folder_nor_fails_the_run(tmp_path: Path) -> None:
    """A run folder removed under a run in flight is not made again by its progress; the write fails quietly."""
    gone = tmp_path / "gone"
    write_progress(gone, RunProgress(step=1, total=2, loss=None, start_step=0, elapsed_s=0.1, updated_at=time.time()))
    assert not gone.exists()


def test_runs_in_flight_show_step_loss_and_eta_and_finished_ones_drop_out(tmp_path: Path) -> None:
    specs = [_spec("aaa", 0), _spec("bbb", 1), _spec("ccc", 2)]
    _write(run_dir(tmp_path, "tiny", "cpu", "aaa"), 1200)
    _write(run_dir(tmp_path, "tiny", "cpu", "bbb"), 3000, total=3000)
    shown = progress.GridProgress(Console(file=io.StringIO()), specs, tmp_path).poll()
    assert shown == ["copy rope s0 1200/3000 loss 1.25 ETA 0m18s", "copy rope s1 3000/3000 loss 1.25 testing"]
    grid = progress.GridProgress(Console(file=io.StringIO()), specs, tmp_path)
    grid.finished("aaa")
    assert grid.poll() == ["copy rope s1 3000/3000 loss 1.25 testing"]


def test_piped_output_gets_a_plain_line_within_seconds(tmp_path: Path) -> None:
    out = io.StringIO()
    console = Console(file=out, width=200)
    assert not console.is_terminal
    _write(run_dir(tmp_path, "tiny", "cpu", "aaa"), 40, total=100)
    with progress.GridProgress(console, [_spec("aaa")], tmp_path, poll_s=0.05, plain_every_s=0.1):
        end = time.monotonic() + 10
        while "running 1:" not in out.getvalue() and time.monotonic() < end:
            time.sleep(0.05)
    assert "running 1: copy rope s0 40/100 loss 1.25 ETA" in out.getvalue()


def test_a_run_in_flight_in_this_process_shows_its_step(tmp_path: Path, monkeypatch, capsys) -> None:
    """``ablate run`` with the default workers (one run: trained in this process, the display in a
    thread): the first line says why one worker, a plain line with the run's step appears while
    it trains, and no progress file is left behind."""
    monkeypatch.setattr(progress, "POLL_S", 0.05)
    monkeypatch.setattr(progress, "PLAIN_EVERY_S", 0.05)
    path = write_tiny(tmp_path / "decl", steps=400, val_every=200, seeds=(0,), positions=("nope", "sinusoidal"))
    # a grid has at least 2 points: the other one is in the store already, so one run is left to do
    assert write_runs(tmp_path / "results", path, "cpu", lambda variant, seed: 0.5 if variant != "nope" else None)
    assert run_cmd.run(str(path), None, [], tmp_path / "results") == 0
    out = capsys.readouterr().out
    assert "1 to run (1 worker(s) x 1 thread(s): one run, W&B off)" in out.splitlines()[0]
    line = next(line for line in out.splitlines() if line.startswith("running 1: copy nope s0 "))
    step = int(line.split()[5].split("/")[0])
    assert 1 <= step <= 400 and "/400" in line
    assert not list((tmp_path / "results").rglob(PROGRESS))
