"""The parts of an ablation declaration below the :class:`~harness.experiment.ablation.Ablation`
(docs/ablation-files.md), and the reading of a user's YAML files: PyYAML's safe loader with a key
given twice refused, every failure one line naming the file, the place and the fix."""

from __future__ import annotations

import re
import types
import typing
from collections import Counter
from collections.abc import Hashable
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from harness.bounds import INT_MAX
from harness.config import valid_paths
from harness.errors import AblateError
from harness.experiment import metrics
from harness.experiment.search_space import ParamSpec
from harness.registry import did_you_mean

SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
"""An ablation, profile or task name: a folder or file name of the store and of a report, so no path
separator, no leading dot, and no ``+`` (``ablate run --tuned`` stores profile P's runs as ``P+tuned``)."""


def check_name(kind: str, name: str) -> str:
    """``name`` when it is a :data:`SAFE_NAME`, else ValueError saying why (``kind``: what it names)."""
    if SAFE_NAME.fullmatch(name):
        return name
    why = (
        "'+' is reserved: `ablate run --tuned` stores a profile P's tuned runs as P+tuned"
        if "+" in name
        else "it becomes a folder of the store (RESULTS/<ablation>/<profile>/) and of a report's file names"
    )
    raise ValueError(
        f"{kind} name {name!r} is not allowed: {why}; use ASCII letters and digits, '_', '.' and '-', "
        f"starting with a letter or a digit"
    )


