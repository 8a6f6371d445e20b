"""The commands that train: ``ablate run``, ``ablate reproduce`` and ``ablate tune``.

``ablate run``: every unfinished run of a grid, with one progress line per finished run and the progress of the runs
in flight, :class:`GridProgress`, then the comparison, whose statistics, scipy, statsmodels and pandas, are imported
only then: a process pool's parent never needs them before. ``ablate reproduce``: the positive controls, published
results reproduced at this scale. ``ablate tune``: one Optuna study per (task, variant) topped up, then a summary.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table as RichTable
from rich.text import Text

from harness.cli import output
from harness.encode import text
from harness.execution import attempt, local
from harness.execution.gpus import check_threads, estimate_seconds
from harness.execution.launch import Launch, outcome_lines, progress_note
from harness.experiment import ablation as ablation_mod
from harness.experiment.grid import RunSpec
from harness.hints import command
from harness.store.runs import read_record, run_dir, scan
from harness.training.progress import EVERY_S, RunProgress, read_progress
from harness.tune import search
from harness.tune.studies import TRIAL_HEARTBEAT_S, plan_studies, tuned_specs
from harness.tuned import tuned_profile

POLL_S = EVERY_S
PLAIN_EVERY_S = 30.0  # seconds between two plain progress lines when the output is not a terminal
PROGRESS_STALE_S = 120.0  # a progress file older than this is an attempt that died, not a run in flight


def clock(seconds: float | None) -> str:
    """``3m05s``; ``?`` when unknown."""
    if seconds is None:
        return "?"
    m, s = divmod(int(seconds + 0.5), 60)
    return f"{m}m{s:02d}s"


def describe(label: str, progress: RunProgress) -> str:
    """``copy sinusoidal s0 1200/3000 loss 1.234 ETA 0m40s`` (``testing`` after the last step)."""
    loss = f" loss {progress.loss:.4g}" if progress.loss is not None else ""
    left = "testing" if progress.step >= progress.total else f"ETA {clock(progress.eta_s())}"
    return f"{label} {progress.step}/{progress.total}{loss} {left}"


class GridProgress:
    """The live progress of ``specs`` on ``console``, a context manager; :meth:`finished` per run.

    The first ``4 x workers`` (at least 16) unfinished runs are polled from their ``progress.json``
    (:mod:`harness.training.progress`): those an executor starts first. In a terminal, rich's live display; piped, a
    plain line every ``PLAIN_EVERY_S`` seconds.

    Args:
        console: where the progress is shown.
        specs: the runs to watch (their ``run_id``, task, variant and seed), in the order an executor starts them.
        results: the run store their folders lie in.
        workers: the runs at once; sets how many runs are polled.
        poll_s: seconds between two polls (default :data:`POLL_S`).
        plain_every_s: seconds between two plain lines when not in a terminal (default :data:`PLAIN_EVERY_S`).
    """

    def __init__(
        self,
        console: Console,
        specs: Sequence[Any],
        results: Path,
        workers: int = 1,
        *,
        poll_s: float | None = None,
        plain_every_s: float | None = None,
    ) -> None:
        self.console = console
        self.poll_s = POLL_S if poll_s is None else poll_s
        self.plain_every_s = PLAIN_EVERY_S if plain_every_s is None else plain_every_s
        self._pending = {  # in order: a dict keeps it as runs leave
            s.run_id: (f"{s.task} {s.variant_label} s{s.seed}", run_dir(results, s.ablation, s.profile, s.run_id))
            for s in specs
        }
        self._window = max(16, 4 * workers)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._live: Live | None = None
        self._bar: Progress | None = None
        self.lines: list[str] = []  # the runs in flight at the last poll, as shown

    def __enter__(self) -> GridProgress:
        if not self._pending:
            return self
        if self.console.is_terminal:
            columns = (BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), "ETA", TimeRemainingColumn())
            self._bar = Progress("runs", *columns, console=self.console)
            self._bar.add_task("grid", total=len(self._pending))
            self._live = Live(self._renderable(), console=self.console, transient=True, refresh_per_second=1)
            self._live.__enter__()
        self._thread = threading.Thread(target=self._watch, name="ablate-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._live is not None:
            self._live.__exit__(*exc)

    def finished(self, run_id: str) -> None:
        """Count the run ``run_id`` as done: it is polled no more and, in a terminal, the bar advances."""
        with self._lock:
            self._pending.pop(run_id, None)
        if self._bar is not None:
            self._bar.advance(self._bar.task_ids[0])

    def poll(self) -> list[str]:
        """The lines of the polled runs with a fresh ``progress.json``, read now; kept as :attr:`lines`."""
        with self._lock:
            window = list(self._pending.values())[: self._window]
        found = ((label, read_progress(folder, stale_s=PROGRESS_STALE_S)) for label, folder in window)
        self.lines = [describe(label, progress) for label, progress in found if progress is not None]
        return self.lines

    def _renderable(self) -> Group:  # in a terminal only: with the bar
        return Group(self._bar, *(Text.from_markup(f"  [dim]{escape(line)}[/]") for line in self.lines))

    def _watch(self) -> None:
        last_plain = time.monotonic()
        while not self._stop.wait(self.poll_s):
            lines = self.poll()
            if self._live is not None:
                self._live.update(self._renderable())
            elif lines and time.monotonic() - last_plain >= self.plain_every_s:
                last_plain = time.monotonic()
                self.console.print(f"running {len(lines)}: " + " | ".join(lines), markup=False, highlight=False)


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
    """Run every unfinished run of the grid; print progress and the comparison.

    Returns 1 when some runs failed, else 0. ``tuned``: at each study's best parameters, stored under
    ``<profile>+tuned`` (:mod:`harness.tune.studies`); a sequential profile runs its next look
    (:mod:`harness.analysis.looks`).
    """
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

        looks.design_of(sel)  # a first look that could decide nothing is refused
    launch = launch or Launch()
    retry = launch.check(results, workers, threads)
    output.check_results_dir(results, create=not tuned)  # --tuned with no study must leave nothing behind
    output.check_wandb(wandb)
    if tuned:  # a tuned grid has no looks: every seed, decided as a fixed design (docs/sequential.md)
        specs = tuned_specs(sel, specs, output.data_dir())
        output.check_results_dir(results)
        if sequential:
            output.console.print(
                f"{abl.name} / {prof_name}: tuned runs of a group-sequential profile run every seed "
                f"({len(sel.settings.seeds)}) and are decided as a fixed design"
            )
    elif sequential:
        st = looks.state(sel, scan(results, abl.name, prof_name).records if results.is_dir() else [])
        output.console.print(f"{abl.name} / {prof_name}: sequential design, {st.summary()}")
        specs = looks.next_specs(sel, st)
    targets = None if tuned else {task: attempt.target_of(entry.target) for task, entry in abl.tasks.items()}
    chosen = launch.select(specs, results, abl.name, retry, targets=targets)
    todo, retried = chosen.todo, chosen.retry
    placement = launch.place(workers, len(todo), threads, [estimate_seconds(s.config, threads) for s in todo])
    again = f" ({len(retried)} again: --retry {','.join(retry)})" if retried else ""
    sources = dict.fromkeys((rec.reused_from or "").rsplit("/", 1)[0] for rec in chosen.reused)  # e.g. NAME/confirm
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

        def on_done(rec: attempt.Progress, done: int, total: int, eta: float) -> None:
            metric = abl.tasks[rec.task].primary.metric
            value = (rec.metrics or {}).get(metric)
            shown = f"{metric}={text(value, '.4f')}" if isinstance(value, float) else rec.reason or ""
            output.console.print(
                f"\\[{done:>{len(str(total))}}/{total}] {rec.status:8s} {rec.task:{task_w}s} "
                f"{rec.variant_label:{variant_w}s} "
                f"seed {rec.seed} {shown} ({rec.wall_time_s or 0:.0f}s; ETA {clock(eta)}){progress_note(rec)}"
            )
            progress.finished(rec.run_id)

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

    print_tables(sel, results, tuned=tuned, brief=True)
    for line in closing_lines(abl, prof_name, results, sel):
        output.console.print(line, markup=False)
    lines, code = outcome_lines([*chosen.failed_before, *records], results, abl.name, ctx=sel, tuned=tuned)
    for line in lines:  # last: runs that did not finish come before any next step
        output.console.print(line)
    return code


def reproduce(
    rid: str | None,
    results: Path,
    *,
    dry_run: bool = False,
    workers: int | None = None,
    threads: int = 1,
    wandb: str = "off",
    launch: Launch | None = None,
) -> int:
    """Run the grids the reproductions read, as ``ablate run`` does, and print each entry's outcome.

    List the grids the entries (or the one named ``rid``) read with the runs missing from ``results``, run those as
    ``ablate run`` does (``dry_run``: list only), print each entry's outcome. Returns 1 when some run failed, else 0 (a
    failed reproduction is a finding, not an error).

    Raises:
        AblateError: bad input (docs/bad-inputs.md), before any grid is read.
    """
    from harness.analysis import guards  # the statistics (scipy): the summary of each entry
    from harness.report.guards import summary_lines

    launch = launch or Launch()
    launch.check(results, workers, threads)
    output.check_wandb(wandb)  # the dry run too: its runs would all fail on wandb.init
    output.check_results_readable(results)  # without dry_run, the runner also checks it is writable
    entries = guards.load_checked(rid)
    grids = guards.grids(entries, results)
    for ablation, profile, planned, missing in grids:
        hint = f" (`{command('run', ablation, profile, results=results)}`)" if missing else ""
        output.console.print(f"{ablation} / {profile}: {planned} runs, {missing} missing{hint}", markup=False)
    codes = [
        run(ablation, profile, [], results, workers=workers, threads=threads, wandb=wandb, launch=launch)
        for ablation, profile, _, missing in grids
        if missing and not dry_run
    ]
    if dry_run and (missing := sum(g[3] for g in grids)):
        output.console.print(f"dry run: {missing} runs would run; nothing ran", markup=False)
    for line in summary_lines([guards.evaluate(e, results) for e in entries]):
        output.console.print(line, markup=False)
    return max(codes, default=0)


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
    """Top up one Optuna study per (task, variant) to ``trials`` finished trials, then print a summary.

    Returns 1 when some study has no complete trial (its line says why), else 0.
    """
    import torch

    check_threads(threads)
    abl = ablation_mod.load(name)
    prof_name, plans = plan_studies(abl, profile, overrides, tasks, variants, output.data_dir())
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
        heartbeat=heartbeat or TRIAL_HEARTBEAT_S,
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
