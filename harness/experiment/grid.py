"""Grid expansion into run specs (:func:`plan`), each with its resolved config and a content hash as run id.

Also every check that can be made before any run starts (docs/bad-inputs.md: exit code 2).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.config import RunConfig, apply_overrides, build_config, check_schedule, config_hash, parse_overrides
from harness.errors import AblateError
from harness.experiment import design, metrics
from harness.experiment.ablation import Ablation
from harness.experiment.declaration import TaskEntry
from harness.experiment.versions import hashed_versions, run_versions
from harness.registry import UnknownNameError, did_you_mean
from harness.training.model_and_devices import transformer_config

if TYPE_CHECKING:  # the task registry imports its tasks: imported where a task is built
    from harness.tasks import Task


@dataclass(frozen=True)
class RunSpec:
    """One run of a grid: a resolved config, a task and a seed.

    ``tuned_params`` (``ablate run --tuned``): the study's best parameters, already merged into ``config``.
    """

    ablation: str
    profile: str
    task: str
    task_params: dict[str, Any]
    task_version: str
    variant: dict[str, Any]
    variant_label: str
    seed: int
    config: RunConfig
    tuned_params: dict[str, Any] | None = None
    design: str | None = None  # the fingerprint of its profile's design (harness.experiment.design); not hashed

    def payload(self, code_versions: dict[str, int] | None = None) -> dict[str, Any]:
        """What a run id hashes: everything that determines the run's numbers, the code versions above 1 included.

        The code versions: :mod:`harness.experiment.versions`; ``code_versions``: a stored run's, default this code's.
        """
        out: dict[str, Any] = {"task": self.task, "task_version": self.task_version, "task_params": self.task_params}
        out.update(config=self.config.hash_dump(), seed=self.seed)
        if self.tuned_params:  # absent for untuned runs: their ids hash no tuning key, so stored ids still match
            out["tuned_params"] = self.tuned_params
        if code := hashed_versions(self.code_versions if code_versions is None else code_versions):
            out["code_versions"] = code  # absent while all are 1: ids of runs stored without versions still match
        return out

    @property
    def code_versions(self) -> dict[str, int]:
        """Every code version this run uses (``{"model": 1, "position:rope": 2, ...}``)."""
        return run_versions(self.config.model_dump(mode="json"))

    @property
    def run_id(self) -> str:
        """The run's id: the :func:`~harness.config.config_hash` of its :meth:`payload`, with this code's versions."""
        return config_hash(self.payload())

    def tuned(self, params: dict[str, Any], profile: str, where: str = "") -> RunSpec:
        """This run at a study's best ``params`` (dotted keys), stored under ``profile`` (``<profile>+tuned``).

        Raises:
            AblateError: for ``params`` that do not validate with this run's config.
        """
        cfg = build_config(apply_overrides(self.config.model_dump(mode="json"), params), where)
        return replace(self, profile=profile, config=cfg, tuned_params=params)


def record_id(
    task: str,
    task_version: str,
    task_params: dict[str, Any],
    config: RunConfig,
    seed: int,
    tuned_params: dict[str, Any] | None,
    code_versions: dict[str, int] | None,
) -> str:
    """The run id a stored run's fields hash to (``code_versions`` None: this code's).

    Raises:
        UnknownNameError: for a component this code does not know.
    """
    spec = RunSpec("", "", task, task_params, task_version, {}, "", seed, config, tuned_params)
    return config_hash(spec.payload(code_versions))  # the fields a run id does not hash left empty


def prepare_task(
    name: str, params: dict[str, Any], data_dir: Path | None, check_data: bool = True, near: Path | None = None
) -> Task:
    """The task ``name`` built with ``params`` (``near``: the ablation file's folder), its data checked.

    The data is checked unless ``check_data`` is False.

    Raises:
        AblateError: the task cannot be built with ``params``, or its data is unavailable.
    """
    from harness.tasks import DataUnavailableError, build_task

    try:
        task = build_task(name, params, data_dir=data_dir, near=near)
        if check_data:
            task.check_available()
        return task
    except DataUnavailableError as exc:
        raise AblateError(str(exc)) from None
    except (KeyError, ValueError) as exc:
        raise AblateError(f"task {name!r}: {exc}") from None


def check_variant(cfg: RunConfig, task: Task, where: str, model: bool = True) -> None:
    """Check the run config ``cfg`` on ``task`` before any run.

    The step schedule, model names and shapes, the attention kernel where this process would train and every length
    the task must provide; ``model=False``: all but the model's components (torch).

    Raises:
        AblateError: naming ``where`` and the first check that fails.
    """
    check_schedule(cfg, where)
    if model:
        _check_model(cfg, task, where)
    shortest = min(cfg.train.seq_len, *cfg.eval_lengths())
    if shortest < task.min_seq_len:
        raise AblateError(f"{where}: task {task.name!r} needs seq_len >= {task.min_seq_len}, got {shortest}")
    seq_len = cfg.train.seq_len
    for split in ("train", "val"):  # train.seq_len trains and validates
        if (longest := task.max_seq_len(split)) is not None and seq_len > longest:
            raise AblateError(
                f"{where}: train.seq_len={seq_len} but task {task.name!r} provides rows of at most {longest} "
                f"tokens from its {split} split; lower train.seq_len to at most {longest}"
            )
    for split in ("test", "val"):  # every evaluation length: test (run) and val (tune)
        if (longest := task.max_seq_len(split)) is None:
            continue
        for mult, length in zip(cfg.eval.length_multipliers, cfg.eval_lengths()):
            if length > longest:
                raise AblateError(
                    f"{where}: evaluation length {length} tokens ({mult} x train.seq_len={seq_len}) is longer than "
                    f"task {task.name!r} provides from its {split} split ({longest} tokens); keep "
                    f"eval.length_multipliers at most {longest // seq_len} or lower train.seq_len"
                )


def _check_model(cfg: RunConfig, task: Task, where: str) -> None:
    from harness.modules import KERNELS, POSITIONAL
    from harness.training.precision import compute_dtype, run_device

    try:
        mcfg = transformer_config(cfg, task.vocab_size)
        position = POSITIONAL.get(mcfg.position)
        KERNELS.get(mcfg.kernel).check_available(
            run_device(),
            compute_dtype(cfg.train.precision),
            with_mask=position.adds_bias() or task.pad_id is not None,
            dropout=mcfg.dropout,
            mask_requires_grad=position.bias_requires_grad(mcfg),
        )
    except (KeyError, ValueError) as exc:
        raise AblateError(f"{where}: {exc}") from None
    longest = max(cfg.eval_lengths())
    capacity = position.max_positions(mcfg)
    if capacity is not None and longest > capacity:
        raise AblateError(
            f"{where}: model.position={cfg.model.position} can represent {capacity} positions "
            f"(model.max_len={cfg.model.max_len}) but the ablation evaluates at {longest} tokens "
            f"({max(cfg.eval.length_multipliers)} x train.seq_len={cfg.train.seq_len}); raise "
            f"model.max_len to at least {longest} or leave it unset (it then covers the longest evaluation)"
        )


def _check_metrics(entry: TaskEntry, cfg: RunConfig, task: Task, tname: str, overridden: bool) -> None:
    """The primary and gate metrics must be ones the task produces at the evaluated lengths with the probes it asks for.

    The target one must be one the validation pass logs (:mod:`harness.experiment.metrics`). ``overridden``: the
    lengths come from a command-line override (the fix then names one).
    """
    multipliers, byte_level = tuple(cfg.eval.length_multipliers), task.token_bytes is not None
    made = metrics.produced(
        task.kind, multipliers, tuple(cfg.eval.probes), cfg.model.n_layers, task.pad_id is not None, byte_level
    )
    named = [("primary", entry.primary.metric)] + ([("gate", entry.gate.metric)] if entry.gate else [])
    for role, metric in named:
        if metric not in made:
            at = re.fullmatch(r"(.+)@x(\d+)", metric)
            if at and int(at.group(2)) not in multipliers and f"{at.group(1)}@x{multipliers[0]}" in made:
                wanted = sorted({*multipliers, int(at.group(2))})
                example = (
                    f"eval.length_multipliers=[{','.join(map(str, wanted))}]"
                    if overridden
                    else f"base: {{eval.length_multipliers: {wanted}}}"
                )
                fix = (
                    f"; evaluate at {at.group(2)} x L by adding {at.group(2)} to eval.length_multipliers "
                    f"(now {list(multipliers)}), e.g. {example}"
                )
            else:
                fix = f"{did_you_mean(metric, made)}; it produces: {', '.join(made)}"
            raise AblateError(
                f"task {tname!r}: {role} metric {metric!r} is not produced by this task at the "
                f"evaluated lengths and probes{fix}"
            )
    bases = metrics.validation_metrics(task.kind, byte_level)
    if entry.target is not None and entry.target.metric not in bases:
        raise AblateError(
            f"task {tname!r}: target metric {entry.target.metric!r} is not a validation metric"
            f"{did_you_mean(entry.target.metric, bases)}; choose one of: {', '.join(bases)}"
        )


def plan(
    abl: Ablation,
    profile: str | None,
    overrides: list[str] | tuple[str, ...] = (),
    data_dir: Path | None = None,
    check_data: bool = True,
    will_run: Callable[[RunSpec], bool] | None = None,
) -> tuple[str, list[RunSpec]]:
    """An ablation's grid for one profile as validated run specs, ordered seed, task, variant.

    A variant's components are built (torch) only when one of its runs ``will_run``.

    Returns:
        The profile's name (``profile``, or the default profile's for None) and the run specs.

    Raises:
        AblateError: for any bad input.
    """
    profile, prof = abl.profile(profile)
    abl = abl.for_profile(profile)
    declared = design.fingerprint(abl, profile)
    cli = parse_overrides(overrides)
    if clash := set(cli) & set(abl.axes):
        raise AblateError(
            f"{', '.join(sorted(clash))} {'is an axis' if len(clash) == 1 else 'are axes'} of {abl.name}; "
            "a run override may not change an axis; to run some of its values only, list their variants in a "
            "profile's only_variants (ablate show NAME names them)"
        )
    cells: list[list[RunSpec]] = []  # each task's variants' runs, one per seed
    for tname, entry in abl.tasks.items():
        task = prepare_task(tname, entry.params, data_dir, check_data, abl.folder)
        configs: list[tuple[dict[str, Any], dict[str, Any]]] = []  # the task's variants and their hashed configs
        for variant in abl.variants():
            label = abl.label(variant)
            layers = [abl.base, entry.config, prof.overrides, prof.tasks.get(tname, {}), cli, variant]
            data = apply_overrides({}, {k: v for layer in layers for k, v in layer.items()})
            where = f"variant {label!r} on task {tname!r}"
            cfg = build_config(data, where, overridden=cli)
            if cfg.model.max_len is None:  # the longest evaluation
                cfg = build_config(apply_overrides(data, {"model.max_len": max(cfg.eval_lengths())}), where)
            head = (abl.name, profile, tname, dict(entry.params), str(task.version), variant, label)
            runs = [RunSpec(*head, seed, cfg, design=declared) for seed in prof.seeds]
            try:  # a run id needs every component name known: an unknown one is refused as check_variant would
                check = will_run is None or any(map(will_run, runs))
            except UnknownNameError as exc:
                raise AblateError(f"{where}: {exc}") from None
            check_variant(cfg, task, where, model=check)
            _check_metrics(entry, cfg, task, tname, overridden="eval.length_multipliers" in cli)
            dump = cfg.hash_dump()
            for other, other_dump in configs:  # one config, one run id: two runs into one folder
                if other_dump == dump:
                    values = ", ".join(f"{k}={other[k]!r} and {v!r}" for k, v in variant.items() if other[k] != v)
                    raise AblateError(
                        f"variants {abl.label(other)!r} and {label!r} on task {tname!r} are the same "
                        f"config once validated ({values}), so their runs would have one run id; each value of an "
                        f"axis must appear once"
                    )
            configs.append((variant, dump))
            cells.append(runs)
    return profile, [runs[i] for i in range(len(prof.seeds)) for runs in cells]
