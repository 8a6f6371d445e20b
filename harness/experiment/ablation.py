"""Ablation declarations: a YAML file in ``ablations/`` (or any path), loaded, validated and expanded into its grid.

It is loaded with a safe loader. docs/ablation-files.md is the reference of every key, the order in which a run's
config is resolved and the metric names.
"""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr, StrictBool, ValidationError, model_validator

from harness.config import check_key
from harness.errors import AblateError
from harness.experiment import claims as claims_file
from harness.experiment import declaration, plugins
from harness.experiment.claims import Control
from harness.experiment.declaration import Decl, Profile, TaskEntry, check_file_names, check_name, repeated
from harness.experiment.declaration_errors import format_declaration_error
from harness.experiment.search_space import ParamSpec
from harness.registry import did_you_mean
from harness.tuned import tuned_profile

# the registered declarations: the package harness.ablations (the repository's ablations/ folder,
# installed under harness/; harness/__init__.py), found without importing it
ABLATIONS_DIR = Path(importlib.util.find_spec("harness.ablations").submodule_search_locations[0])


class Ablation(Decl):
    """An ablation: axes whose grid of variants is compared with a baseline, on tasks, in profiles.

    Every key: docs/ablation-files.md.
    """

    name: str = Field(
        description="the ablation's name; the file must be NAME.yaml, and the store keeps its runs in RESULTS/NAME"
    )
    question: str = Field(description="what the ablation asks, in a sentence; the report opens with it")
    claims: list[str] = Field(
        default_factory=list, description="ids of claims (harness/experiment/claims.yaml) its verdicts test"
    )
    axes: dict[str, list[Any]] = Field(
        min_length=1, description="config key -> its values; the grid is every combination (one variant each)"
    )
    baseline: dict[str, Any] = Field(description="one value per axis: the grid point every variant is compared with")
    base: dict[str, Any] = Field(default_factory=dict, description="config keys every run sets (under the task's)")
    tasks: dict[str, TaskEntry] = Field(
        min_length=1, description="registered task name -> its parameters, config, primary metric, gate and target"
    )
    profiles: dict[str, Profile] = Field(
        description="name -> seeds and overrides: how big a run is (smoke, cpu, confirm, gpu, ...)"
    )
    default_profile: str = Field("cpu", description="the profile a command runs without --profile")
    notes: str = Field("", description="free text: the report prints it as its Notes on the design")
    identical_arms: StrictBool = Field(
        False,
        description="an A/A check: the arms differ only in random draws, so "
        "every difference the report declares is a false positive",
    )
    tune: dict[str, ParamSpec | None] = Field(
        default_factory=dict, description="search space (harness/experiment/search_space.py)"
    )
    control: Control | None = Field(None, description="a control of the harness: a known bug it must catch")
    plugins: list[str] = Field(
        default_factory=list,
        description="plugins loaded before the declaration is validated: module names or .py paths "
        "(relative to the file's folder); harness/experiment/plugins.py",
    )
    source: str = Field("", exclude=True)
    _only_variants: tuple[str, ...] = PrivateAttr(default=())
    _exploratory: tuple[str, ...] = PrivateAttr(default=())

    @property
    def folder(self) -> Path | None:
        """The folder of the file it was read from (``None``: built in code); its relative paths start there."""
        return Path(self.source).parent if self.source else None

    @model_validator(mode="after")
    def _consistent(self) -> Ablation:
        check_name("ablation", self.name)
        if not self.question.strip():
            raise ValueError(
                "question is empty; state what the ablation asks in a sentence, e.g. question: Does "
                "learned position embedding extrapolate worse than sinusoidal at 2L? (the report opens with it)"
            )
        known = claims_file.load_claims()
        if unknown := [c for c in self.claims if c not in known]:
            raise ValueError(
                f"claims: {unknown[0]!r} is not a claim of harness/experiment/claims.yaml"
                f"{did_you_mean(unknown[0], list(known))}; claims: {', '.join(known)}"
            )
        if dupes := repeated(self.claims):
            raise ValueError(f"claims: {dupes} appear more than once")
        for kind, names in (("profile", self.profiles), ("task", self.tasks)):
            for name in names:
                check_name(kind, name)
        check_file_names(self.name, self.longest_file_names())
        for path, values in self.axes.items():
            check_key(path, "axes")
            if not values:
                raise ValueError(f"axis {path!r} has no values")
            if dupes := [v for i, v in enumerate(values) if v in values[:i]]:
                raise ValueError(f"axis {path!r} repeats {dupes}; each value must appear once")
            shown = [str(v) for v in values]
            if dupes := [values[i] for i, v in enumerate(shown) if v in shown[:i]]:
                same = [values[shown.index(str(d))] for d in dupes]
                raise ValueError(
                    f"axis {path!r} gives {same[0]!r} and {dupes[0]!r}, both the variant {str(dupes[0])!r}; "
                    f"each value must appear once"
                )
        if set(self.baseline) != set(self.axes):
            raise ValueError(f"baseline must give one value per axis {sorted(self.axes)}, got {sorted(self.baseline)}")
        for path, value in self.baseline.items():
            if value not in self.axes[path]:
                raise ValueError(f"baseline {path}={value!r} is not in the grid {self.axes[path]}")
        if all(len(values) == 1 for values in self.axes.values()):
            path = next(iter(self.axes))
            raise ValueError(
                f"the grid has one point, the baseline {self.baseline_label!r}, so nothing is compared; an "
                f"ablation needs at least 2 variants: the baseline and one to compare (e.g. {path}: "
                f"[{self.axes[path][0]}, ANOTHER])"
            )
        labels = [self.label(v) for v in self.variants()]
        for name, prof in self.profiles.items():
            touched = set(prof.overrides) | {k for t in prof.tasks.values() for k in t}
            if clash := touched & set(self.axes):
                raise ValueError(f"profile {name!r} may not change an axis: {sorted(clash)}")
            if unknown := set(prof.tasks) - set(self.tasks):
                raise ValueError(f"profile {name!r} names tasks not in the ablation: {sorted(unknown)}")
            if unknown := [t for t in prof.only_tasks if t not in self.tasks]:
                raise ValueError(
                    f"profile {name!r}: only_tasks names tasks not in the ablation: {unknown}"
                    f"{did_you_mean(unknown[0], list(self.tasks))}; tasks: {list(self.tasks)}"
                )
            if dupes := repeated(prof.only_tasks):
                raise ValueError(f"profile {name!r}: only_tasks repeats {dupes}")
            run = prof.only_variants or labels
            if unknown := [v for v in prof.exploratory_variants if v not in run]:
                raise ValueError(
                    f"profile {name!r}: exploratory_variants names {unknown}, not grid points the profile runs"
                    f"{did_you_mean(unknown[0], run)}; it runs: {run}"
                )
            if self.baseline_label in prof.exploratory_variants:
                raise ValueError(
                    f"profile {name!r}: exploratory_variants holds the baseline {self.baseline_label!r}, which "
                    "every comparison is made against; list only the variants to leave out of the primary family"
                )
            if dupes := repeated(prof.exploratory_variants):
                raise ValueError(f"profile {name!r}: exploratory_variants repeats {dupes}")
            if (
                prof.confirmatory
                and prof.exploratory_variants
                and set(run) - {self.baseline_label} <= set(prof.exploratory_variants)
            ):
                raise ValueError(
                    f"profile {name!r}: the profile declares every variant it runs exploratory, so it has no primary "
                    "comparison; drop one from exploratory_variants or mark the profile confirmatory: false"
                )
            if not prof.only_variants:
                continue
            if unknown := [v for v in prof.only_variants if v not in labels]:
                raise ValueError(
                    f"profile {name!r}: only_variants names {unknown}, not points of the grid"
                    f"{did_you_mean(unknown[0], labels)}; grid: {labels}"
                )
            if self.baseline_label not in prof.only_variants:
                raise ValueError(f"profile {name!r}: only_variants must hold the baseline {self.baseline_label!r}")
            if dupes := repeated(prof.only_variants):
                raise ValueError(f"profile {name!r}: only_variants repeats {dupes}")
            if set(prof.only_variants) == {self.baseline_label}:
                raise ValueError(
                    f"profile {name!r}: only_variants holds only the baseline {self.baseline_label!r}, "
                    f"so nothing is compared; add at least one other point of the grid: {labels}"
                )
        layers = [
            ("base", self.base),
            *((f"tasks.{t}.config", e.config) for t, e in self.tasks.items()),
            *((f"profiles.{p}.overrides", prof.overrides) for p, prof in self.profiles.items()),
            *((f"profiles.{p}.tasks.{t}", v) for p, prof in self.profiles.items() for t, v in prof.tasks.items()),
        ]
        tuned = {"tune": self.tune, **{f"profiles.{p}.tune": prof.tune for p, prof in self.profiles.items()}}
        for where, layer in [*layers, *tuned.items()]:
            for path in layer:
                check_key(path, where)
                if where in tuned and path in self.axes:
                    raise ValueError(f"{where}: {path} is an axis of the ablation; an axis cannot be tuned")
        if self.control is not None:
            confirm = [name for name, prof in self.profiles.items() if prof.confirmatory]
            self.control.check(labels, self.baseline_label, confirm, self.claims)
        if not self.profiles:
            raise ValueError("profiles is empty; declare at least one, e.g. profiles: {cpu: {seeds: [0, 1, 2]}}")
        if self.default_profile not in self.profiles:
            declared = ", ".join(self.profiles)
            if "default_profile" not in self.model_fields_set:
                raise ValueError(
                    f"no default_profile given and no profile 'cpu' (the default when default_profile is left "
                    f"out); add default_profile: NAME (one of {declared}) or declare a cpu profile"
                )
            raise ValueError(
                f"default_profile {self.default_profile!r} is not a profile"
                f"{did_you_mean(self.default_profile, list(self.profiles))}; profiles: {declared}"
            )
        return self

    def longest_file_names(self) -> list[str]:
        """The longest file names each profile and task of the ablation make, with ``x`` for the hex digits.

        Those are a report's with overrides and of tuned runs: its controls' file, its figures.
        """
        tag = "with-xxxxxxxx"  # harness.report.markdown.overrides_tag
        out = []
        for profile, (task, entry) in itertools.product(self.profiles, self.tasks.items()):
            stem = f"{self.name}.{tuned_profile(profile)}.{tag}"
            base = entry.primary.metric.split("@")[0]
            out += [f"{stem}.guards.json", f"{stem}-{task}-{base}-vs-length.png", f"{stem}-{task}-validation-loss.png"]
        return out

    def for_profile(self, name: str | None) -> Ablation:
        """This ablation as one profile runs it: only its ``only_tasks`` and ``only_variants``. Idempotent."""
        name, prof = self.profile(name)
        tasks = {t: e for t, e in self.tasks.items() if not prof.only_tasks or t in prof.only_tasks}
        out = self.model_copy(update={"tasks": tasks})
        out._only_variants = tuple(prof.only_variants) or self._only_variants
        out._exploratory = tuple(prof.exploratory_variants) or self._exploratory
        return out

    @property
    def exploratory_variants(self) -> tuple[str, ...]:
        """The labels of the grid points left out of the primary family: the profile's, after :meth:`for_profile`."""
        return self._exploratory

    def profile(self, name: str | None) -> tuple[str, Profile]:
        """``(name, profile)`` for the profile ``name`` (None: :attr:`default_profile`).

        Raises:
            AblateError: the ablation has no profile ``name`` (the message names the close ones and every one).
        """
        name = self.default_profile if name is None else name  # "" is a bad name, not the default
        if name not in self.profiles:
            raise AblateError(
                f"ablation {self.name!r} has no profile {name!r}"
                f"{did_you_mean(name, list(self.profiles))}; profiles: {', '.join(self.profiles)}"
            )
        return name, self.profiles[name]

    def variants(self) -> list[dict[str, Any]]:
        """Every point of the grid (after :meth:`for_profile`: of its ``only_variants``) as ``{path: value}``."""
        grid = [dict(zip(self.axes, combo)) for combo in itertools.product(*self.axes.values())]
        if self._only_variants:  # a profile's subset (for_profile)
            grid = [v for v in grid if self.label(v) in self._only_variants]
        return grid

    def label(self, variant: dict[str, Any]) -> str:
        """Short display name: the value for one axis, ``key=value`` pairs for several."""
        if len(variant) == 1:
            return str(next(iter(variant.values())))
        return ",".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in variant.items())

    @property
    def baseline_label(self) -> str:
        """The :meth:`label` of the baseline."""
        return self.label(self.baseline)


