"""Read commands write nothing into the store they read: ``ablate report`` without W&B credentials
logs no offline summary run there unless asked (``--wandb offline``)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from harness.execution.locks import LEASE
from helpers.cli import assert_refused, invoke
from helpers.fake_store import write_decl, write_runs


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


@pytest.mark.usefixtures("cli_isolated")
def test_report_writes_nothing_into_the_store_it_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no `wandb login` entry either
    decl = write_decl(tmp_path / "decl", cpu={"seeds": [0, 1, 2]})
    results = tmp_path / "results"
    write_runs(results, decl, "cpu", lambda variant, seed: 0.5 + 0.01 * seed)
    before = _tree(results)
    out = invoke("report", str(decl), "--results-dir", str(results), "--out", str(tmp_path / "reports"))
    assert out.exit_code == 0, out.output
    assert _tree(results) == before
    assert (tmp_path / "reports" / "mini.md").is_file()


@pytest.mark.usefixtures("cli_isolated")
def test_report_of_a_store_whose_only_run_is_in_flight_says_so_and_writes_nothing(tmp_path: Path) -> None:
    decl = write_decl(tmp_path / "decl", cpu={"seeds": [0]})
    results = tmp_path / "results"
    folder = results / "mini" / "cpu" / "0123456789ab"
    folder.mkdir(parents=True)
    lease = {"owner": "bob@here:1", "host": socket.gethostname(), "pid": os.getppid(), "pid_start": None}
    (folder / LEASE).write_text(json.dumps(lease | {"leased_at": "2026-01-01T00:00:00+00:00", "token": "t"}))
    reports = tmp_path / "reports"
    err = assert_refused(
        invoke("report", str(decl), "--results-dir", str(results), "--out", str(reports)),
        "no run of mini / cpu",
        "has finished yet: 1 in flight (e.g. 0123456789ab, leased by bob@here:1",
        "ablate status",
    )
    assert not reports.exists(), err
