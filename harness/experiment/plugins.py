"""Plugins: components and tasks from a user's own package, loaded once per process, before any
declaration or config is validated, and the same way in every process that plans or runs.

A plugin is a Python module whose import registers entries through :mod:`harness.plugin`, the one
public module for plugins (docs/extending.md). Three ways name one:

- an entry point in the group ``ablate.plugins`` of an installed distribution, whose value is the
  module (``[project.entry-points."ablate.plugins"] my_pkg = "my_pkg.ablate_plugin"``), found with
  :mod:`importlib.metadata` by every command that plans or runs (unless the environment sets
  ``ABLATE_DISABLE_PLUGIN_AUTOLOAD=1``);
- ``--plugin MODULE`` or ``--plugin PATH.py`` on the command line (repeatable);
- ``plugins: [MODULE, PATH.py]`` in an ablation file (a relative path is read from the file's folder).

Each plugin is checked as it loads; a failure is an :class:`~harness.errors.AblateError` naming
the plugin and the fix (exit 2, nothing runs), and the entries the plugin had registered leave the
registries again: the module must import; each entry must subclass its family's base class (be a
function, for scales and mask fills); no name or alias may be one a built-in entry or another
plugin holds.

Workers (local pool, Ray, SLURM) load :func:`refs`, the plugins of the process that planned the
grid, with :func:`load_refs` before each run (:func:`harness.execution.attempt.execute`); every run record
lists :func:`record`: each plugin's distribution and version (a file's path and sha256 when no
distribution provides it), so that a result says which code produced it.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from harness.errors import AblateError
from harness.experiment import plugin_loading as loading
from harness.experiment.families import families
from harness.experiment.plugin_loading import GROUP, Plugin, PluginRef
from harness.registry import NameTakenError

AUTOLOAD_OFF = "ABLATE_DISABLE_PLUGIN_AUTOLOAD"
"""Set to 1 to start without the installed plugins (``--plugin`` and ``plugins:`` still load)."""

_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


_LOADED: dict[PluginRef, Plugin] = {}


def loaded() -> tuple[Plugin, ...]:
    """The plugins this process has loaded, in load order (one named twice, once)."""
    return tuple(dict.fromkeys(_LOADED.values()))


def refs() -> tuple[PluginRef, ...]:
    """What a worker loads to have this process's plugins (:func:`load_refs`)."""
    return tuple(_LOADED)


def record() -> list[dict[str, Any]]:
    """The ``plugins`` field of a run record: :meth:`Plugin.as_record` of each loaded plugin."""
    return [p.as_record() for p in loaded()]


def origin(family: str, name: str) -> Plugin | None:
    """The plugin that registered ``name`` in the family ``family`` (its key); None for a built-in."""
    return next((p for p in _LOADED.values() if (family, name) in p.entries), None)


def autoload_enabled() -> bool:
    """False when ``ABLATE_DISABLE_PLUGIN_AUTOLOAD`` is set to anything but ``""`` or ``0``."""
    return os.environ.get(AUTOLOAD_OFF, "") in ("", "0")


def load_for_command(specs: Sequence[str] = ()) -> list[Plugin]:
    """What a command loads first: the installed plugins (entry points, unless autoload is
    off), then each ``--plugin`` value. Loading a plugin twice loads it once.

    Raises:
        AblateError: a plugin that cannot be loaded or fails its checks (see the module docstring).
    """
    out = [load_ref(ref) for ref in discovered()] if autoload_enabled() else []
    return out + load_specs(specs, named_by="--plugin")


def load_specs(specs: Iterable[str], named_by: str, base: Path | None = None) -> list[Plugin]:
    """Load plugins named as on the command line: a module name, or a path ending in ``.py``
    (relative to ``base``, default the working directory).

    Raises:
        AblateError: a value that is neither, or a plugin that cannot be loaded or fails its checks.
    """
    return [load_ref(parse(spec, named_by, base)) for spec in specs]


def load_declared(specs: Any, path: Path) -> list[Plugin]:
    """Load an ablation file's ``plugins:`` (before the file is validated: its axes may name their
    entries); relative paths are relative to the file's folder.

    Raises:
        AblateError: ``plugins:`` that is not a list of module names or ``.py`` paths; as :func:`load_specs`.
    """
    if specs is None:
        return []
    if not isinstance(specs, list) or not all(isinstance(s, str) and s.strip() for s in specs):
        raise AblateError(
            f"ablation file {path}: plugins must be a list of module names or .py paths, got {specs!r}; "
            f"e.g. plugins: [my_pkg.ablate_plugin, extra.py]"
        )
    return load_specs(specs, named_by=path.name, base=path.parent)


