"""Optuna tuning of every variant of an ablation before the comparison (``ablate tune``, docs/tuning.md).

What the studies are (this module) and how they run (:mod:`harness.tune.search`). One study per
(ablation, profile, task, variant), at :data:`TUNING_SEED`, scored on the validation split;
``ablate run --tuned`` runs each variant at its study's best parameters (:func:`tuned_specs`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from harness.config import parse_override
from harness.errors import AblateError
from harness.experiment import metrics
from harness.experiment.ablation import Ablation
from harness.experiment.grid import RunSpec, check_variant, prepare_task
from harness.experiment.search_space import ParamSpec, check_space, distribution, resolve_space, within_budget
from harness.experiment.selection import Selection, select
from harness.redact import mask_url
from harness.registry import did_you_mean
from harness.tune.storage import check_one_objective, default_storage, open_storage, sqlite_exists
from harness.tuned import tuned_profile

TUNING_SEED = 1000  # of every tuning trial (init, data order, validation sets); never a comparison seed
TRIAL_HEARTBEAT_S = 10  # seconds between an Optuna worker's heartbeats; a trial silent for 3x that is marked failed
INTERRUPTED = "interrupted"  # user attribute of a trial stopped by Ctrl-C: Optuna's FAIL, not a finished trial


@dataclasses.dataclass(frozen=True)
class StudyPlan:
    """One study: the variant's untuned run (at the tuning seed), its space and its objective."""

    name: str
    spec: RunSpec
    space: dict[str, ParamSpec]
    metric: str
    direction: str  # maximize | minimize
    monitor: str | None

    @property
    def distributions(self) -> dict[str, Any]:
        """The Optuna distribution of every searched key (dotted path -> distribution of its space entry)."""
        return {k: distribution(v) for k, v in self.space.items()}


def study_name(ablation: str, profile: str, task: str, variant_label: str) -> str:
    """The name of the study of one variant on one task: ``<ablation>/<profile>/<task>/<variant label>``."""
    return f"{ablation}/{profile}/{task}/{variant_label}"


def monitor_for(metric: str, maximize: bool) -> str | None:
    """The validation metric at L the pruner watches; None when none fits.

    The objective's quantity where the validation pass logs it, else one of the same direction.
    """
    if base := metrics.validation_name(metric):
        return f"val/{base}"
    return None if maximize else "val/loss"


def _matches(abl: Ablation, profile: str, selectors: list[str]) -> list[dict[str, Any]]:
    """The variants ``profile`` runs whose axis values match every ``key=value`` (key: axis path or its last part).

    ``abl``: the ablation as the profile runs it (:meth:`Ablation.for_profile`).
    """
    chosen = abl.variants()
    for i, text in enumerate(selectors):
        if "=" not in text or text.startswith("="):  # parse_override's message speaks of config overrides
            raise AblateError(
                f"--variant {text!r} is not of the form axis=value (e.g. "
                f"{next(iter(abl.axes)).rsplit('.', 1)[-1]}={next(iter(abl.axes.values()))[0]}); axes: "
                f"{', '.join(abl.axes)}"
            )
        key, value = parse_override(text)
        paths = [p for p in abl.axes if p == key or p.rsplit(".", 1)[-1] == key]
        if len(paths) != 1:
            names = [*abl.axes, *(p.rsplit(".", 1)[-1] for p in abl.axes)]
            raise AblateError(
                f"--variant {text!r}: {key!r} is not an axis of {abl.name}{did_you_mean(key, names)}; axes: "
                f"{', '.join(abl.axes)}"
            )
        values = abl.axes[paths[0]]
        if not (same := [v for v in values if value == v or str(value) == str(v)]):
            raise AblateError(
                f"--variant {text!r}: {value!r} is not a value of "
                f"{paths[0]}{did_you_mean(str(value), [str(v) for v in values])}; values: {values}"
            )
        if not (chosen := [v for v in chosen if v[paths[0]] in same]):
            given = " ".join(f"--variant {t!r}" for t in selectors[: i + 1])
            what = "runs no variant with them all" if i else "does not run that variant"
            raise AblateError(
                f"{given}: {abl.name} / {profile} {what}; its variants: "
                f"{', '.join(abl.label(v) for v in abl.variants())} (ablate show {abl.name} names each profile's)"
            )
    return chosen


def plan_studies(
    abl: Ablation,
    profile: str | None,
    overrides: list[str] | tuple[str, ...] = (),
    tasks: list[str] | None = None,
    variants: list[str] | None = None,
    data_dir: Path | None = None,
) -> tuple[str, list[StudyPlan]]:
    """The studies of one ablation and profile, validated before any trial starts.

    A key set by ``overrides`` is not searched. Returns the profile's name and the studies.

    Raises:
        AblateError: bad overrides, an unknown task or variant selector, a space value that a
            variant's config rejects, a profile that compares at the tuning seed, an empty search
            space.
    """
    sel = select(abl, profile, overrides, data_dir)
    prof_name, specs, abl = sel.profile, sel.specs, sel.ablation
    if TUNING_SEED in abl.profiles[prof_name].seeds:
        raise AblateError(
            f"profile {prof_name!r} uses seed {TUNING_SEED}, the tuning seed; pick other comparison seeds"
        )
    for t in tasks or []:
        if t not in abl.tasks:
            raise AblateError(
                f"--task {t!r} is not a task of {abl.name} / {prof_name}{did_you_mean(t, list(abl.tasks))}; its "
                f"tasks: {', '.join(abl.tasks)}"
            )
    chosen = _matches(abl, prof_name, variants or [])
    fixed = {parse_override(o)[0] for o in overrides}  # a key set on the command line is not searched
    space = {k: v for k, v in resolve_space(abl, prof_name).items() if k not in fixed}
    if not space:
        raise AblateError(
            f"{abl.name} / {prof_name}: the search space is empty (every key removed or fixed on the command line)"
        )
    first = abl.profiles[prof_name].seeds[0]
    out = []
    for spec in specs:
        if spec.seed != first or (tasks and spec.task not in tasks) or spec.variant not in chosen:
            continue
        name = study_name(abl.name, prof_name, spec.task, spec.variant_label)
        check_space(study_space := within_budget(space, spec.config), spec.config, name)
        metric = abl.tasks[spec.task].primary.metric
        maximize = metrics.higher_is_better(metric)
        tuning, direction = dataclasses.replace(spec, seed=TUNING_SEED), "maximize" if maximize else "minimize"
        out.append(StudyPlan(name, tuning, study_space, metric, direction, monitor_for(metric, maximize)))
    return prof_name, out


