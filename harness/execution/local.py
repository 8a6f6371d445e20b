"""Executing a grid of run specs: in-process or on a local process pool, one progress display.

Every run uses ``threads`` torch threads (default 1) whatever the number of workers, so a grid
gives the same numbers bit for bit with ``--workers 1`` and ``--workers 2`` (torch's results
depend on the thread count; it is recorded in each run). On 2 cores, two 1-thread workers gave
about 1.3x the throughput of one 2-thread process (docs/benchmarks.md, pilot measurements).

Pool workers are forked from a ``forkserver`` that has imported torch and Lightning once
(``spawn`` where there is none), die within seconds when ``ablate`` dies, and on GPUs each owns one
slot of :mod:`harness.execution.gpus` through ``CUDA_VISIBLE_DEVICES``. A worker that dies (killed for
memory, a crash in native code) breaks the pool: the runs it took down are given one fresh pool,
then reported as ``crashed`` (not stored; their folders hold interrupted attempts that the next
``ablate run`` resumes). Ray and SLURM: :mod:`harness.execution.cluster`.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from harness.execution.attempt import git_commit
from harness.execution.cluster import Engine, run_cluster
from harness.execution.locks import pid_alive, pid_start
from harness.execution.run_folder import Progress, RunOptions
from harness.execution.worker import WorkerArgs, crashed, run_one
from harness.experiment.ablation import Ablation
from harness.experiment.grid import RunSpec

PRELOAD = ["harness.training.loop"]


def _init_worker(threads: int, slots: Any = None, owner: tuple[int, int | None] | None = None) -> None:
    """Pin this worker to a GPU slot (before CUDA starts), tie its life to ``ablate``'s, set threads."""
    # Ctrl-C reaches every process of the terminal's group: ``ablate`` decides (it stops the
    # workers), so a worker must not take it for a failed run and go on to the next one.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if slots is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = slots.get(timeout=60)
    if owner is not None:
        _die_with(*owner)
    import torch

    torch.set_num_threads(threads)


def _die_with(pid: int, start: int | None, every: float = 1.0) -> None:
    """SIGKILL this worker about ``every`` seconds after process ``pid`` (``ablate run``) dies, as
    if it had been killed with it: no orphan keeps training, and its claim reads as a dead
    process's. (A worker's parent is the forkserver, which outlives ``ablate`` while any worker
    lives, so the kernel's parent-death signal cannot be used.)"""

    def watch() -> None:
        while pid_alive(pid, start):
            time.sleep(every)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="ablate-owner-watch", daemon=True).start()


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel every run not started and kill the workers now (SIGKILL): the runs they were training
    keep their last checkpoint and resume at the next ``ablate run``, as after any kill. Without it
    the runs already queued to the workers start after Ctrl-C, and the interpreter's exit waits for
    each of them to end. (SIGTERM is not enough: Lightning's handler turns it into an exception
    that the pool's worker reports as a result before taking the next queued run.)"""
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
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def remaining_time(walls: list[float], left: int, at_once: int) -> float:
    """Seconds until ``left`` more runs finish, ``at_once`` at a time: the mean wall time of the runs
    so far (``walls``, seconds) times the runs left, over the runs that go at once. (Elapsed time
    over runs done counts the first finished run as the only work done while a second worker's run
    was in flight, which doubled the first estimate of a two-worker grid.)"""
    if left <= 0 or not walls:
        return 0.0
    return sum(walls) / len(walls) * left / max(1, at_once)


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
    options: RunOptions | None = None,
    slots: tuple[str, ...] = (),
    engine: Engine | None = None,
) -> list[Progress]:
    """Execute ``specs`` (already filtered to unfinished runs); returns their records in order.

    Args:
        workers: processes running at once; 1 runs in this process.
        threads: torch threads per run.
        on_done: called after each run with (record, done, total, eta_seconds).
        options: resume, checkpoints, timeouts, retries (:class:`~harness.execution.run_folder.RunOptions`).
        slots: one ``CUDA_VISIBLE_DEVICES`` value per worker (:func:`harness.execution.gpus.place`).
        engine: an :class:`~harness.execution.cluster.Engine` for Ray or SLURM (None: local).
    """
    commit = git_commit()
    total, done, started = len(specs), 0, time.perf_counter()
    records: dict[str, Progress] = {}

    local = engine is None or engine.kind == "local"
    at_once = 1 if (workers <= 1 or total <= 1) and not slots else max(1, min(workers, total))
    walls: list[float] = []

    def finished(rec: Progress) -> None:
        nonlocal done
        done += 1
        records[rec["run_id"]] = rec
        elapsed = time.perf_counter() - started
        walls.append(float(rec.get("wall_time_s") or elapsed))
        eta = remaining_time(walls, total - done, at_once) if local else elapsed / done * (total - done)
        if on_done is not None:
            on_done(rec, done, total, eta)

    args = WorkerArgs(results, wandb_mode, data_dir, abl, commit, options)
    if engine is not None and engine.kind != "local":
        run_cluster(engine, specs, args, threads, finished)
    elif (workers <= 1 or total <= 1) and not slots:
        import torch

        torch.set_num_threads(threads)
        for spec in specs:
            try:
                finished(run_one(spec, args))
            except Exception as exc:  # noqa: BLE001  the store or the machine, not the run: go on
                finished(crashed(spec, exc))
    else:
        _run_pool(specs, args, min(workers, total), threads, slots, finished)
    return [records[s.run_id] for s in specs if s.run_id in records]


def _run_pool(
    specs: list[RunSpec],
    args: WorkerArgs,
    workers: int,
    threads: int,
    slots: tuple[str, ...],
    finished: Callable[[Progress], None],
) -> None:
    """Run ``specs`` on a process pool; a pool broken by a dying worker is replaced once."""
    ctx, remaining = pool_context(), list(specs)
    for _ in range(2):
        queue = None
        if slots:
            queue = ctx.Queue()
            for slot in slots[:workers]:
                queue.put(slot)
        broken: list[tuple[RunSpec, BaseException]] = []
        owner = (os.getpid(), pid_start(os.getpid()))
        with ProcessPoolExecutor(
            max_workers=min(workers, len(remaining)),
            mp_context=ctx,
            initializer=_init_worker,
            initargs=(threads, queue, owner),
        ) as pool:
            futures = {pool.submit(run_one, s, args): s for s in remaining}
            pending = set(futures)
            while pending:
                try:
                    complete, pending = wait(pending, return_when=FIRST_COMPLETED)
                except KeyboardInterrupt:  # Ctrl-C: start nothing more, stop the runs in flight
                    _stop(pool)
                    raise
                for fut in complete:
                    try:
                        finished(fut.result())
                    except BrokenProcessPool as exc:
                        broken.append((futures[fut], exc))
                    except Exception as exc:  # noqa: BLE001
                        finished(crashed(futures[fut], exc))
        remaining = [spec for spec, _ in broken]
        if not remaining:
            return
    for spec, exc in broken:
        finished(crashed(spec, exc))
