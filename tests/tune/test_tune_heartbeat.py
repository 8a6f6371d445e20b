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
    assert run_cmd.tune(str(path), None, [], trials=2, variant=["position=rope"], results=results, heartbeat=1) == 0
    assert "marked trial(s) [0] failed" in capsys.readouterr().out
    study = optuna.load_study(study_name=ROPE, storage=url)
    assert [t.state.name for t in study.trials][0] == "FAIL" and len(study.trials) == 2


def test_a_trial_failed_as_stale_while_it_ran_does_not_stop_its_worker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker whose heartbeats were late (a loaded machine) finds its trial failed by another worker
    when it reports the result: Optuna raises UpdateFinishedTrialError, which stopped ``ablate tune``
    with a traceback. The worker now says so and tops the study up."""
    from optuna.trial import TrialState

    from harness.tune import objective as objective_mod

    def late(study_plan, task, seed):
        def run(trial: optuna.Trial) -> float:
            if trial.number == 0:  # what another worker's fail_stale_trials does meanwhile
                trial.study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
            return 1.0

        return run

    monkeypatch.setattr(objective_mod, "objective", late)
    monkeypatch.setattr(output, "console", Console(highlight=False, width=250))
    path, results = write_tiny(tmp_path), tmp_path / "results"
    assert run_cmd.tune(str(path), None, [], trials=2, variant=["position=rope"], results=results) == 0
    assert "came after another worker had failed it as stale" in capsys.readouterr().out
    study = optuna.load_study(study_name=ROPE, storage=default_storage(results))
    assert [t.state.name for t in study.trials] == ["FAIL", "COMPLETE"]
