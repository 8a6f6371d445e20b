"""The parts of an ablation declaration below the :class:`~harness.experiment.ablation.Ablation`, and YAML reading.

The parts: docs/ablation-files.md. The reading of a user's YAML files: YAML 1.2 (:mod:`harness.yaml12`, as editors
read them) with a key given twice refused, every failure one line naming the file, the place and the fix.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator, model_validator

from harness.bounds import INT_MAX
from harness.errors import AblateError
from harness.experiment import metrics
from harness.experiment.search_space import ParamSpec
from harness.registry import did_you_mean
from harness.threshold import Threshold
from harness.tuned import TUNED
from harness.yaml12 import YAMLError, load_yaml

SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
"""An ablation, profile or task name: a folder or file name of the store and of a report, so no path
separator, no leading dot, and no ``+`` (``ablate run --tuned`` stores profile P's runs as ``P+tuned``)."""


def check_name(kind: str, name: str) -> str:
    """``name`` when it is a :data:`SAFE_NAME`, else ValueError saying why (``kind``: what it names)."""
    if SAFE_NAME.fullmatch(name):
        return name
    why = (
        f"'+' is reserved: `ablate run --tuned` stores a profile P's tuned runs as P{TUNED}"
        if "+" in name
        else "it becomes a folder of the store (RESULTS/<ablation>/<profile>/) and of a report's file names"
    )
    raise ValueError(
        f"{kind} name {name!r} is not allowed: {why}; use ASCII letters and digits, '_', '.' and '-', "
        f"starting with a letter or a digit"
    )


def repeated(items: Iterable[Any]) -> list[Any]:
    """The items that appear more than once in ``items``, each once, sorted."""
    return sorted(item for item, n in Counter(items).items() if n > 1)


NAME_MAX = 255
"""The longest file name, in bytes, that common file systems hold (ext4, XFS, APFS, NTFS: 255)."""


def check_file_names(ablation: str, names: list[str]) -> None:
    """Check that no file name the ablation ``ablation`` makes (``names``) is over :data:`NAME_MAX` bytes.

    Raises:
        ValueError: when the longest of ``names`` is over, saying by how much to shorten the names it is made of.
    """
    longest = max(names, key=lambda n: len(n.encode()), default="")
    if (over := len(longest.encode()) - NAME_MAX) > 0:
        raise ValueError(
            f"ablation name {ablation if len(ablation) <= 40 else ablation[:40] + '...'!r} "
            f"({len(ablation.encode())} bytes) makes file names of up to "
            f"{len(longest.encode())} bytes (e.g. {longest[:30]}...{longest[-30:]}), over the {NAME_MAX} a file "
            f"system holds; shorten the ablation name (or its longest profile or task name) by at least {over} "
            "bytes"
        )


class Decl(BaseModel):
    """Base of every part of a declaration: a key it does not declare is an error."""

    model_config = ConfigDict(extra="forbid")


class MetricSpec(Decl, metrics.NamedMetric):
    """The primary metric of a task and its smallest effect of interest.

    Its direction is the metrics table's (:mod:`harness.experiment.metrics`), which ``higher_is_better`` may restate.
    """

    sesoi: float = Field(gt=0, description="smallest effect of interest, in the metric's units")

    @model_validator(mode="after")
    def _sesoi_within_range(self) -> MetricSpec:
        """A sesoi no two runs can differ by (5 on an accuracy) makes every comparison ``equivalent``."""
        metric = metrics.lookup(self.metric)
        if metric is not None and metric.best is not None and metric.floor is not None:
            span = abs(metric.best - metric.floor)
            if self.sesoi >= span:
                raise ValueError(
                    f"sesoi {self.sesoi:g} is not below the range of {self.metric}, which lies in "
                    f"[{min(metric.best, metric.floor):g}, {max(metric.best, metric.floor):g}]: every difference "
                    f"would be within it; give the smallest difference that matters, e.g. sesoi: {span * 0.05:g}"
                )
        return self


def check_reachable(threshold: Threshold | None) -> Threshold | None:
    """``threshold`` when its bound is on its metric's better side, reachable, and not met by every run.

    Raises:
        ValueError: a bound on the worse side, above the metric's best value or at or below its lowest
            (:attr:`~harness.experiment.metrics.Metric.best`, :attr:`~harness.experiment.metrics.Metric.floor`).
    """
    if threshold is None:
        return None
    metric = metrics.of_bound(threshold.metric)
    if metric is None:  # an unknown name: the grid's checks name it with what the task produces
        return threshold
    side, bound = ("min", threshold.min) if threshold.min is not None else ("max", threshold.max)
    wanted = "min" if metric.higher_is_better else "max"
    if side != wanted:
        raise ValueError(
            f"{threshold.metric} is {'higher' if metric.higher_is_better else 'lower'}-is-better, so its bound is "
            f"a {wanted}; {side}: {bound:g} would be met by a run that did not learn"
        )
    if metric.best is not None and bound > metric.best:
        raise ValueError(
            f"{threshold.metric} min: {bound:g} cannot be reached: the best value of {metric.name} is {metric.best:g}"
        )
    if metric.floor is not None and bound <= metric.floor:
        why = "every run meets it" if metric.higher_is_better else "no run reaches it"
        raise ValueError(
            f"{threshold.metric} {side}: {bound:g} is at or below {metric.floor:g}, the lowest value of "
            f"{metric.name} ({metric.unit}), so {why}"
        )
    return threshold


class TaskEntry(Decl):
    """One task of an ablation: its parameters, its config keys, its primary metric, a gate and a convergence target."""

    params: dict[str, Any] = Field(default_factory=dict, description="the task's parameters (its Params)")
    config: dict[str, Any] = Field(default_factory=dict, description="config keys for this task's runs (over base)")
    primary: MetricSpec = Field(
        description="the metric the verdicts are about, with its smallest effect of interest (sesoi)"
    )
    gate: Threshold | None = Field(None, description="runs below it did not learn the task at L")
    target: Threshold | None = Field(None, description="convergence target: steps_to_target")

    @field_validator("gate", "target")
    @classmethod
    def _reachable(cls, threshold: Threshold | None) -> Threshold | None:
        return check_reachable(threshold)


SPENDING_FUNCTIONS = {"obrien_fleming": "O'Brien-Fleming-like", "pocock": "Pocock-like"}
"""Lan-DeMets O'Brien-Fleming-like and Pocock-like alpha spending (:func:`harness.analysis.sequential.spent`).

Each name a ``sequential:`` block may give, with the words a report calls it by.
"""


class Sequential(Decl):
    """A group-sequential design (docs/sequential.md): the seeds at each look, the spending function and the level.

    The level is the family's two-sided level; :mod:`harness.analysis.sequential` decides.
    """

    looks: list[StrictInt] = Field(min_length=1, description="seeds at each look, increasing")
    spending: str = Field(  # a str, not a Literal: a misspelt name gets a suggestion; the schema's enum for editors
        "obrien_fleming",
        description="obrien_fleming or pocock (Lan & DeMets 1983)",
        json_schema_extra={"enum": list(SPENDING_FUNCTIONS)},
    )
    alpha: float = Field(0.05, description="the primary family's two-sided level (the analysis' alpha)")
    futility: StrictBool = Field(True, description="stop a comparison hopeless at its sesoi (non-binding)")

    @model_validator(mode="after")
    def _valid(self) -> Sequential:
        if self.looks[0] < 2:
            raise ValueError(
                f"looks start at {self.looks[0]} seeds; a paired t-test needs at least 2 (e.g. looks: [8, 16])"
            )
        if bad := [b for a, b in zip(self.looks, self.looks[1:]) if b <= a]:
            raise ValueError(
                f"looks must increase, got {self.looks} ({bad[0]} does not follow a smaller look); list the "
                f"seeds at each look in increasing order, e.g. [8, 16, 24, 32]"
            )
        if self.spending not in SPENDING_FUNCTIONS:
            raise ValueError(
                f"unknown spending function {self.spending!r}{did_you_mean(self.spending, list(SPENDING_FUNCTIONS))}; "
                f"choose one of {', '.join(SPENDING_FUNCTIONS)}"
            )
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must lie in (0, 1), got {self.alpha:g}; e.g. alpha: 0.05")
        return self


MAX_SEEDS = 1000
"""The most seeds a profile may declare: every command expands the grid (1,000 seeds: ``ablate show``
takes about 17 s on a 10-cell grid on a 2-core CPU)."""


class Profile(Decl):
    """A profile: how big the runs are (seeds, config overrides), and which tasks and grid points run."""

    description: str = Field("", description="what the profile is for and what it costs (ablate show prints it)")
    seeds: list[Annotated[StrictInt, Field(ge=0, le=INT_MAX)]] = Field(
        min_length=1, description="one run per seed, variant and task; seed s of every variant is paired"
    )
    confirmatory: StrictBool = Field(
        True, description="false: a pilot, whose comparisons give no verdicts (every verdict reads pilot)"
    )
    apply_gate: StrictBool = Field(True, description="False: runs below a task's gate stay in every comparison")
    plumbing: StrictBool = Field(
        False,
        description="true: a check that the grid runs end to end, too short for its numbers to mean anything "
        "(ablate plan takes its spread only when no other pilot has runs, and warns)",
    )
    overrides: dict[str, Any] = Field(default_factory=dict, description="config keys for every run of the profile")
    tasks: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="task name -> config keys for that task's runs in this profile"
    )
    tune: dict[str, ParamSpec | None] = Field(default_factory=dict, description="search space (ablate tune)")
    only_tasks: list[str] = Field(default_factory=list, description="run only these tasks (default: all)")
    only_variants: list[str] = Field(
        default_factory=list, description="run only these grid points, by label (default: all); must hold the baseline"
    )
    exploratory_variants: list[str] = Field(
        default_factory=list,
        description="grid points the profile runs, by label, left out of the primary Holm family: their "
        "comparisons are exploratory (Benjamini-Hochberg within each table), so adding one leaves the "
        "confirmatory comparisons' adjusted p as they were",
    )
    sequential: Sequential | None = Field(None, description="a group-sequential design (docs/sequential.md)")

    @model_validator(mode="after")
    def _sequential_fits(self) -> Profile:
        if self.sequential is None:
            return self
        if not self.confirmatory:
            raise ValueError(
                "sequential: a group-sequential design on a pilot profile (confirmatory: false), which makes "
                "no decision; move it to a confirmatory profile or drop it"
            )
        if (last := self.sequential.looks[-1]) > len(self.seeds):
            raise ValueError(
                f"sequential: the last look is at {last} seeds but the profile lists {len(self.seeds)}; "
                f"list at least {last} seeds or drop the looks beyond {len(self.seeds)}"
            )
        return self

    @field_validator("seeds")
    @classmethod
    def _distinct(cls, seeds: list[int]) -> list[int]:
        if len(seeds) > MAX_SEEDS:
            raise ValueError(
                f"{len(seeds):,} seeds; a profile holds at most {MAX_SEEDS:,} (a confirmatory profile needs tens: "
                "`ablate plan NAME --profile PROFILE` says how many detect the smallest effect of interest)"
            )
        # a repeated seed repeats a run id: two workers would write one folder, pairs would break
        if dupes := repeated(seeds):
            raise ValueError(f"seeds must be distinct; repeated: {dupes[:10]}{' ...' if len(dupes) > 10 else ''}")
        return seeds


def read_yaml(path: Path, what: str) -> Any:
    """The parsed YAML of the file ``path`` (``what``: ``ablation file``, for errors).

    Raises:
        AblateError: when it cannot be read, is not UTF-8 text or not valid YAML (with the line and column).
    """
    try:
        return load_yaml(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AblateError(f"cannot read {what} {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise AblateError(f"{what} {path} is not UTF-8 text (byte {exc.start}); save it as UTF-8 YAML") from None
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).replace("\n", " ")
        raise AblateError(f"{what} {path} is not valid YAML{where}: {problem}") from None
