"""``ablate report``: reports from the store or a data file.

One ablation's markdown report (and its W&B summary run), or with ``--all`` every registered ablation's reports and
their index (docs/reports.md). The one place that computes what a report shows, from the store or a data file
(``--from``); :mod:`harness.report` renders it. The statistics and the report's sections (pandas, scipy, statsmodels)
are imported as a report runs, never with this module.
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.markup import escape

from harness.cli import options as o
from harness.cli import output
from harness.encode import json_safe, short_question
from harness.errors import AblateError, RunStatus
from harness.files import write_atomic
from harness.hints import DEFAULT_REPORTS, DEFAULT_RESULTS, command, results_option
from harness.training.wandb_upload import log_summary_run, summary_dir
from harness.tune.storage import open_storage, sqlite_exists
from harness.tuned import tuned_profile

if TYPE_CHECKING:
    from harness.analysis.comparisons import Analysis
    from harness.experiment.selection import Selection
    from harness.report import index
    from harness.report.guards import Guards
    from harness.report.source import DataFile
    from harness.report.tuning import TuningInputs


@o.guard(
    "interrupted: the report may be incomplete and no run in the store changed; run the same command again to write it"
)
def report_cmd(
    name: Annotated[Optional[str], typer.Argument(help="ablation name or YAML path (not with --all)")] = None,
    overrides: o.MadeWithArg = None,
    profile: o.ProfileOpt = None,
    results_dir: o.ResultsOpt = DEFAULT_RESULTS,
    out: Annotated[
        Path,
        typer.Option(
            parser=o.given("--out", "pass a folder, or leave the option out for reports"),
            help="folder for the markdown and figures",
        ),
    ] = DEFAULT_REPORTS,
    storage: o.StorageOpt = None,
    every: Annotated[
        bool,
        typer.Option("--all", help="every registered ablation, each profile with runs, and OUT/README.md, their index"),
    ] = False,
    wandb: Annotated[
        o.WandbMode,
        typer.Option(
            help="the summary run (comparison tables, figures, verdicts); auto: online when W&B credentials are set "
            "(WANDB_API_KEY or `wandb login`), else off (offline writes it into the store, for `ablate sync`)"
        ),
    ] = o.WandbMode.auto,
    source: o.FromOpt = None,
    plugin: o.PluginOpt = None,
) -> None:
    """Write reports/NAME.md and its PNG figures.

    NAME.PROFILE.md for a non-default profile; NAME[.PROFILE].with-HASH.md for runs made with key=value overrides;
    --all: every registered ablation, and reports/README.md, their index.
    """
    # --all and --from log no W&B run; nor, unless asked (--wandb offline), does a report without credentials:
    # its offline summary run would be written into the store it reads
    mode = o.wandb_mode(wandb, logs=not every and source is None, offline=False)
    if every:
        report_all(results_dir, out, storage, name=name, profile=profile, source=source, wandb=mode)
    else:
        report(name, profile, results_dir, out, storage, overrides or [], wandb=mode, source=source)


def report(
    name: str | None,
    profile: str | None,
    results: Path,
    out: Path,
    storage: str | None = None,
    overrides: list[str] | tuple[str, ...] = (),
    wandb: str = "off",
    source: Path | None = None,
) -> Path:
    """Write the markdown report and its figures; returns its path.

    ``wandb``: also log the W&B summary run (a failure is a warning). ``source``: a data file read instead of the store
    (no data file nor W&B run written; the studies' figures copied from the report folder the file lies in).
    """
    from harness.analysis.guards import declared_guards, guards_of
    from harness.experiment import ablation as ablation_mod
    from harness.report.guards import UNKNOWN
    from harness.report.markdown import report_path
    from harness.report.source import load_source
    from harness.report.tuning import copy_figures
    from harness.store import archive

    if name is None:
        raise AblateError("name the ablation to report (`ablate report NAME`), or pass --all for every registered one")
    if source is not None and wandb != "off":
        raise AblateError(
            f"--from writes no W&B summary run (--wandb {wandb}): a data file is not a store; drop --wandb, "
            "or log one from the store with `ablate report NAME --wandb MODE`"
        )
    output.check_wandb(wandb)  # before the report, as `ablate run` refuses before its runs
    abl = ablation_mod.load(name)
    data = None
    if source is not None:
        data, sel = load_source(
            source, abl, profile, lambda prof: output.selection(abl, prof, overrides, storage=storage, typed=name)
        )
        results = data.store
    else:
        sel = output.selection(abl, profile, overrides, results, storage, typed=name)
        output.check_results_readable(results)
        output.check_store_exists(sel, data_file=archive.existing(report_path(abl, sel.profile, out, sel.overrides)))
        check_not_all_in_flight(sel)
    _check_out(out, "report and its figures", storage)
    guards = guards_of(list(abl.claims), results) if data is None else data.guards
    if guards is None:  # a data file without the controls' outcomes kept beside it: unknown
        guards = declared_guards(list(abl.claims), UNKNOWN)
    with _writing(out):
        path, result, _ = write_report(sel, results, out, guards, storage, data)
    output.console.print(f"wrote {path}")
    if data is not None and data.tuning is not None:
        for fig in copy_figures(data.tuning, Path(source).parent.parent, out):
            output.console.print(
                f"[yellow]warning: {escape(fig)} not found; the Tuning section links it all the same[/]"
            )
    if wandb != "off":  # never with --from (refused above)
        try:
            figures = sorted((Path(out) / "figures").glob(f"{path.stem}-*.png"))
            run_dir = log_summary(result, guards, figures, wandb, sel.overrides)
            output.console.print(f"W&B summary run ({wandb}): {run_dir}")
        except Exception as exc:  # noqa: BLE001 - the report is written; W&B is a mirror of it
            output.console.print(f"[yellow]warning: the W&B summary run was not logged: {type(exc).__name__}: {exc}[/]")
    return path


def check_not_all_in_flight(sel: Selection) -> None:
    """Raise AblateError when the store holds runs in flight but no finished run of the selection.

    Nor a finished run of its tuned profile: a report of them would be empty, and its data file one that ``restore``
    refuses.
    """
    from harness.execution.attempt import unfinished_state
    from harness.store.runs import scan

    results, name, profile = sel.results, sel.name, sel.profile
    if scan(results, name, profile).records or scan(results, name, tuned_profile(profile)).records:
        return
    try:
        folders = sorted(p for p in (results / name / profile).iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return
    running = [(p.name, state[1]) for p in folders if (state := unfinished_state(p))[0] == "running"]
    if running:
        raise AblateError(
            f"no run of {name} / {profile} in {results} has finished yet: {len(running)} in flight "
            f"(e.g. {running[0][0]}, {running[0][1]}); report them once they finish "
            f"(`{sel.command('status')}` shows their progress)"
        )


def write_report(
    sel: Selection, results: Path, out: Path, guards: Guards, storage: str | None = None, data: DataFile | None = None
) -> tuple[Path, Analysis, TuningInputs]:
    """Analyse the selection's runs (the store's, or the data file ``data``'s) and write their report.

    From the store, also its data file ``out/data/NAME[.PROFILE].tar.gz`` and the controls' file beside it. Returns the
    report's path, its analysis and its Tuning section's inputs.
    """
    from harness.analysis.comparisons import analyse
    from harness.report.bench import files as bench_files
    from harness.report.guards import write_guards
    from harness.report.markdown import write_markdown
    from harness.report.tuning import TuningInputs, read_tuning, restored_studies_path, studies_json, tuned_analysis
    from harness.store import archive

    abl, profile = sel.ablation, sel.profile
    guards = {cid: g for cid, g in guards.items() if cid in abl.claims}
    if data is None:
        result, tuning, bench = analyse(sel, results), read_tuning(sel, results, storage, out), Path(results) / "bench"
    else:
        result = analyse(sel, results, found=data.scan)
        tuning, bench = TuningInputs(data.tuning, tuned_analysis(sel, results, data.tuned)), data.bench
    path = write_markdown(sel, result, out, tuning, guards, bench)
    if data is not None:
        return path, result, tuning
    extra = {f"bench/{p.name}": p.read_bytes() for p in bench_files(abl, bench)}
    tuned = []
    if tuning.studies is not None:
        extra[restored_studies_path(Path(), abl.name, profile).as_posix()] = studies_json(tuning.studies)
        tuned = tuning.tuned.scan.records if tuning.tuned is not None else []
    records, problems = [*result.scan.records, *tuned], result.scan.problems
    written = archive.write(archive.data_path(path), results, records, abl.name, profile, problems, extra)
    write_guards(guards, written, abl.name, profile)
    return path, result, tuning


def log_summary(
    analysis: Analysis, guards: Guards, figures: list[Path], mode: str, overrides: Sequence[str] = ()
) -> Path:
    """The W&B summary run of a report: its comparison tables, figures, and claims' verdicts and evidence.

    For runs made with ``overrides``, it is in a folder of their own (as their report's file), so that it never
    replaces the declared grid's summary run.
    """
    from harness.report.markdown import overrides_tag
    from harness.report.sections import verdict

    abl = analysis.ablation
    profiles = {r.profile for r in analysis.scan.records}  # the store's: cpu+tuned for ablate run --tuned
    profile = profiles.pop() if len(profiles) == 1 else analysis.profile
    tables = {
        f"compare/{t.task}/{t.metric}": (
            [str(c) for c in t.frame.columns],
            [[json_safe(v) for v in row] for row in t.frame.itertuples(index=False)],
        )
        for t in analysis.tables
    }
    claims = [[cid, v, "\n".join(ev)] for cid in abl.claims for v, ev in [verdict(cid, analysis, guards)]]
    config = {
        "ablation": abl.model_dump(mode="json"),
        "profile": profile,
        "runs": len(analysis.runs),
        "runs_ok": int((analysis.runs["status"] == RunStatus.OK).sum()),
    }
    folder = summary_dir(analysis.results, abl.name, profile)
    if tag := overrides_tag(overrides):
        folder, config["overrides"] = folder.with_name(f"{folder.name}.{tag}"), list(overrides)
    return log_summary_run(folder, f"{abl.name}/{profile}", config, tables, figures, claims, mode)


@contextlib.contextmanager
def _writing(out: Path) -> Iterator[None]:
    """An OS error while writing under ``--out`` (a full disk, no permission) as one line."""
    try:
        yield
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise AblateError(
            f"cannot write the report under --out {out}: {exc.strerror or exc}{where}; pass a folder you can write to"
        ) from None


def _check_out(out: Path, what: str, storage: str | None) -> None:
    """Refuse, before any figure is written, a bad ``--out`` and an Optuna ``--storage`` that cannot be opened."""
    output.check_out(out, what)
    if storage is not None and sqlite_exists(storage):  # a SQLite file that does not exist: no tuning section
        open_storage(storage)


def report_all(
    results: Path,
    out: Path,
    storage: str | None = None,
    *,
    name: str | None = None,
    profile: str | None = None,
    source: Path | None = None,
    wandb: str = "off",
) -> Path:
    """``ablate report --all``: every registered ablation's reports, the positive controls' page and their index.

    A report per profile with runs of its declared grid; the index is ``out/README.md``; returns the index's path.
    """
    from harness.analysis.guards import evaluate_all, guards_of
    from harness.experiment import ablation as ablation_mod
    from harness.experiment import claims as claims_mod
    from harness.report import index
    from harness.report.guards import markdown as reproductions_markdown
    from harness.store import archive

    if name is not None:
        raise AblateError(f"--all reports every registered ablation; drop {name!r} (or drop --all to report only it)")
    if profile is not None:
        raise AblateError("--all reports every profile with runs; drop --profile")
    if source is not None:
        raise AblateError("--from regenerates one report from its data file; drop --all (or --from)")
    if wandb != "off":
        raise AblateError("--all writes no W&B summary runs; log one with `ablate report NAME --wandb MODE`")
    output.check_results_readable(results)
    _check_out(out, "reports and their figures", storage)
    if not any(
        (Path(results) / n).is_dir() and any(p.is_dir() for p in (Path(results) / n).iterdir())
        for n in ablation_mod.available()
    ):
        restore = ""
        if any((Path(out) / "data").glob(f"*{archive.SUFFIX}")):
            files = shlex.join(["ablate", "restore", str(Path(out) / "data"), *results_option(results)])
            restore = f"; or `{files}` to rebuild it from the data files of the reports in {out}"
        raise AblateError(
            f"no runs of any registered ablation in {results}; run "
            f"`{shlex.join(['ablate', 'run', 'NAME', *results_option(results)])}` first or pass the "
            f"--results-dir it wrote to{restore}"
        )
    with _writing(out):
        evaluated = evaluate_all(results)  # the positive controls first: a claim's verdict waits for its own
        guards = guards_of(list(claims_mod.load_claims()), results, evaluated)
        entries = [_report_ablation(name, results, out, storage, guards) for name in ablation_mod.available()]
        for entry in entries:  # reports already in OUT whose runs are not in this store: linked, not rewritten
            written = {r.path.name for r in entry.reported}
            for old in sorted(Path(out).glob(f"{entry.name}.md")) + sorted(Path(out).glob(f"{entry.name}.*.md")):
                if old.name not in written and ".with-" not in old.name:  # runs made with overrides: not indexed
                    entry.notes.append(
                        f"[{old.stem.partition('.')[2] or _default_profile(entry.name)}]({old.name}): an "
                        "earlier report whose runs are not in this store (not regenerated)"
                    )
        Path(out).mkdir(parents=True, exist_ok=True)
        write_atomic(
            repro := Path(out) / "reproductions.md", reproductions_markdown(evaluated, results).encode("utf-8")
        )
        _echo(f"wrote {repro}")
        write_atomic(path := Path(out) / "README.md", index.index_markdown(entries, results, repro).encode("utf-8"))
    output.console.print(f"wrote {path}")
    return path


def _echo(line: str) -> None:
    output.console.print(escape(line))


def _default_profile(name: str) -> str:
    from harness.experiment import ablation as ablation_mod

    try:
        return ablation_mod.load(name).default_profile
    except AblateError:
        return "default profile"


def _report_ablation(name: str, results: Path, out: Path, storage: str | None, guards: Guards) -> index.Entry:
    from harness.analysis.claims import control_outcomes, in_grid
    from harness.experiment import ablation as ablation_mod
    from harness.experiment import claims as claims_mod
    from harness.experiment.selection import select
    from harness.report import index
    from harness.report.sections import control_text, verdict
    from harness.report.tuning import claim_changes
    from harness.store.runs import scan

    try:
        abl = ablation_mod.load(name)
    except AblateError as exc:
        _echo(f"skipped {name}: {exc}")
        return index.Entry(name, "–", notes=[f"declaration not loadable: {exc}"])
    guarded = list(abl.control.guards) if abl.control is not None else []
    question, control = short_question(abl.question), abl.control is not None
    entry = index.Entry(name, question, list(abl.claims), control=control, guards=guarded)
    claims = claims_mod.load_claims()
    made: dict[str, tuple[Analysis, TuningInputs]] = {}  # per reported profile: its report's, for the verdicts
    held: dict[str, dict[str, int]] = {}  # per reported profile: each claim's evidence entries its grid holds
    for order, (pname, prof) in enumerate(abl.profiles.items()):
        found = scan(results, name, pname)
        if not found.records:
            continue
        try:
            sel = select(abl, pname, [], output.data_dir(), check_data=False, results=results, storage=storage)
        except AblateError as exc:
            entry.notes.append(f"{pname}: not reported ({exc})")
            _echo(f"skipped {name} / {pname}: {exc}")
            continue
        mine = [r for r in found.records if r.run_id in sel.run_ids]
        if not mine:
            entry.notes.append(
                f"{pname}: {len(found.records)} runs made with key=value overrides "
                f"(`{command('report', name, pname, results=results, overrides=('KEY=VALUE', '...'))}`)"
            )
            _echo(f"skipped {name} / {pname}: its {len(found.records)} runs were made with key=value overrides")
            continue
        path, result, tuning = write_report(sel, results, out, guards, storage)
        made[pname] = result, tuning
        _echo(f"wrote {path}")
        newest = max((r.finished_at or "" for r in mine), default="")
        view = sel.ablation
        held[pname] = {cid: sum(in_grid(ev, view, pname) for ev in claims[cid].evidence) for cid in view.claims}
        run_s = sum(r.wall_time_s or 0.0 for r in mine)
        evidence = sum(held[pname].values())  # the latest report is the confirmatory one that tests them most
        entry.reported.append(index.Reported(pname, path, prof.confirmatory, newest, order, evidence, run_s))
    if (latest := entry.latest) is not None:
        result, tuning = made[latest.profile]
        for cid in result.ablation.claims:  # each from the report that tests it most (index.Entry.decided_in)
            where = max(entry.reported, key=lambda r: (r.confirmatory, held[r.profile].get(cid, 0), r == latest))
            entry.verdicts.append((cid, verdict(cid, made[where.profile][0], guards)[0]))
            if where != latest:
                entry.decided_in[cid] = where
        entry.tuning = claim_changes(result.ablation, result, tuning, guards)  # as its Tuning section says it
        judged = made.get(abl.control.profile, (result,))[0] if abl.control is not None else result  # its profile's
        entry.controls = [control_text(c) for c in control_outcomes(judged)]  # as that report says it
        entry.seeds = index.seeds_cell(result)
    return entry
