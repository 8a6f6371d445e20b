"""An ablation that is a control of the harness (``control:`` in its declaration,
:class:`harness.experiment.ablation.Ablation`): a negative control is a known bug the harness must
catch. Whether it did is :func:`harness.analysis.claims.control_outcomes`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.registry import did_you_mean


class Control(BaseModel):
    """``kind: negative``: a known bug (e.g. a wrong head split) that the harness must catch, i.e.
    judge ``expect`` (``worse``, adjusted p < 0.05) on a task's primary metric. The reports index
    shows each such ablation as ``caught`` or ``not caught``."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["negative"]
    expect: Literal["better", "worse"] = Field("worse", description="the verdict the control variant must get")
    variant: str | None = Field(
        None, description="the grid point (label) that carries the bug; default: every point but the baseline"
    )

    def check(self, labels: list[str], baseline: str) -> None:
        """Raises ValueError (for pydantic) unless ``variant`` is a grid label other than ``baseline``."""
        if self.variant is not None and (self.variant not in labels or self.variant == baseline):
            raise ValueError(
                f"control.variant {self.variant!r} is not a point of the grid other than the baseline"
                f"{did_you_mean(self.variant, labels)}; grid: {labels}"
            )
