"""The public API for plugins: everything a plugin imports from ablate, and the only module it
should import (every other module of the harness may change without notice).

A plugin is a module whose import registers components or tasks with the registries below
(docs/extending.md walks through writing one). ``ablate`` loads it from an entry point in the group
``ablate.plugins``, from ``--plugin MODULE|PATH.py`` or from an ablation file's ``plugins:`` list
(:mod:`harness.experiment.plugins`), checks that each entry subclasses its family's base class and
that no name clashes with a built-in one or another plugin's, and records the plugin's distribution
and version in every run record.

Example:
    >>> from harness.plugin import POSITIONAL, PositionalEncoding
    >>> @POSITIONAL.register("my_nope")  # doctest: +SKIP
    ... class MyNoPE(PositionalEncoding):
    ...     '''No positional information (every hook is the identity).'''

Registries (``register(name, *, aliases=(), version=1)``: bump ``version`` whenever the entry's
output on a given input changes; versions above 1 enter the run ids), one per config key:

==========================  =================  ==========================================
config key                  registry           an entry is
==========================  =================  ==========================================
``model.position``          ``POSITIONAL``     a :class:`PositionalEncoding` subclass
``attention.kernel``        ``KERNELS``        an :class:`AttentionKernel` subclass
``attention.qkv``           ``QKV``            an ``nn.Module`` class ``(d_model, bias)``
``attention.scale``         ``SCALES``         a function ``(d_model, n_heads) -> float``
``attention.mask_fill``     ``MASK_FILLS``     a function ``(dtype) -> float``
``attention.head_split``    ``HEAD_SPLITS``    a :class:`HeadSplit` subclass
``block.norm``              ``NORMS``          an ``nn.Module`` class ``(d_model)``
``block.norm_position``     ``BLOCKS``         a :class:`Block` subclass
``ffn.activation``          ``ACTIVATIONS``    an ``nn.Module`` class ``()``
``model.init``              ``INITS``          a function ``(nn.Linear) -> None`` (in place)
a task name                 ``TASKS``          a :class:`Task` subclass with a ``Params``
==========================  =================  ==========================================

The metrics table, :data:`METRICS` (:mod:`harness.experiment.metrics`: a task of kind
``synthetic`` is scored with ``acc``, ``exact`` and ``loss`` at every evaluation length, ``lm`` with
``loss`` and ``ppl``, any other kind with ``loss``): read it; do not change it.
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
