"""No line of the code is wider than ruff's ``line-length`` (pyproject.toml), URLs included: ruff's
E501 lets a line that ends in a URL through, and a reader's editor does not."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[1]
WIDTH = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["line-length"]


def test_no_line_is_wider_than_ruffs_line_length() -> None:
    wide = [
        f"{path.relative_to(ROOT)}:{number} ({len(line)} columns)"
        for folder in ("harness", "tasks", "tests", "benchmarks")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if "fixtures" not in path.relative_to(ROOT).parts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if len(line) > WIDTH
    ]
    assert not wide, f"lines over {WIDTH} columns: {wide}"
