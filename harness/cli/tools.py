"""``ablate check NAME ...`` and ``ablate bench attention``: the commands outside the run store.

``ablate check`` runs the contract suite (:mod:`harness.contracts`) on registered components and tasks, as a table or
JSON (every name resolved before any check runs; ``refused`` is a declared limit, not a failure). Both import torch
when they run, never with this module.
"""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Optional

import typer
from rich.table import Table as RichTable
from rich.text import Text

from harness.bounds import INT_MAX
from harness.cli import options as o
from harness.cli import output
from harness.contracts.result import CheckReport
from harness.dtypes import DTYPE_NAMES
from harness.encode import dumps
from harness.errors import AblateError
from harness.execution.gpus import check_threads
from harness.registry import UnknownNameError

if TYPE_CHECKING:
    from harness.bench.attention import BenchConfig

STYLE = {"pass": "green", "fail": "bold red", "refused": "yellow", "skipped": "dim"}
DEFAULT_LENGTHS = {"cpu": [2**i for i in range(7, 13)], "cuda": [2**i for i in range(9, 16)]}  # 128..4096, 512..32768


CheckFormat = Literal["table", "json"]


@o.guard()
def check_cmd(
    names: Annotated[
        Optional[list[str]], typer.Argument(help="KEY=NAME as in an override (position=rope, task=copy) or a bare name")
    ] = None,
    every: Annotated[bool, typer.Option("--all", help="every registered component and task")] = False,
    fmt: Annotated[CheckFormat, typer.Option("--format")] = "table",
    seed: Annotated[
        int, typer.Option(min=0, max=INT_MAX, help="of the weights, tokens and task data")
    ] = 0,  # max: harness.bounds.INT_MAX (past 2**64 torch's manual_seed overflows)
    threads: Annotated[int, typer.Option(min=1, max=INT_MAX, help="torch threads")] = 1,
    plugin: o.PluginOpt = None,
) -> int:
    """The contract suite on components and tasks (shapes, causality, precisions, lengths, ...); exit 1 if one fails."""
    # every name resolved before any check runs (bad input: AblateError)
    import torch

    from harness.contracts.components import check as run_check
    from harness.contracts.targets import everything, resolve

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
    import torch

    from harness.execution.attempt import git_commit

    if cfg.device == "cuda":
        name = torch.cuda.get_device_name(0)
    else:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
            name = next(line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name"))
        except (OSError, StopIteration):
            name = platform.processor() or platform.machine()
    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "device": cfg.device,
        "device_name": name,
        "dtype": cfg.dtype,
        "threads": cfg.threads,
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "commit": git_commit(),
    }


