"""Tasks, registered by name in :data:`TASKS`; each is versioned and follows :class:`Task`.

The built-in ones: docs/tasks.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.registry import Registry, UnknownNameError
from harness.tasks.base import IGNORE_INDEX, SPLITS, DataUnavailableError, Task, TaskParams

TASKS: Registry[type[Task]] = Registry("task")

# Imported for their registration side effect; they import TASKS from here.
from harness.tasks import copy  # isort: skip
from harness.tasks import associative_recall  # isort: skip
from harness.tasks import tinyshakespeare  # isort: skip
from harness.tasks import padded  # isort: skip
from harness.tasks import text  # isort: skip
from harness.tasks.tinyshakespeare import DataChecksumError  # isort: skip


def build_task(
    name: str, params: Mapping[str, Any] | None = None, data_dir: Path | str | None = None, near: Path | None = None
) -> Task:
    """The task registered as ``name`` (or an alias), built with ``params``.

    Args:
        name: The task's registered name or an alias.
        params: The task's params (``None``: the defaults).
        data_dir: The directory of data files.
        near: The folder of the ablation file that names it.

    Raises:
        UnknownNameError: For no such task (suggesting the closest names).
        ValueError: For invalid or unknown params, naming the field.
    """
    return TASKS.get(name)(params, data_dir=data_dir, near=near)
