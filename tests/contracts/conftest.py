"""Fixtures of the contract tests: a component or task registered for one test only."""

from __future__ import annotations

from typing import Any

import pytest

from harness.registry import Registry


@pytest.fixture
def register(monkeypatch: pytest.MonkeyPatch):
    """``register(registry, name, obj)``: ``obj`` is registered as ``name`` until the test ends
    (as a plugin would register it: through the registry, in this process)."""

    def add(registry: Registry[Any], name: str, obj: Any) -> Any:
        assert name not in registry, name
        monkeypatch.setattr(registry, "_entries", dict(registry._entries))
        monkeypatch.setattr(registry, "_versions", dict(registry._versions))
        return registry.register(name)(obj)

    return add
