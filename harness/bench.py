"""Timing of the attention kernels alone: forward + backward over a range of sequence lengths.

``python -m harness.bench [--device cuda] [--dtype bf16] [--lengths 256,1024,4096] [--out FILE.csv]``
prints one row per (kernel, length): median milliseconds of forward + backward, peak memory (CUDA:
``torch.cuda.max_memory_allocated`` above the inputs; CPU: not measured, NaN), the backends that
ran, and the outcome (``ok``, or the error a kernel raised, e.g. flash where torch has none). Not
yet an ``ablate`` subcommand (``ablate bench attention`` is the planned name).
"""
from __future__ import annotations

import argparse
import math
import statistics
import time
from typing import Any

import torch

from harness.modules.kernels import KERNELS
from harness.precision import run_device

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def time_kernel(name: str, t: int, device: str, dtype: torch.dtype, batch: int = 1, heads: int = 8,
                d_head: int = 64, repeats: int = 3) -> dict[str, Any]:
    """One row: forward + backward of kernel ``name`` on (batch, heads, t, d_head) inputs."""
    row: dict[str, Any] = {"kernel": name, "seq_len": t, "device": device, "dtype": str(dtype).removeprefix("torch.")}
    try:
        KERNELS.get(name).check_available(device, dtype)
        kernel = KERNELS.get(name)()
        q, k, v = (torch.randn(batch, heads, t, d_head, device=device, dtype=dtype, requires_grad=True)
                   for _ in range(3))
        times = []
        for i in range(repeats + 1):  # the first call warms up
            if device == "cuda":
                torch.cuda.reset_peak_memory_stats()
                base = torch.cuda.memory_allocated()
            _sync(device)
            t0 = time.perf_counter()
            out, _ = kernel(q, k, v)
            out.float().sum().backward()
            _sync(device)
            if i:
                times.append((time.perf_counter() - t0) * 1e3)
            q.grad = k.grad = v.grad = None
        peak = (torch.cuda.max_memory_allocated() - base) / 2**20 if device == "cuda" else math.nan
        row |= {"ms_fwd_bwd": statistics.median(times), "peak_mem_mb": peak,
                "backend": ",".join(sorted(kernel.backends)), "status": "ok"}
    except (RuntimeError, ValueError) as exc:  # an outcome: e.g. out of memory, or no flash kernel
        row |= {"ms_fwd_bwd": math.nan, "peak_mem_mb": math.nan, "backend": "",
                "status": f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"}
    return row


def bench(lengths: list[int], device: str, dtype: torch.dtype, kernels: list[str] | None = None,
          **kw: Any) -> list[dict[str, Any]]:
    """Rows for every kernel x length; a kernel that fails at one length is not tried longer."""
    rows = []
    for name in kernels or KERNELS.names():
        for t in lengths:
            rows.append(time_kernel(name, t, device, dtype, **kw))
            if rows[-1]["status"] != "ok":
                break
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=run_device())
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="fp32")
    ap.add_argument("--lengths", default="128,256,512,1024,2048,4096")
    ap.add_argument("--kernels", default=",".join(KERNELS.names()))
    ap.add_argument("--out", default=None, help="also write the rows as CSV here")
    args = ap.parse_args(argv)
    rows = bench([int(x) for x in args.lengths.split(",")], args.device, DTYPES[args.dtype], args.kernels.split(","))
    import pandas as pd

    frame = pd.DataFrame(rows)
    print(frame.to_string(index=False))
    if args.out:
        frame.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
