"""Which component or task ``ablate check NAME`` means.

``KEY=NAME`` with a config key (``model.position=rope``) or its last part (``position=rope``), ``task=copy``, or a
bare name (``rope``) that exactly one family holds. Any name registered, built-in or added at run time, is checkable.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import AblateError
from harness.modules import COMPONENT_FAMILIES, ComponentFamily
from harness.registry import UnknownNameError, did_you_mean
from harness.tasks import TASKS

TASK_KEY = "task"


@dataclass(frozen=True)
class CheckTarget:
    """One component or task that ``ablate check`` checks: ``family`` is None for a task."""

    family: ComponentFamily | None
    name: str

    @property
    def label(self) -> str:
        """``KEY=NAME`` with the family's full config key, or ``task=NAME``: ``model.position=rope``, ``task=copy``."""
        return f"{self.family.config_key if self.family else TASK_KEY}={self.name}"


def resolve(text: str) -> CheckTarget:
    """The target ``text`` names.

    Raises:
        AblateError: an unknown key or name (with the closest ones), a bare name that several
            families hold (with the ``KEY=NAME`` spellings to choose from), or an empty name.
    """
    key, sep, name = (part.strip() for part in text.partition("="))
    if not sep:  # a bare name
        if not key:
            raise AblateError("ablate check: name a component or task, e.g. position=rope or task=copy")
        found = [CheckTarget(fam, fam.registry.canonical(key)) for fam in COMPONENT_FAMILIES if key in fam.registry]
        if key in TASKS:
            found.append(CheckTarget(None, TASKS.canonical(key)))
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
    keys: dict[str, ComponentFamily | None] = {TASK_KEY: None}
    keys |= {k: fam for fam in COMPONENT_FAMILIES for k in (fam.config_key, fam.key)}
    if key not in keys:
        raise AblateError(
            f"ablate check {text}: unknown component family {key!r}{did_you_mean(key, list(keys))}; "
            f"use one of: {', '.join(k for k in keys if '.' in k or k == TASK_KEY)}"
        )
    family = keys[key]
    registry = family.registry if family else TASKS
    try:
        return CheckTarget(family, registry.canonical(name))
    except UnknownNameError as exc:  # its message has the closest names and every name
        raise AblateError(f"ablate check {text}: {exc}") from None


def everything() -> list[CheckTarget]:
    """Every registered component of every family, then every task (``ablate check --all``)."""
    out = [CheckTarget(fam, name) for fam in COMPONENT_FAMILIES for name in fam.registry.names()]
    return out + [CheckTarget(None, name) for name in TASKS.names()]
