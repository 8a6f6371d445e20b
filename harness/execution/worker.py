"""What one worker runs, wherever it runs (this process, a local pool worker, a Ray task, a SLURM
job): one run from its spec and the grid's shared :class:`WorkerArgs`; and the progress entry of a
run whose process died or whose executor failed."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.execution.attempt import execute
from harness.execution.run_folder import RunOptions
from harness.experiment.ablation import Ablation
from harness.experiment.grid import RunSpec


@dataclass(frozen=True)
class WorkerArgs:
    """The arguments every run of one grid shares (pickled to each worker once)."""

    results: Path
    wandb_mode: str
    data_dir: Path | None
    abl: Ablation
    commit: str | None
    options: RunOptions | None = None

    def resolved(self) -> WorkerArgs:
        """The same arguments with absolute paths, for a worker that starts in another folder."""
        return replace(
            self,
            results=Path(self.results).resolve(),
            data_dir=Path(self.data_dir).resolve() if self.data_dir else None,
        )


def run_one(spec: RunSpec, args: WorkerArgs) -> dict[str, Any]:
    """Execute one run (:func:`harness.execution.attempt.execute`); returns its record."""
    return execute(
        spec,
        args.results,
        wandb_mode=args.wandb_mode,
        data_dir=args.data_dir,
        abl=args.abl,
        commit=args.commit,
        options=args.options,
    )


def run_with_threads(spec: RunSpec, args: WorkerArgs, threads: int) -> dict[str, Any]:
    """What one Ray task or SLURM job runs: one run with ``threads`` torch threads, exactly as a
    local worker would."""
    import torch

    torch.set_num_threads(threads)
    return run_one(spec, args)


def crashed(spec: RunSpec, exc: BaseException) -> dict[str, Any]:
    """A progress entry (never stored) for a run whose process died or whose executor failed."""
    return {
        "run_id": spec.run_id,
        "task": spec.task,
        "variant_label": spec.variant_label,
        "seed": spec.seed,
        "status": "crashed",
        "reason": f"{type(exc).__name__}: {exc}",
        "wall_time_s": 0.0,
        "stored": False,
    }
