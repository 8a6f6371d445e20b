"""Tasks, registered by name in :data:`TASKS`; each is versioned and follows :class:`Task`.

Example:
    >>> import numpy as np
    >>> task = build_task("copy", {"n_symbols": 8})
    >>> inputs, targets = task.sample(4, 16, np.random.default_rng(0), split="train")
    >>> inputs.shape, targets.shape
    (torch.Size([4, 16]), torch.Size([4, 16]))
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


def build_task(name: str, params: Mapping[str, Any] | None = None, data_dir: Path | str | None = None) -> Task:
    """Instantiate the task registered as ``name``.

    Args:
        name: a registered task name or alias.
        params: task parameters; ``None`` means the defaults.
        data_dir: directory with data files, for tasks that read files.

    Raises:
        UnknownNameError: no such task; the message suggests the closest names.
        ValueError: invalid or unknown params; the message names the field.
    """
    cls = TASKS.get(name)
    return cls(params, data_dir=Path(data_dir) if data_dir is not None else None)


__all__ = [
    "IGNORE_INDEX",
    "SPLITS",
    "TASKS",
    "DataChecksumError",
    "DataUnavailableError",
    "Task",
    "TaskParams",
    "UnknownNameError",
    "build_task",
]
