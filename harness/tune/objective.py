"""The Optuna objective of one study: train a variant with drawn parameters, score it on the validation split.

Trials are pruned through :class:`harness.training.pruning.StepPruningCallback`. Imported lazily (it
pulls in Lightning).
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from pathlib import Path

import optuna

from harness.config import apply_overrides, build_config
from harness.errors import RunFailed, run_error
from harness.experiment.search_space import suggest
from harness.tasks import Task
from harness.training.loop import TrainOptions, train
from harness.training.pruning import StepPruningCallback
from harness.tune.studies import INTERRUPTED, StudyPlan


def _fail(trial: optuna.Trial, outcome: str, reason: str) -> None:
    trial.set_user_attr("outcome", outcome)
    trial.set_user_attr("reason", reason[:500])


def objective(study_plan: StudyPlan, task: Task, seed: int) -> Callable[[optuna.Trial], float]:
    """The objective of ``study_plan`` on a built ``task``, each trial trained with ``seed``.

    A trial that diverges or raises records ``outcome`` and ``reason``
    (:class:`harness.errors.RunError`) and re-raises (Optuna's FAIL); a pruned one raises
    ``optuna.TrialPruned``; one stopped by Ctrl-C is marked
    :data:`~harness.tune.studies.INTERRUPTED` and raises ``KeyboardInterrupt``; one whose metric on
    the validation split is missing or not finite records ``failed`` and raises ``ValueError``.
    """
    base = study_plan.spec.config.model_dump(mode="json")

    def run(trial: optuna.Trial) -> float:
        params = {path: suggest(trial, path, spec) for path, spec in study_plan.space.items()}
        try:
            cfg = build_config(apply_overrides(base, params), study_plan.name)
            callbacks = (StepPruningCallback(trial, study_plan.monitor),) if study_plan.monitor else ()
            with tempfile.TemporaryDirectory(prefix="ablate-trial-") as tmp:
                out = train(cfg, task, seed, Path(tmp), TrainOptions(callbacks=callbacks, eval_split="val"))
        except KeyboardInterrupt:  # Ctrl-C (train gives it back from Lightning's exit)
            trial.set_user_attr(INTERRUPTED, True)  # stored as FAIL by Optuna; not counted as finished
            raise KeyboardInterrupt from None
        except Exception as exc:
            if isinstance(exc, RunFailed) and isinstance(exc.__cause__, optuna.TrialPruned):
                raise exc.__cause__ from None  # the pruning callback's, which Optuna stores as PRUNED
            err = run_error(exc)
            _fail(trial, err.status, err.reason)
            raise
        metrics = {k: v for k, v in out.metrics.items() if isinstance(v, float) and math.isfinite(v)}
        trial.set_user_attr("val_metrics", metrics)
        value = out.metrics.get(study_plan.metric)
        if value is None or not math.isfinite(value):
            _fail(trial, "failed", why := f"{study_plan.metric} on the validation split is {value}")
            raise ValueError(why)
        return float(value)

    return run
