"""The component families: each registry of components, the config key that selects an entry, and what an entry is.

One description serves ``ablate check`` (:mod:`harness.contracts.targets`), which checks an entry in a small model,
and the plugin loader (:func:`harness.experiment.plugins.families`), which checks what a plugin adds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import nn

from harness.modules.attention import HEAD_SPLITS, KERNELS, QKV, SCALES, HeadSplit
from harness.modules.config import TransformerConfig
from harness.modules.kernels import MASK_FILLS, AttentionKernel
from harness.modules.positional import POSITIONAL, PositionalEncoding
from harness.modules.transformer import ACTIVATIONS, BLOCKS, INITS, NORMS, Block
from harness.registry import Registry


@dataclass(frozen=True)
class ComponentFamily:
    """A registry of interchangeable entries: its short key, the config key that selects one, and what one is.

    Every component family is in :data:`COMPONENT_FAMILIES`; the task registry is described the same way where a
    plugin may add to it (:func:`harness.experiment.plugins.families`).
    """

    key: str  # the short name and TransformerConfig field (``position``: ``ablate check position=NAME``, ``entries``)
    config_key: str | None  # the run-config key that selects an entry (``model.position``); None for tasks
    registry: Registry[Any]
    base: type | None  # the class every entry must subclass; None where entries are functions
    # other fields of the model a member is checked in (only kernel math writes a mask fill)
    host: tuple[tuple[str, Any], ...] = ()

    @property
    def default(self) -> str:
        """The family's default entry: the config's default (``sinusoidal``, ``sdpa``, ...)."""
        return getattr(TransformerConfig, self.key)

    def problem(self, obj: Any) -> str | None:
        """Why ``obj`` cannot be an entry of this family (with the fix), or None."""
        what = f"the class {obj.__name__}" if isinstance(obj, type) else f"a {type(obj).__name__}"
        if self.base is None:
            if isinstance(obj, type) or not callable(obj):
                return f"is {what}, not a function; register a function (as the built-in {self.key}s are)"
        elif not (isinstance(obj, type) and issubclass(obj, self.base)):
            name = self.base.__name__
            return f"is {what}, not a subclass of {name}; derive it from harness.plugin.{name}"
        return None


COMPONENT_FAMILIES: tuple[ComponentFamily, ...] = (
    ComponentFamily("position", "model.position", POSITIONAL, PositionalEncoding),
    ComponentFamily("kernel", "attention.kernel", KERNELS, AttentionKernel),
    ComponentFamily("qkv", "attention.qkv", QKV, nn.Module),
    ComponentFamily("scale", "attention.scale", SCALES, None),
    ComponentFamily("mask_fill", "attention.mask_fill", MASK_FILLS, None, host=(("kernel", "math"),)),
    ComponentFamily("head_split", "attention.head_split", HEAD_SPLITS, HeadSplit),
    ComponentFamily("norm", "block.norm", NORMS, nn.Module),
    ComponentFamily("norm_position", "block.norm_position", BLOCKS, Block),
    ComponentFamily("activation", "ffn.activation", ACTIVATIONS, nn.Module),
    ComponentFamily("init", "model.init", INITS, None),
)
"""Every component family, in the order ``ablate check --all`` checks them and ``ablate list`` lists them."""
