"""Grid expansion into run specs, and every check that can be made before any run starts.

:func:`plan` turns (ablation, profile, overrides) into a list of :class:`RunSpec`, each with its
resolved config and a content hash as run id, and checks everything that could fail mid-grid
(unknown names, bad overrides, d_model vs heads, a warm-up or validation interval longer than
the step budget, an evaluation length a variant cannot represent, a primary or gate metric the
task does not produce, a missing data file) so that bad input fails at once with exit code 2. Torch, the task registry and the attention kernels are
imported only by the checks that need them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.config import RunConfig, build_config, check_schedule, config_hash
from harness.errors import AblateError
from harness.experiment import metrics
from harness.experiment.ablation import Ablation
from harness.experiment.declaration import TaskEntry
from harness.experiment.overrides import apply_overrides, parse_overrides
from harness.experiment.versions import hashed_versions, run_versions
from harness.registry import did_you_mean
from harness.training.fit import transformer_config

if TYPE_CHECKING:  # the task registry imports its tasks: imported where a task is built
    from harness.modules import TransformerConfig
    from harness.tasks import Task


def run_payload(
    task: str,
    task_version: str,
    task_params: dict[str, Any],
    config: RunConfig,
    seed: int,
    tuned_params: dict[str, Any] | None,
    code_versions: dict[str, int],
) -> dict[str, Any]:
    """What a run id hashes (:func:`harness.config.config_hash` of it): :meth:`RunSpec.payload`,
    and the check that a stored record is the run its id names (:func:`record_id`)."""
    out = {
        "task": task,
        "task_version": task_version,
        "task_params": task_params,
        "config": config.hash_dump(),
        "seed": seed,
    }
    if tuned_params:  # absent for untuned runs, so their ids stay as they were
        out["tuned_params"] = tuned_params
    if code := hashed_versions(code_versions):  # absent while all are 1: ids as before versions
        out["code_versions"] = code
    return out


def record_id(
    task: str,
    task_version: str,
    task_params: dict[str, Any],
    config: dict[str, Any],
    seed: int,
    tuned_params: dict[str, Any] | None,
    code_versions: dict[str, int] | None,
) -> str:
    """The run id a stored run's fields hash to; ``code_versions`` None (a record or data file from
    before they were kept): this code's versions of the components its config names.

    Raises:
        pydantic.ValidationError: a config that does not validate.
        UnknownNameError: a component this code lacks (with ``code_versions`` None).
    """
    cfg = RunConfig.model_validate(config)
    versions = code_versions if code_versions is not None else run_versions(cfg.model_dump(mode="json"))
    return config_hash(run_payload(task, task_version, task_params, cfg, seed, tuned_params, versions))


@dataclass(frozen=True)
class RunSpec:
    """One run of a grid: a resolved config, a task and a seed.

    ``tuned_params`` (``ablate run --tuned``): the Optuna study's best parameters, already merged
    into ``config``; such runs are stored under profile ``<profile>+tuned`` (harness/tune/studies.py).
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

    def payload(self) -> dict[str, Any]:
        """What the run id hashes: everything that determines the run's numbers, the code included
        (the versions above 1 of the code the config uses: :mod:`harness.experiment.versions`)."""
        return run_payload(
            self.task,
            self.task_version,
            self.task_params,
            self.config,
            self.seed,
            self.tuned_params,
            self.code_versions,
        )

    @property
    def code_versions(self) -> dict[str, int]:
        """Every code version this run uses (``{"model": 1, "position:rope": 2, ...}``)."""
        return run_versions(self.config.model_dump(mode="json"))

    @property
    def run_id(self) -> str:
        return config_hash(self.payload())

    def tuned(self, params: dict[str, Any], profile: str, where: str = "") -> RunSpec:
        """This run at a study's best ``params`` (dotted keys), stored under ``profile``
        (``<profile>+tuned``): the run ``ablate run --tuned`` makes, and the id it is stored under.

        Raises:
            AblateError: ``params`` that do not validate with this run's config.
        """
        cfg = build_config(apply_overrides(self.config.model_dump(mode="json"), params), where)
        return replace(self, profile=profile, config=cfg, tuned_params=params)


def prepare_task(name: str, params: dict[str, Any], data_dir: Path | None, check_data: bool = True) -> Task:
    """The task ``name`` built with ``params``, its data file found and checked unless
    ``check_data`` is False; any problem is an :class:`AblateError`."""
    from harness.tasks import DataUnavailableError, build_task

    try:
        task = build_task(name, params, data_dir=data_dir)
        if check_data:
            task.check_available()
        return task
    except DataUnavailableError as exc:
        raise AblateError(str(exc)) from None
    except (KeyError, ValueError) as exc:
        raise AblateError(f"task {name!r}: {exc}") from None


