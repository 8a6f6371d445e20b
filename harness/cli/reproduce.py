"""``ablate reproduce [ID]``: the positive controls, published results reproduced at this scale."""

from __future__ import annotations

from pathlib import Path

from harness.analysis import guards
from harness.cli import output
from harness.cli.run import run
from harness.execution.launch import Launch
from harness.hints import command
from harness.report.guards import summary_lines


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
    """List the grids the entries (or the one named ``rid``) read with the runs missing from
    ``results``, run those as ``ablate run`` does (``dry_run``: list only), print each entry's outcome.
    Returns 1 when some run failed, else 0 (a failed reproduction is a finding, not an error). Bad
    input (docs/bad-inputs.md) raises AblateError before any grid is read."""
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
