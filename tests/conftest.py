"""Shared test settings: data from ../shared/data (or $ABLATE_DATA_DIR), W&B offline, 1 thread."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("ABLATE_DATA_DIR") or ROOT.parent / "shared" / "data")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not (DATA_DIR / "tinyshakespeare.txt").exists():
        pytest.skip(f"tinyshakespeare.txt not found in {DATA_DIR}")
    return DATA_DIR


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    if (DATA_DIR / "tinyshakespeare.txt").exists():
        monkeypatch.setenv("ABLATE_DATA_DIR", str(DATA_DIR))
