"""Running the studies of ``ablate tune``.

:mod:`harness.tune.studies` says which; docs/tuning.md: sampler, pruner, resuming. A new study's
first trial is the declared config; a worker starts a trial only while finished trials and those
running in other workers are fewer than ``--trials``.
"""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.config import get_path
from harness.experiment.ablation import Ablation
from harness.redact import mask_url
from harness.tune.storage import check_study, default_storage, ensure_study, open_storage
from harness.tune.studies import TRIAL_HEARTBEAT_S, TUNING_SEED, StudyPlan, counts


def _declared_point(study_plan: StudyPlan) -> dict[str, Any]:
    """The untuned config's value of every tuned key that lies inside its range."""
    point = {}
    for path, s in study_plan.space.items():
        v = get_path(study_plan.spec.config, path)
        inside = v in (s.choices or []) if s.type == "categorical" else not isinstance(v, bool) and s.low <= v <= s.high
        if inside:
            point[path] = v
    return point


def _finished(c: dict[str, Any], running: bool = False) -> int:
    """Finished trials of a study's :func:`counts` ``c``, and with ``running`` those running.

    Running ones are in other workers, when counted between trials.
    """
    return c["complete"] + c["pruned"] + c["failed"] + (c["running"] if running else 0)


def _load(storage: Any, study_plan: StudyPlan, trials: int, pruner: str) -> Any:
    """The study with a TPE sampler seeded from its name and how many trials it holds."""
    import optuna

    study_id = storage.get_study_id_from_name(study_plan.name)
    seed = zlib.crc32(study_plan.name.encode()) + storage.get_n_trials(study_id)
    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=min(10, max(2, trials // 2)), constant_liar=True)
    steps, every = study_plan.spec.config.train.steps, study_plan.spec.config.train.val_every
    pruners = {
        "median": optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=0),
        "hyperband": optuna.pruners.HyperbandPruner(min_resource=min(every, steps), max_resource=steps),
        "none": optuna.pruners.NopPruner(),
    }
    return optuna.load_study(study_name=study_plan.name, storage=storage, sampler=sampler, pruner=pruners[pruner])


def _failed_as_stale(exc: BaseException) -> bool:
    """Whether Optuna refused a trial's result because the trial had finished meanwhile.

    It had finished because another worker failed it as stale. The refusal is
    ``UpdateFinishedTrialError`` or ``Cannot tell a FAIL trial``, raised as is or under the
    ``AssertionError`` of Optuna's own clean-up for a trial that returned a value.
    """
    import optuna

    late = exc.__context__ if isinstance(exc, AssertionError) else exc
    return isinstance(late, optuna.exceptions.UpdateFinishedTrialError) or (
        isinstance(late, ValueError) and str(late).startswith("Cannot tell a ")
    )


def run_study(
    storage: Any,
    study_plan: StudyPlan,
    trials: int,
    echo: Callable[[str], None],
    data_dir: Path | None = None,
    pruner: str = "median",
    near: Path | None = None,
) -> dict[str, Any]:
    """Top one study up to ``trials`` finished trials; returns :func:`counts` afterwards.

    ``near``: the ablation file's folder.
    """
    import optuna

    from harness.tasks import build_task
    from harness.tune.objective import objective

    name, study = study_plan.name, _load(storage, study_plan, trials, pruner)
    running = {t.number for t in study.get_trials(deepcopy=False) if t.state.name == "RUNNING"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
    if stale := [t.number for t in study.get_trials(deepcopy=False) if t.number in running and t.state.name == "FAIL"]:
        echo(f"{name}: marked trial(s) {stale} failed (their worker stopped sending heartbeats)")
    if not study.get_trials(deepcopy=False) and (point := _declared_point(study_plan)):
        study.enqueue_trial(point, user_attrs={"declared": True}, skip_if_exists=True)
    if (c := counts(study))["interrupted"]:
        echo(f"{name}: {c['interrupted']} interrupted trial(s) (Ctrl-C) not counted as finished")
    if _finished(c, running=True) >= trials:
        busy = f" and {c['running']} running in other workers" if c["running"] else ""
        echo(f"{name}: {_finished(c)} finished trials already{busy} (asked for {trials}); nothing to do")
        return c
    task = build_task(study_plan.spec.task, study_plan.spec.task_params, data_dir=data_dir, near=near)

    def on_trial(study: Any, trial: Any) -> None:
        if _finished(c := counts(study), running=True) >= trials:  # not MaxTrialsCallback: it counts interrupted trials
            study.stop()
        state = trial.state.name.lower()
        if state == "complete":
            detail = f"{study_plan.metric} (val) = {trial.value:.4g}"
        elif state == "pruned":
            detail = f"at step {max(trial.intermediate_values, default=0)}"
        else:
            detail = trial.user_attrs.get("reason", "")
        params = ", ".join(
            f"{k.rsplit('.', 1)[-1]}={f'{v:.3g}' if isinstance(v, float) else v}" for k, v in trial.params.items()
        )
        took = trial.duration.total_seconds() if trial.duration else 0.0
        echo(f"[{_finished(c)}/{trials}] {name} #{trial.number} {state} {detail} ({params}; {took:.1f}s)")

    run = objective(study_plan, task, TUNING_SEED)
    while (todo := trials - _finished(counts(study), running=True)) > 0:
        try:
            study.optimize(run, n_trials=todo, catch=(Exception,), callbacks=[on_trial])
            break
        except (optuna.exceptions.UpdateFinishedTrialError, ValueError, AssertionError) as exc:
            if not _failed_as_stale(exc):
                raise
            echo(
                f"{name}: a trial's result came after another worker had failed it as stale (no heartbeat "
                "for 3 x --heartbeat); going on"
            )
    return counts(study)


def tune(
    abl: Ablation,
    prof_name: str,
    plans: list[StudyPlan],
    results: Path,
    *,
    trials: int,
    overrides: list[str] | tuple[str, ...] = (),
    storage: str | None = None,
    data_dir: Path | None = None,
    pruner: str = "median",
    heartbeat: int = TRIAL_HEARTBEAT_S,
    echo: Callable[[str], None] = print,
) -> list[tuple[StudyPlan, dict[str, Any]]]:
    """Create every study of ``plans`` (:func:`plan_studies`) first, then top each up to ``trials`` finished trials.

    In order; returns ``(study plan, counts)`` per study.

    Raises:
        AblateError: the storage cannot be opened, or a study there does not fit its plan
            (:func:`~harness.tune.storage.check_study`).
    """
    import optuna

    url = storage or default_storage(results)
    store = open_storage(url, heartbeat=heartbeat)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    known = set(optuna.get_all_study_names(store))
    for p in plans:  # every existing study checked before any is created
        if p.name in known:
            check_study(optuna.load_study(study_name=p.name, storage=store), p.name, p.direction, url, p.distributions)
    for p in plans:
        attrs = dict(ablation=abl.name, profile=prof_name, task=p.spec.task, variant=p.spec.variant_label)
        attrs |= dict(objective=f"{p.metric} on the validation split", seed=TUNING_SEED, overrides=list(overrides))
        space = {k: v.describe() for k, v in p.space.items()}
        ensure_study(store, p.name, p.direction, attrs | {"space": space}, url, p.distributions)
    space = "; ".join(f"{k} {v.describe()}" for k, v in plans[0].space.items()) if plans else "-"
    echo(
        f"{abl.name} / {prof_name}: {len(plans)} studies in {mask_url(url)}; {trials} finished trials each "
        f"(complete + pruned + failed); seed {TUNING_SEED}; pruner {pruner}; space: {space}"
    )
    return [(p, run_study(store, p, trials, echo, data_dir, pruner, abl.folder)) for p in plans]
