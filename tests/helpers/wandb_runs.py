"""Read an offline W&B run back, for tests: W&B's supported reader of the transaction log,
``wandb leet inspect --json`` (W&B 0.31 no longer writes ``wandb-summary.json`` offline and
dropped its Python datastore reader). Known loss in W&B: a NaN metric is stored as null."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class OfflineRun:
    """An offline run as its ``.wandb`` log holds it.

    ``summary``: the final summary, every update applied in order; W&B flattens nested values
    (a logged table or image) into dotted keys (``compare/copy/acc@x2.path``).
    ``history``: one dict per logged step (training curves: ``train/loss``, ``val/acc``, ...).
    """

    path: Path
    run_id: str
    name: str
    group: str
    job_type: str
    tags: list[str]
    config: dict[str, Any]
    summary: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    exit_code: int | None = None

    def file(self, key: str) -> Path:
        """The local file of a logged table or image (``summary[key + ".path"]``)."""
        return self.path / "files" / self.summary[f"{key}.path"]


def read_run(run: Path) -> OfflineRun:
    """Read an offline run folder back with ``wandb leet inspect --json`` (no network)."""
    env = {**os.environ, "WANDB_MODE": "offline"}  # no telemetry upload from the reader
    out = subprocess.run(
        [sys.executable, "-m", "wandb", "leet", "inspect", "--json", str(run)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if out.returncode:
        raise RuntimeError(f"wandb leet inspect {run} failed: {out.stderr.strip()}")
    records = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    head = next(r["run"] for r in records if r.get("type") == "run")
    found = OfflineRun(
        Path(run),
        head["run_id"],
        head.get("display_name", ""),
        head.get("run_group", ""),
        head.get("job_type", ""),
        list(head.get("tags", [])),
        dict(head["config"].get("update", {})),
    )
    for rec in records:
        kind, body = rec.get("type"), rec.get(rec.get("type"), {})
        if kind == "summary":
            found.summary.update(body.get("update", {}))
        elif kind == "config":
            found.config.update(body.get("update", {}))
        elif kind == "history":
            found.history.append(body.get("item", {}))
        elif kind == "exit":
            found.exit_code = body.get("exit_code", 0)
    found.config.pop("_wandb", None)
    return found


def curve(run: OfflineRun) -> list[tuple[int, dict[str, Any]]]:
    """The logged curve of a training run: ``(trainer/global_step, metrics)`` per history row, in
    the order logged, without W&B's own keys (``_step``, ``_runtime``, ``_timestamp``)."""
    rows = [{k: v for k, v in row.items() if not k.startswith("_")} for row in run.history]
    return [(row.pop("trainer/global_step"), row) for row in rows]
