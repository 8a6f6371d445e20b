"""What ``ablate bench attention`` measures: forward + backward of one attention layer per kernel
and sequence length, with peak memory, the SDPA backend that ran and tokens/s. The command (JSON,
table) is :mod:`harness.cli.bench`, the report section :mod:`harness.report.bench`.
``python -m harness.bench ARGS`` is ``ablate bench attention ARGS``.

What one (kernel, length) measures: a :class:`~harness.modules.MultiHeadAttention` (q/k/v and
output projections around the kernel; no positional encoding, no dropout) on (B, T, C) inputs,
called as in training: forward, then backward of a fixed random output gradient. Time: median
wall time of ``repeats`` calls after ``1 + WARMUP`` untimed ones (``torch.cuda.synchronize``
around each call on CUDA). Memory: ``peak_mib``, the peak during the first call; ``base_mib``, the
level before it; ``peak_mib_after_repeats``, the peak over all calls. On CPU the last one also
holds what glibc's malloc kept after frees (its mmap threshold rises to the size of freed blocks,
up to 32 MiB, and smaller blocks then come from a heap that is not given back): measured, math at
T=1024 added 195 MiB over all calls, against about 64 MiB of live (4, 1024, 1024) float32 scores.

- CUDA: ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats`` (base:
  ``memory_allocated``, i.e. weights and inputs), in this process; ``torch.OutOfMemoryError``
  is an ``oom`` row.
- CPU: the process peak resident set size, which never goes down within a process. So each
  (kernel, length) runs in a fresh child forked from a ``multiprocessing`` forkserver that has
  only imported torch and :mod:`harness.modules`; after one call at T=16 (torch's lazy set-up)
  the peak is reset to the current size (``/proc/self/clear_refs``, base) and read back as
  ``VmHWM`` of ``/proc/self/status`` (``ru_maxrss`` where there is no ``/proc``). Not
  ``ru_maxrss`` on Linux: a child started with fork + exec inherits its parent's peak there
  (measured: 1020 MiB reported for a 230 MiB child of a 1 GiB parent). A child killed by a
  signal (the kernel's OOM killer) is an ``oom`` row.

Backend: the SDPA aten ops that ran on the first call, seen by a ``TorchDispatchMode`` (private
torch API; ``_scaled_dot_product_flash_attention_for_cpu`` -> ``flash_attention``); for kernels
that call no SDPA op (``math``, ``linear``), the kernel's own name. ``backend_predicted`` is what
the kernel noted (``torch._fused_sdp_choice``). A kernel torch cannot run on the device and dtype
(``check_available``) is one ``unavailable`` row with the reason, never a fallback; after an
``oom`` or ``error`` the longer lengths of that kernel are ``skipped`` rows.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import signal
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch

from harness.bench import memory
from harness.modules import KERNELS, POSITIONAL, MultiHeadAttention, TransformerConfig

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
WARMUP = 1  # untimed calls after the first one (which also watches the backend)
SDPA_BACKENDS = {
    "flash_attention": "flash_attention",
    "efficient_attention": "efficient_attention",
    "cudnn_attention": "cudnn_attention",
    "attention_math": "math",
    "overrideable": "overrideable",
}
ROW_KEYS = (
    "kernel",
    "seq_len",
    "status",
    "reason",
    "ms_fwd_bwd",
    "ms_min",
    "times_ms",
    "tokens_per_s",
    "peak_mib",
    "base_mib",
    "peak_mib_after_repeats",
    "backend",
    "backend_predicted",
)


@dataclass(frozen=True)
class BenchConfig:
    """What every (kernel, length) of one bench shares.

    Args:
        device: ``cpu`` or ``cuda``.
        dtype: a :data:`DTYPES` name, of the inputs and the layer's weights.
        d_model: C.
        n_heads: H.
        batch: B.
        repeats: timed calls per (kernel, length).
        threads: torch threads (CPU).
    """

    device: str = "cpu"
    dtype: str = "float32"
    d_model: int = 64
    n_heads: int = 4
    batch: int = 1
    repeats: int = 10
    threads: int = 1  # on CPU: 2 threads on 2 cores shared with other jobs made small calls ~100x slower


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _layer(cfg: BenchConfig, kernel: str) -> tuple[MultiHeadAttention, Any]:
    model = TransformerConfig(
        vocab_size=1, d_model=cfg.d_model, n_heads=cfg.n_heads, n_layers=1, position="nope", kernel=kernel
    )  # checks the kernel's config
    torch.manual_seed(0)
    layer = MultiHeadAttention(cfg.d_model, cfg.n_heads, kernel=kernel).to(cfg.device, DTYPES[cfg.dtype])
    return layer, POSITIONAL.get("nope")(model)


def _observed_backend(step: Callable[[], None]) -> str:
    """Run ``step`` once; the SDPA backends whose aten ops ran, comma-separated ("" for none)."""
    try:
        from torch.utils._python_dispatch import TorchDispatchMode  # private: best effort only
    except ImportError:
        step()
        return ""
    seen: set[str] = set()

    class Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.add(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    with Watch():
        step()
    return ",".join(
        sorted(
            {
                backend
                for op in seen
                if op.startswith("_scaled_dot_product_")
                for key, backend in SDPA_BACKENDS.items()
                if key in op
            }
        )
    )


def measure_layer(cfg: BenchConfig, kernel: str, t: int) -> dict[str, Any]:
    """Forward + backward of one attention layer with kernel ``kernel`` at length ``t``, in this
    process (see the module docstring for what is measured).

    Raises:
        RuntimeError: e.g. out of memory; ``torch.OutOfMemoryError`` on CUDA.
    """
    layer, pos = _layer(cfg, kernel)
    dtype = DTYPES[cfg.dtype]
    x = torch.randn(cfg.batch, t, cfg.d_model, device=cfg.device, dtype=dtype, requires_grad=True)  # (B, T, C)
    grad = torch.randn_like(x)  # dL/d(out), (B, T, C)

    def step() -> None:
        out, _ = layer(x, pos)  # (B, T, C)
        out.backward(grad)
        x.grad = None
        layer.zero_grad(set_to_none=True)

    base = memory.start(cfg.device)
    backend = _observed_backend(step) or ",".join(sorted(layer.kernel.backends))
    peak = memory.peak(cfg.device)  # of this one call; later calls add the allocator's retention on CPU
    times = []
    for i in range(WARMUP + cfg.repeats):
        _sync(cfg.device)
        t0 = time.perf_counter()
        step()
        _sync(cfg.device)
        if i >= WARMUP:
            times.append((time.perf_counter() - t0) * 1e3)
    ms = statistics.median(times)
    return {
        "status": "ok",
        "ms_fwd_bwd": ms,
        "ms_min": min(times),
        "times_ms": [round(x, 4) for x in times],
        "tokens_per_s": cfg.batch * t / ms * 1e3,
        "peak_mib": peak,
        "base_mib": base,
        "peak_mib_after_repeats": memory.peak(cfg.device),
        "backend": backend,
        "backend_predicted": ",".join(sorted(layer.kernel.backends)),
    }


def _failure(exc: BaseException) -> dict[str, Any]:
    text = str(exc).strip()
    oom = isinstance(exc, (torch.OutOfMemoryError, MemoryError)) or "can't allocate memory" in text
    return {
        "status": "oom" if oom else "error",
        "reason": f"{type(exc).__name__}: {text.splitlines()[0][:200] if text else ''}".rstrip(": "),
    }


def _child(cfg: BenchConfig, kernel: str, t: int, conn: Any) -> None:
    """In a fresh CPU child: measure and send the row (a failure is a row too). A first call at
    T=16 makes torch's lazy set-up (thread pool, oneDNN; about 90 MiB) happen before the base."""
    torch.set_num_threads(cfg.threads)
    try:
        measure_layer(replace(cfg, repeats=1), kernel, 16)
        row = measure_layer(cfg, kernel, t)
    except (RuntimeError, ValueError, MemoryError) as exc:
        row = _failure(exc)
    conn.send(row)
    conn.close()


