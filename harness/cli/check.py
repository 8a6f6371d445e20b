"""``ablate check NAME ...``: the contract suite (:mod:`harness.contracts`) on registered components
and tasks, as a table or JSON; every name resolved before any check runs (``refused`` is a
declared limit, not a failure)."""

from __future__ import annotations

import os
import sys

import torch
from rich.table import Table as RichTable
from rich.text import Text

from harness.cli import output
from harness.contracts.components import check as run_check
from harness.contracts.result import CheckReport
from harness.contracts.targets import everything, resolve
from harness.encode import dumps
from harness.errors import AblateError
from harness.execution.gpus import check_threads

STYLE = {"pass": "green", "fail": "bold red", "refused": "yellow", "skipped": "dim"}


def check(names: list[str], fmt: str = "table", every: bool = False, seed: int = 0, threads: int = 1) -> int:
    """Check every component or task ``names`` names (or every registered one, ``every``); returns 1
    if a contract failed, else 0. Raises AblateError: no name and no ``--all``, both, or a name that
    names nothing."""
    if every and names:
        raise AblateError(f"--all checks every registered component and task; drop {' '.join(names)} (or --all)")
    if not every and not names:
        raise AblateError(
            "name a component or task to check, e.g. ablate check position=rope or ablate check task=copy; --all checks every registered one"
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
