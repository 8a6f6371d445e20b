"""The registries of the model's component families, one :class:`harness.registry.Registry` each.

They are defined here, below every component, so that :class:`harness.modules.config.TransformerConfig`
can check the names it holds without importing the components; each component module registers
its entries into them (and re-exports its own). Entries are classes built from a
``TransformerConfig`` (``POSITIONAL``, ``KERNELS``, ``BLOCKS``), classes built from a few sizes
(``QKV``, ``HEAD_SPLITS``, ``NORMS``, ``ACTIVATIONS``) or functions (``SCALES``: (C, H) -> factor
on ``q k^T``; ``MASK_FILLS``: dtype -> fill value; ``INITS``: initialises one ``nn.Linear`` in place).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from harness.registry import Registry

POSITIONAL: Registry[type[nn.Module]] = Registry("positional encoding")
KERNELS: Registry[type[nn.Module]] = Registry("attention kernel")
MASK_FILLS: Registry[Callable[[torch.dtype], float]] = Registry("mask fill")
QKV: Registry[type[nn.Module]] = Registry("q/k/v projection")
SCALES: Registry[Callable[[int, int], float]] = Registry("attention scale")
HEAD_SPLITS: Registry[type] = Registry("head split")
NORMS: Registry[type[nn.Module]] = Registry("norm")
ACTIVATIONS: Registry[type[nn.Module]] = Registry("activation")
BLOCKS: Registry[type[nn.Module]] = Registry("block (norm position)")
INITS: Registry[Callable[[nn.Linear], None]] = Registry("initialisation")
