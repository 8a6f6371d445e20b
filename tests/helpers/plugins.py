"""Loading plugins in a test without leaving them behind: :func:`restored` unloads every plugin
the block loaded (:func:`unload`: its entries leave the registries), so later tests see the
built-in registries, and :func:`write_plugin` writes a plugin file."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.experiment import plugins
from harness.experiment.plugins import families


@contextmanager
def restored() -> Iterator[None]:
    """The registries and the loaded plugins as on entry, once the block ends."""
    before = set(map(id, plugins.loaded()))
    try:
        yield
    finally:
        for plugin in plugins.loaded():
            if id(plugin) not in before:
                unload(plugin)


def unload(plugin: plugins.Plugin) -> None:
    """Take ``plugin``'s entries out of the registries, drop its module (and submodules) from
    ``sys.modules`` and forget it: a later load imports it afresh."""
    for key, name in plugin.entries:
        registry = next(f.registry for f in families() if f.key == key)
        if name in registry.names():
            registry.unregister(name)
    plugins.drop_module(plugin.module)
    for ref in [r for r, p in plugins._LOADED.items() if p is plugin]:
        del plugins._LOADED[ref]


def write_plugin(path: Path, body: str) -> Path:
    """A plugin file at ``path`` importing :mod:`harness.plugin`'s names, then ``body`` (dedented)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("from harness.plugin import *  # noqa: F403\n" + textwrap.dedent(body))
    return path
