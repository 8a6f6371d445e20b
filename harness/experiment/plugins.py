"""The registries a plugin may add to (:func:`families`) and the plugin loader (docs/extending.md).

The loader takes entry points of :data:`GROUP`, ``--plugin`` and ``plugins:``, loaded once per process before any
declaration is validated; a plugin that fails is an AblateError naming it and the fix.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata as md
import importlib.util
import os
import re
import sys
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from harness.errors import AblateError
from harness.registry import NameTakenError

if TYPE_CHECKING:
    from harness.modules import ComponentFamily

GROUP = "ablate.plugins"
AUTOLOAD_OFF = "ABLATE_DISABLE_PLUGIN_AUTOLOAD"
"""Set to 1 to start without the installed plugins (``--plugin`` and ``plugins:`` still load)."""

_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@cache
def families() -> tuple[ComponentFamily, ...]:
    """Every component family (:data:`harness.modules.COMPONENT_FAMILIES`) and the task registry, with its base."""
    from harness import modules
    from harness.tasks import TASKS, Task

    return (*modules.COMPONENT_FAMILIES, modules.ComponentFamily("task", None, TASKS, Task))


@dataclass(frozen=True)
class PluginRef:
    """How a plugin was named, enough to load it again in another process.

    ``target`` is an entry point's name in :data:`GROUP`, a module name or an absolute ``.py`` path; ``named_by``:
    where.
    """

    kind: Literal["entry point", "module", "file"]
    target: str
    named_by: str = field(default="", compare=False)
    distribution: str = ""

    def describe(self) -> str:
        """How the plugin was named, in words for messages: ``--plugin x``, ``plugins: x (in FILE)`` or an entry point.

        An entry point reads ``entry point 'x' in ablate.plugins``; ``(in FILE)``: the file that named it, where known.
        """
        if self.kind == "entry point":
            return f"entry point {self.target!r} in {GROUP}"
        if self.named_by == "--plugin":
            return f"--plugin {self.target}"
        return f"plugins: {self.target}" + (f" (in {self.named_by})" if self.named_by else "")


@dataclass(frozen=True)
class Plugin:
    """A loaded plugin: the ``module`` imported, and the distribution or the code it comes from.

    The ``distribution`` and ``version`` that provide it, else the ``path`` and ``sha256`` of its code; ``entries``:
    ``(family key, name)`` it registered.
    """

    ref: PluginRef
    module: str
    distribution: str | None
    version: str | None
    path: str | None
    sha256: str | None
    entries: tuple[tuple[str, str], ...]

    @property
    def package(self) -> str:
        """What its entries are marked with: ``distribution version``, else the file or module."""
        if self.distribution:
            return f"{self.distribution} {self.version}"
        if self.ref.kind == "file":
            return f"{Path(self.ref.target).name} (sha256 {self.sha256[:12] if self.sha256 else '?'})"
        return self.module


_LOADED: dict[PluginRef, Plugin] = {}


def loaded() -> tuple[Plugin, ...]:
    """The plugins this process has loaded, in load order (one named twice, once)."""
    return tuple(dict.fromkeys(_LOADED.values()))


def refs() -> tuple[PluginRef, ...]:
    """Every way a plugin this process has loaded was named, in load order (a plugin named twice: both)."""
    return tuple(_LOADED)


def record() -> list[dict[str, Any]]:
    """The run record's ``plugins`` (``record.json``)."""
    return [
        {
            "distribution": p.distribution,
            "version": p.version,
            "module": p.module,
            "entries": [f"{family}:{name}" for family, name in p.entries],
            **({"path": p.path, "sha256": p.sha256} if p.distribution is None else {}),
        }
        for p in loaded()
    ]


def origin(family: str, name: str) -> Plugin | None:
    """The plugin that registered ``name`` in the family ``family`` (its key); None for a built-in."""
    return next((p for p in _LOADED.values() if (family, name) in p.entries), None)


def load_for_command(specs: Sequence[str] = ()) -> list[Plugin]:
    """The installed plugins (unless :data:`AUTOLOAD_OFF`), then each ``--plugin`` value."""
    out = load_refs(discovered()) if os.environ.get(AUTOLOAD_OFF, "") in ("", "0") else []
    return out + load_specs(specs, named_by="--plugin")


