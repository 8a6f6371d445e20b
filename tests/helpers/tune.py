"""A tiny ablation for the tuning tests (d_model 16, 1 layer, 20 steps), study and worker helpers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

TINY: dict[str, Any] = {
    "name": "tiny_tune",
    "question": "Does tuning work end to end on a tiny grid?",
    "axes": {"model.position": ["sinusoidal", "rope"]},
    "baseline": {"model.position": "sinusoidal"},
    "base": {
        "model.d_model": 16,
        "model.n_heads": 2,
        "model.n_layers": 1,
        "train.steps": 20,
        "train.val_every": 10,
        "train.batch_size": 16,
        "train.seq_len": 8,
        "train.warmup_steps": 2,
        "train.lr": 3e-3,
        "eval.length_multipliers": [1, 2],
        "eval.n_examples": 16,
        "eval.val_examples": 16,
    },
    "tasks": {
        "copy": {"params": {"n_symbols": 8}, "primary": {"metric": "loss@x2", "higher_is_better": False, "sesoi": 0.05}}
    },
    "profiles": {"smoke": {"seeds": [0, 1], "confirmatory": False, "apply_gate": False}},
    "default_profile": "smoke",
    "tune": {
        "train.lr": {"type": "float", "low": 3e-3, "high": 1e-2, "log": True},
        "train.warmup_steps": None,
        "train.weight_decay": None,
        "model.dropout": None,
        "train.batch_size": None,
    },
}


def write_tiny(folder: Path, **changes: Any) -> Path:
    """``folder/tiny_tune.yaml`` from :data:`TINY` with top-level ``changes``; returns its path."""
    data = {**TINY, **changes}
    path = folder / "tiny_tune.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def states(url: str, name: str) -> dict[str, int]:
    """Trial states of study ``name``: ``{"COMPLETE": n, "PRUNED": n, ...}``."""
    import optuna

    study = optuna.load_study(study_name=name, storage=url)
    out: dict[str, int] = {}
    for t in study.get_trials(deepcopy=False):
        out[t.state.name] = out.get(t.state.name, 0) + 1
    return out


ROPE = "tiny_tune/smoke/copy/rope"


def worker(args: list[str], log: Path) -> subprocess.Popen:
    """An ``ablate`` worker process (``python -m harness.cli.app``), stdout and stderr to ``log``."""
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    with open(log, "w") as fh:
        return subprocess.Popen(
            [sys.executable, "-m", "harness.cli", *args], stdout=fh, stderr=subprocess.STDOUT, env=env
        )


def run_workers(n: int, args: list[str], folder: Path) -> list[str]:
    """Start ``n`` identical workers at once, wait for all (each must exit 0); returns their logs."""
    procs = [worker(args, folder / f"worker{i}.log") for i in range(n)]
    for i, p in enumerate(procs):
        assert p.wait(timeout=240) == 0, (folder / f"worker{i}.log").read_text()[-3000:]
    return [(folder / f"worker{i}.log").read_text() for i in range(n)]


def check_none_lost(url: str, logs: list[str], trials: int, workers: int) -> None:
    """Every trial of the rope study finished, at least ``trials`` of them (a simultaneous finish
    may add one per extra worker), each reported by exactly one worker, and more than one worker
    did some, or a worker that did none found the study full."""
    import optuna

    study = optuna.load_study(study_name=ROPE, storage=url)
    numbers = [t.number for t in study.trials]
    assert all(t.state.is_finished() for t in study.trials), states(url, ROPE)
    assert trials <= len(numbers) <= trials + workers - 1, states(url, ROPE)
    reported = [[int(m) for m in re.findall(rf"{re.escape(ROPE)} #(\d+) ", log)] for log in logs]
    assert sorted(n for r in reported for n in r) == sorted(numbers), reported
    # more than one worker shared the study; under load one worker may finish every trial before the
    # other reaches the study, which must then find it full, not start its own trials
    idle = [log for r, log in zip(reported, logs) if not r]
    full = re.compile(
        rf"{re.escape(ROPE)}: \d+ finished trials already( and \d+ running in other workers)? "
        rf"\(asked for {trials}\); nothing to do"
    )
    assert sum(1 for r in reported if r) >= 2 or all(full.search(" ".join(log.split())) for log in idle), (
        reported,
        [log[-1500:] for log in idle],
    )
