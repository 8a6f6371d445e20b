"""Executing a grid of run specs: in-process or on a local process pool, one progress display.

Every run uses ``threads`` torch threads (default 1) whatever the number of workers, so a grid
gives the same numbers bit for bit with ``--workers 1`` and ``--workers 2`` (torch's results
depend on the thread count; it is recorded in each run). On 2 cores, two 1-thread workers gave
about 1.3x the throughput of one 2-thread process (../shared/PILOT.md).
"""
from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

from harness.ablation import Ablation
from harness.runner import RunSpec, execute, git_commit


def _init_worker(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def _run(spec: RunSpec, results: Path, wandb_mode: str, data_dir: Path | None, abl: Ablation,
         commit: str | None) -> dict[str, Any]:
    return execute(spec, results, wandb_mode=wandb_mode, data_dir=data_dir, abl=abl, commit=commit)


def run_grid(specs: list[RunSpec], results: Path, abl: Ablation, *, workers: int = 1, threads: int = 1,
             wandb_mode: str = "off", data_dir: Path | None = None,
             on_done: Callable[[dict[str, Any], int, int, float], None] | None = None) -> list[dict[str, Any]]:
    """Execute ``specs`` (already filtered to unfinished runs); returns their records in order.

    Args:
        workers: processes running at once; 1 runs in this process.
        threads: torch threads per run.
        on_done: called after each run with (record, done, total, eta_seconds).
    """
    commit = git_commit()
    total, done, started = len(specs), 0, time.perf_counter()
    records: dict[str, dict[str, Any]] = {}

    def finished(rec: dict[str, Any]) -> None:
        nonlocal done
        done += 1
        records[rec["run_id"]] = rec
        elapsed = time.perf_counter() - started
        eta = elapsed / done * (total - done)
        if on_done is not None:
            on_done(rec, done, total, eta)

    if workers <= 1 or total <= 1:
        _init_worker(threads)
        for spec in specs:
            finished(_run(spec, results, wandb_mode, data_dir, abl, commit))
    else:
        ctx = mp.get_context("spawn")
        with ProcessPoolExecutor(max_workers=min(workers, total), mp_context=ctx,
                                 initializer=_init_worker, initargs=(threads,)) as pool:
            pending = {pool.submit(_run, s, results, wandb_mode, data_dir, abl, commit) for s in specs}
            while pending:
                complete, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in complete:
                    finished(fut.result())
    return [records[s.run_id] for s in specs if s.run_id in records]