def load_specs(specs: Iterable[str], named_by: str, base: Path | None = None) -> list[Plugin]:
    """Plugins named by module name or ``.py`` path (relative to ``base``, default the working folder)."""
    return load_refs(parse(spec, named_by, base) for spec in specs)


def load_declared(specs: Any, path: Path) -> list[Plugin]:
    """An ablation file's ``plugins:``, loaded before it is validated (its axes may name their entries)."""
    if specs is not None and not (isinstance(specs, list) and all(isinstance(s, str) and s.strip() for s in specs)):
        raise AblateError(
            f"ablation file {path}: plugins must be a list of module names or .py paths, got {specs!r}; "
            f"e.g. plugins: [my_pkg.ablate_plugin, extra.py]"
        )
    return load_specs(specs or [], named_by=path.name, base=path.parent)


def parse(spec: str, named_by: str, base: Path | None = None) -> PluginRef:
    """The :class:`PluginRef` of ``spec``, a ``.py`` path or a module name, that ``named_by`` names.

    A spec ending in ``.py`` or holding a path separator is a file, resolved against ``base`` (default: the working
    folder) when relative.

    Raises:
        AblateError: ``spec`` is neither a module name nor a path to a ``.py`` file.
    """
    text = spec.strip()
    if text.endswith(".py") or "/" in text or os.sep in text:  # an absolute path ignores base
        return PluginRef("file", str((Path(base or "") / Path(text).expanduser()).resolve()), named_by)
    if not _MODULE_NAME.match(text):
        raise AblateError(
            f"{PluginRef('module', repr(spec), named_by).describe()}: not a module name "
            f"(e.g. my_pkg.ablate_plugin) nor a path to a .py file"
        )
    return PluginRef("module", text, named_by)


def discovered() -> list[PluginRef]:
    """The entry points of :data:`GROUP`; two distributions' entry points importing one module are refused."""
    eps = sorted(md.entry_points(group=GROUP), key=lambda e: (e.name, _distribution(e)))
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
    """Load each plugin of ``plugin_refs``, in order; one loaded before in this process is returned as it was.

    Raises:
        AblateError: naming the plugin and the fix, when it is not installed here, cannot be imported, or registers
            a name already taken or an entry of the wrong kind; what it registered is removed again.
    """
    return [_load(ref) for ref in plugin_refs]


def _load(ref: PluginRef) -> Plugin:
    if ref in _LOADED:
        return _LOADED[ref]
    where = ref.describe()
    dist = version = None
    if ref.kind == "entry point":
        eps = md.entry_points(group=GROUP)
        ep = next((e for e in eps if e.name == ref.target and _distribution(e) == ref.distribution), None)
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
    else:  # a name unique per path
        stem = re.sub(r"\W", "_", Path(ref.target).stem)
        module_name = f"ablate_plugin_{stem}_{hashlib.sha256(str(Path(ref.target)).encode()).hexdigest()[:8]}"
    if same := next((p for p in _LOADED.values() if p.module == module_name), None):  # named twice: loaded once
        _LOADED[ref] = same
        return same
    before = {(f.key, n) for f in families() for n in f.registry.names()}

    def added() -> list[tuple[ComponentFamily, str]]:
        return [(f, n) for f in families() for n in f.registry.names() if (f.key, n) not in before]

    try:
        module = _import(ref, module_name, where)
        new = added()
        for fam, name in new:
            if (problem := fam.problem(fam.registry.get(name))) is not None:
                raise AblateError(f"{where}: {fam.registry.family} {name!r} {problem}")
    except BaseException as exc:
        new = added()
        message = f"{where}: {_clash(exc, ref, module_name, new)}" if isinstance(exc, NameTakenError) else None
        for fam, name in new:
            fam.registry.unregister(name)
        drop_module(module_name)
        if message is None:
            raise
        raise AblateError(message) from None
    if dist is None and (names := md.packages_distributions().get(module_name.split(".")[0])):
        dist, version = names[0], md.version(names[0])
    path, digest = _code_hash(sys.modules[module_name.split(".")[0]] if ref.kind != "file" else module)
    entries = tuple((f.key, name) for f, name in new)
    _LOADED[ref] = Plugin(ref, module_name, dist, version, path, digest if dist is None else None, entries)
    return _LOADED[ref]


