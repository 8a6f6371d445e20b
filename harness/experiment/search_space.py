"""Search spaces for ``ablate tune`` (docs/tuning.md): typed ranges over dotted config keys.

They come from :data:`DEFAULT_SPACE` < the ablation's ``tune:`` < the profile's (``null`` removes a key).
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, model_validator

from harness.config import apply_overrides, build_config, check_schedule
from harness.errors import AblateError

Number = StrictInt | StrictFloat


class ParamSpec(BaseModel):
    """One tuned key: ``float`` or ``int`` in ``[low, high]``, or ``categorical`` over ``choices``.

    ``log``: the range is sampled on a log scale.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["float", "int", "categorical"] = Field(description="float or int range, or categorical choices")
    low: Number | None = Field(None, description="the range's lower end (float, int)")
    high: Number | None = Field(None, description="the range's upper end (float, int)")
    log: StrictBool = Field(False, description="sample the range on a log scale (low > 0)")
    choices: list[StrictInt | StrictFloat | StrictStr | StrictBool | None] | None = Field(
        None, description="the values of a categorical parameter"
    )

    @model_validator(mode="after")
    def _consistent(self) -> ParamSpec:
        given = [("low", self.low), ("high", self.high), *(("choice", c) for c in self.choices or [])]
        if bad := [f"{name} {value}" for name, value in given if isinstance(value, float) and not math.isfinite(value)]:
            raise ValueError(f"not a finite number: {', '.join(bad)}; every bound and choice must be one")
        if self.type == "categorical":
            if self.low is not None or self.high is not None or self.log:
                raise ValueError("a categorical parameter takes `choices`, not low/high/log")
            if not self.choices:
                raise ValueError("a categorical parameter needs a non-empty `choices` list")
            if dupes := [c for i, c in enumerate(self.choices) if c in self.choices[:i]]:
                raise ValueError(f"choices repeat {dupes}")
            return self
        if self.choices is not None:
            raise ValueError(f"a {self.type} parameter takes low/high, not `choices` (use type: categorical)")
        if self.low is None or self.high is None:
            raise ValueError(f"a {self.type} parameter needs both `low` and `high`")
        if self.low > self.high:
            raise ValueError(f"low {self.low} > high {self.high}")
        if self.log and self.low <= 0:
            raise ValueError(f"a log range needs low > 0, got low {self.low}")
        if self.type == "int" and not (float(self.low).is_integer() and float(self.high).is_integer()):
            raise ValueError(f"an int parameter needs integer bounds, got [{self.low}, {self.high}]")
        return self

    def candidates(self) -> list[Any]:
        """The choices of a categorical parameter, else the range's ends ``[low, high]`` as its type (int or float)."""
        if self.type == "categorical":
            return list(self.choices or [])
        cast = int if self.type == "int" else float
        return [cast(self.low), cast(self.high)]

    def describe(self) -> str:
        """The parameter for people: ``one of [16, 32, 64]``, ``float in [0.0003, 0.01] (log)``."""
        if self.type == "categorical":
            return f"one of {self.choices}"
        return f"{self.type} in [{self.low:g}, {self.high:g}]{' (log)' if self.log else ''}"


DEFAULT_SPACE: dict[str, ParamSpec] = {
    "train.lr": ParamSpec(type="float", low=3e-4, high=1e-2, log=True),
    "train.warmup_steps": ParamSpec(type="int", low=0, high=300),
    "train.weight_decay": ParamSpec(type="float", low=0.0, high=0.2),
    "model.dropout": ParamSpec(type="float", low=0.0, high=0.2),
    "train.batch_size": ParamSpec(type="categorical", choices=[16, 32, 64]),
}
"""Shared by every ablation unless its declaration overrides a key or removes it with ``null``."""


def resolve_space(abl: Any, profile: str) -> dict[str, ParamSpec]:
    """The search space of one ablation and profile; keys of the default space that are axes are dropped."""
    space = {k: v for k, v in DEFAULT_SPACE.items() if k not in abl.axes}
    for layer in (abl.tune, abl.profiles[profile].tune):
        for path, spec in layer.items():
            if spec is None:
                space.pop(path, None)
            else:
                space[path] = spec
    return space


def within_budget(space: dict[str, ParamSpec], config: Any) -> dict[str, ParamSpec]:
    """``space`` with the default range of ``train.warmup_steps`` capped at ``config.train.steps``."""
    spec, steps = space.get("train.warmup_steps"), config.train.steps
    if spec != DEFAULT_SPACE["train.warmup_steps"] or spec.high <= steps:
        return dict(space)
    return {**space, "train.warmup_steps": spec.model_copy(update={"high": max(steps, spec.low)})}


def check_space(space: dict[str, ParamSpec], config: Any, where: str) -> None:
    """AblateError unless every bound and choice of ``space`` set on ``config`` gives a valid config."""
    data = config.model_dump(mode="json")
    for path, spec in space.items():
        for value in spec.candidates():
            try:
                check_schedule(build_config(apply_overrides(data, {path: value}), where), where)
            except AblateError as exc:
                raise AblateError(f"tune: {path}={value!r} ({spec.describe()}) is not a valid value: {exc}") from None


def suggest(trial: Any, path: str, spec: ParamSpec) -> Any:
    """The value the Optuna ``trial`` suggests for the key ``path``, within ``spec`` (on a log scale if it says so)."""
    if spec.type == "categorical":
        return trial.suggest_categorical(path, spec.candidates())
    return getattr(trial, f"suggest_{spec.type}")(path, *spec.candidates(), log=spec.log)


def distribution(spec: ParamSpec) -> Any:
    """The Optuna distribution of ``spec``: categorical over its choices, else an int or float range (``log`` kept)."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    if spec.type == "categorical":
        return CategoricalDistribution(spec.candidates())
    return (IntDistribution if spec.type == "int" else FloatDistribution)(*spec.candidates(), log=spec.log)
