"""The component families and the task registry: every registry a run config or a plugin names, with
the class its entries must subclass (the plugin loader checks them; ``ablate list`` lists them)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from harness.registry import Registry


@dataclass(frozen=True)
class Family:
    """A registry a plugin may add to."""

    key: str  # the short name (``position``: ``ablate check position=NAME``, a run record's ``entries``)
    config_key: str | None  # the run-config key that selects an entry (``model.position``); None for tasks
    registry: Registry[Any]
    base: type | None  # the class every entry must subclass; None where entries are functions

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


@cache
def families() -> tuple[Family, ...]:
    """Every registry of components (:mod:`harness.modules`) and the task registry, with its base."""
    from torch import nn

    from harness import modules
    from harness.tasks import TASKS, Task

    return (
        Family("position", "model.position", modules.POSITIONAL, modules.PositionalEncoding),
        Family("kernel", "attention.kernel", modules.KERNELS, modules.AttentionKernel),
        Family("qkv", "attention.qkv", modules.QKV, nn.Module),
        Family("scale", "attention.scale", modules.SCALES, None),
        Family("mask_fill", "attention.mask_fill", modules.MASK_FILLS, None),
        Family("head_split", "attention.head_split", modules.HEAD_SPLITS, modules.attention.HeadSplit),
        Family("norm", "block.norm", modules.NORMS, nn.Module),
        Family("norm_position", "block.norm_position", modules.BLOCKS, modules.transformer.Block),
        Family("activation", "ffn.activation", modules.ACTIVATIONS, nn.Module),
        Family("init", "model.init", modules.INITS, None),
        Family("task", None, TASKS, Task),
    )