def available() -> dict[str, Path]:
    """The registered ablations, by name: name -> its YAML file in :data:`ABLATIONS_DIR` (but names starting ``_``)."""
    return {p.stem: p for p in sorted(ABLATIONS_DIR.glob("*.yaml")) if not p.stem.startswith("_")}


def load(name_or_path: str) -> Ablation:
    """Load an ablation by registered name or from a YAML file path.

    Raises:
        AblateError: for an empty or unknown name, a file that cannot be read, or a declaration that fails
            validation (a file that takes a registered ablation's name, or whose name is not its file's, included).
    """
    if not name_or_path.strip():  # Path("") is the current folder
        raise AblateError(
            f"the ablation name {name_or_path!r} is empty; name a registered ablation (`ablate list`) "
            f"or pass the path to its YAML file"
        )
    path, known = Path(name_or_path), available()
    if path.suffix not in (".yaml", ".yml"):
        if name_or_path in known:
            path = known[name_or_path]
        elif path.is_dir():
            raise AblateError(f"{path} is a folder; pass an ablation's YAML file or a registered name (`ablate list`)")
        elif path.is_file():
            raise AblateError(f"{path} is not a .yaml file; an ablation is declared in NAME.yaml (docs/extending.md)")
        else:
            raise AblateError(
                f"unknown ablation {name_or_path!r}{did_you_mean(name_or_path, list(known))}; "
                f"run `ablate list` to see them"
            )
    elif not path.exists():
        fix = (  # `pe_extrapolation.yaml` from another folder
            f"the registered ablation {path.stem!r} is named without .yaml ({known[path.stem]})"
            if path.stem in known
            else f"check the path (from {Path.cwd()}), or run `ablate list` for the registered ablations"
        )
        raise AblateError(f"cannot read ablation file {path}: No such file or directory; {fix}")
    data = declaration.read_yaml(path, "ablation file")
    if not isinstance(data, dict):
        raise AblateError(f"ablation file {path} must hold a mapping (name, question, axes, ...)")
    # a file of one's own may not take a registered ablation's name (both grids' runs would land in
    # RESULTS/<name>); the registered file itself, or a byte-for-byte copy of it, is that ablation
    name = data.get("name")
    if (registered := known.get(name) if isinstance(name, str) else None) is not None:
        try:
            same = path.resolve() == registered.resolve() or path.read_bytes() == registered.read_bytes()
        except OSError:
            same = False
        if not same:
            raise AblateError(
                f"ablation file {path} declares name {name!r}, the name of the registered ablation {registered}, "
                f"and differs from it: both would store their runs in RESULTS/{name} and be counted as one grid; "
                f"rename yours (name: my_{name}, in my_{name}.yaml), or run the registered one as `{name}`"
            )
    plugins.load_declared(data.get("plugins"), path)
    try:
        abl = Ablation.model_validate({**data, "source": str(path)})
    except ValidationError as exc:
        message = format_declaration_error(exc, Ablation, f"ablation {path.name}")
        raise AblateError(message) from None
    if abl.name != path.stem:
        raise AblateError(f"ablation file {path} declares name {abl.name!r}; the file must be named {abl.name}.yaml")
    return abl
