"""``ablate check NAME ...`` and ``ablate bench attention``: the commands outside the run store.

``ablate check`` runs the contract suite (:mod:`harness.contracts`) on registered components and tasks, as a table or
JSON (every name resolved before any check runs; ``refused`` is a declared limit, not a failure).
"""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch
from rich.table import Table as RichTable
from rich.text import Text

from harness.bench.attention import DTYPES, MEMORY, WARMUP, BenchConfig, bench
from harness.cli import output
from harness.contracts.components import check as run_check
from harness.contracts.result import CheckReport
from harness.contracts.targets import everything, resolve
from harness.dtypes import DTYPE_NAMES
from harness.encode import dumps
from harness.errors import AblateError
from harness.execution.attempt import git_commit
from harness.execution.gpus import check_threads
from harness.modules import KERNELS
from harness.registry import UnknownNameError
from harness.store.runs import write_json_atomic

STYLE = {"pass": "green", "fail": "bold red", "refused": "yellow", "skipped": "dim"}
DEFAULT_LENGTHS = {"cpu": [2**i for i in range(7, 13)], "cuda": [2**i for i in range(9, 16)]}  # 128..4096, 512..32768


def check(names: list[str], fmt: str = "table", every: bool = False, seed: int = 0, threads: int = 1) -> int:
    """Check every component or task ``names`` names (or every registered one, ``every``).

    Returns 1 if a contract failed, else 0.

    Raises:
        AblateError: no name and no ``--all``, both, or a name that names nothing.
    """
    if every and names:
        raise AblateError(f"--all checks every registered component and task; drop {' '.join(names)} (or --all)")
    if not every and not names:
        raise AblateError(
            "name a component or task to check, e.g. ablate check position=rope or ablate check task=copy; "
            "--all checks every registered one"
        )
    check_threads(threads)
    targets = everything() if every else [resolve(n) for n in names]
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    reports = []
    try:
        for target in targets:
            reports.append(report := run_check(target, seed, data_dir=output.data_dir()))
            if fmt == "table":
                output.console.print(table(report))
    finally:
        torch.set_num_threads(before)
    if fmt == "json":
        payload = {
            "torch": torch.__version__,
            "threads": threads,
            "loadavg": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
            "checks": [r.to_dict() for r in reports],
        }
        sys.stdout.write(dumps(payload, indent=2) + "\n")
    elif len(reports) > 1:
        failed = [r.target for r in reports if r.failed]
        output.console.print(
            f"{len(reports)} checked in {sum(r.seconds for r in reports):.1f} s; "
            + (f"[bold red]failed:[/] {', '.join(failed)}" if failed else "no contract failed"),
            highlight=False,
        )
    return 1 if any(r.failed for r in reports) else 0


def table(report: CheckReport) -> RichTable:
    """The report as a rich table: contract, result, detail, seconds."""
    counts = {s: sum(r.status == s for r in report.results) for s in STYLE}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    title = f"{report.target} (version {report.version}): {summary} in {report.seconds:.2f} s"
    out = RichTable("contract", "result", "detail", title=title)
    out.add_column("s", justify="right")
    for r in report.results:
        out.add_row(r.contract, Text(r.status, style=STYLE[r.status]), Text(r.detail), f"{r.seconds:.2f}")
    return out


def bench_environment(cfg: BenchConfig) -> dict[str, Any]:
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
    """Bench every kernel x length (:func:`harness.bench.attention.bench`) and print the table.

    Writes and returns ``out/attention-DEVICE-DTYPE.json``.

    Raises:
        AblateError: before the bench runs: an unknown device, dtype or kernel, no CUDA, bad lengths or shape, an
            ``out`` under a file.
    """
    device = ("cuda" if torch.cuda.is_available() else "cpu") if device is None else device
    if device not in DEFAULT_LENGTHS:
        raise AblateError(f"--device {device!r}: use cpu or cuda")
    if device == "cuda" and not torch.cuda.is_available():
        raise AblateError(f"--device cuda, but torch {torch.__version__} sees no CUDA device here")
    dtype = DTYPE_NAMES.get(dtype, dtype)
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
            "--lengths names no length; e.g. --lengths 128,256,512, or leave it out for "
            f"{DEFAULT_LENGTHS[device][0]}..{DEFAULT_LENGTHS[device][-1]}"
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
        "env": bench_environment(cfg) | {"loadavg_start": os.getloadavg()[0]},
        "config": asdict(cfg)
        | {"warmup": 1 + WARMUP, "kernels": kernels, "lengths": lengths, "memory": MEMORY[device]},
    }
    output.console.print(
        f"bench attention on {device} ({doc['env']['device_name']}), {dtype}, {cfg.threads} thread(s): "
        f"kernels {', '.join(kernels)} x T = {', '.join(map(str, lengths))}",
        markup=False,
    )
    doc["rows"] = bench(cfg, kernels, lengths, echo=lambda r: output.console.print(_progress(r), markup=False))
    doc["env"]["loadavg_end"] = os.getloadavg()[0]
    path = Path(out) / f"attention-{device}-{dtype}.json"
    write_json_atomic(path, doc)  # strict JSON: NaN as null, inf as "Infinity" (harness.encode)
    from harness.report.bench import rich_table  # matplotlib and pandas under it: ablate check needs neither

    output.console.print(rich_table(doc))
    output.console.print(f"wrote {path}")
    return path


def _progress(r: dict[str, Any]) -> str:
    if r["status"] != "ok":
        return f"  {r['kernel']} T={r['seq_len']}: {r['status']} ({r['reason']})"
    return (
        f"  {r['kernel']} T={r['seq_len']}: {r['ms_fwd_bwd']:.3g} ms, peak {r['peak_mib']:.0f} MiB, backend "
        f"{r['backend']}"
    )
