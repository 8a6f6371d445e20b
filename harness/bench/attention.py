"""What ``ablate bench attention`` measures: forward + backward of one attention layer per kernel and sequence length.

Each reading also has peak memory, the SDPA backend that ran and tokens/s. How, and why a CPU reading needs a fresh
process per (kernel, length): docs/benchmarks.md. The command (JSON, table) is :mod:`harness.cli.tools`, the report
section :mod:`harness.report.bench`.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing as mp
import resource
import signal
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch

from harness.dtypes import DTYPE_NAMES
from harness.modules import KERNELS, POSITIONAL, MultiHeadAttention, TransformerConfig

DTYPES = tuple(DTYPE_NAMES.values())
"""The ``--dtype`` names, each a ``torch`` attribute."""
WARMUP = 1  # untimed calls after the first one (which also watches the backend)
SDPA_BACKENDS = {k: k for k in ("flash_attention", "efficient_attention", "cudnn_attention", "overrideable")}
SDPA_BACKENDS["attention_math"] = "math"
"""A part of an SDPA aten op's name -> the backend it names."""
ROW_KEYS = ("kernel", "seq_len", "status", "reason", "ms_fwd_bwd", "ms_min", "times_ms", "tokens_per_s", "peak_mib")
ROW_KEYS += ("base_mib", "peak_mib_after_repeats", "backend", "backend_predicted")
MEMORY = {
    "cuda": "torch.cuda.max_memory_allocated during the first forward + backward at T, after "
    "reset_peak_memory_stats; base: memory_allocated before it (weights, inputs)",
    "cpu": "peak RSS (VmHWM) during the first forward + backward at T, in a fresh forkserver child per "
    "(kernel, length), the peak reset after a T=16 call; base: the child's RSS at that reset",
}
"""What the peak and base of a row are, per device (written into the bench's JSON)."""


@dataclass(frozen=True)
class BenchConfig:
    """What every (kernel, length) of one bench shares."""

    device: str = "cpu"  # or cuda
    dtype: str = "float32"  # of the inputs and the layer's weights: one of DTYPES
    d_model: int = 64  # C
    n_heads: int = 4  # H
    batch: int = 1  # B
    repeats: int = 10  # timed calls per (kernel, length)
    threads: int = 1  # on CPU: 2 threads on 2 cores shared with other jobs made small calls ~100x slower


def _status_mib(key: str) -> float | None:
    """A size field of ``/proc/self/status`` (``VmRSS``, ``VmHWM``) in MiB, or None without ``/proc``."""
    try:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) / 1024 for line in fh if line.startswith(key + ":"))
    except (OSError, StopIteration):
        return None


def _memory_start(device: str) -> float | None:
    """MiB in use now; resets the peak to it (on CPU where Linux allows: ``/proc/self/clear_refs``)."""
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
        return torch.cuda.memory_allocated() / 2**20
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as fh:  # else the peak covers the imports
        fh.write("5")  # Linux >= 4.0: peak RSS := current RSS
    return _status_mib("VmRSS")


def _memory_peak(device: str) -> float:
    """MiB at the peak since :func:`_memory_start`."""
    if device == "cuda":
        return torch.cuda.max_memory_allocated() / 2**20
    peak = _status_mib("VmHWM")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 if peak is None else peak  # KiB on Linux


def _observed_backend(step: Callable[[], None]) -> str:
    """Run ``step`` once; the SDPA backends whose aten ops ran, comma-separated ("" for none)."""
    from torch.utils._python_dispatch import TorchDispatchMode  # private, in every torch >= 2.4

    seen: set[str] = set()

    class Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.add(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    with Watch():
        step()
    ops = [op for op in seen if op.startswith("_scaled_dot_product_")]
    return ",".join(sorted({backend for op in ops for key, backend in SDPA_BACKENDS.items() if key in op}))


def measure_layer(cfg: BenchConfig, kernel: str, t: int) -> dict[str, Any]:
    """Forward + backward of one attention layer with kernel ``kernel`` at length ``t``, in this process.

    Returns:
        A row's measured keys.

    Raises:
        RuntimeError: e.g. out of memory (``torch.OutOfMemoryError`` on CUDA).
    """
    model = TransformerConfig(
        vocab_size=1, d_model=cfg.d_model, n_heads=cfg.n_heads, n_layers=1, position="nope", kernel=kernel
    )  # checks the kernel's config
    torch.manual_seed(0)
    dtype = getattr(torch, cfg.dtype)
    layer = MultiHeadAttention(cfg.d_model, cfg.n_heads, kernel=kernel).to(cfg.device, dtype)
    pos = POSITIONAL.get("nope")(model)
    x = torch.randn(cfg.batch, t, cfg.d_model, device=cfg.device, dtype=dtype, requires_grad=True)  # (B, T, C)
    grad = torch.randn_like(x)  # dL/d(out), (B, T, C)
    sync = torch.cuda.synchronize if cfg.device == "cuda" else lambda: None

    def step() -> None:
        out, _ = layer(x, pos)  # (B, T, C)
        out.backward(grad)
        x.grad = None
        layer.zero_grad(set_to_none=True)

    base = _memory_start(cfg.device)
    observed = _observed_backend(step)
    predicted = ",".join(sorted(layer.kernel.backends))  # noted by the kernel during the call
    peak = _memory_peak(cfg.device)  # of this one call; later calls add the allocator's retention on CPU
    times = []
    for i in range(WARMUP + cfg.repeats):
        sync()
        t0 = time.perf_counter()
        step()
        sync()
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
        "peak_mib_after_repeats": _memory_peak(cfg.device),
        "backend": observed or predicted,
        "backend_predicted": predicted,
    }