def _check_kernel_available(cfg: RunConfig, mcfg: TransformerConfig, task: Task, where: str) -> None:
    """The attention kernel can run where this process would train (e.g. ``flash``: never a
    silent fallback to another backend), with the run's dtype and masks (a learned bias: a mask
    that requires a gradient)."""
    from harness.modules import KERNELS, POSITIONAL
    from harness.training.precision import compute_dtype, run_device

    position = POSITIONAL.get(mcfg.position)
    with_mask = position.adds_bias() or task.pad_id is not None
    try:
        KERNELS.get(mcfg.kernel).check_available(
            run_device(),
            compute_dtype(cfg.train.precision),
            with_mask=with_mask,
            dropout=mcfg.dropout,
            mask_requires_grad=position.bias_requires_grad(mcfg),
        )
    except ValueError as exc:
        raise AblateError(f"{where}: {exc}") from None


def check_variant(cfg: RunConfig, task: Task, where: str) -> None:
    """The step schedule, model names, shapes and every evaluation length, checked before any run starts."""
    from harness.modules import POSITIONAL

    check_schedule(cfg, where)

    try:
        mcfg = transformer_config(cfg, task.vocab_size)
    except (KeyError, ValueError) as exc:
        raise AblateError(f"{where}: {exc}") from None
    _check_kernel_available(cfg, mcfg, task, where)
    longest = max(cfg.eval_lengths())
    capacity = POSITIONAL.get(mcfg.position).max_positions(mcfg)
    if capacity is not None and longest > capacity:
        raise AblateError(
            f"{where}: model.position={cfg.model.position} can represent {capacity} positions "
            f"(model.max_len={cfg.model.max_len}) but the ablation evaluates at {longest} tokens "
            f"({max(cfg.eval.length_multipliers)} x train.seq_len={cfg.train.seq_len}); raise "
            f"model.max_len to at least {longest} or leave it unset (it then covers the longest evaluation)"
        )
    shortest = min(cfg.train.seq_len, *cfg.eval_lengths())
    if shortest < task.min_seq_len:
        raise AblateError(f"{where}: task {task.name!r} needs seq_len >= {task.min_seq_len}, got {shortest}")
    _check_longest(cfg, task, where)


LENGTH_USES = {"train": ("train", "val"), "eval": ("test", "val")}
"""Splits each length is drawn from: ``train.seq_len`` trains and validates (and probes) on the
train and val splits; every evaluation length is drawn from test (``run``) and val (``tune``)."""


def _check_longest(cfg: RunConfig, task: Task, where: str) -> None:
    """``train.seq_len`` and every evaluation length must fit what the task can provide
    (:meth:`harness.tasks.base.Task.max_seq_len`), before any run starts."""
    seq_len = cfg.train.seq_len
    for split in LENGTH_USES["train"]:
        if (longest := task.max_seq_len(split)) is not None and seq_len > longest:
            raise AblateError(
                f"{where}: train.seq_len={seq_len} but task {task.name!r} provides rows of at most {longest} "
                f"tokens from its {split} split; lower train.seq_len to at most {longest}"
            )
    for split in LENGTH_USES["eval"]:
        longest = task.max_seq_len(split)
        if longest is None:
            continue
        for mult, length in zip(cfg.eval.length_multipliers, cfg.eval_lengths()):
            if length > longest:
                raise AblateError(
                    f"{where}: evaluation length {length} tokens ({mult} x train.seq_len={seq_len}) is longer than "
                    f"task {task.name!r} provides from its {split} split ({longest} tokens); keep "
                    f"eval.length_multipliers at most {longest // seq_len} or lower train.seq_len"
                )