@o.guard()
def attention_cmd(
    device: Annotated[Optional[str], typer.Option(help="cpu | cuda (default: cuda when available)")] = None,
    lengths: Annotated[
        Optional[str],
        typer.Option(help="comma-separated sequence lengths (default: cpu 128..4096, cuda 512..32768, powers of 2)"),
    ] = None,
    kernels: Annotated[
        Optional[str], typer.Option(help="comma-separated kernel names (default: all: math,sdpa,flash,linear)")
    ] = None,
    d_model: Annotated[int, typer.Option(min=1, max=INT_MAX)] = 64,
    n_heads: Annotated[int, typer.Option(min=1, max=INT_MAX)] = 4,
    batch: Annotated[int, typer.Option(min=1, max=INT_MAX)] = 1,
    repeats: Annotated[
        int, typer.Option(min=1, max=10_000, help="timed calls per kernel and length; the median is reported")
    ] = 10,
    dtype: Annotated[
        str, typer.Option(help=f"{' | '.join(DTYPE_NAMES.values())} (or {', '.join(DTYPE_NAMES)})")
    ] = "float32",
    threads: Annotated[
        Optional[int],
        typer.Option(min=1, max=INT_MAX, help="torch threads (default: 1 on cpu, torch's default on cuda)"),
    ] = None,
    out: Annotated[
        Path,
        typer.Option(
            parser=o.given("--out", "pass a folder, or leave the option out for results/bench"),
            help="folder for attention-DEVICE-DTYPE.json (the report reads RESULTS/bench)",
        ),
    ] = Path("results/bench"),
) -> None:
    """Time forward + backward of one attention layer per kernel and length, with peak memory; writes JSON."""
    # bad input is refused before the bench runs: an unknown device, dtype or kernel, no CUDA, bad lengths or shape,
    # an --out under a file
    import torch

    from harness.bench.attention import DTYPES, MEMORY, WARMUP, BenchConfig, bench
    from harness.modules import KERNELS
    from harness.store.runs import write_json_atomic

    try:
        sizes = [int(x) for x in lengths.split(",") if x.strip()] if lengths is not None else None  # "": [], refused
    except ValueError:
        raise AblateError(f"--lengths {lengths}: expected comma-separated integers") from None
    names = [k.strip() for k in kernels.split(",") if k.strip()] if kernels is not None else None
    device = ("cuda" if torch.cuda.is_available() else "cpu") if device is None else device
    if device not in DEFAULT_LENGTHS:
        raise AblateError(f"--device {device!r}: use cpu or cuda")
    if device == "cuda" and not torch.cuda.is_available():
        raise AblateError(f"--device cuda, but torch {torch.__version__} sees no CUDA device here")
    dtype = DTYPE_NAMES.get(dtype, dtype)
    if dtype not in DTYPES:
        raise AblateError(f"--dtype {dtype}: use one of {', '.join(DTYPES)}")
    if names is not None and not names:  # --kernels "" or ","; leave the option out for all
        raise AblateError(
            f"--kernels names no kernel; choose among {', '.join(KERNELS.names())}, or leave it out for all"
        )
    try:
        names = [KERNELS.canonical(k) for k in names or KERNELS.names()]
    except UnknownNameError as exc:
        raise AblateError(str(exc)) from None
    if sizes is not None and not sizes:  # --lengths "" or ","; leave the option out for the defaults
        raise AblateError(
            "--lengths names no length; e.g. --lengths 128,256,512, or leave it out for "
            f"{DEFAULT_LENGTHS[device][0]}..{DEFAULT_LENGTHS[device][-1]}"
        )
    sizes = sizes or DEFAULT_LENGTHS[device]
    if min(sizes) < 1:
        raise AblateError(f"--lengths must be positive, got {sizes}")
    if max(sizes) * batch * d_model >= 2**63:  # torch sizes are int64; the child process would crash
        raise AblateError(f"--lengths {max(sizes)} is too long: batch x length x d_model must stay below 2**63")
    if d_model % n_heads:
        raise AblateError(f"--d-model {d_model} is not divisible by --n-heads {n_heads}")
    sizes = sorted(set(sizes))
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
        "config": asdict(cfg) | {"warmup": 1 + WARMUP, "kernels": names, "lengths": sizes, "memory": MEMORY[device]},
    }
    output.plain(
        f"bench attention on {device} ({doc['env']['device_name']}), {dtype}, {cfg.threads} thread(s): "
        f"kernels {', '.join(names)} x T = {', '.join(map(str, sizes))}"
    )
    doc["rows"] = bench(cfg, names, sizes, echo=lambda r: output.plain(_progress(r)))
    doc["env"]["loadavg_end"] = os.getloadavg()[0]
    path = Path(out) / f"attention-{device}-{dtype}.json"
    write_json_atomic(path, doc)  # strict JSON: NaN as null, inf as "Infinity" (harness.encode)
    from harness.report.bench import rich_table  # matplotlib and pandas under it: ablate check needs neither

    output.console.print(rich_table(doc))
    output.console.print(f"wrote {path}")


def _progress(r: dict[str, Any]) -> str:
    if r["status"] != "ok":
        return f"  {r['kernel']} T={r['seq_len']}: {r['status']} ({r['reason']})"
    return (
        f"  {r['kernel']} T={r['seq_len']}: {r['ms_fwd_bwd']:.3g} ms, peak {r['peak_mib']:.0f} MiB, backend "
        f"{r['backend']}"
    )
