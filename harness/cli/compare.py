"""``ablate compare`` and ``ablate plan``: what the store says of a grid's comparisons.

``ablate compare``: the comparison tables of a grid from the store (also printed by ``ablate run``); ``ablate plan``:
the seeds each primary comparison needs, from a pilot's spread. The statistics (pandas, scipy, statsmodels) are
imported when a command runs, never with this module.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from harness.cli import options as o
from harness.cli import output
from harness.errors import AblateError
from harness.hints import DEFAULT_REPORTS, DEFAULT_RESULTS
from harness.registry import did_you_mean
from harness.tuned import tuned_profile

if TYPE_CHECKING:
    from harness.analysis.seed_planning import SeedPlan
    from harness.experiment.ablation import Ablation
    from harness.experiment.selection import Selection
    from harness.store.runs import StoreScan


@o.guard()
def compare(
    name: o.NameArg,
    profile: o.ProfileOpt = None,
    results: o.ResultsOpt = DEFAULT_RESULTS,
    metric: Annotated[Optional[str], typer.Option(help="one metric (default: every primary)")] = None,
    fmt: o.FormatOpt = "table",
    tuned: Annotated[bool, typer.Option("--tuned", help="the runs of `ablate run --tuned`")] = False,
    overrides: o.MadeWithArg = None,
    source: o.FromOpt = None,
    plugin: o.PluginOpt = None,
) -> None:
    """The statistical comparison table, from the store (or a report's data file, --from)."""
    # the tables of every primary metric, or of ``metric``
    from harness.experiment import ablation as ablation_mod
    from harness.report.markdown import report_path  # the statistics: pandas, scipy and statsmodels
    from harness.report.source import load_source
    from harness.store import archive

    abl = ablation_mod.load(name)
    found = None
    if source is not None:
        data, sel = load_source(source, abl, profile, lambda p: output.selection(abl, p, overrides, typed=name))
        found, results = (data.tuned if tuned else data.scan), data.store
        if tuned and not found.records:
            raise AblateError(
                f"--from {source}: the data file holds no tuned runs (its report has no Tuning section); drop --tuned"
            )
    else:
        sel = output.selection(abl, profile, overrides, results, typed=name)
        output.check_results_readable(results)
        committed = archive.existing(report_path(abl, sel.profile, DEFAULT_REPORTS, sel.overrides))
        output.check_store_exists(sel, tuned, data_file=committed)
    print_tables(sel, results, metric, fmt, tuned, found)


def print_tables(
    sel: Selection,
    results: Path,
    metric: str | None = None,
    fmt: str = "table",
    tuned: bool = False,
    found: StoreScan | None = None,
    brief: bool = False,
) -> None:
    """Print the primary tables, or those of ``metric`` (``found``: a data file's runs).

    ``fmt="table"`` piped: every column as markdown, or with ``brief`` (``ablate run``) the summary's.
    """
    from harness.analysis.comparisons import analyse
    from harness.experiment.versions import mix_warning
    from harness.report.tables import render, summary_markdown

    store = tuned_profile(sel.profile) if tuned else sel.profile
    result = analyse(sel, results, store_profile=store if tuned else None, found=found)

    # --format json / csv: stdout holds the data alone, so that it parses; the notes go to stderr
    def note(text: str) -> None:  # text may hold a command with [..] (an override): no rich markup
        if fmt in ("table", "md"):
            output.plain(text)
        else:
            print(text, file=sys.stderr)

    if result.foreign:
        note(
            f"({result.foreign} other runs in {results / sel.name / store} were made with other overrides "
            "and are not compared here; pass those key=value overrides to compare them)"
        )
    if result.scan.problems:
        note(f"({len(result.scan.problems)} unreadable store entries left out: see `{sel.command('status')}`)")
    for task, mix in result.mixed_code.items():  # on stderr: --format json/csv stays parseable
        print(f"warning: {mix_warning(task, mix)}", file=sys.stderr)
    if not result.tables:
        note(f"no finished runs of {sel.name} / {store} in {results}")
        return
    if metric is None:
        tables = [t for t in result.tables if t.family.startswith("primary")]
    elif not (tables := [t for t in result.tables if t.metric == metric]):
        known = sorted({t.metric for t in result.tables})
        raise AblateError(f"no results for metric {metric!r}{did_you_mean(metric, known)}; metrics: {', '.join(known)}")
    if not tables:
        note(f"no finished runs of {sel.name} / {sel.profile} in {results}")
        return
    if fmt == "table" and not output.console.is_terminal:  # piped or captured: markdown, not box drawing
        text = summary_markdown(tables) if brief else render(tables, "md")
    else:
        text = render(tables, fmt, output.console)  # text formats verbatim
    output.plain(text)


def closing_lines(abl: Ablation, profile: str, results: Path, ctx: Selection) -> list[str]:
    """What the tables of ``profile`` can say, and the next commands (after a pilot, a confirmatory run)."""
    from harness.report.markdown import report_path

    pilot = not abl.profiles[profile].confirmatory
    if pilot:
        said = (
            f"{profile} is a pilot profile (confirmatory: false): it gives no verdicts, so each reads pilot; Δ "
            "and its 95% CI show how large and how uncertain a difference looks, not whether it is real."
        )
    elif abl.profiles[profile].sequential is not None:
        said = (
            f"{profile} is group-sequential: better, worse or equivalent where the deciding interval (the "
            "t-interval at the look's bound with the bootstrap-t interval) settles it after Holm over the "
            "primary comparisons (docs/sequential.md); an open comparison runs at the next look."
        )
    else:
        said = (
            f"{profile} is a fixed design: better, worse or equivalent where the deciding interval (the "
            "t-interval with the bootstrap-t interval, at one look over every seed) settles it after Holm over "
            "the primary comparisons (docs/statistics.md); inconclusive and underpowered decide nothing at these "
            "seeds."
        )
    step = f"next: `{ctx.command('report')}` writes {report_path(abl, profile, DEFAULT_REPORTS, ctx.overrides)}"
    confirm = next((name for name, prof in abl.profiles.items() if prof.confirmatory), None)
    if pilot and confirm is not None:
        step += (
            f"; `{ctx.command('run', profile=confirm)}` runs the confirmatory "
            f"profile{_cost(abl, confirm, results, ctx)}"
        )
    return ["", said, step]


def _cost(abl: Ablation, profile: str, results: Path, ctx: Selection) -> str:
    """``: 24 runs, 10 in the store; ~14 min for the 14 others on one worker (median 61 s per run of the 10)``."""
    from harness.experiment.selection import select
    from harness.store.runs import scan

    try:
        specs = select(abl, profile, ctx.overrides, check_data=False, will_run=lambda s: False).specs  # a count
    except AblateError:
        return ""
    ids = {s.run_id for s in specs}
    times = [
        r.wall_time_s
        for r in scan(results, abl.name, profile).records
        if r.run_id in ids and r.status.result and r.wall_time_s is not None
    ]
    text = f": {len(specs)} runs"
    if not times:
        return text
    left, median = len(specs) - len(times), statistics.median(times)
    if not left:
        return f"{text}, all in the store"
    eta = f"{left * median:.0f} s" if left * median < 120 else f"{left * median / 60:.0f} min"
    return (
        f"{text}, {len(times)} in the store; ~{eta} for the {left} others on one worker (median "
        f"{median:.0f} s per run of the {len(times)})"
    )


@o.guard()
def plan_cmd(
    name: o.NameArg,
    overrides: o.MadeWithArg = None,
    profile: Annotated[
        Optional[str],
        typer.Option("--profile", "-p", help="the confirmatory profile to plan (default: the ablation's default)"),
    ] = None,
    pilot: Annotated[
        Optional[str],
        typer.Option(
            "--pilot", help="the profile whose runs give the spread (default: the first pilot profile with runs)"
        ),
    ] = None,
    results_dir: o.ResultsOpt = DEFAULT_RESULTS,
    power: Annotated[float, typer.Option(help="target power of each primary comparison")] = 0.8,
    alpha: Annotated[
        float, typer.Option(help="family-wise level of the primary comparisons (divided by their number)")
    ] = 0.05,
    fmt: o.FormatOpt = "table",
    plugin: o.PluginOpt = None,
) -> None:
    """Seeds the confirmatory profile needs to detect each task's smallest effect of interest, from a pilot's spread."""
    plan_seeds(
        name,
        profile,
        pilot,
        results_dir,
        power=power,
        alpha=alpha,
        fmt=fmt,
        overrides=overrides or [],
    )


def plan_seeds(
    name: str,
    profile: str | None,
    pilot: str | None,
    results: Path,
    power: float = 0.8,
    alpha: float = 0.05,
    fmt: str = "table",
    overrides: list[str] | tuple[str, ...] = (),
) -> SeedPlan:
    """``ablate plan``: the seeds each primary comparison needs to detect its task's sesoi, from a pilot's spread.

    The comparisons are those of ``profile`` (default: the declared default); the spread is that of the ``pilot``
    profile's runs (default: the first pilot profile with runs; ``overrides``: those its runs were made with). Prints
    the table and returns the :class:`harness.analysis.seed_planning.SeedPlan`.
    """
    from harness.analysis import seed_planning as planning
    from harness.analysis.comparisons import analyse
    from harness.experiment import ablation as ablation_mod

    abl = ablation_mod.load(name)
    prof_name, prof = abl.profile(profile)
    planning.check_levels(power, alpha)
    if not prof.confirmatory:
        confirm = [n for n, p in abl.profiles.items() if p.confirmatory]
        fix = f"; plan one of {', '.join(confirm)}, e.g. --profile {confirm[0]}" if confirm else ""
        raise AblateError(
            f"ablate plan sizes a confirmatory profile; {abl.name} / {prof_name} is a pilot (confirmatory: false)"
            + (fix or f", and {abl.name} declares no confirmatory profile")
        )
    output.check_results_readable(results)
    target = output.selection(abl, prof_name, overrides, results, typed=name)
    sel = output.selection(abl, planning.pilot_profile(abl, results, pilot, target), overrides, results, typed=name)
    output.check_store_exists(sel, flag="--pilot")
    if sel.settings.plumbing:
        others = [n for n, p in abl.profiles.items() if not (p.confirmatory or p.plumbing)]
        fix = f"; run a pilot ({', '.join(others)}) and pass it as --pilot" if others else ""
        print(
            f"warning: the spread comes from the {sel.profile} profile, whose runs check the plumbing "
            f"and are too short for their spread to mean anything{fix}",
            file=sys.stderr,
        )
    result = analyse(sel, results)
    if not result.scan.records:
        other = (
            f" ({result.foreign} made with other overrides: pass those key=value overrides)" if result.foreign else ""
        )
        raise AblateError(
            f"no pilot runs of {abl.name} / {sel.profile} in {results}{other}; run `{sel.command('run')}` first"
        )
    seeds = planning.seed_plan(target, result, power=power, alpha=alpha)
    if fmt == "table" and not output.console.is_terminal:
        fmt = "md"  # piped or captured: plain markdown instead of box drawing
    if fmt in ("table", "md"):
        output.plain(planning.describe(seeds) + "\n")
    output.plain(planning.render(seeds, fmt))
    return seeds