def drop_module(module_name: str) -> None:
    """``module_name`` and its submodules out of ``sys.modules``: a later import runs it afresh."""
    for name in [m for m in sys.modules if m == module_name or m.startswith(module_name + ".")]:
        del sys.modules[name]


def _distribution(ep: md.EntryPoint) -> str:
    return ep.dist.name if ep.dist is not None else ""


def _import(ref: PluginRef, module_name: str, where: str) -> Any:
    try:
        if ref.kind != "file":
            return importlib.import_module(module_name)
        path = Path(ref.target)
        if not path.is_file():
            raise AblateError(f"{where}: no such file; pass an existing .py file or an importable module")
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[module_name] = module  # before it runs: its classes must pickle to workers
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        return module
    except (AblateError, NameTakenError):
        raise
    except ModuleNotFoundError as exc:
        if ref.kind == "module" and exc.name is not None and (module_name + ".").startswith(exc.name + "."):
            raise AblateError(
                f"{where}: no module named {exc.name!r}; install the package that provides it "
                f"(e.g. pip install -e ./my_plugin) or pass the path to a .py file"
            ) from None
        raise AblateError(f"{where}: {_raised(exc)}; install what it imports, or fix the plugin") from None
    except Exception as exc:  # noqa: BLE001  any error of the plugin's own code: one line naming it
        raise AblateError(f"{where}: {_raised(exc)}; fix the plugin") from None


def _raised(exc: BaseException) -> str:
    """``importing it raised NameError: ... (extra.py, line 3)``: the innermost frame of the plugin."""
    if isinstance(exc, SyntaxError) and exc.filename:
        at = f" ({Path(exc.filename).name}, line {exc.lineno})"
    else:
        frames = traceback.extract_tb(exc.__traceback__)
        frame = next((f for f in reversed(frames) if "importlib" not in f.filename), None)
        at = f" ({Path(frame.filename).name}, line {frame.lineno})" if frame else ""
    message = str(exc).splitlines()[0] if str(exc) else ""
    return f"importing it raised {type(exc).__name__}: {message}{at}"


def _code_hash(module: Any) -> tuple[str, str | None]:
    """``(path, sha256)`` of a module's file, or of a package's folder's ``.py`` files (names and bytes)."""
    folders = list(getattr(module, "__path__", []))
    root = Path(folders[0] if folders else module.__file__)
    digest = hashlib.sha256()
    try:
        for f in sorted(root.rglob("*.py")) if folders else [root]:
            digest.update(str(f.relative_to(root) if folders else f.name).encode() + b"\0" + f.read_bytes() + b"\0")
    except OSError:
        return str(root), None
    return str(root), digest.hexdigest()


def _clash(exc: NameTakenError, ref: PluginRef, module_name: str, added: list[tuple[ComponentFamily, str]]) -> str:
    """What a plugin's name clashes with (its own, another plugin's, a built-in entry), and the fix."""
    fam = next(f for f in families() if f.registry.family == exc.family)

    def holds(entries: Iterable[tuple[str, str]]) -> bool:
        return any(k == fam.key and exc.name in (n, *fam.registry.aliases(n)) for k, n in entries)

    what = f"{exc.family} {exc.name!r}"
    if holds((f.key, n) for f, n in added):
        return f"{what} is registered twice by this plugin; register each name (and alias) once"
    if (owner := next((p for p in loaded() if holds(p.entries)), None)) is not None:
        return (
            f"{what} is already registered by plugin {owner.package} ({owner.ref.describe()}); "
            f"rename one of the two, or uninstall one plugin"
        )
    prefix = Path(ref.target).stem if ref.kind == "file" else module_name.split(".")[0]
    return (
        f"{what} is already registered by ablate (built in); register yours under another name, "
        f"e.g. {re.sub(r'[^A-Za-z0-9_]', '_', prefix) + '_' + exc.name!r}"
    )
