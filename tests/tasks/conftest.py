"""Shared fixtures for task tests: no test touches the network or the user's cache."""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path

import pytest

DEFAULT_DATA_DIR = Path("/work/shared/data")


@pytest.fixture(autouse=True)
def _offline_and_private_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Point the download cache at an empty temp dir and make every download fail."""
    monkeypatch.setenv("ABLATE_CACHE_DIR", str(tmp_path / "cache"))

    def no_network(*args, **kwargs):
        raise urllib.error.URLError("network disabled in tests")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)


@pytest.fixture
def shakespeare_dir() -> Path:
    """Directory holding a verified ``tinyshakespeare.txt`` ($ABLATE_DATA_DIR); skips if absent."""
    data_dir = Path(os.environ.get("ABLATE_DATA_DIR") or DEFAULT_DATA_DIR)
    if not (data_dir / "tinyshakespeare.txt").is_file():
        pytest.skip(f"no tinyshakespeare.txt in {data_dir}; set ABLATE_DATA_DIR")
    return data_dir


@pytest.fixture(scope="session")
def shakespeare_head(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 100,000 characters of Tiny Shakespeare (ASCII) as a file: a corpus for the
    ``text`` task that trains a BPE in about a second; skips without the data."""
    source = Path(os.environ.get("ABLATE_DATA_DIR") or DEFAULT_DATA_DIR) / "tinyshakespeare.txt"
    if not source.is_file():
        pytest.skip(f"no {source}; set ABLATE_DATA_DIR")
    path = tmp_path_factory.mktemp("corpus") / "head.txt"
    path.write_bytes(source.read_bytes()[:100_000])
    return path