def _check_metrics(entry: TaskEntry, cfg: RunConfig, task: Task, tname: str) -> None:
    """The primary and gate metrics must be ones the task produces at the evaluated lengths with
    the probes it asks for (``acc@x4`` needs multiplier 4, ``leak_logits`` the ``leakage``
    probe), the target one the validation pass logs (``acc``, ``loss``): :mod:`harness.experiment.metrics`."""
    made = metrics.produced(
        task.kind,
        tuple(cfg.eval.length_multipliers),
        tuple(cfg.eval.probes),
        cfg.model.n_layers,
        task.pad_id is not None,
        task.token_bytes is not None,
    )
    named = [("primary", entry.primary.metric)] + ([("gate", entry.gate.metric)] if entry.gate else [])
    multipliers = cfg.eval.length_multipliers
    for role, metric in named:
        if metric not in made:
            at = re.fullmatch(r"(.+)@x(\d+)", metric)
            if at and int(at.group(2)) not in multipliers and f"{at.group(1)}@x{multipliers[0]}" in made:
                fix = (
                    f"; evaluate at {at.group(2)} x L by adding {at.group(2)} to eval.length_multipliers "
                    f"(now {list(multipliers)}), e.g. base: {{eval.length_multipliers: "
                    f"{sorted({*multipliers, int(at.group(2))})}}}"
                )
            else:
                fix = f"{did_you_mean(metric, made)}; it produces: {', '.join(made)}"
            raise AblateError(
                f"task {tname!r}: {role} metric {metric!r} is not produced by this task at the "
                f"evaluated lengths and probes{fix}"
            )
    bases = metrics.validation_metrics(task.kind, task.token_bytes is not None)
    if entry.target is not None and entry.target.metric not in bases:
        raise AblateError(
            f"task {tname!r}: target metric {entry.target.metric!r} is not a validation metric"
            f"{did_you_mean(entry.target.metric, bases)}; choose one of: {', '.join(bases)}"
        )


def _check_distinct(
    abl: Ablation, variant: dict[str, Any], cfg: RunConfig, earlier: list[tuple[dict[str, Any], RunConfig]], tname: str
) -> None:
    """Two points of the grid that resolve to one config (``model.n_heads: [4, "04"]``: both 4
    once validated) would have one run id: their runs would train twice into one folder."""
    dump = cfg.hash_dump()
    for other, other_cfg in earlier:
        if other_cfg.hash_dump() == dump:
            values = ", ".join(f"{k}={other[k]!r} and {variant[k]!r}" for k in variant if other[k] != variant[k])
            raise AblateError(
                f"variants {abl.label(other)!r} and {abl.label(variant)!r} on task {tname!r} are the same "
                f"config once validated ({values}), so their runs would have one run id; each value of an "
                f"axis must appear once"
            )


def plan(
    abl: Ablation,
    profile: str | None,
    overrides: list[str] | tuple[str, ...] = (),
    data_dir: Path | None = None,
    check_data: bool = True,
) -> tuple[str, list[RunSpec]]:
    """Expand an ablation's grid for one profile into validated run specs.

    Order: seed, then task, then variant, so that finished seeds form complete pairs early.
    ``check_data=False`` (read-only commands: status, compare, report) skips finding, checking
    or downloading data files: run ids depend only on configs, never on the data.

    Raises:
        AblateError: any bad input (see module docstring), before any run starts.
    """
    profile, prof = abl.profile(profile)
    abl = abl.for_profile(profile)
    cli = parse_overrides(overrides)
    if clash := set(cli) & set(abl.axes):
        raise AblateError(
            f"{', '.join(sorted(clash))} {'is an axis' if len(clash) == 1 else 'are axes'} of {abl.name}; "
            "a run override may not change an axis; to run some of its values only, list their variants in a "
            "profile's only_variants (ablate show NAME names them)"
        )
    per_task: dict[str, list[tuple[dict[str, Any], RunConfig]]] = {}
    tasks: dict[str, Task] = {}
    for tname, entry in abl.tasks.items():
        tasks[tname] = task = prepare_task(tname, entry.params, data_dir, check_data)
        per_task[tname] = []
        for variant in abl.variants():
            layers = [abl.base, entry.config, prof.overrides, prof.tasks.get(tname, {}), cli, variant]
            data = apply_overrides({}, {k: v for layer in layers for k, v in layer.items()})
            where = f"variant {abl.label(variant)!r} on task {tname!r}"
            cfg = build_config(data, where)
            if cfg.model.max_len is None:
                cfg = cfg.model_copy(
                    update={"model": cfg.model.model_copy(update={"max_len": max(cfg.eval_lengths())})}
                )
            check_variant(cfg, task, where)
            _check_metrics(entry, cfg, task, tname)
            _check_distinct(abl, variant, cfg, per_task[tname], tname)
            per_task[tname].append((variant, cfg))
    specs = [
        RunSpec(
            abl.name,
            profile,
            tname,
            dict(abl.tasks[tname].params),
            str(tasks[tname].version),
            variant,
            abl.label(variant),
            seed,
            cfg,
        )
        for seed in prof.seeds
        for tname in abl.tasks
        for variant, cfg in per_task[tname]
    ]
    return profile, specs
