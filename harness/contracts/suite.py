"""One entry point for ``ablate check`` and the tests: :func:`check` a target by name."""

from __future__ import annotations

from pathlib import Path

from harness.contracts import cost
from harness.contracts.components import check_component
from harness.contracts.result import CheckReport
from harness.contracts.targets import Target, resolve
from harness.contracts.tasks import check_task


def check(
    target: Target | str, seed: int = 0, lengths: tuple[int, ...] | None = cost.LENGTHS, data_dir: Path | None = None
) -> CheckReport:
    """Every contract of ``target`` (or the name ``ablate check`` takes), with the weights, tokens
    and data of ``seed``; ``lengths``: of a component's ``time and memory`` (None leaves it out);
    ``data_dir``: where a file-backed task looks for its data first.

    Raises:
        AblateError: a name that names nothing (:func:`harness.contracts.targets.resolve`).
    """
    target = resolve(target) if isinstance(target, str) else target
    if target.family is None:
        return check_task(target.name, seed, data_dir)
    return check_component(target.family, target.name, seed, lengths)
