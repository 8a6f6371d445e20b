"""The controls of the harness (docs/statistics.md, "Controls before verdicts"): a known bug an
ablation declares (``control:``), and the published results of ``reproductions.yaml`` beside this
module (its header says each field); checked and evaluated in :mod:`harness.analysis.guards`."""

from __future__ import annotations

import functools
import importlib.resources
from collections.abc import Collection
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.errors import AblateError
from harness.experiment import metrics
from harness.experiment.claims import guards_problem
from harness.experiment.declaration import load_yaml
from harness.registry import did_you_mean

REGISTRY = "reproductions.yaml"


class Control(BaseModel):
    """``kind: negative``: a known bug (e.g. a wrong head split) that the harness must catch, i.e.
    judge ``expect`` (``worse``, adjusted p < 0.05) on a task's primary metric. The reports index
    shows each such ablation as ``caught`` or ``not caught``. ``guards``: the claims whose verdicts
    are withheld while the control is not caught in ``profile`` (a confirmatory profile): a harness
    that cannot see a known bug on a task cannot be trusted with smaller differences on it."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["negative"] = Field(description="negative: a variant carries a known bug")
    expect: Literal["better", "worse"] = Field("worse", description="the verdict the control variant must get")
    variant: str | None = Field(
        None, description="the grid point (label) that carries the bug; default: every point but the baseline"
    )

    guards: list[str] = Field(
        default_factory=list, description="claims (ids of claims.yaml) withheld while the control is not caught"
    )
    profile: str = Field("confirm", description="the confirmatory profile whose runs say whether it was caught")

    def check(
        self, labels: list[str], baseline: str, claims: Collection[str], confirmatory: dict[str, bool], own: list[str]
    ) -> None:
        """ValueError (for pydantic) unless ``variant`` is a grid label but the baseline, ``guards`` claims
        (once) not the ablation's ``own``, ``profile`` a confirmatory one."""
        others = [x for x in labels if x != baseline]
        if self.variant is not None and self.variant not in others:
            raise ValueError(
                f"control.variant {self.variant!r} is "
                + ("the baseline" if self.variant == baseline else "not a point of the grid")
                + f"; the bug must be another point{did_you_mean(self.variant, others)}; other points: {others}"
            )
        if not self.guards:
            return
        if problem := guards_problem(self.guards, claims, "control.guards"):
            raise ValueError(problem)
        if mine := [c for c in self.guards if c in own]:
            raise ValueError(
                f"control.guards: {mine[0]!r} is a claim of this ablation, whose verdict is the control's own "
                "outcome; a control guards the claims of other ablations"
            )
        confirm = [name for name, yes in confirmatory.items() if yes]
        if self.profile not in confirm:
            raise ValueError(
                f"control.profile {self.profile!r} is not a confirmatory profile of this ablation"
                + (did_you_mean(self.profile, confirm) if confirm else "")
                + f"; its guards need one to say whether it was caught; confirmatory profiles: {confirm or 'none'}"
            )


class Comparison(metrics.KnownMetric):
    model_config = ConfigDict(extra="forbid")
    ablation: str
    profile: str
    task: str
    variant: str
    reference: str
    expect: Literal["better", "worse", "equivalent"]
    margin: float | None = Field(None, gt=0)
    reference_min: float | None = None


class Reproduction(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    paper: str = Field(min_length=1)
    source: str = Field(min_length=1)
    setting: str = Field(min_length=1)
    result: str = Field(min_length=1)
    expected: str = Field(min_length=1)
    differences: str = Field(min_length=1)
    comparisons: list[Comparison] = Field(min_length=1)
    guards: list[str] = Field(default_factory=list)
    guards_why: str | None = None


def parse(data: object) -> list[Reproduction]:
    if not isinstance(data, list) or not data:
        raise AblateError(f"{REGISTRY}: expected a non-empty list of reproduction entries")
    out: dict[str, Reproduction] = {}
    for i, raw in enumerate(data):
        name = raw.get("id", f"#{i + 1}") if isinstance(raw, dict) else f"#{i + 1}"
        try:
            entry = Reproduction.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(x) for x in err["loc"]) or "(entry)"
            raise AblateError(f"{REGISTRY}: entry {name!r}, field {loc}: {err['msg']}") from None
        if entry.id in out:
            raise AblateError(f"{REGISTRY}: entry {entry.id!r}, field id: repeated; each id must appear once")
        out[entry.id] = entry
    return list(out.values())


@functools.cache
def load_registry() -> tuple[Reproduction, ...]:
    text = importlib.resources.files("harness.experiment").joinpath(REGISTRY).read_text()
    try:
        return tuple(parse(load_yaml(text)))
    except yaml.YAMLError as exc:
        raise AblateError(f"{REGISTRY}: not valid YAML ({' '.join(str(exc).split())})") from None
