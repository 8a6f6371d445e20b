"""The steps of loading one plugin (:mod:`harness.experiment.plugins`): import its module or file
with every failure turned into one line naming it, see and check what its import registered, undo
that when it fails, and name the code it came from (distribution and version, or path and sha256)."""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata as md
import importlib.util
import re
import sys
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness.errors import AblateError
from harness.experiment.families import families
from harness.registry import NameTakenError

GROUP = "ablate.plugins"
"""The entry-point group installed plugins declare."""


@dataclass(frozen=True)
class PluginRef:
    """How a plugin was named, enough to load it again in another process.

    Attributes:
        kind: ``entry point`` (``target``: its name in :data:`GROUP`), ``module`` (a module
            name) or ``file`` (an absolute path to a ``.py`` file).
        target: see ``kind``.
        named_by: where it was named, for messages: ``--plugin``, the ablation file's name
            (its ``plugins:``) or ``entry point``; not part of its identity.
        distribution: an entry point's distribution (``""``: none); with ``target``, its
            identity, since two distributions may declare entry points of one name.
    """

    kind: Literal["entry point", "module", "file"]
    target: str
    named_by: str = field(default="", compare=False)
    distribution: str = ""

    def describe(self) -> str:
        """The plugin as it was named: ``--plugin my_pkg.extra``, ``plugins: extra.py (in study.yaml)``,
        ``entry point 'x' in ablate.plugins`` (the distribution is its plugin's package)."""
        if self.kind == "entry point":
            return f"entry point {self.target!r} in {GROUP}"
        if self.named_by == "--plugin":
            return f"--plugin {self.target}"
        return f"plugins: {self.target}" + (f" (in {self.named_by})" if self.named_by else "")


@dataclass(frozen=True)
class Plugin:
    """A loaded plugin.

    Attributes:
        ref: how it was named.
        module: the module imported (for a file, the name it was imported under).
        distribution: the installed distribution that provides the module, if any.
        version: that distribution's version.
        path: the module's file, or its top-level package's folder.
        sha256: of that file, or of the package's ``.py`` files (:func:`code_hash`), when no
            distribution version says which code it is.
        entries: ``(family key, name)`` of every entry it registered, family by family.
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

    def as_record(self) -> dict[str, Any]:
        """The run record's entry (``record.json``: ``plugins``)."""
        out: dict[str, Any] = {
            "distribution": self.distribution,
            "version": self.version,
            "module": self.module,
            "entries": [f"{family}:{name}" for family, name in self.entries],
        }
        if self.distribution is None:
            out.update(path=self.path, sha256=self.sha256)
        return out


def import_plugin(ref: PluginRef, module_name: str, where: str) -> Any:
    """Import the plugin's module, turning every failure into one line naming the plugin."""
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
        raise AblateError(f"{where}: {raised(exc)}; install what it imports, or fix the plugin") from None
    except Exception as exc:  # noqa: BLE001  any error of the plugin's own code: one line naming it
        raise AblateError(f"{where}: {raised(exc)}; fix the plugin") from None


def raised(exc: BaseException) -> str:
    """``importing it raised NameError: ... (extra.py, line 3)``: the innermost frame of the plugin."""
    frames = traceback.extract_tb(exc.__traceback__)
    if isinstance(exc, SyntaxError) and exc.filename:
        at = f" ({Path(exc.filename).name}, line {exc.lineno})"
    else:
        frame = next((f for f in reversed(frames) if "importlib" not in f.filename), None)
        at = f" ({Path(frame.filename).name}, line {frame.lineno})" if frame else ""
    message = str(exc).splitlines()[0] if str(exc) else ""
    return f"importing it raised {type(exc).__name__}: {message}{at}"


def added_since(before: dict[str, set[str]]) -> dict[str, list[str]]:
    return {f.key: [n for n in f.registry.names() if n not in before[f.key]] for f in families()}


def check_added(added: dict[str, list[str]], where: str) -> None:
    for fam in families():
        for name in added[fam.key]:
            if (problem := fam.problem(fam.registry.get(name))) is not None:
                raise AblateError(f"{where}: {fam.registry.family} {name!r} {problem}")


def undo(added: dict[str, list[str]], module_name: str) -> None:
    for fam in families():
        for name in added[fam.key]:
            fam.registry.unregister(name)
    drop_module(module_name)


def drop_module(module_name: str) -> None:
    for name in [m for m in sys.modules if m == module_name or m.startswith(module_name + ".")]:
        del sys.modules[name]


def file_module_name(path: Path) -> str:
    """A module name for a plugin file, unique per path: ``ablate_plugin_<stem>_<8 hex>``."""
    stem = re.sub(r"\W", "_", path.stem)
    return f"ablate_plugin_{stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"


def distribution_of(module_name: str) -> tuple[str | None, str | None]:
    """The installed distribution that provides the top-level package of ``module_name``."""
    top = module_name.split(".")[0]
    names = md.packages_distributions().get(top) or []
    if not names:
        return None, None
    try:
        return names[0], md.version(names[0])
    except md.PackageNotFoundError:
        return names[0], None


def code_hash(module: Any) -> tuple[str | None, str | None]:
    """``(path, sha256)`` of a module's code: its file, or for a package its folder and every
    ``.py`` file below it (relative path and bytes, in sorted order); None where it has no file."""
    folders = list(getattr(module, "__path__", []) or [])
    if folders:
        root = Path(folders[0])
        files = sorted(root.rglob("*.py"))
    elif getattr(module, "__file__", None):
        root = Path(module.__file__)
        files = [root]
    else:
        return None, None
    digest = hashlib.sha256()
    try:
        for f in files:
            digest.update(str(f.relative_to(root) if folders else f.name).encode() + b"\0" + f.read_bytes() + b"\0")
    except OSError:
        return str(root), None
    return str(root), digest.hexdigest()


def clash(
    exc: NameTakenError, ref: PluginRef, module_name: str, added: dict[str, list[str]], others: Iterable[Plugin]
) -> str:
    """What a plugin's name clashes with (a built-in entry, one of the ``others`` loaded plugins', its
    own), and the fix."""
    fam = next(f for f in families() if f.registry.family == exc.family)

    def holds(entries: Iterable[tuple[str, str]]) -> bool:
        return any(k == fam.key and exc.name in (n, *fam.registry.aliases(n)) for k, n in entries)

    what = f"{exc.family} {exc.name!r}"
    if holds((fam.key, n) for n in added[fam.key]):
        return f"{what} is registered twice by this plugin; register each name (and alias) once"
    owner = next((p for p in others if holds(p.entries)), None)
    if owner is not None:
        return (
            f"{what} is already registered by plugin {owner.package} ({owner.ref.describe()}); "
            f"rename one of the two, or uninstall one plugin"
        )
    prefix = Path(ref.target).stem if ref.kind == "file" else module_name.split(".")[0]
    return (
        f"{what} is already registered by ablate (built in); register yours under another name, "
        f"e.g. {re.sub(r'[^A-Za-z0-9_]', '_', prefix) + '_' + exc.name!r}"
    )
