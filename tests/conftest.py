"""Shared test settings: the corpus found as ablate finds it (tests/helpers/corpus.py), no network,
W&B offline, 1 thread."""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from harness.cli import output
from harness.execution import local as executors
from helpers.corpus import CORPUS_DIR, corpus_dir

# set for the whole session as well as per test (_env): a module- or session-scoped fixture runs
# before any function-scoped one, and would otherwise load the installed plugins for good
os.environ["ABLATE_DISABLE_PLUGIN_AUTOLOAD"] = "1"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The folder holding Tiny Shakespeare; skips, saying how to get it, when there is none."""
    return corpus_dir()


def _no_network(*args, **kwargs):
    raise urllib.error.URLError("network disabled in tests")


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    # the suite does not depend on a `wandb login` of this machine (its .netrc would turn
    # --wandb auto online); tests of a login set HOME and drop NETRC
    monkeypatch.setenv("NETRC", os.devnull)
    # the suite does not depend on which plugins are installed; tests/plugin/ turns discovery on
    monkeypatch.setenv("ABLATE_DISABLE_PLUGIN_AUTOLOAD", "1")
    # the corpus where the session found it (the cache included), so that a test with a private
    # cache still reads it; no test downloads (a test of a download serves its own urlopen)
    if CORPUS_DIR is not None:
        monkeypatch.setenv("ABLATE_DATA_DIR", str(CORPUS_DIR))
    else:
        monkeypatch.delenv("ABLATE_DATA_DIR", raising=False)
    monkeypatch.setattr(urllib.request, "urlopen", _no_network)


@pytest.fixture
def cli_isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """For tests of the real CLI on bad input (``pytestmark = pytest.mark.usefixtures("cli_isolated")``):
    the corpus where the session found it (if anywhere), a private empty cache, no network, an empty working
    directory and a wide console (rich would otherwise truncate run ids in tables)."""
    monkeypatch.setenv("ABLATE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)

    def no_runs(*args, **kwargs):  # should validation regress, fail instead of training
        raise AssertionError("a run was about to start")

    monkeypatch.setattr(executors, "run_grid", no_runs)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(output, "console", Console(highlight=False, width=250))
    return cwd


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return tmp_path / "results"


@pytest.fixture
def register(monkeypatch: pytest.MonkeyPatch):
    """``register(registry, name, obj)``: ``obj`` is registered as ``name`` until the test ends
    (as a plugin would register it: through the registry, in this process)."""

    def add(registry: Any, name: str, obj: Any) -> Any:
        assert name not in registry, name
        monkeypatch.setattr(registry, "_entries", dict(registry._entries))
        monkeypatch.setattr(registry, "_versions", dict(registry._versions))
        return registry.register(name)(obj)

    return add