def counts(study: Any) -> dict[str, Any]:
    """Trial counts of a study (complete, pruned, failed of which diverged, running, interrupted) and its best.

    A trial stopped by Ctrl-C (:data:`INTERRUPTED`; stored as FAIL) is not failed.
    """
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False)
    by = {s: [t for t in trials if t.state == s] for s in TrialState}
    complete = by[TrialState.COMPLETE]
    pick = max if study.direction.name == "MAXIMIZE" else min
    best = pick(complete, key=lambda t: t.value, default=None)
    failed = [t for t in by[TrialState.FAIL] if not t.user_attrs.get(INTERRUPTED)]
    return {
        "complete": len(complete),
        "pruned": len(by[TrialState.PRUNED]),
        "failed": len(failed),
        "interrupted": len(by[TrialState.FAIL]) - len(failed),
        "diverged": sum(t.user_attrs.get("outcome") == "diverged" for t in failed),
        "running": len(by[TrialState.RUNNING]),
        "best_value": best.value if best else None,
        "best_params": dict(best.params) if best else None,
        "last_reason": next((t.user_attrs.get("reason") for t in reversed(failed)), None),
    }


def best_params(store: Any, name: str, url: str) -> dict[str, Any]:
    """The best complete trial's parameters of study ``name``.

    Raises:
        AblateError: there is no such study, it has several objectives, or no complete trial.
    """
    import optuna

    try:
        study = optuna.load_study(study_name=name, storage=store)
    except KeyError:
        raise AblateError(f"no study {name!r} in {mask_url(url)}") from None
    check_one_objective(study, name, url)
    c = counts(study)
    if c["best_params"] is None:
        raise AblateError(
            f"study {name!r} has no complete trial ({c['pruned']} pruned, {c['failed']} failed)"
            + (f"; last failure: {c['last_reason']}" if c["last_reason"] else "")
        )
    return c["best_params"]


def tuned_specs(sel: Selection, specs: list[RunSpec], data_dir: Path | None = None) -> list[RunSpec]:
    """``specs`` at their study's best parameters, stored under ``<profile>+tuned``.

    ``sel``: the ``ablate run`` command's selection (its storage, hints, and overrides, which may not
    set a key a study tuned).

    Raises:
        AblateError: a (task, variant) with no study or no complete trial (all listed at once); an
            override of a key a study tuned; a SQLite storage that does not exist or a storage that
            cannot be opened; a tuned config that does not validate or that
            :func:`~harness.experiment.grid.check_variant` refuses.
    """
    url = sel.storage or default_storage(sel.results)
    tune_first = sel.command("tune", storage=True)
    if not sqlite_exists(url):
        raise AblateError(
            f"no tuning studies: {mask_url(url)} does not exist; run `{tune_first}` first, or pass "
            "--storage URL where your studies are"
        )
    store = open_storage(url)
    best: dict[tuple[str, str], dict[str, Any]] = {}
    problems = []
    for key in dict.fromkeys((spec.task, spec.variant_label) for spec in specs):
        try:
            best[key] = best_params(store, study_name(sel.name, sel.profile, *key), url)
        except AblateError as exc:
            problems.append(str(exc))
    if problems:
        raise AblateError(
            f"--tuned needs a study with a complete trial for every variant; run `{tune_first}` first: "
            + "; ".join(problems)
        )
    for text in sel.overrides:  # the study's best value would replace it unseen
        key = parse_override(text)[0]
        for (task, variant), params in best.items():
            if key in params:
                raise AblateError(
                    f"{text} sets a key the studies tuned: study "
                    f"{study_name(sel.name, sel.profile, task, variant)!r} chose {key}={params[key]!r}, and "
                    f"--tuned runs every variant at its study's best parameters; drop {text}, or tune with "
                    f"it fixed (ablate tune with {text}, into another --storage) and pass that --storage "
                    "here"
                )
    out, built = [], {}
    for spec in specs:
        where = f"tuned variant {spec.variant_label!r} on task {spec.task!r}"
        run = spec.tuned(best[(spec.task, spec.variant_label)], tuned_profile(sel.profile), where)
        if spec.task not in built:  # each task built once
            built[spec.task] = prepare_task(spec.task, spec.task_params, data_dir, near=sel.ablation.folder)
        check_variant(run.config, built[spec.task], where)
        out.append(run)
    return out
