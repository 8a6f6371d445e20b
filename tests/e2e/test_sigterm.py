"""SIGTERM to a pooled ``ablate run`` (``kill PID``, or to its process group as a scheduler sends
it) stops it as Ctrl-C does: the same "interrupted" line, exit 143 (128 + SIGTERM), and no worker
starts another run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli.run import INTERRUPTED_RUNS
from helpers.tiny_grid import write_tiny

ROOT = Path(__file__).resolve().parents[2]


def _state(results: Path) -> tuple[set[str], set[str]]:
    """The run folders there, and those with a record."""
    folders = set(p.name for p in results.glob("tiny/cpu/*") if p.is_dir())
    return folders, {p.parent.name for p in results.glob("tiny/cpu/*/record.json")}


@pytest.mark.parametrize("to", ["process", "group"])
def test_sigterm_to_a_pooled_run_says_interrupted_exits_143_and_starts_nothing(tmp_path: Path, to: str) -> None:
    decl = write_tiny(tmp_path / "decl", steps=400, val_every=100, seeds=(0, 1, 2, 3))  # 8 runs
    results = tmp_path / "results"
    args = ["run", str(decl), "--workers", "2", "--threads", "1", "--results-dir", str(results), "--wandb", "off"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", *args], env=env, stderr=subprocess.PIPE, start_new_session=True
    )
    end = time.monotonic() + 300
    while not list(results.glob("tiny/cpu/*/lease.lock")) and proc.poll() is None and time.monotonic() < end:
        time.sleep(0.05)
    assert proc.poll() is None, "the grid ended before a run was under way"
    if to == "group":
        os.killpg(proc.pid, signal.SIGTERM)
    else:
        proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, (proc.returncode, err.decode()[-2000:])
    assert INTERRUPTED_RUNS in err.decode() and "Traceback" not in err.decode()
    stopped = _state(results)
    assert len(stopped[1]) < 8
    time.sleep(5)  # a worker left behind would start (or finish) another run meanwhile
    assert _state(results) == stopped
