"""Where the runs of a local process pool go.

How many workers (by default from each run's expected length, :func:`estimate_seconds`), and which
GPU slot each one owns (docs/execution.md, "Where runs execute"). No torch import unless GPUs have
to be counted.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import AblateError


def visible_gpus(environ: Mapping[str, str] | None = None, count: int | None = None) -> list[str]:
    """Identifiers of the GPUs this process can use, as ``CUDA_VISIBLE_DEVICES`` spells them.

    The variable is read from ``environ`` (default ``os.environ``). How many: ``count``, default
    torch's count (which applies the variable as CUDA does, without initialising CUDA), so a value
    naming no device CUDA can open (``NoDevFiles``, which Grid Engine sets; ``0`` without a GPU or
    driver) gives none, and a list cut short by an invalid id (CUDA stops there) gives the ids
    before it.
    """
    raw = (os.environ if environ is None else environ).get("CUDA_VISIBLE_DEVICES")
    usable = _cuda_count() if count is None else count
    if raw is None:
        return [str(i) for i in range(usable)]
    return [] if raw.strip() in ("", "-1") else [part.strip() for part in raw.split(",") if part.strip()][:usable]


def _cuda_count() -> int:
    """CUDA devices torch can use; 0 without importing torch where no NVIDIA driver is installed."""
    if not Path("/proc/driver/nvidia/gpus").exists() and shutil.which("nvidia-smi") is None:
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def gpu_slots(gpus: list[str], per_run: int) -> list[str]:
    """Disjoint groups of ``per_run`` GPUs of ``gpus``, each as a ``CUDA_VISIBLE_DEVICES`` value.

    Raises:
        AblateError: ``per_run`` < 1 or more than the GPUs visible.
    """
    if per_run < 1:
        raise AblateError(f"--gpus-per-run must be at least 1, got {per_run}")
    if per_run > len(gpus):
        env = os.environ.get("CUDA_VISIBLE_DEVICES")
        named = f"CUDA_VISIBLE_DEVICES={env!r}, " if env is not None else ""
        seen = f"{len(gpus)} visible ({','.join(gpus)})" if gpus else f"none visible ({named}torch.cuda counts none)"
        raise AblateError(
            f"--gpus-per-run {per_run} needs {per_run} GPU(s), {seen}; "
            f"lower --gpus-per-run or run on CPU with --gpus-per-run 0"
        )
    return [",".join(gpus[i : i + per_run]) for i in range(0, len(gpus) - per_run + 1, per_run)]


@dataclass(frozen=True)
class Placement:
    """How many workers run at once, the GPU slot of each (empty on CPU), and why that many.

    ``reason``, why that many: a phrase for the first progress line, e.g. ``"--workers 2"``,
    ``"one per GPU slot"``.
    """

    workers: int
    slots: tuple[str, ...] = ()
    reason: str = ""


# The cost model of a run on one CPU thread, for the default number of workers only (it changes no
# run; rough on purpose: the order of magnitude). Measured with benchmarks/overhead.py and
# benchmarks/workers.py on an idle 2-core VM (torch 2.13, Lightning 2.6).
FLOP_PER_S = 50e9  # of one thread on the model's matrix products (fp32)
STEP_S = 1.5e-3  # per training step outside the matrix products (Python, Lightning's loop, AdamW)
RUN_S = 0.3  # per run outside its steps: model, Trainer, loggers, probes, the record
POOL_START_S = 3.0  # a forkserver that imports torch and Lightning afresh, then each worker's first run
POOL_EFFICIENCY = 0.85  # k one-thread workers on k cores over k x one worker (2 on 2 cores: 1.7x)


def forward_flops(cfg: Any, rows: int, length: int) -> float:
    """Floating-point operations of one forward pass of ``rows`` sequences of ``length`` tokens.

    Counted through the model of ``cfg``: 2 per parameter of the blocks and of an output head of ~64
    tokens, per token, plus attention's ``4 x layers x length^2 x d_model`` per sequence.
    """
    d, layers = cfg.model.d_model, cfg.model.n_layers
    d_ff = cfg.ffn.width(d)
    params = layers * (4 * d * d + 2 * d * d_ff) + 64 * d
    return 2.0 * rows * length * params + 4.0 * layers * rows * length * length * d


def estimate_seconds(cfg: Any, threads: int = 1) -> float:
    """Expected seconds of one run on CPU, from its config alone.

    It counts training steps (3 forward passes each), validation passes, the test at every length,
    and fixed costs per step and per run; ``threads`` count with a square root (small matrices scale
    poorly).
    """
    t, e = cfg.train, cfg.eval
    flops = 3 * t.steps * forward_flops(cfg, t.batch_size, t.seq_len)
    flops += (t.steps // max(t.val_every, 1)) * forward_flops(cfg, e.val_examples, t.seq_len)
    flops += sum(forward_flops(cfg, e.n_examples, length) for length in cfg.eval_lengths())
    return RUN_S + t.steps * STEP_S + flops / (FLOP_PER_S * math.sqrt(max(threads, 1)))


def default_cpu_workers(estimates: Sequence[float], cap: int) -> tuple[int, str]:
    """The default number of CPU workers for runs expected to last ``estimates`` seconds each, and why.

    At most ``cap`` (cores // threads): ``k = min(cap, runs)`` when the time they save,
    ``total - max(total / (k x POOL_EFFICIENCY), longest run)``, is more than twice (for the
    estimate's error) the pool's start ``POOL_START_S``, else one worker in this process.
    """
    n, total = len(estimates), float(sum(estimates))
    if cap <= 1:
        return 1, "the cores hold one run's threads"
    if n <= 1:
        return 1, "one run"
    k = min(cap, n)
    saved = total - max(total / (k * POOL_EFFICIENCY), max(estimates))
    size = f"{n} runs of ~{_duration(total / n)} each, ~{_duration(total)} in all on one worker"
    if saved > 2 * POOL_START_S:
        return k, f"{size}; {k} save ~{_duration(saved)}"
    return 1, f"{size}: too little to pay for a process pool (~{POOL_START_S:g} s to start)"


def _duration(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def check_threads(threads: int) -> None:
    """Refuse more torch threads for one process than ``os.cpu_count()``.

    Beyond the cores they only contend, far beyond them every run fails (``can't start new thread``).

    Raises:
        AblateError: ``threads`` is more than ``os.cpu_count()``.
    """
    if threads > (cores := os.cpu_count() or 1):
        raise AblateError(
            f"--threads {threads}: more than the {cores} cores here; use --threads {cores} or fewer "
            "(threads beyond the cores only contend)"
        )


def place(
    workers: int | None,
    todo: int,
    threads: int,
    gpus: list[str],
    gpus_per_run: int | None,
    cpus: int | None = None,
    estimates: Sequence[float] | None = None,
) -> Placement:
    """The pool for ``todo`` runs (never more workers than runs) of ``threads`` each.

    It has ``workers`` (``--workers``; None: one per GPU slot, on CPU :func:`default_cpu_workers` of
    the runs' ``estimates``, or as many as the ``cpus`` hold when None) on ``gpus``
    (:func:`visible_gpus`) cut by ``gpus_per_run`` (None: 1 when GPUs are visible; 0: CPU only).

    Raises:
        AblateError: more workers than GPU slots, or more GPUs per run than visible.
    """
    todo = max(todo, 1)
    if gpus_per_run == 0 or (gpus_per_run is None and not gpus):
        cores = cpus or os.cpu_count() or 1
        cap = max(1, cores // max(threads, 1))
        if workers is not None:
            n = max(1, min(workers, todo))
            # more threads than cores: the user's choice, said rather than refused
            note = f": {n} x {max(threads, 1)} thread(s) on {cores} cores, oversubscribed (each run slower)"
            return Placement(n, reason=f"--workers {workers}{note if n * max(threads, 1) > cores else ''}")
        if estimates is None:
            return Placement(max(1, min(cap, todo)), reason=f"{cores} cores / {threads} thread(s) per run")
        n, why = default_cpu_workers(estimates, cap)
        return Placement(max(1, min(n, todo)), reason=why)
    slots = gpu_slots(gpus, gpus_per_run or 1)
    if workers is not None and workers > len(slots):
        raise AblateError(
            f"--workers {workers} but only {len(slots)} GPU slot(s) ({len(gpus)} GPU(s) / "
            f"--gpus-per-run {gpus_per_run or 1}); use --workers {len(slots)} or fewer, "
            f"or --gpus-per-run 0 for CPU workers"
        )
    n = min(workers or len(slots), len(slots), todo)
    return Placement(n, tuple(slots[:n]), reason=f"--workers {workers}" if workers else "one per GPU slot")
