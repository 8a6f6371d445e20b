"""Executing run specs as a SLURM job array, through submitit.

``submitit`` is an optional extra (``pip install 'ablate[slurm]'``): it is imported when a grid runs
on SLURM, never when this module is. Its ``local`` and ``debug`` clusters run the same jobs on this
machine.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.execution.attempt import Finished, Progress, run_with_threads
from harness.experiment.grid import RunSpec
from harness.run_options import RunOptions

SUBMITIT_CLUSTERS = ("slurm", "local", "debug")
"""The values of ``--submitit-cluster``: SLURM itself, or submitit's executors on this machine."""


def run_slurm(
    specs: list[RunSpec],
    attempt: Callable[[RunSpec], Progress],
    threads: int,
    finished: Finished,
    options: RunOptions,
    results: Path,
) -> None:
    """Submit one job per spec, running its ``attempt``, to ``options.cluster`` (:data:`SUBMITIT_CLUSTERS`).

    ``finished`` as each ends. Each job has one node, ``threads`` CPUs, ``options.gpus_per_run`` GPUs
    (if any), the ``options.partition`` (if given) and ``options.slurm_time`` minutes (60 if not
    given); its folder is under ``results/.submitit/``.
    """
    import submitit

    executor = submitit.AutoExecutor(folder=Path(results).resolve() / ".submitit" / "%j", cluster=options.cluster)
    params = {"nodes": 1, "tasks_per_node": 1, "cpus_per_task": threads, "timeout_min": options.slurm_time or 60}
    optional = {"gpus_per_node": options.gpus_per_run, "slurm_partition": options.partition}
    executor.update_parameters(name="ablate", **params, **{k: v for k, v in optional.items() if v})
    jobs = executor.map_array(run_with_threads, specs, [attempt] * len(specs), [threads] * len(specs))
    for job in submitit.helpers.as_completed(jobs, poll_frequency=1.0):
        finished(specs[jobs.index(job)], job.result)
