"""``ablate bench attention`` as a plain function (the CLI only parses)."""

from __future__ import annotations

import os
import platform
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

from harness.bench.attention import DTYPES, MEMORY, WARMUP, BenchConfig, bench
from harness.cli import output
from harness.errors import AblateError
from harness.execution.attempt import git_commit
from harness.execution.gpus import check_threads
from harness.modules import KERNELS
from harness.registry import UnknownNameError
from harness.report.bench import rich_table
from harness.store.runs import write_json_atomic

DTYPE_ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
DEFAULT_LENGTHS = {"cpu": [2**i for i in range(7, 13)], "cuda": [2**i for i in range(9, 16)]}  # 128..4096, 512..32768


def environment(cfg: BenchConfig) -> dict[str, Any]:
    """torch, device and host: what explains a difference between two benches."""
    if cfg.device == "cuda":
        name = torch.cuda.get_device_name(0)
    else:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
            name = next(line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name"))
        except (OSError, StopIteration):
            name = platform.processor() or platform.machine()
    return {
        **{"torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version()},
        **{"device": cfg.device, "device_name": name, "dtype": cfg.dtype, "threads": cfg.threads},
        **{"cpu_count": os.cpu_count(), "platform": platform.platform(), "commit": git_commit()},
    }


def attention(
    device: str | None = None,
    lengths: list[int] | None = None,
    kernels: list[str] | None = None,
    d_model: int = 64,
    n_heads: int = 4,
    batch: int = 1,
    repeats: int = 10,
    dtype: str = "float32",
    threads: int | None = None,
    out: Path = Path("results/bench"),
) -> Path:
    """Bench every kernel x length (:func:`harness.bench.attention.bench`), write and return
    ``out/attention-DEVICE-DTYPE.json`` and print the table. Raises AblateError before the bench
    runs: an unknown device, dtype or kernel, no CUDA, bad lengths or shape, an ``out`` under a file."""
    device = ("cuda" if torch.cuda.is_available() else "cpu") if device is None else device
    if device not in DEFAULT_LENGTHS:
        raise AblateError(f"--device {device!r}: use cpu or cuda")
    if device == "cuda" and not torch.cuda.is_available():
        raise AblateError(f"--device cuda, but torch {torch.__version__} sees no CUDA device here")
    dtype = DTYPE_ALIASES.get(dtype, dtype)
    if dtype not in DTYPES:
        raise AblateError(f"--dtype {dtype}: use one of {', '.join(DTYPES)}")
    if kernels is not None and not kernels:  # --kernels "" or ","; leave the option out for all
        raise AblateError(
            f"--kernels names no kernel; choose among {', '.join(KERNELS.names())}, or leave it out for all"
        )
    try:
        kernels = [KERNELS.canonical(k) for k in kernels or KERNELS.names()]
    except UnknownNameError as exc:
        raise AblateError(str(exc)) from None
    if lengths is not None and not lengths:  # --lengths "" or ","; leave the option out for the defaults
        raise AblateError(
            f"--lengths names no length; e.g. --lengths 128,256,512, or leave it out for {DEFAULT_LENGTHS[device][0]}..{DEFAULT_LENGTHS[device][-1]}"
        )
    lengths = lengths or DEFAULT_LENGTHS[device]
    if min(lengths) < 1:
        raise AblateError(f"--lengths must be positive, got {lengths}")
    if max(lengths) * batch * d_model >= 2**63:  # torch sizes are int64; the child process would crash
        raise AblateError(f"--lengths {max(lengths)} is too long: batch x length x d_model must stay below 2**63")
    if d_model % n_heads:
        raise AblateError(f"--d-model {d_model} is not divisible by --n-heads {n_heads}")
    lengths = sorted(set(lengths))
    if threads is not None:
        check_threads(threads)
    threads = threads or (1 if device == "cpu" else torch.get_num_threads())  # cpu: see BenchConfig.threads
    cfg = BenchConfig(device, dtype, d_model, n_heads, batch, repeats, threads)
    output.check_out(Path(out), "bench files")  # found now, not after the whole bench has run
    doc: dict[str, Any] = {
        "bench": "attention",
        "schema": 1,
        "created": f"{datetime.now(timezone.utc):%Y-%m-%dT%H:%M:%SZ}",
        "env": environment(cfg) | {"loadavg_start": os.getloadavg()[0]},
        "config": asdict(cfg)
        | {"warmup": 1 + WARMUP, "kernels": kernels, "lengths": lengths, "memory": MEMORY[device]},
    }
    output.console.print(
        f"bench attention on {device} ({doc['env']['device_name']}), {dtype}, {cfg.threads} thread(s): kernels {', '.join(kernels)} x T = {', '.join(map(str, lengths))}",
        markup=False,
    )
    doc["rows"] = bench(cfg, kernels, lengths, echo=lambda r: output.console.print(_progress(r), markup=False))
    doc["env"]["loadavg_end"] = os.getloadavg()[0]
    path = Path(out) / f"attention-{device}-{dtype}.json"
    write_json_atomic(path, doc)  # strict JSON: NaN as null, inf as "Infinity" (harness.encode)
    output.console.print(rich_table(doc))
    output.console.print(f"wrote {path}")
    return path


def _progress(r: dict[str, Any]) -> str:
    if r["status"] != "ok":
        return f"  {r['kernel']} T={r['seq_len']}: {r['status']} ({r['reason']})"
    return f"  {r['kernel']} T={r['seq_len']}: {r['ms_fwd_bwd']:.3g} ms, peak {r['peak_mib']:.0f} MiB, backend {r['backend']}"
