"""A worker killed mid-trial: its RUNNING trial is marked failed by the next worker to start
(Optuna's RDB heartbeat), counted as finished, and the study is topped up around it."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import optuna
import pytest
from rich.console import Console

from harness.cli import output
from harness.cli import run as run_cmd
from harness.tune.storage import default_storage
from helpers.tune import ROPE, states, worker, write_tiny


def _safe_states(url: str) -> dict[str, int]:
    try:
        return states(url, ROPE)
    except Exception:  # noqa: BLE001 - the worker is still creating the schema or the study
        return {}


def test_a_killed_workers_trial_is_marked_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(output, "console", Console(highlight=False, width=250))
    path, results = write_tiny(tmp_path), tmp_path / "results"
    url = default_storage(results)
    slow = worker(
        [
            "tune",
            str(path),
            "train.steps=200000",
            "--variant",
            "position=rope",
            "--trials",
            "1",
            "--heartbeat",
            "1",
            "--results-dir",
            str(results),
        ],
        tmp_path / "slow.log",
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and "RUNNING" not in _safe_states(url):
        assert slow.poll() is None, (tmp_path / "slow.log").read_text()
        time.sleep(0.3)
    time.sleep(1.5)  # at least one heartbeat recorded
    slow.send_signal(signal.SIGKILL)
    slow.wait()
    assert _safe_states(url) == {"RUNNING": 1}
    time.sleep(3.5)  # past the grace period (3 x heartbeat)
    assert run_cmd.tune(str(path), None, [], results, trials=2, variants=["position=rope"], heartbeat=1) == 0
    assert "marked trial(s) [0] failed" in capsys.readouterr().out
    study = optuna.load_study(study_name=ROPE, storage=url)
    assert [t.state.name for t in study.trials][0] == "FAIL" and len(study.trials) == 2
