"""A bound on a metric: a task's gate (runs below it did not learn) and its convergence target (``steps_to_target``).

One type from the declaration that sets it (``tasks.TASK.gate``, ``tasks.TASK.target``; docs/ablation-files.md) through
training, which notes the first validation pass that meets it, to the run record that keeps it. Whether a bound can be
reached is the declaration's check (:func:`harness.experiment.declaration.check_reachable`): it needs the metrics table.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Threshold(BaseModel):
    """A bound on a metric: ``min`` (value must be >= min) or ``max`` (<= max), exactly one."""

    model_config = ConfigDict(extra="forbid")

    metric: str = Field(description="a metric name (acc@x1), or a per-length metric's bare name at L (acc)")
    min: float | None = Field(
        None, allow_inf_nan=False, description="met when the value is >= min (a higher-is-better metric)"
    )
    max: float | None = Field(
        None, allow_inf_nan=False, description="met when the value is <= max (a lower-is-better metric)"
    )

    @model_validator(mode="after")
    def _one_bound(self) -> Threshold:
        """Exactly one bound: with none, every run would meet it at once."""
        if (self.min is None) == (self.max is None):
            raise ValueError(
                f"{self.metric}: give exactly one bound, min (the value must be >= min) or max (<= max); "
                f"{'both are given' if self.min is not None else 'none is given, so every run would meet it at once'}"
            )
        return self

    def passes(self, value: float | None) -> bool:
        """Whether ``value`` meets the bound; a missing or NaN value never does."""
        if value is None or value != value:  # missing or NaN
            return False
        return (self.min is None or value >= self.min) and (self.max is None or value <= self.max)

    def describe(self) -> str:
        """The bound for people: ``acc@x1 >= 0.9`` or ``loss@x1 <= 1.5``."""
        return f"{self.metric} >= {self.min:g}" if self.min is not None else f"{self.metric} <= {self.max:g}"