def parse(spec: str, named_by: str, base: Path | None = None) -> PluginRef:
    """The :class:`PluginRef` of one ``--plugin`` or ``plugins:`` value.

    Raises:
        AblateError: neither a dotted module name nor a path to a ``.py`` file.
    """
    text = str(spec).strip()
    if text.endswith(".py") or "/" in text or os.sep in text:
        path = Path(text).expanduser()
        path = (Path(base) / path if base is not None and not path.is_absolute() else path).resolve()
        return PluginRef("file", str(path), named_by)
    if not _MODULE_NAME.match(text):
        raise AblateError(
            f"{PluginRef('module', repr(spec), named_by).describe()}: not a module name "
            f"(e.g. my_pkg.ablate_plugin) nor a path to a .py file"
        )
    return PluginRef("module", text, named_by)


def discovered() -> list[PluginRef]:
    """The entry points of :data:`GROUP` in this environment, sorted by name, then distribution.
    An entry point is a distribution's: two distributions that declare the same name are two
    plugins, both loaded (their entries must not clash).

    Raises:
        AblateError: two distributions whose entry points import the same module: only the one
            first on ``sys.path`` could be imported, so which code ran would depend on the path.
    """
    eps = sorted(_entry_points(), key=lambda e: (e.name, _distribution(e)))
    seen: dict[str, md.EntryPoint] = {}
    for ep in eps:
        other = seen.setdefault(ep.module, ep)
        if _distribution(other) != _distribution(ep):
            both = " and ".join(f"{_distribution(e) or '?'} (entry point {e.name!r})" for e in (other, ep))
            raise AblateError(
                f"two distributions declare {GROUP} entry points importing module {ep.module!r}: {both}; "
                f"only the one first on sys.path would load: uninstall one (pip uninstall NAME)"
            )
    return [PluginRef("entry point", ep.name, "entry point", _distribution(ep)) for ep in eps]


def load_refs(plugin_refs: Iterable[PluginRef]) -> list[Plugin]:
    """Load the plugins another process loaded (:func:`refs`): what a worker does before a run.

    Raises:
        AblateError: as :func:`load_ref`; an entry point not installed where this process runs.
    """
    return [load_ref(ref) for ref in plugin_refs]


def load_ref(ref: PluginRef) -> Plugin:
    """Load one plugin unless this process already has (the same entry point, module or file).

    Raises:
        AblateError: it does not import, or fails its checks; its entries are then removed again.
    """
    if ref in _LOADED:
        return _LOADED[ref]
    where = ref.describe()
    dist = version = None
    if ref.kind == "entry point":
        ep = next((e for e in _entry_points() if e.name == ref.target and _distribution(e) == ref.distribution), None)
        if ep is None:
            of = f" of {ref.distribution}" if ref.distribution else ""
            raise AblateError(
                f"{where}{of} is not installed where this process runs ({sys.executable}); "
                f"install the same distribution here"
            )
        dist, version = (ep.dist.name, ep.dist.version) if ep.dist is not None else (None, None)
        where = f"entry point {ep.name!r} of {dist} {version}" if dist else where
        if ep.attr:
            raise AblateError(
                f"{where}: its value {ep.value!r} names an object; an ablate.plugins entry point names "
                f"the module whose import registers the entries: {ep.name} = {ep.module!r}"
            )
        module_name = ep.module
    elif ref.kind == "module":
        module_name = ref.target
    else:
        module_name = loading.file_module_name(Path(ref.target))
    same = next((p for p in _LOADED.values() if p.module == module_name), None)
    if same is not None:  # named twice (an entry point and --plugin): loaded once
        _LOADED[ref] = same
        return same
    before = {f.key: set(f.registry.names()) for f in families()}
    try:
        module = loading.import_plugin(ref, module_name, where)
        added = loading.added_since(before)
        loading.check_added(added, where)
    except NameTakenError as exc:
        added = loading.added_since(before)
        message = f"{where}: {loading.clash(exc, ref, module_name, added, loaded())}"
        loading.undo(added, module_name)
        raise AblateError(message) from None
    except BaseException:
        loading.undo(loading.added_since(before), module_name)
        raise
    if dist is None:
        dist, version = loading.distribution_of(module_name)
    path, digest = loading.code_hash(sys.modules[module_name.split(".")[0]] if ref.kind != "file" else module)
    plugin = Plugin(
        ref=ref,
        module=module_name,
        distribution=dist,
        version=version,
        path=path,
        sha256=digest if dist is None else None,
        entries=tuple((f.key, name) for f in families() for name in added[f.key]),
    )
    _LOADED[ref] = plugin
    return plugin


def _entry_points() -> list[md.EntryPoint]:
    return list(md.entry_points(group=GROUP))


def _distribution(ep: md.EntryPoint) -> str:
    """The name of the distribution that declares ``ep``; ``""`` for one made by hand."""
    return ep.dist.name if ep.dist is not None else ""
