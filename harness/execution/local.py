"""Executing a grid of run specs: in this process or on a local process pool, or handing it to Ray or SLURM.

The local pool has forkserver workers, one GPU slot each (:mod:`harness.execution.gpus`); Ray's
runner is in :mod:`harness.execution.ray_cluster`, SLURM's (through submitit) in
:mod:`harness.execution.slurm`; the ``executor`` of :class:`~harness.run_options.RunOptions` names
where the runs execute. Each run is executed by :func:`harness.execution.attempt.execute`, so the
store does not depend on the executor; one progress display. Threads, workers, pools and clusters:
docs/execution.md, "Where runs execute". A worker that dies breaks the pool: its runs get one fresh
pool, then are reported as ``crashed``.
"""

from __future__ import annotations

import importlib.util
import multiprocessing as mp
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from pathlib import Path
from typing import Any

from harness.errors import AblateError
from harness.execution.attempt import Finished, Progress, grid_attempt, unstored
from harness.execution.locks import pid_alive, pid_start
from harness.execution.ray_cluster import ADDRESS, run_ray
from harness.execution.slurm import SUBMITIT_CLUSTERS, run_slurm
from harness.experiment.ablation import Ablation
from harness.experiment.grid import RunSpec
from harness.run_options import RunOptions

KINDS = ("local", "ray", "slurm")


def on_this_machine(options: RunOptions) -> bool:
    """Whether the runs take their CPUs here.

    They do on the local pool, a Ray instance started here (no ``--address``), and submitit's
    ``local`` and ``debug`` clusters.
    """
    o = options
    return o.executor == "local" or (o.address is None if o.executor == "ray" else o.cluster != "slurm")


def check_engine(options: RunOptions) -> None:
    """Refuse inconsistent executor options and missing engines before any run.

    Raises:
        AblateError: the option and the fix.
    """
    o = options
    if o.executor not in KINDS:
        raise AblateError(f"--executor {o.executor!r} is not one of {', '.join(KINDS)}")
    if o.address is not None and o.executor != "ray":
        raise AblateError("--address is the Ray cluster to connect to; add --executor ray")
    if o.address is not None and not ADDRESS.match(o.address):
        raise AblateError(
            f"--address {o.address!r} is not a Ray address; use auto, HOST:PORT (e.g. 10.0.0.1:6379) "
            f"or ray://HOST:10001"
        )
    slurm_only = [n for n, v in (("--slurm-partition", o.partition), ("--slurm-time", o.slurm_time)) if v]
    if slurm_only and o.executor != "slurm":
        verb, it = ("applies", "it") if len(slurm_only) == 1 else ("apply", "them")
        raise AblateError(
            f"{' and '.join(slurm_only)} {verb} only to --executor slurm; add --executor slurm or drop {it}"
        )
    if o.cluster not in SUBMITIT_CLUSTERS:
        raise AblateError(f"--submitit-cluster {o.cluster!r} is not one of {', '.join(SUBMITIT_CLUSTERS)}")
    package = {"ray": "ray", "slurm": "submitit"}.get(o.executor)
    if package and importlib.util.find_spec(package) is None:
        raise AblateError(f"--executor {o.executor} needs the {package} package: pip install 'ablate[{o.executor}]'")
    if o.executor == "slurm" and o.cluster == "slurm" and shutil.which("sbatch") is None:
        raise AblateError(
            "--executor slurm: no SLURM here (sbatch not found); run where sbatch is, or try "
            "the same jobs locally with --submitit-cluster local"
        )


def _init_worker(threads: int, slots: Any = None, owner: tuple[int, int | None] | None = None) -> None:
    """Pin this worker to a GPU slot (before CUDA starts), tie its life to ``ablate``'s, set threads.

    The worker SIGKILLs itself about a second after ``owner`` (``ablate run``'s pid and start time)
    dies: no orphan keeps training, and its lease reads as a dead process's. (Its parent is the
    forkserver, which outlives ``ablate``: the kernel's parent-death signal cannot be used.)
    """
    # Ctrl-C reaches the terminal's whole group: ``ablate`` stops the workers, which must not
    # take it for a failed run and go on to the next one; SIGTERM (to the group, or to a worker
    # alone) ends the worker at once, its run resumable, where Lightning would end the run and
    # the worker start its next one (Lightning keeps a handler it finds)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit_terminated)
    if slots is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = slots.get(timeout=60)
    if owner is not None:

        def watch() -> None:
            while pid_alive(*owner):
                time.sleep(1.0)
            os.kill(os.getpid(), signal.SIGKILL)

        threading.Thread(target=watch, name="ablate-owner-watch", daemon=True).start()
    import torch

    torch.set_num_threads(threads)


class Terminated(KeyboardInterrupt):
    """SIGTERM to ``ablate run``: it stops as Ctrl-C stops it (the same line), exit 143 (128 + SIGTERM)."""

    exit_code = 128 + signal.SIGTERM


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated


