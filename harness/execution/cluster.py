"""Ray and SLURM (through submitit): the runs of a grid on an existing engine.

Each run is one task calling :func:`harness.execution.attempt.execute` with the same arguments as a local
worker, so every run claims its folder, checkpoints, resumes and writes the same record: the
store does not depend on the executor. The results folder (and the data folder) are passed as
absolute paths and must be on a filesystem every worker sees.

- Ray: ``--address`` connects to a running cluster (``auto``, ``host:port``,
  ``ray://host:10001``); without it a local instance is started for the grid and shut down
  after it. One task per run with ``num_cpus = --threads`` (1) and ``num_gpus = --gpus-per-run``.
- SLURM: one job per run through a submitit job array (``--slurm-partition``,
  ``--slurm-time`` minutes, ``--gpus-per-run`` GPUs and ``--threads`` CPUs per task; logs in
  ``<results>/.submitit/``). ``--submitit-cluster local`` runs the same jobs as local processes
  (submitit's LocalExecutor), ``debug`` in this process: for trying the path without SLURM.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.errors import AblateError
from harness.execution.run_folder import Progress
from harness.execution.worker import WorkerArgs, crashed, run_with_threads
from harness.experiment.grid import RunSpec

KINDS = ("local", "ray", "slurm")
SUBMITIT_CLUSTERS = ("slurm", "local", "debug")
_ADDRESS = re.compile(r"^(auto|(ray://)?[A-Za-z0-9_.\-]+:\d{1,5})$")


@dataclass(frozen=True)
class Engine:
    """Where the runs execute, and the engine's own options."""

    kind: str = "local"
    address: str | None = None
    gpus_per_run: int = 0
    partition: str | None = None
    time_min: int | None = None
    cluster: str = "slurm"

    @property
    def on_this_machine(self) -> bool:
        """Whether the runs take their CPUs on this machine: the local pool, a Ray cluster started
        here (no ``--address``) and submitit's ``local`` and ``debug`` clusters; not a Ray cluster
        connected to, nor SLURM."""
        return (
            self.kind == "local"
            or (self.kind == "ray" and self.address is None)
            or (self.kind == "slurm" and self.cluster != "slurm")
        )

    def check(self) -> None:
        """Refuse inconsistent options and missing engines before any run starts.

        Raises:
            AblateError: one message naming the option and the fix.
        """
        if self.kind not in KINDS:
            raise AblateError(f"--executor {self.kind!r} is not one of {', '.join(KINDS)}")
        if self.address is not None and self.kind != "ray":
            raise AblateError("--address is the Ray cluster to connect to; add --executor ray")
        if self.address is not None and not _ADDRESS.match(self.address):
            raise AblateError(
                f"--address {self.address!r} is not a Ray address; use auto, HOST:PORT "
                f"(e.g. 10.0.0.1:6379) or ray://HOST:10001"
            )
        slurm_only = [n for n, v in (("--slurm-partition", self.partition), ("--slurm-time", self.time_min)) if v]
        if slurm_only and self.kind != "slurm":
            raise AblateError(f"{', '.join(slurm_only)} only apply to --executor slurm")
        if self.cluster not in SUBMITIT_CLUSTERS:
            raise AblateError(f"--submitit-cluster {self.cluster!r} is not one of {', '.join(SUBMITIT_CLUSTERS)}")
        package = {"ray": "ray", "slurm": "submitit"}.get(self.kind)
        if package and importlib.util.find_spec(package) is None:
            raise AblateError(f"--executor {self.kind} needs the {package} package: pip install 'ablate[{self.kind}]'")
        if self.kind == "slurm" and self.cluster == "slurm" and shutil.which("sbatch") is None:
            raise AblateError(
                "--executor slurm: no SLURM here (sbatch not found); run where sbatch is, or try "
                "the same jobs locally with --submitit-cluster local"
            )


def run_cluster(
    engine: Engine, specs: list[RunSpec], args: WorkerArgs, threads: int, finished: Callable[[Progress], None]
) -> None:
    """Run ``specs`` on Ray or SLURM, calling ``finished`` with each record as it arrives."""
    args = args.resolved()
    if engine.kind == "ray":
        _run_ray(engine, specs, args, threads, finished)
    elif engine.kind == "slurm":
        _run_slurm(engine, specs, args, threads, finished)
    else:
        raise ValueError(f"not a cluster engine: {engine.kind}")


def _run_ray(
    engine: Engine, specs: list[RunSpec], args: WorkerArgs, threads: int, finished: Callable[[Progress], None]
) -> None:
    import ray

    started = not ray.is_initialized()
    if started:
        where = {"address": engine.address} if engine.address else {"num_cpus": max(threads, _cpus())}
        ray.init(**where, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        task = ray.remote(num_cpus=threads, num_gpus=engine.gpus_per_run, max_retries=0)(run_with_threads)
        shared = ray.put(args)
        refs = {task.remote(spec, shared, threads): spec for spec in specs}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                try:
                    finished(ray.get(ref))
                except Exception as exc:  # noqa: BLE001  a lost worker or node: the run is not stored
                    finished(crashed(refs[ref], exc))
    finally:
        if started:
            ray.shutdown()


def _run_slurm(
    engine: Engine,
    specs: list[RunSpec],
    args: WorkerArgs,
    threads: int,
    finished: Callable[[Progress], None],
    poll_s: float = 1.0,
) -> None:
    import submitit

    executor = submitit.AutoExecutor(folder=args.results / ".submitit" / "%j", cluster=engine.cluster)
    params: dict[str, Any] = {
        "name": "ablate",
        "nodes": 1,
        "tasks_per_node": 1,
        "cpus_per_task": threads,
        "timeout_min": engine.time_min or 60,
    }
    if engine.gpus_per_run:
        params["gpus_per_node"] = engine.gpus_per_run
    if engine.partition:
        params["slurm_partition"] = engine.partition
    executor.update_parameters(**params)
    jobs = executor.map_array(run_with_threads, specs, [args] * len(specs), [threads] * len(specs))
    pending = list(zip(jobs, specs))
    while pending:
        waiting = []
        for job, spec in pending:
            if not job.done():
                waiting.append((job, spec))
                continue
            try:
                finished(job.result())
            except Exception as exc:  # noqa: BLE001  a failed job (node failure, time limit)
                finished(crashed(spec, exc))
        pending = waiting
        if pending:
            time.sleep(poll_s)


def _cpus() -> int:
    return os.cpu_count() or 1
