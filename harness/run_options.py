"""How the runs of ``ablate run`` execute: one object from the command line down to one run's training.

:class:`RunOptions` holds every execution option (docs/execution.md): resuming, checkpoints, time
limits, the statuses to retry, Lightning's devices and strategy, and the executor with its own options
(Ray's address, GPUs per run, SLURM's partition and time). ``ablate run`` builds one from its command
line; the launch checks it (:func:`harness.execution.launch.check_options`), the executors read it, and
each run's training holds it (:class:`harness.training.loop.TrainOptions`). Nothing here changes a
run's numbers or its id.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """The execution options of a run; every field a command-line option of ``ablate run`` but ``retry_attempts``.

    ``retry``: ``--retry``'s text, the statuses of finished runs to run again (``"failed,diverged"``);
    ``retry_attempts``: ``{run_id: attempt}``, the finished attempts chosen from it, each run again.
    ``executor``: ``local`` (this machine), ``ray`` or ``slurm``; ``address``: the Ray cluster (None:
    an instance started here); ``gpus_per_run``: None, one per run when GPUs are visible;
    ``partition``, ``slurm_time`` (minutes) and ``cluster`` (submitit's: ``slurm``, ``local``,
    ``debug``): SLURM's.
    """

    resume: bool = True
    keep_checkpoints: bool = False  # also the trained model's checkpoint, after the last step
    checkpoint_every: float = 120.0  # seconds between checkpoints, each at the end of a validation pass (0: every)
    run_timeout: float | None = None  # seconds before a run stops as ``timeout``
    lease_timeout: float = 600.0  # seconds without a heartbeat before another owner's lease is stale
    retry: str | None = None
    retry_attempts: Mapping[str, int] = dataclasses.field(default_factory=dict)
    devices: int | str = 1  # Lightning's, for one run
    strategy: str = "auto"
    executor: str = "local"
    address: str | None = None
    gpus_per_run: int | None = None
    partition: str | None = None
    slurm_time: int | None = None
    cluster: str = "slurm"
