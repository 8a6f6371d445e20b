"""``ablate run``: every unfinished run of a grid, with one progress line per finished run and the
progress of the runs in flight (:mod:`harness.cli.progress`), then the comparison, whose statistics
(scipy, statsmodels, pandas) are imported only then: a process pool's parent never needs them before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.cli import output
from harness.cli.progress import GridProgress, clock
from harness.encode import text
from harness.errors import AblateError
from harness.execution import attempt, local
from harness.execution.gpus import estimate_seconds
from harness.execution.launch import Launch, outcome_lines, progress_note
from harness.experiment import ablation as ablation_mod
from harness.experiment.grid import RunSpec
from harness.store.runs import read_record, run_dir, scan
from harness.tune.studies import tuned_profile, tuned_specs


def run(
    name: str,
    profile: str | None,
    overrides: list[str],
    results: Path,
    *,
    workers: int | None = None,
    threads: int = 1,
    wandb: str = "off",
    tuned: bool = False,
    storage: str | None = None,
    launch: Launch | None = None,
) -> int:
    """Run every unfinished run of the grid; print progress and the comparison. Returns 1 when some
    runs failed, else 0. ``tuned``: at each study's best parameters, stored under ``<profile>+tuned``
    (:mod:`harness.tune.studies`); a sequential profile runs its next look (:mod:`harness.analysis.looks`)."""
    abl = ablation_mod.load(name)

    def will_run(spec: RunSpec) -> bool:  # an ok record never runs again (--retry takes failures only)
        rec = read_record(run_dir(results, spec.ablation, spec.profile, spec.run_id))
        return rec is None or rec.status != "ok"

    sel = output.selection(
        abl, profile, overrides, results, storage, typed=name, check_data=True, will_run=None if tuned else will_run
    )
    prof_name, specs = sel.profile, list(sel.specs)
    if sequential := sel.settings.sequential is not None:
        from harness.analysis import looks  # scipy: the decisions so far choose the runs

        if tuned:
            raise AblateError(
                f"--tuned with profile {prof_name!r}, a group-sequential design: its looks decide which untuned "
                f"runs to make; run --tuned with a fixed profile, or run {prof_name} without --tuned"
            )
        looks.design_of(sel)  # a first look that could decide nothing is refused
    launch = launch or Launch()
    retry = launch.check(results, workers, threads)
    output.check_results_dir(results, create=not tuned)  # --tuned with no study must leave nothing behind
    output.check_wandb(wandb)
    if tuned:
        specs = tuned_specs(abl, prof_name, specs, results, storage, output.data_dir(), ctx=sel)
        output.check_results_dir(results)
    elif sequential:
        st = looks.state(sel, scan(results, abl.name, prof_name).records if results.is_dir() else [])
        output.console.print(f"{abl.name} / {prof_name}: sequential design, {st.summary()}")
        specs = looks.next_specs(sel, st)
    targets = {name: attempt.target_of(entry.target) for name, entry in abl.tasks.items()}
    chosen = launch.select(specs, results, abl.name, retry, targets=None if tuned else targets)
    todo, retried = chosen.todo, chosen.retry
    placement = launch.place(workers, len(todo), threads, [estimate_seconds(s.config, threads) for s in todo])
    again = f" ({len(retried)} again: --retry {','.join(retry)})" if retried else ""
    sources = dict.fromkeys(rec["reused_from"].rsplit("/", 1)[0] for rec in chosen.reused)  # e.g. NAME/confirm
    copied = f" ({len(chosen.reused)} copied from identical runs of {', '.join(sources)})" if sources else ""
    output.console.print(
        f"{abl.name} / {tuned_profile(prof_name) if tuned else prof_name}: {len(specs)} runs, "
        f"{len(specs) - len(todo) + len(retried)} already in {results}{copied}, {len(todo)} to run{again}"
        + (f" ({launch.describe(placement, threads)}, W&B {wandb})" if todo else "")  # no pool, no W&B run: none
    )

    # the columns of a progress line as wide as this grid's longest task and variant: 80 columns hold it
    task_w = max((len(s.task) for s in todo), default=0)
    variant_w = max((len(s.variant_label) for s in todo), default=0)
    with GridProgress(output.console, todo, results, placement.workers) as progress:

        def on_done(rec: dict[str, Any], done: int, total: int, eta: float) -> None:
            metric = abl.tasks[rec["task"]].primary.metric
            value = (rec.get("metrics") or {}).get(metric)
            shown = f"{metric}={text(value, '.4f')}" if isinstance(value, float) else rec.get("reason") or ""
            output.console.print(
                f"\\[{done}/{total}] {rec['status']:8s} {rec['task']:{task_w}s} {rec['variant_label']:{variant_w}s} "
                f"seed {rec['seed']} {shown} ({rec['wall_time_s']:.0f}s; ETA {clock(eta)}){progress_note(rec)}"
            )
            progress.finished(rec["run_id"])

        records = todo and local.run_grid(  # nothing to run: no pool, no torch
            todo,
            results,
            abl,
            workers=placement.workers,
            threads=threads,
            wandb_mode=wandb,
            data_dir=output.data_dir(),
            on_done=on_done,
            **launch.grid_kwargs(placement, retried),
        )
    from harness.cli.compare import closing_lines, print_tables  # scipy and statsmodels: needed from here on

    print_tables(abl, prof_name, results, primary_only=True, tuned=tuned, ctx=sel, brief=True)
    for line in closing_lines(abl, prof_name, results, sel):
        output.console.print(line, markup=False)
    lines, code = outcome_lines([*chosen.failed_before, *records], results, abl.name, ctx=sel, tuned=tuned)
    for line in lines:  # last: runs that did not finish come before any next step
        output.console.print(line)
    return code
