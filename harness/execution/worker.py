"""What one worker runs, wherever it runs (this process, a local pool worker, a Ray task, a SLURM
job): one run from its spec and the grid's shared :class:`WorkerArgs`; and the progress entry of a
run whose process died or whose executor failed."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.execution.attempt import execute
from harness.execution.run_folder import Progress, RunOptions
from harness.experiment import plugins as plugin_loader
from harness.experiment.ablation import Ablation
from harness.experiment.grid import RunSpec


@dataclass(frozen=True)
class WorkerArgs:
    """The arguments every run of one grid shares (pickled to each worker once).

    ``plugins``: the plugins of the process that planned the grid (by default those it has
    loaded when the arguments are made), which :func:`run_one` loads in the worker first, so a
    forkserver or spawn worker, a Ray task or a SLURM job knows the same components and tasks."""

    results: Path
    wandb_mode: str
    data_dir: Path | None
    abl: Ablation
    commit: str | None
    options: RunOptions | None = None
    plugins: tuple[plugin_loader.PluginRef, ...] = field(default_factory=plugin_loader.refs)

    def resolved(self) -> WorkerArgs:
        """The same arguments with absolute paths, for a worker that starts in another folder."""
        return replace(
            self,
            results=Path(self.results).resolve(),
            data_dir=Path(self.data_dir).resolve() if self.data_dir else None,
        )


def run_one(spec: RunSpec, args: WorkerArgs) -> Progress:
    """Load the grid's plugins (once per process), then execute one run
    (:func:`harness.execution.attempt.execute`); returns its record.

    Raises:
        AblateError: a plugin cannot be loaded here (the run is reported as crashed, not stored).
    """
    plugin_loader.load_refs(args.plugins)
    return execute(
        spec,
        args.results,
        wandb_mode=args.wandb_mode,
        data_dir=args.data_dir,
        abl=args.abl,
        commit=args.commit,
        options=args.options,
    )


def run_with_threads(spec: RunSpec, args: WorkerArgs, threads: int) -> Progress:
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
