"""The public API for plugins: everything a plugin imports from ablate, and the only module it should import.

Every other module of the harness may change without notice. A plugin is a module whose import registers components
or tasks with the registries below (docs/extending.md); ``register(name, *, aliases=(), version=1)``: bump ``version``
whenever the entry's output on a given input changes. The metrics table, :data:`METRICS`: read it; do not change it.
"""

from harness.experiment.metrics import METRICS, Metric  # noqa: F401
from harness.modules import (  # noqa: F401
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
from harness.modules.attention import HeadSplit  # noqa: F401
from harness.modules.transformer import Block  # noqa: F401
from harness.registry import Registry  # noqa: F401
from harness.tasks import IGNORE_INDEX, SPLITS, TASKS, DataUnavailableError, Task, TaskParams  # noqa: F401
from harness.tasks.base import Chance, Split  # noqa: F401

__all__ = sorted(name for name in dir() if not name.startswith("_"))  # every name imported above
