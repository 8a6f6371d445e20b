"""``ablate reproduce [ID]``: the positive controls, published results reproduced at this scale."""

from __future__ import annotations

from pathlib import Path

from harness.analysis import reproductions as evaluation
from harness.cli import output
from harness.cli.run import run
from harness.execution.launch import Launch
from harness.experiment import reproductions as registry
from harness.hints import command
from harness.report import reproduce as rep


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
    """``ablate reproduce [ID]``: the positive controls of ``harness/experiment/reproductions.yaml``
    (or the one named ``rid``): list each grid they read with the runs missing from ``results``, run
    those (``dry_run``: list only) through :func:`harness.cli.run.run`, the runner of ``ablate run``
    with its options, then print pass / fail / inconclusive per entry
    (:mod:`harness.analysis.reproductions`). Returns the exit code: 1 when some run failed, else 0 (a
    failed reproduction is a finding, not an error).

    Raises:
        AblateError: an unknown ``rid``, a bad registry entry, a bad execution option or ``--wandb
            online`` without credentials (as ``ablate run`` refuses them) or a ``results`` path that is a file or unreadable, all before any
            grid is read or any run starts (nothing written).
    """
    launch = launch or Launch()
    launch.check(results, workers, threads)
    output.check_wandb(wandb)  # the dry run too: its runs would all fail on wandb.init
    output.check_results_readable(results)  # without dry_run, the runner also checks it is writable
    entries = registry.load_checked(rid)
    grids = evaluation.grids(entries, results)
    for g in grids:
        output.console.print(
            f"{g.ablation} / {g.profile}: {g.planned} runs, {g.missing} missing"
            + (f" (`{command('run', g.ablation, g.profile, results=results)}`)" if g.missing else ""),
            markup=False,
        )
    code = 0
    if not dry_run:
        for g in grids:
            if g.missing:
                code = max(
                    code,
                    run(
                        g.ablation, g.profile, [], results, workers=workers, threads=threads, wandb=wandb, launch=launch
                    ),
                )
    elif sum(g.missing for g in grids):
        output.console.print(f"dry run: {sum(g.missing for g in grids)} runs would run; nothing ran", markup=False)
    outcomes = [evaluation.evaluate(e, results) for e in entries]
    for line in rep.summary_lines(outcomes):
        output.console.print(line, markup=False)
    return code
