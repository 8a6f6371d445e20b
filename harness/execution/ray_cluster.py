"""Executing run specs as Ray tasks: on a Ray instance started here, or on the cluster at ``--address``.

``ray`` is an optional extra (``pip install 'ablate[ray]'``): it is imported when a grid runs on Ray,
never when this module is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import partial

from harness.execution.attempt import Finished, Progress, run_with_threads
from harness.experiment.grid import RunSpec
from harness.run_options import RunOptions

ADDRESS = re.compile(r"^(auto|(ray://)?[A-Za-z0-9_.\-]+:\d{1,5})$")
"""What ``--address`` may be: ``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``."""


def run_ray(
    specs: list[RunSpec],
    attempt: Callable[[RunSpec], Progress],
    threads: int,
    finished: Finished,
    options: RunOptions,
) -> None:
    """Run ``attempt`` of each spec as a Ray task of ``threads`` CPUs and ``options.gpus_per_run`` GPUs.

    ``finished`` as each ends. On the cluster at ``options.address``, or (``None``) on a Ray instance
    started here, which is shut down when this returns.
    """
    import ray

    started = not ray.is_initialized()
    if started:
        where = {"address": options.address} if options.address else {"num_cpus": max(threads, os.cpu_count() or 1)}
        ray.init(**where, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        task = ray.remote(num_cpus=threads, num_gpus=options.gpus_per_run or 0, max_retries=0)(run_with_threads)
        shared = ray.put(attempt)
        refs = {task.remote(spec, shared, threads): spec for spec in specs}
        pending = list(refs)
        while pending:
            [ref], pending = ray.wait(pending, num_returns=1)
            finished(refs[ref], partial(ray.get, ref))
    finally:
        if started:
            ray.shutdown()