def _context() -> mp.context.BaseContext:
    if "forkserver" not in mp.get_all_start_methods():  # no fork: spawn has the ru_maxrss caveat
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    # torch._dynamo: imported by the first call under a TorchDispatchMode, 2.5 s in every child otherwise
    ctx.set_forkserver_preload(["__main__", "harness.bench.attention", "torch._dynamo"])  # no effect if the server runs
    return ctx


def run_one(cfg: BenchConfig, kernel: str, t: int) -> dict[str, Any]:
    """One (kernel, length): in this process on CUDA, in a fresh child on CPU. Never raises for
    an outcome (out of memory, an error in the kernel): it is the row's ``status``."""
    if cfg.device != "cpu":
        try:
            return measure_layer(cfg, kernel, t)
        except (RuntimeError, ValueError, MemoryError) as exc:
            return _failure(exc)
        finally:
            gc.collect()  # the failed call's tensors, before the next length
            torch.cuda.empty_cache()
    ctx = _context()
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(cfg, kernel, t, send), daemon=True)
    proc.start()
    send.close()
    try:
        row = recv.recv()
    except EOFError:  # the child died without a word
        row = None
    proc.join()
    if row is not None:
        return row
    killed = proc.exitcode is not None and proc.exitcode < 0
    why = f"killed by {signal.Signals(-proc.exitcode).name}" if killed else f"exit code {proc.exitcode}"
    oom = killed and -proc.exitcode == signal.SIGKILL
    return {
        "status": "oom" if oom else "error",
        "reason": f"the child process died ({why}"
        + ("; most likely the kernel's out-of-memory killer)" if oom else ")"),
    }


def bench(
    cfg: BenchConfig, kernels: list[str], lengths: list[int], echo: Callable[[dict[str, Any]], None] | None = None
) -> list[dict[str, Any]]:
    """Rows (keys :data:`ROW_KEYS`) for every kernel x length, shortest first; ``echo`` gets each row."""
    rows = []
    for name in kernels:
        try:
            KERNELS.get(name).check_available(cfg.device, DTYPES[cfg.dtype])
        except ValueError as exc:
            rows.append(dict.fromkeys(ROW_KEYS) | {"kernel": name, "status": "unavailable", "reason": str(exc)})
            if echo:
                echo(rows[-1])
            continue
        stop = None
        for t in lengths:
            row = {"status": "skipped", "reason": f"{stop} before"} if stop else run_one(cfg, name, t)
            rows.append(dict.fromkeys(ROW_KEYS) | {"kernel": name, "seq_len": t} | row)
            if echo:
                echo(rows[-1])
            if stop is None and row["status"] in ("oom", "error"):
                stop = f"{row['status']} at T={t}"
    return rows
