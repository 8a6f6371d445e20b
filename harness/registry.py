"""One registry class, one instance per component family.

Entries have short, permanent, lower_snake names (``model.position=rope``), each with a code version that enters the
id of every run using it (:mod:`harness.experiment.versions`). Pattern of EleutherAI/lm-evaluation-harness
``api/registry.py``.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

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
    """Return ``" (did you mean 'x'?)"`` for the closest of ``choices``, or ``""``.

    Case is ignored in the matching (``ALiBi`` finds ``alibi``), never in the names suggested.
    """
    folded = {c.casefold(): c for c in reversed(choices)}  # the first spelling of each
    close = [folded[c] for c in difflib.get_close_matches(name.casefold(), list(folded), n=2, cutoff=0.6)]
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


class Registry(Generic[T]):
    """Maps names (and aliases) to objects, registered with ``@REG.register(name)``.

    Args:
        family: what messages call an entry (``positional encoding``).
        builtins: the project's own entries, ``{name: version}``, implemented by ``@REG.builtin(name)`` in the
            module ``home``.
        home: the module of the built-ins, which the first :meth:`get` imports (run ids need no torch).
    """

    def __init__(self, family: str, builtins: dict[str, int] | None = None, home: str | None = None) -> None:
        self.family = family
        self._entries: dict[str, T] = {}
        self._aliases: dict[str, str] = {}
        self._versions: dict[str, int] = dict(builtins or {})
        self._builtins = frozenset(self._versions)
        self._home = home

    def register(self, name: str, *, aliases: tuple[str, ...] = (), version: int = 1) -> Callable[[T], T]:
        """Decorator that registers an object under ``name`` (and ``aliases``) at code ``version``.

        Raises:
            NameTakenError: for a name already taken (when the decorator is applied).
            ValueError: for a version below 1.
        """
        if not isinstance(version, int) or version < 1:
            raise ValueError(f"{self.family} {name!r}: version must be an int >= 1, got {version!r}")

        def deco(obj: T) -> T:
            for key in (name, *aliases):
                if key in self:
                    raise NameTakenError(self.family, key)
            self._entries[name] = obj
            self._versions[name] = version
            for alias in aliases:
                self._aliases[alias] = name
            return obj

        return deco

    def builtin(self, name: str) -> Callable[[T], T]:
        """Decorator that implements the declared built-in entry ``name``; ValueError if undeclared or twice."""

        def deco(obj: T) -> T:
            if name not in self._builtins or name in self._entries:
                raise ValueError(f"{self.family} {name!r}: not a declared built-in, or implemented twice")
            self._entries[name] = obj
            return obj

        return deco

    def unregister(self, name: str) -> None:
        """Remove the entry ``name`` with its aliases and version (a plugin that failed its checks)."""
        if name not in self._entries or name in self._builtins:
            raise UnknownNameError(f"no {self.family} is registered as {name!r}")
        del self._entries[name], self._versions[name]
        for alias in [a for a, target in self._aliases.items() if target == name]:
            del self._aliases[alias]

    def aliases(self, name: str) -> list[str]:
        """The aliases of the entry ``name`` (or of the entry that the alias ``name`` stands for).

        Raises:
            UnknownNameError: no entry carries ``name``.
        """
        target = self.canonical(name)
        return [a for a, t in self._aliases.items() if t == target]

    def canonical(self, name: str) -> str:
        """The registered name for ``name`` or one of its aliases; else :class:`UnknownNameError`."""
        if name in self._versions:
            return name
        if name in self._aliases:
            return self._aliases[name]
        raise UnknownNameError(
            f"unknown {self.family} {name!r}{did_you_mean(name, self.names() + list(self._aliases))}; "
            f"choose one of: {', '.join(self.names())}"
        )

    def get(self, name: str) -> T:
        """The object registered as ``name`` (or an alias); imports ``home`` for a built-in."""
        name = self.canonical(name)
        if name not in self._entries and self._home:
            importlib.import_module(self._home)
        return self._entries[name]

    def version(self, name: str) -> int:
        """The code version of the entry ``name`` (or an alias): it enters the id of every run using it.

        Raises:
            UnknownNameError: no entry carries ``name``.
        """
        return self._versions[self.canonical(name)]

    def names(self) -> list[str]:
        """Every registered name, no aliases: the declared built-ins first, then the others as registered."""
        return list(self._versions)

    def __contains__(self, name: object) -> bool:
        return name in self._versions or name in self._aliases

    def __repr__(self) -> str:
        return f"Registry({self.family!r}, {self.names()})"


# The built-in entries and their code versions (harness/experiment/versions.py says when to bump one);
# each is implemented by ``@REG.builtin(name)`` in harness/modules/, imported on the first ``get``.
def _builtins(family: str, *names: str, **versions: int) -> Registry[Any]:
    return Registry(family, {name: versions.get(name, 1) for name in names}, "harness.modules")


# rope 2: angles in float64 (in float32, cos/sin are off by up to 7e-5)
POSITIONAL: Registry[type[nn.Module]] = _builtins(
    "positional encoding", "sinusoidal", "learned", "learned_clamp", "rope", "alibi", "nope", "learned_n01", rope=2
)
KERNELS: Registry[type[nn.Module]] = _builtins("attention kernel", "math", "sdpa", "flash", "linear", "additive_mask")
MASK_FILLS: Registry[Callable[[torch.dtype], float]] = _builtins("mask fill", "-inf", "-1e9", "-1e4", "dtype_min")
QKV: Registry[type[nn.Module]] = _builtins("q/k/v projection", "separate", "fused", "shared")
SCALES: Registry[Callable[[int, int], float]] = _builtins("attention scale", "d_head", "d_model")
HEAD_SPLITS: Registry[type] = _builtins("head split", "correct", "transpose_missing", "split_no_transpose")
NORMS: Registry[type[nn.Module]] = _builtins("norm", "layernorm", "rmsnorm", "none")
ACTIVATIONS: Registry[type[nn.Module]] = _builtins("activation", "relu", "gelu", "swiglu")
BLOCKS: Registry[type[nn.Module]] = _builtins("block (norm position)", "pre", "post")
INITS: Registry[Callable[[nn.Linear], None]] = _builtins("initialisation", "normal_0.02", "xavier")
