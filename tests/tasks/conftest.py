"""Shared fixtures for task tests: no test touches the network or the user's cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.corpus import corpus_dir


@pytest.fixture(autouse=True)
def _private_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Point the download cache at an empty temp dir (tests/conftest.py makes every download fail)."""
    monkeypatch.setenv("ABLATE_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def shakespeare_dir() -> Path:
    """The folder holding a verified ``tinyshakespeare.txt``, found as ablate finds it; skips if absent."""
    return corpus_dir()


@pytest.fixture(scope="session")
def shakespeare_head(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 100,000 characters of Tiny Shakespeare (ASCII) as a file: a corpus for the
    ``text`` task that trains a BPE in about a second; skips without the data."""
    path = tmp_path_factory.mktemp("corpus") / "head.txt"
    path.write_bytes((corpus_dir() / "tinyshakespeare.txt").read_bytes()[:100_000])
    return path
