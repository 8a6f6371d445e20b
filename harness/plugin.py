"""The public API for plugins: everything a plugin imports from ablate, and the only module it
should import (every other module of the harness may change without notice).

A plugin is a module whose import registers components or tasks with the registries below, one
per config key (the table, and how to write one: docs/extending.md); ``register(name, *,
aliases=(), version=1)``: bump ``version`` whenever the entry's output on a given input changes.
``ablate`` loads it from an entry point in the group ``ablate.plugins``, ``--plugin MODULE|PATH.py``
or an ablation file's ``plugins:`` (:mod:`harness.experiment.plugins`), checks each entry and
records the plugin's distribution and version in every run record. The metrics table,
:data:`METRICS`: read it; do not change it.
"""

from harness.experiment.metrics import METRICS, Metric
from harness.modules import (
    ACTIVATIONS,
    BLOCKS,
    HEAD_SPLITS,
    INITS,
    KERNELS,
    MASK_FILLS,
    NORMS,
    POSITIONAL,
    QKV,
    SCALES,
    AttentionKernel,
    PositionalEncoding,
    TransformerConfig,
)
from harness.modules.attention import HeadSplit
from harness.modules.transformer import Block
from harness.registry import Registry
from harness.tasks import IGNORE_INDEX, SPLITS, TASKS, DataUnavailableError, Task, TaskParams
from harness.tasks.base import Split

__all__ = [
    "ACTIVATIONS",
    "BLOCKS",
    "HEAD_SPLITS",
    "IGNORE_INDEX",
    "INITS",
    "KERNELS",
    "MASK_FILLS",
    "METRICS",
    "NORMS",
    "POSITIONAL",
    "QKV",
    "SCALES",
    "SPLITS",
    "TASKS",
    "AttentionKernel",
    "Block",
    "DataUnavailableError",
    "HeadSplit",
    "Metric",
    "PositionalEncoding",
    "Registry",
    "Split",
    "Task",
    "TaskParams",
    "TransformerConfig",
]