def _exit_terminated(signum: int, frame: Any) -> None:
    os._exit(128 + signum)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel every run not started and SIGKILL the workers (their runs resume at the next ``ablate run``).

    The queued runs are cancelled and the workers killed, not asked to stop: a SIGTERM'd worker would
    report a result, then start the next queued run.
    """
    processes = list((getattr(pool, "_processes", None) or {}).values())  # CPython's; shutdown clears it
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.kill()


def pool_context() -> mp.context.BaseContext:
    """A forkserver that has imported torch and Lightning once; spawn where there is none."""
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["harness.training.loop"])
    return ctx


def remaining_time(walls: list[float], left: int, at_once: int) -> float:
    """Seconds until ``left`` more runs finish, ``at_once`` at a time.

    The mean wall time of the runs so far (``walls``) times the runs left, over ``at_once``. (Elapsed
    time over runs done doubles the first estimate of a two-worker grid.)
    """
    return sum(walls) / len(walls) * left / max(1, at_once) if left > 0 and walls else 0.0


def run_grid(
    specs: list[RunSpec],
    results: Path,
    abl: Ablation,
    *,
    workers: int = 1,
    threads: int = 1,
    wandb_mode: str = "off",
    data_dir: Path | None = None,
    on_done: Callable[[Progress, int, int, float], None] | None = None,
    options: RunOptions = RunOptions(),
    slots: tuple[str, ...] = (),
) -> list[Progress]:
    """Execute ``specs`` (already filtered to unfinished runs) with ``threads`` torch threads each.

    They run in this process (``workers`` 1, no GPU ``slots``: one ``CUDA_VISIBLE_DEVICES`` value per
    worker), on a local pool, or on the executor of ``options`` (Ray, SLURM); returns their records
    in order.
    ``on_done(record, done, total, eta_seconds)`` is called after each run.
    """
    total, started = len(specs), time.perf_counter()
    records: dict[str, Progress] = {}
    local, inline = options.executor == "local", (workers <= 1 or total <= 1) and not slots
    at_once = 1 if inline else max(1, min(workers, total))
    walls: list[float] = []

    def finished(spec: RunSpec, result: Callable[[], Progress]) -> None:
        try:
            rec = result()
        except Exception as exc:  # noqa: BLE001  the store, the machine, a lost worker or job: not the run's
            rec = unstored(spec, "crashed", f"{type(exc).__name__}: {exc}")
        records[rec.run_id] = rec
        elapsed = time.perf_counter() - started
        walls.append(float(rec.wall_time_s or elapsed))
        done = len(walls)
        eta = remaining_time(walls, total - done, at_once) if local else elapsed / done * (total - done)
        if on_done is not None:
            on_done(rec, done, total, eta)

    attempt = grid_attempt(results, wandb_mode, data_dir, abl, options, absolute=not local)
    if options.executor == "ray":
        run_ray(specs, attempt, threads, finished, options)
    elif options.executor == "slurm":
        run_slurm(specs, attempt, threads, finished, options, results)
    elif inline:
        import torch

        torch.set_num_threads(threads)
        for spec in specs:
            finished(spec, partial(attempt, spec))
    else:
        _run_pool(specs, attempt, at_once, threads, slots, finished)
    return [records[s.run_id] for s in specs if s.run_id in records]


def _run_pool(
    specs: list[RunSpec],
    attempt: Callable[[RunSpec], Progress],
    workers: int,
    threads: int,
    slots: tuple[str, ...],
    finished: Finished,
) -> None:
    """Run ``specs`` on a process pool; the runs of a pool broken by a dying worker get one fresh pool."""
    ctx, remaining, owner = pool_context(), list(specs), (os.getpid(), pid_start(os.getpid()))
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if main else None
    try:
        for _ in range(2):
            queue = ctx.Queue() if slots else None
            for slot in slots[:workers]:
                queue.put(slot)  # type: ignore[union-attr]
            broken: list[tuple[RunSpec, Future[Progress]]] = []
            size = min(workers, len(remaining))
            with ProcessPoolExecutor(size, ctx, initializer=_init_worker, initargs=(threads, queue, owner)) as pool:
                futures = {pool.submit(attempt, s): s for s in remaining}
                try:
                    for fut in as_completed(futures):
                        if isinstance(fut.exception(), BrokenProcessPool):
                            broken.append((futures[fut], fut))
                        else:
                            finished(futures[fut], fut.result)
                except KeyboardInterrupt:  # Ctrl-C or SIGTERM: start nothing more, stop the runs in flight
                    _stop(pool)
                    raise
            remaining = [spec for spec, _ in broken]
            if not remaining:
                return
        for spec, fut in broken:
            finished(spec, fut.result)  # crashed
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
