"""Which component or task ``ablate check NAME`` means.

``KEY=NAME`` with a config key (``model.position=rope``) or its last part (``position=rope``), ``task=copy``, or a
bare name (``rope``) that exactly one family holds. Any name registered, built-in or added at run time, is checkable.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import harness.modules as m
from harness.errors import AblateError
from harness.registry import Registry, UnknownNameError, did_you_mean
from harness.tasks import TASKS

TASK_KEY = "task"


@dataclass(frozen=True)
class Family:
    """A component family as the config names it."""

    key: str  # the config key: model.position
    field: str  # the TransformerConfig field it sets, also its short key
    registry: Registry[Any]
    # other fields of the model a member is checked in (only kernel math writes a mask fill)
    host: tuple[tuple[str, Any], ...] = ()

    @property
    def default(self) -> str:
        """The family's default entry: the config's default (``sinusoidal``, ``sdpa``, ...)."""
        return {f.name: f.default for f in dataclasses.fields(m.TransformerConfig)}[self.field]


FAMILIES: tuple[Family, ...] = (
    Family("model.position", "position", m.POSITIONAL),
    Family("attention.kernel", "kernel", m.KERNELS),
    Family("attention.qkv", "qkv", m.QKV),
    Family("attention.scale", "scale", m.SCALES),
    Family("attention.mask_fill", "mask_fill", m.MASK_FILLS, host=(("kernel", "math"),)),
    Family("attention.head_split", "head_split", m.HEAD_SPLITS),
    Family("block.norm", "norm", m.NORMS),
    Family("block.norm_position", "norm_position", m.BLOCKS),
    Family("ffn.activation", "activation", m.ACTIVATIONS),
    Family("model.init", "init", m.INITS),
)
"""Every component family, by config key, in the order ``ablate check --all`` checks them."""


@dataclass(frozen=True)
class Target:
    """One thing to check: ``family`` is None for a task."""

    family: Family | None
    name: str

    @property
    def label(self) -> str:
        """``KEY=NAME`` with the family's full config key, or ``task=NAME``: ``model.position=rope``, ``task=copy``."""
        return f"{self.family.key if self.family else TASK_KEY}={self.name}"


def resolve(text: str) -> Target:
    """The target ``text`` names.

    Raises:
        AblateError: an unknown key or name (with the closest ones), a bare name that several
            families hold (with the ``KEY=NAME`` spellings to choose from), or an empty name.
    """
    key, sep, name = (part.strip() for part in text.partition("="))
    if not sep:  # a bare name
        if not key:
            raise AblateError("ablate check: name a component or task, e.g. position=rope or task=copy")
        found = [Target(fam, fam.registry.canonical(key)) for fam in FAMILIES if key in fam.registry]
        if key in TASKS:
            found.append(Target(None, TASKS.canonical(key)))
        if len(found) == 1:
            return found[0]
        if found:
            raise AblateError(
                f"ablate check {key}: {key!r} is registered in several families; "
                f"name one: {' or '.join(t.label for t in found)}"
            )
        every = [t.name for t in everything()]
        raise AblateError(
            f"ablate check {key}: no component or task is registered as {key!r}{did_you_mean(key, every)}; "
            "name one as KEY=NAME (e.g. position=rope, task=copy) or see ablate list"
        )
    keys: dict[str, Family | None] = {TASK_KEY: None} | {k: fam for fam in FAMILIES for k in (fam.key, fam.field)}
    if key not in keys:
        raise AblateError(
            f"ablate check {text}: unknown component family {key!r}{did_you_mean(key, list(keys))}; "
            f"use one of: {', '.join(k for k in keys if '.' in k or k == TASK_KEY)}"
        )
    family = keys[key]
    registry = family.registry if family else TASKS
    try:
        return Target(family, registry.canonical(name))
    except UnknownNameError as exc:  # its message has the closest names and every name
        raise AblateError(f"ablate check {text}: {exc}") from None


def everything() -> list[Target]:
    """Every registered component of every family, then every task (``ablate check --all``)."""
    out = [Target(fam, name) for fam in FAMILIES for name in fam.registry.names()]
    return out + [Target(None, name) for name in TASKS.names()]
