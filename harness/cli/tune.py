"""``ablate tune``: top up one Optuna study per (task, variant), then print a summary."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape
from rich.table import Table as RichTable

from harness.cli import output
from harness.encode import text
from harness.execution.gpus import check_threads
from harness.experiment import ablation as ablation_mod
from harness.hints import command
from harness.tune import search
from harness.tune import studies as tune_mod


def tune(
    name: str,
    profile: str | None,
    overrides: list[str],
    results: Path,
    *,
    trials: int,
    tasks: list[str] | None = None,
    variants: list[str] | None = None,
    storage: str | None = None,
    pruner: str = "median",
    threads: int = 1,
    heartbeat: int | None = None,
) -> int:
    """Top up one Optuna study per (task, variant) to ``trials`` finished trials, then print a
    summary. Returns 1 when some study has no complete trial (its line says why), else 0."""
    import torch

    check_threads(threads)
    abl = ablation_mod.load(name)
    prof_name, plans = tune_mod.plan_studies(abl, profile, overrides, tasks, variants, output.data_dir())
    if storage is None:  # the default storage lives in the results directory
        output.check_results_dir(results)
    torch.set_num_threads(threads)
    done = search.tune(
        abl,
        prof_name,
        plans,
        results,
        trials=trials,
        overrides=overrides,
        storage=storage,
        data_dir=output.data_dir(),
        pruner=pruner,
        heartbeat=heartbeat or tune_mod.HEARTBEAT_S,
        echo=lambda line: output.console.print(escape(line)),
    )
    columns = ("study", "complete", "pruned", "failed (diverged)", "best value", "best parameters")
    table = RichTable(*columns, title="tuning (objective on the validation split)")
    for study_plan, c in done:
        params = (f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in (c["best_params"] or {}).items())
        counts = (str(c["complete"]), str(c["pruned"]), f"{c['failed']} ({c['diverged']})")
        table.add_row(study_plan.name, *counts, text(c["best_value"]), ", ".join(params))  # –: none, ∞: infinite
    if done:
        output.console.print(table)
    empty = [(study_plan.name, c) for study_plan, c in done if c["best_value"] is None]
    rerun = command("run", name, prof_name, "--tuned", results=results, overrides=tuple(overrides), storage=storage)
    for study_name, c in empty:
        output.console.print(
            f"[red]no complete trial[/] in {study_name}: {c['pruned']} pruned, {c['failed']} failed"
            + (f" (last failure: {c['last_reason']})" if c["last_reason"] else "")
            + f"; `{escape(rerun)}` will refuse this variant"
        )
    return 1 if empty else 0
