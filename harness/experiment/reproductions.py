"""Positive controls: published results the harness should reproduce at CPU scale, as data.

The registry is ``reproductions.yaml`` beside this module: :class:`Reproduction` entries, each
with the comparisons that test it at CPU scale (a variant against a *reference* variant of the same
ablation and profile, which need not be the ablation's baseline). Entries are validated here and
against the ablation declarations: a bad entry is refused with one line naming the entry and the
field. How the comparisons are evaluated: :mod:`harness.analysis.reproductions`; the page:
:mod:`harness.report.reproduce`.
"""

from __future__ import annotations

import functools
import importlib.resources
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.errors import AblateError
from harness.experiment import ablation as ablation_mod
from harness.experiment import claims as claims_mod
from harness.experiment import metrics
from harness.experiment.yaml_files import load_yaml
from harness.registry import did_you_mean

REGISTRY = "reproductions.yaml"


class Comparison(metrics.KnownMetric):
    """One paired comparison that tests a published result, on a ``metric`` of the metrics table (a
    ``higher_is_better`` it restates must agree with the table)."""

    model_config = ConfigDict(extra="forbid")
    ablation: str
    profile: str
    task: str
    variant: str = Field(description="the variant label compared")
    reference: str = Field(description="the variant label it is compared with (any point of the profile's grid)")
    expect: Literal["better", "worse", "equivalent"]
    margin: float | None = Field(
        None, gt=0, description="equivalence margin in metric units (default: the task's sesoi)"
    )
    reference_min: float | None = Field(
        None, description="the reference's mean must reach it (e.g. softmax at its target)"
    )

    def describe(self) -> str:
        return f"{self.ablation} / {self.profile}, {self.task} `{self.metric}`, {self.variant} vs {self.reference}"


class Reproduction(BaseModel):
    """A published result, and the comparisons that test it at CPU scale."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    paper: str = Field(min_length=1)
    source: str = Field(min_length=1, description="the table or figure")
    setting: str = Field(min_length=1, description="the published setting")
    result: str = Field(min_length=1, description="the published result")
    expected: str = Field(min_length=1, description="the direction the harness should see at CPU scale")
    differences: str = Field(min_length=1, description="what differs from the published setting")
    comparisons: list[Comparison] = Field(min_length=1)
    guards: list[str] = Field(
        default_factory=list,
        description=(
            "the claims (ids of claims.yaml) whose verdicts rest on the effect this entry checks: "
            "their verdicts are withheld until it passes"
        ),
    )
    guards_why: str | None = Field(None, description="why these claims and not others (printed on the page)")


def parse(data: Any, where: str = REGISTRY) -> list[Reproduction]:
    """Validate the registry's parsed YAML: a list of entries, each of the schema, ids distinct.

    Raises:
        AblateError: one line naming the entry and the field, for the first bad entry.
    """
    if not isinstance(data, list) or not data:
        raise AblateError(f"{where}: expected a non-empty list of reproduction entries")
    out: list[Reproduction] = []
    for i, raw in enumerate(data):
        name = raw.get("id", f"#{i + 1}") if isinstance(raw, dict) else f"#{i + 1}"
        try:
            entry = Reproduction.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(x) for x in err["loc"]) or "(entry)"
            raise AblateError(f"{where}: entry {name!r}, field {loc}: {err['msg']}") from None
        if entry.id in {e.id for e in out}:
            raise AblateError(f"{where}: entry {entry.id!r}, field id: repeated; each id must appear once")
        out.append(entry)
    return out


def check(entry: Reproduction, where: str = REGISTRY) -> None:
    """Validate ``entry`` against the claims and the ablations it names: each claim it guards is in
    ``claims.yaml`` (once); for each comparison, the ablation is
    registered, the profile exists, the task is in the profile, variant and reference are distinct
    points of its grid, and an equivalence has a margin.

    Raises:
        AblateError: one line naming the entry and the field.
    """
    if problem := claims_mod.guards_problem(entry.guards, claims_mod.load_claims()):
        raise AblateError(f"{where}: entry {entry.id!r}, field {problem}")
    for j, comp in enumerate(entry.comparisons):
        at = f"{where}: entry {entry.id!r}, field comparisons.{j}"
        try:
            abl = ablation_mod.load(comp.ablation)
        except AblateError as exc:
            raise AblateError(f"{at}.ablation: {exc}") from None
        if comp.profile not in abl.profiles:
            raise AblateError(
                f"{at}.profile: {abl.name} has no profile {comp.profile!r}"
                f"{did_you_mean(comp.profile, list(abl.profiles))}"
            )
        view = abl.for_profile(comp.profile)
        if comp.task not in view.tasks:
            raise AblateError(
                f"{at}.task: {comp.task!r} is not a task of {abl.name} / {comp.profile}"
                f"{did_you_mean(comp.task, list(view.tasks))}"
            )
        labels = [view.label(v) for v in view.variants()]
        for key in ("variant", "reference"):
            label = getattr(comp, key)
            if label not in labels:
                raise AblateError(
                    f"{at}.{key}: {label!r} is not a point of the {abl.name} / {comp.profile} grid"
                    f"{did_you_mean(label, labels)}; grid: {labels}"
                )
        if comp.variant == comp.reference:
            raise AblateError(f"{at}.reference: the same as the variant ({comp.variant!r}); nothing is compared")
        if comp.expect == "equivalent" and comp.margin is None and view.tasks[comp.task].primary.sesoi is None:
            raise AblateError(f"{at}.margin: an equivalence needs a margin and the task declares no sesoi")


@functools.cache
def load_registry() -> tuple[Reproduction, ...]:
    """The validated entries of ``harness/experiment/reproductions.yaml``."""
    text = importlib.resources.files("harness.experiment").joinpath(REGISTRY).read_text()
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        raise AblateError(f"{REGISTRY}: not valid YAML ({' '.join(str(exc).split())})") from None
    return tuple(parse(data))


def load_checked(rid: str | None = None) -> list[Reproduction]:
    """The registry's entries (or the one named ``rid``), each checked against its ablations."""
    entries = select(load_registry(), rid)
    for entry in entries:
        check(entry)
    return entries


def select(entries: tuple[Reproduction, ...] | list[Reproduction], rid: str | None) -> list[Reproduction]:
    """Every entry, or the one named ``rid`` (AblateError with the closest id otherwise)."""
    if rid is None:
        return list(entries)
    ids = [e.id for e in entries]
    if rid not in ids:
        raise AblateError(f"no reproduction {rid!r}{did_you_mean(rid, ids)}; reproductions: {', '.join(ids)}")
    return [e for e in entries if e.id == rid]


def guarding(claim: str, entries: tuple[Reproduction, ...] | list[Reproduction] | None = None) -> list[Reproduction]:
    """The entries (default: the registry's) that guard ``claim``, in registry order."""
    return [e for e in (load_registry() if entries is None else entries) if claim in e.guards]