class Decl(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MetricSpec(Decl, metrics.NamedMetric):
    """The primary metric of a task and its smallest effect of interest; its direction is the
    metrics table's (:mod:`harness.experiment.metrics`), which ``higher_is_better`` may restate."""

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


class Threshold(Decl):
    """A bound on a metric: ``min`` (value must be >= min) or ``max`` (<= max), exactly one."""

    metric: str = Field(description="a metric name (acc@x1), or a per-length metric's bare name at L (acc)")
    min: float | None = Field(None, description="met when the value is >= min (a higher-is-better metric)")
    max: float | None = Field(None, description="met when the value is <= max (a lower-is-better metric)")

    @model_validator(mode="after")
    def _one_reachable_bound(self) -> Threshold:
        """Exactly one bound, on the side the metric is better, that some run can reach and not every run meets."""
        if (self.min is None) == (self.max is None):
            raise ValueError(
                f"{self.metric}: give exactly one bound, min (the value must be >= min) or max (<= max); "
                f"{'both are given' if self.min is not None else 'none is given, so every run would meet it at once'}"
            )
        metric = metrics.of_bound(self.metric)
        if metric is None:  # an unknown name: the grid's checks name it with what the task produces
            return self
        side, bound = ("min", self.min) if self.min is not None else ("max", self.max)
        wanted = "min" if metric.higher_is_better else "max"
        if side != wanted:
            raise ValueError(
                f"{self.metric} is {'higher' if metric.higher_is_better else 'lower'}-is-better, so its bound is "
                f"a {wanted}; {side}: {bound:g} would be met by a run that did not learn"
            )
        if metric.best is not None and bound > metric.best:
            raise ValueError(
                f"{self.metric} min: {bound:g} cannot be reached: the best value of {metric.name} is {metric.best:g}"
            )
        if metric.floor is not None and bound <= metric.floor:
            why = "every run meets it" if metric.higher_is_better else "no run reaches it"
            raise ValueError(
                f"{self.metric} {side}: {bound:g} is at or below {metric.floor:g}, the lowest value of "
                f"{metric.name} ({metric.unit}), so {why}"
            )
        return self

    def passes(self, value: float | None) -> bool:
        if value is None or value != value:  # missing or NaN
            return False
        return (self.min is None or value >= self.min) and (self.max is None or value <= self.max)

    def describe(self) -> str:
        return f"{self.metric} >= {self.min:g}" if self.min is not None else f"{self.metric} <= {self.max:g}"


class TaskEntry(Decl):
    params: dict[str, Any] = Field(default_factory=dict, description="the task's parameters (its Params)")
    config: dict[str, Any] = Field(default_factory=dict, description="config keys for this task's runs (over base)")
    primary: MetricSpec = Field(
        description="the metric the verdicts are about, with its smallest effect of interest (sesoi)"
    )
    gate: Threshold | None = Field(None, description="runs below it did not learn the task at L")
    target: Threshold | None = Field(None, description="convergence target: steps_to_target")


SPENDING_FUNCTIONS = ("obrien_fleming", "pocock")
"""Lan-DeMets O'Brien-Fleming-like and Pocock-like alpha spending (:func:`harness.analysis.sequential.spent`)."""


class Sequential(Decl):
    """A group-sequential design (docs/sequential.md): the seeds at each look, the spending
    function and the family's two-sided level; :mod:`harness.analysis.sequential` decides."""

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
    description: str = Field("", description="what the profile is for and what it costs (ablate show prints it)")
    seeds: list[Annotated[StrictInt, Field(ge=0, le=INT_MAX)]] = Field(
        min_length=1, description="one run per seed, variant and task; seed s of every variant is paired"
    )
    confirmatory: StrictBool = Field(
        True, description="false: a pilot, whose comparisons give no verdicts (every verdict reads pilot)"
    )
    apply_gate: StrictBool = Field(True, description="False: runs below a task's gate stay in every comparison")
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
        if dupes := sorted(s for s, n in Counter(seeds).items() if n > 1):
            raise ValueError(f"seeds must be distinct; repeated: {dupes[:10]}{' ...' if len(dupes) > 10 else ''}")
        return seeds


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses a key given twice in one mapping (PyYAML keeps the last one)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if isinstance(key, Hashable) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is given twice in one mapping; keep one", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str) -> Any:
    return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506  a SafeLoader subclass


def read_yaml(path: Path, what: str) -> Any:
    """The parsed YAML of the file ``path`` (``what``: ``ablation file``, for errors); AblateError when
    it cannot be read, is not UTF-8 text or not valid YAML (with the line and column)."""
    try:
        return load_yaml(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AblateError(f"cannot read {what} {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise AblateError(f"{what} {path} is not UTF-8 text (byte {exc.start}); save it as UTF-8 YAML") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).replace("\n", " ")
        raise AblateError(f"{what} {path} is not valid YAML{where}: {problem}") from None


# --- messages: the fix, at the place of the key -----------------------------------------------------------


def _unwrap(annotation: Any, step: str | int) -> Any:
    """What a value found under ``annotation`` at ``step`` of a location is declared as (a model, a
    dict, a list or a plain type), or None where the location leaves the declared structure."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        return _unwrap(args[0], step)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _unwrap(inner[0], step) if len(inner) == 1 else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        field = annotation.model_fields.get(str(step))
        return field.annotation if field is not None else None
    if origin in (dict, list):
        return args[-1] if args else None
    return None


def _model(annotation: Any) -> type[BaseModel] | None:
    """The model a field's annotation declares (through ``X | None`` and ``Annotated``), else None."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        return _model(args[0])
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _model(inner[0]) if len(inner) == 1 else None
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _place(root: type[BaseModel], loc: tuple[str | int, ...]) -> tuple[type[BaseModel] | None, str | None]:
    """The model whose mapping holds the last key of ``loc`` and that key's field name (None: not a
    field of a model, e.g. a list item or a key of a free mapping)."""
    annotation: Any = root
    for step in loc[:-1]:
        annotation = _unwrap(annotation, step)
        if annotation is None:
            return None, None
    model = _model(annotation)
    return model, (str(loc[-1]) if model is not None else None)


def _field_of(root: type[BaseModel], loc: tuple[str | int, ...]) -> tuple[type[BaseModel] | None, str | None]:
    """The model and field name that declare the value at ``loc`` (a list item: its list's field)."""
    while loc and isinstance(loc[-1], int):
        loc = loc[:-1]
    return _place(root, loc) if loc else (None, None)


_HOMES = {
    "Ablation": "at the top level",
    "TaskEntry": "under a task (tasks: {NAME: {...}})",
    "Profile": "under a profile (profiles: {NAME: {...}})",
    "Sequential": "under a profile's sequential:",
    "MetricSpec": "under a task's primary:",
    "Threshold": "under a task's gate: or target:",
    "ParamSpec": "under a tune: key",
    "Control": "under control:",
}
"""Where the keys of each part of a declaration belong, in the words of docs/ablation-files.md."""

_BELONGS = {
    ("Ablation", "overrides"): "profiles: {cpu: {overrides: {train.steps: 1000}}} (base: sets a key for every profile)",
    ("Ablation", "seeds"): "profiles: {cpu: {seeds: [0, 1, 2]}}",
}
"""Examples for the keys most often written at the wrong level."""


def _models(root: type[BaseModel]) -> list[type[BaseModel]]:
    """``root`` and every model below it, each once."""
    out: list[type[BaseModel]] = []
    todo: list[Any] = [root]
    while todo:
        annotation = todo.pop()
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if origin is not None:
            todo.extend(args)
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel) and annotation not in out:
            out.append(annotation)
            todo.extend(f.annotation for f in annotation.model_fields.values())
    return out


def _unknown_key(root: type[BaseModel], loc: tuple[str | int, ...]) -> str:
    """The message for a key not valid at ``loc``: where it belongs, or the keys valid here."""
    model, key = _place(root, loc)
    here = [k for k in (model.model_fields if model is not None else ()) if k != "source"]
    if model is not None and (example := _BELONGS.get((model.__name__, str(key)))):
        return f"not a key {_HOMES.get(model.__name__, 'here')}; it belongs under a profile, e.g. {example}"
    homes = [m.__name__ for m in _models(root) if m is not model and key in m.model_fields]
    if homes and model is not None:
        where = " or ".join(_HOMES.get(h, h) for h in homes)
        return f"not a key {_HOMES.get(model.__name__, 'here')}; {key} belongs {where}"
    config = [p for p in valid_paths() if p.rsplit(".", 1)[-1] == key]
    if config and model is not None and model.__name__ == "Profile":
        return f"not a profile key; {config[0]} is a config key: set it as overrides: {{{config[0]}: ...}}"
    if config and model is not None:
        return f"not a key here; {config[0]} is a config key: set it in base: {{{config[0]}: ...}} or a profile's overrides"
    hint = did_you_mean(str(key), [k for k in here if k != key])
    return f"unknown key{hint}" + (f"; the keys here: {', '.join(here)}" if here and not hint else "")


def _seeds_example(given: Any) -> str:
    if isinstance(given, int) and not isinstance(given, bool) and 0 < given <= 64:
        return f"list every seed, e.g. for {given} seeds: seeds: [{', '.join(map(str, range(given)))}]"
    if isinstance(given, str) and given.strip(". ") == "":
        return "YAML has no range: list every seed, e.g. seeds: [0, 1, 2, 3, 4, 5, 6, 7]"
    return "list every seed, e.g. seeds: [0, 1, 2, 3, 4, 5, 6, 7]"


def _primary_example(given: Any) -> str:
    metric = given if isinstance(given, str) and given else "acc@x1"
    return f"write a mapping, e.g. primary: {{metric: {metric}, higher_is_better: true, sesoi: 0.05}}"


def _threshold_example(field: str) -> Any:
    return lambda given: (
        f"write a mapping, e.g. {field}: {{metric: {given if isinstance(given, str) else 'acc@x1'}, min: 0.5}}"
    )


def _tasks_example(given: Any) -> str:
    name = given[0] if isinstance(given, list) and given and isinstance(given[0], str) else "copy"
    return (
        f"write a mapping of task name to its entry, e.g. tasks: {{{name}: {{primary: {{metric: acc@x1, "
        f"higher_is_better: true, sesoi: 0.05}}}}}}"
    )


_EXAMPLES = {
    ("Profile", "seeds"): _seeds_example,
    ("TaskEntry", "primary"): _primary_example,
    ("TaskEntry", "gate"): _threshold_example("gate"),
    ("TaskEntry", "target"): _threshold_example("target"),
    ("Ablation", "tasks"): _tasks_example,
    ("Ablation", "profiles"): lambda given: "write a mapping, e.g. profiles: {cpu: {seeds: [0, 1, 2]}}",
    ("Profile", "overrides"): lambda given: "write a mapping, e.g. overrides: {train.steps: 1000}",
    ("Profile", "sequential"): lambda given: (
        "write a mapping, e.g. sequential: {looks: [4, 8], spending: obrien_fleming}"
    ),
    ("Ablation", "axes"): lambda given: (
        "write a mapping of config key to its values, e.g. axes: {model.position: [sinusoidal, rope]}"
    ),
}
"""The right form of the values newcomers most often write in another shape, by (model, field)."""

_CLASS_NAME = re.compile(r" or instance of \w+")


def format_declaration_error(exc: ValidationError, root: type[BaseModel], context: str) -> str:
    """``invalid declaration for CONTEXT: `` and one line per problem of ``exc`` (raised validating
    ``root``), each naming its dotted place and its fix: for a key not valid there, where it belongs
    or the keys valid there (never itself); for a value of the wrong form, an example of the right one."""
    lines = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        where = ".".join(str(p) for p in loc)
        given = err.get("input")
        if err["type"] == "extra_forbidden":
            lines.append(f"{where}: {_unknown_key(root, loc)}")
            continue
        msg = _CLASS_NAME.sub("", err["msg"].removeprefix("Value error, "))
        got = f" (got {given!r})" if "input" in err and err["type"] != "missing" else ""
        model, field = _field_of(root, loc)
        example = _EXAMPLES.get((model.__name__, field)) if model is not None else None
        if example is not None and (err["type"].endswith("_type") or err["type"].startswith("model_")):
            got += f"; {example(given)}"
        elif err["type"] == "list_type" and isinstance(given, str):
            got += f"; write a list in brackets: [{given}]"
        lines.append(f"{where}: {msg}{got}" if where else msg)
    return f"invalid declaration for {context}: " + "; ".join(lines)
