"""The lines ``ablate run`` prints about its grid: how it executes, each finished run, and the runs that did not finish.

Execution (:mod:`harness.execution`) returns records and placements; these lines are made from them
here, in rich markup.
"""

from __future__ import annotations

from rich.markup import escape

from harness.errors import RunStatus
from harness.execution.attempt import Progress
from harness.execution.gpus import Placement
from harness.execution.launch import FAILURES
from harness.experiment.selection import Selection
from harness.run_options import RunOptions
from harness.store.runs import run_dir


def describe(options: RunOptions, placement: Placement, threads: int) -> str:
    """``2 worker(s) x 1 thread(s)``, the GPUs and why that many; or the executor."""
    if options.executor == "ray":
        return f"Ray {options.address or 'local instance'}, {threads} CPU(s) per run"
    if options.executor == "slurm":
        return f"SLURM via submitit ({options.cluster}), {threads} CPU(s) per run"
    gpus = f", GPUs {' | '.join(placement.slots)}" if placement.slots else ""
    why = f": {placement.reason}" if placement.reason else ""
    return f"{placement.workers} worker(s) x {threads} thread(s){gpus}{why}"


def outcome_lines(records: list[Progress], ctx: Selection, tuned: bool = False) -> tuple[list[str], int]:
    """Lines about runs that did not finish well (stalled ones too), and the exit code (1 when some failed).

    ``ctx``: the ``ablate run`` command's selection, whose store holds the runs, for the commands the lines suggest.
    """
    lines, rerun = [], ["--tuned"] if tuned else []
    failed = [rec for rec in records if rec.status in FAILURES]
    stalled = [rec for rec in records if rec.status == RunStatus.STALLED]
    for rec in records:
        where = f"{rec.task} {rec.variant_label} seed {rec.seed}"
        if rec.status in FAILURES:
            hint = ""
            if rec.status == RunStatus.FAILED and rec.profile:
                hint = f" (traceback in {run_dir(ctx.results, ctx.name, rec.profile, rec.run_id) / 'traceback.txt'})"
            lines.append(f"[red]{rec.status}[/] {where}: {rec.reason}{hint}")
        elif rec.status == RunStatus.STALLED and len(stalled) == 1:  # a result, as a diverged run is: said, exit code 0
            lines.append(f"[yellow]stalled[/] {where}: {rec.reason}")
        elif rec.status == "leased":
            see = f"`{escape(ctx.command('status'))}` shows when it is done"
            if tuned:
                see = f"run `{escape(ctx.command('run', *rerun, storage=tuned))}` again when it is done"
            lines.append(f"[yellow]skipped[/] {where}: {rec.reason}; {see}")
    if len(stalled) > 1:  # one line, not one a run: a short smoke grid stalls every run
        first = stalled[0]
        lines.append(
            f"[yellow]{len(stalled)} runs stalled[/], e.g. {first.task} {first.variant_label} seed {first.seed}: "
            f"{first.reason}; `{escape(ctx.command('status'))}` lists them"
        )
    if failed:
        statuses = {rec.status for rec in failed}
        # a crashed run is not stored: run picks it up
        stored = [s for s in RunStatus if s.failure and s in statuses]
        retry = ["--retry", ",".join(stored)] if stored else []
        again = f"`{escape(ctx.command('run', *rerun, *retry, storage=tuned))}`"
        why = (
            ": the same config and seed, so a failure the config causes (an overflow, a shape error: see the "
            "traceback) fails again; fix it first"
            if RunStatus.FAILED in statuses
            else ""
        )
        lines.append(f"{len(failed)} run(s) did not finish; {again} runs them again{why}")
    return lines, 1 if failed else 0


def progress_note(rec: Progress) -> str:
    """What a progress line adds about how a run went: resumed, a lease taken over."""
    notes = []
    if rec.resumed_from_step:
        notes.append(f"resumed from step {rec.resumed_from_step}")
    if rec.took_over:
        notes.append(f"took over a stale lease: {rec.took_over.get('reason')}")
    if rec.attempt > 1:
        notes.append(f"attempt {rec.attempt}")
    return f" — {'; '.join(notes)}" if notes else ""
