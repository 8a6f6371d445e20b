"""One registry class, one instance per component family: short, permanent, lower_snake names
(``model.position=rope``), each with a code version that enters the id of every run using it
(:mod:`harness.experiment.versions`). Pattern of EleutherAI/lm-evaluation-harness ``api/registry.py``.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    import torch
    from torch import nn

T = TypeVar("T")


class UnknownNameError(KeyError, ValueError):
    """Raised for a name that no entry of a registry carries; the message suggests close names."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0])


class NameTakenError(ValueError):
    """Raised by :meth:`Registry.register` for a name or alias of the ``family`` already taken."""

    def __init__(self, family: str, name: str) -> None:
        super().__init__(f"{family} {name!r} is already registered")
        self.family = family
        self.name = name


def did_you_mean(name: str, choices: list[str] | tuple[str, ...]) -> str:
    """Return ``" (did you mean 'x'?)"`` for the closest of ``choices``, or ``""``; case is ignored
    in the matching (``ALiBi`` finds ``alibi``), never in the names suggested."""
    folded = {c.casefold(): c for c in reversed(choices)}  # the first spelling of each
    close = [folded[c] for c in difflib.get_close_matches(name.casefold(), list(folded), n=2, cutoff=0.6)]
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


class Registry(Generic[T]):
    """Maps names (and aliases) to objects, usually classes, registered with ``@REG.register(name)``;
    ``family`` names them in messages.

    ``builtins`` declares the project's own entries, ``{name: version}``, implemented by
    ``@REG.builtin(name)`` in the module ``home``, which the first :meth:`get` imports: names and
    versions are known without importing it (planning a grid computes run ids without torch).
    """

    def __init__(self, family: str, builtins: dict[str, int] | None = None, home: str | None = None) -> None:
        self.family = family
        self._entries: dict[str, T] = {}
        self._aliases: dict[str, str] = {}
        self._versions: dict[str, int] = dict(builtins or {})
        self._builtins = frozenset(self._versions)
        self._home = home

    def register(self, name: str, *, aliases: tuple[str, ...] = (), version: int = 1) -> Callable[[T], T]:
        """Decorator that registers an object under ``name`` (and ``aliases``), with its code
        ``version``: bump it when its output on a given input changes (tests/modules/test_fingerprints.py).
        Raises :class:`NameTakenError` for a name already taken, ``ValueError`` for a version below 1.
        """
        if not isinstance(version, int) or version < 1:
            raise ValueError(f"{self.family} {name!r}: version must be an int >= 1, got {version!r}")

        def deco(obj: T) -> T:
            for key in (name, *aliases):
                if key in self._versions or key in self._aliases:
                    raise NameTakenError(self.family, key)
            self._entries[name] = obj
            self._versions[name] = version
            for alias in aliases:
                self._aliases[alias] = name
            return obj

        return deco

    def builtin(self, name: str) -> Callable[[T], T]:
        """Decorator that implements the declared built-in entry ``name`` (its version is declared
        with it); ``ValueError`` for a name not declared or implemented twice."""

        def deco(obj: T) -> T:
            if name not in self._builtins or name in self._entries:
                raise ValueError(f"{self.family} {name!r}: not a declared built-in, or implemented twice")
            self._entries[name] = obj
            return obj

        return deco

    def unregister(self, name: str) -> None:
        """Remove the entry ``name`` (not an alias) with its aliases and version (how the plugin
        loader undoes a plugin that failed its checks); :class:`UnknownNameError` if none."""
        if name not in self._entries or name in self._builtins:
            raise UnknownNameError(f"no {self.family} is registered as {name!r}")
        del self._entries[name], self._versions[name]
        for alias in [a for a, target in self._aliases.items() if target == name]:
            del self._aliases[alias]

    def aliases(self, name: str) -> list[str]:
        """The aliases of the entry ``name`` (or of the entry an alias names)."""
        target = self.canonical(name)
        return [a for a, t in self._aliases.items() if t == target]

    def canonical(self, name: str) -> str:
        """The registered name for ``name`` or one of its aliases; :class:`UnknownNameError`
        (listing close matches and all names) otherwise."""
        if name in self._versions:
            return name
        if name in self._aliases:
            return self._aliases[name]
        raise UnknownNameError(
            f"unknown {self.family} {name!r}{did_you_mean(name, self.names() + list(self._aliases))}; choose one of: {', '.join(self.names())}"
        )

    def get(self, name: str) -> T:
        """The object registered as ``name`` (or an alias); imports ``home`` for a built-in."""
        name = self.canonical(name)
        if name not in self._entries and self._home:
            importlib.import_module(self._home)
        return self._entries[name]

    def version(self, name: str) -> int:
        """The code version of ``name`` (or an alias)."""
        return self._versions[self.canonical(name)]

    def names(self) -> list[str]:
        """Registered names, built-ins first, in declaration order (aliases excluded)."""
        return list(self._versions)

    def __contains__(self, name: object) -> bool:
        return name in self._versions or name in self._aliases

    def __repr__(self) -> str:
        return f"Registry({self.family!r}, {self.names()})"


# The built-in entries and their code versions (harness/experiment/versions.py says when to bump one);
# each is implemented by ``@REG.builtin(name)`` in harness/modules/, imported on the first ``get``.
_HOME = "harness.modules"
POSITIONAL: Registry[type[nn.Module]] = Registry(
    "positional encoding",
    # rope 2: angles in float64 (were float32: cos/sin off by up to 7e-5)
    {"sinusoidal": 1, "learned": 1, "learned_clamp": 1, "rope": 2, "alibi": 1, "nope": 1},
    _HOME,
)
KERNELS: Registry[type[nn.Module]] = Registry(
    "attention kernel", dict.fromkeys(("math", "sdpa", "flash", "linear"), 1), _HOME
)
MASK_FILLS: Registry[Callable[[torch.dtype], float]] = Registry(
    "mask fill", dict.fromkeys(("-inf", "-1e9", "-1e4", "dtype_min"), 1), _HOME
)
QKV: Registry[type[nn.Module]] = Registry("q/k/v projection", dict.fromkeys(("separate", "fused", "shared"), 1), _HOME)
SCALES: Registry[Callable[[int, int], float]] = Registry(
    "attention scale", dict.fromkeys(("d_head", "d_model"), 1), _HOME
)
HEAD_SPLITS: Registry[type] = Registry("head split", dict.fromkeys(("correct", "transpose_missing"), 1), _HOME)
NORMS: Registry[type[nn.Module]] = Registry("norm", dict.fromkeys(("layernorm", "rmsnorm", "none"), 1), _HOME)
ACTIVATIONS: Registry[type[nn.Module]] = Registry("activation", dict.fromkeys(("relu", "gelu", "swiglu"), 1), _HOME)
BLOCKS: Registry[type[nn.Module]] = Registry("block (norm position)", dict.fromkeys(("pre", "post"), 1), _HOME)
INITS: Registry[Callable[[nn.Linear], None]] = Registry(
    "initialisation", dict.fromkeys(("normal_0.02", "xavier"), 1), _HOME
)
