"""Executing run specs as a SLURM job array, through submitit.

``submitit`` is an optional extra (``pip install 'ablate[slurm]'``): it is imported when a grid runs
on SLURM, never when this module is. Its ``local`` and ``debug`` clusters run the same jobs on this
machine.
"""

from __future__ import annotations

from harness.execution.attempt import Finished, WorkerArgs, run_with_threads
from harness.experiment.grid import RunSpec

SUBMITIT_CLUSTERS = ("slurm", "local", "debug")
"""The values of ``--submitit-cluster``: SLURM itself, or submitit's executors on this machine."""


def run_slurm(
    specs: list[RunSpec],
    args: WorkerArgs,
    threads: int,
    finished: Finished,
    *,
    cluster: str,
    gpus_per_run: int,
    partition: str | None,
    time_min: int | None,
) -> None:
    """Submit one job per spec to ``cluster`` (one of :data:`SUBMITIT_CLUSTERS`); ``finished`` as each ends.

    Each job has one node, ``threads`` CPUs, ``gpus_per_run`` GPUs (if any), the ``partition`` (if
    given) and ``time_min`` minutes (60 if not given); its folder is under ``results/.submitit/``.
    """
    import submitit

    executor = submitit.AutoExecutor(folder=args.results / ".submitit" / "%j", cluster=cluster)
    params = {"nodes": 1, "tasks_per_node": 1, "cpus_per_task": threads, "timeout_min": time_min or 60}
    optional = {"gpus_per_node": gpus_per_run, "slurm_partition": partition}
    executor.update_parameters(name="ablate", **params, **{k: v for k, v in optional.items() if v})
    jobs = executor.map_array(run_with_threads, specs, [args] * len(specs), [threads] * len(specs))
    for job in submitit.helpers.as_completed(jobs, poll_frequency=1.0):
        finished(specs[jobs.index(job)], job.result)