def _failure(exc: BaseException) -> dict[str, Any]:
    text = str(exc).strip()
    oom = isinstance(exc, (torch.OutOfMemoryError, MemoryError)) or "can't allocate memory" in text
    reason = f"{type(exc).__name__}: {text.splitlines()[0][:200] if text else ''}".rstrip(": ")
    return {"status": "oom" if oom else "error", "reason": reason}


def _child(cfg: BenchConfig, kernel: str, t: int, conn: Any) -> None:
    """In a fresh CPU child: measure and send the row (a failure is a row too).

    A first call at T=16 makes torch's lazy set-up (thread pool, oneDNN; about 90 MiB) happen before the base.
    """
    torch.set_num_threads(cfg.threads)
    try:
        measure_layer(replace(cfg, repeats=1), kernel, 16)
        row = measure_layer(cfg, kernel, t)
    except (RuntimeError, ValueError, MemoryError) as exc:
        row = _failure(exc)
    conn.send(row)
    conn.close()


def run_one(cfg: BenchConfig, kernel: str, t: int) -> dict[str, Any]:
    """One (kernel, length): in this process on CUDA, in a fresh child on CPU.

    Never raises for an outcome (out of memory, an error in the kernel): it is the row's ``status``.
    """
    if cfg.device != "cpu":
        try:
            return measure_layer(cfg, kernel, t)
        except (RuntimeError, ValueError, MemoryError) as exc:
            return _failure(exc)
        finally:
            gc.collect()  # the failed call's tensors, before the next length
            torch.cuda.empty_cache()
    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        # torch._dynamo: imported by the first call under a TorchDispatchMode, 2.5 s in every child otherwise;
        # no effect once the server runs
        ctx.set_forkserver_preload(["__main__", "harness.bench.attention", "torch._dynamo"])
    else:  # no fork: spawn has the ru_maxrss caveat
        ctx = mp.get_context("spawn")
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
    oom = killed and -proc.exitcode == signal.SIGKILL
    why = f"killed by {signal.Signals(-proc.exitcode).name}" if killed else f"exit code {proc.exitcode}"
    why += "; most likely the kernel's out-of-memory killer" if oom else ""
    return {"status": "oom" if oom else "error", "reason": f"the child process died ({why})"}


def bench(
    cfg: BenchConfig, kernels: list[str], lengths: list[int], echo: Callable[[dict[str, Any]], None] | None = None
) -> list[dict[str, Any]]:
    """Rows (keys :data:`ROW_KEYS`) for every kernel x length, shortest first; ``echo`` gets each row."""
    rows: list[dict[str, Any]] = []

    def add(row: dict[str, Any]) -> None:
        rows.append(dict.fromkeys(ROW_KEYS) | row)
        if echo:
            echo(rows[-1])

    for name in kernels:
        try:
            KERNELS.get(name).check_available(cfg.device, getattr(torch, cfg.dtype))
        except ValueError as exc:
            add({"kernel": name, "status": "unavailable", "reason": str(exc)})
            continue
        stop = None
        for t in lengths:
            row = {"status": "skipped", "reason": f"{stop} before"} if stop else run_one(cfg, name, t)
            add({"kernel": name, "seq_len": t} | row)
            if stop is None and row["status"] in ("oom", "error"):
                stop = f"{row['status']} at T={t}"
    return rows
