"""Several ``ablate tune`` worker processes on one SQLite study at once.

The workers are real processes (``python -m harness.cli.app tune ...``) started at the same moment on
a fresh results folder, so creating the schema and the study races and is part of the test.
"""

from __future__ import annotations

from pathlib import Path

from harness.tune.storage import default_storage
from helpers.tune import check_none_lost, run_workers, write_tiny


def test_several_workers_on_one_sqlite_study(tmp_path: Path) -> None:
    path, results = write_tiny(tmp_path), tmp_path / "results"
    logs = run_workers(
        3, ["tune", str(path), "--variant", "position=rope", "--trials", "6", "--results-dir", str(results)], tmp_path
    )
    check_none_lost(default_storage(results), logs, 6, 3)
