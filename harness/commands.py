"""The CLI's subcommands as plain functions (tests call them directly); output through rich.

Each raises :class:`~harness.errors.AblateError` for bad input, before any run starts.
"""
from __future__ import annotations

import dataclasses
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table as RichTable

from harness import ablation as ablation_mod
from harness.errors import AblateError
from harness.hints import Context

# Piped or captured output gets a wide virtual terminal so that tables are not squeezed to 80 columns.
console = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)


def _data_dir() -> Path | None:
    env = os.environ.get("ABLATE_DATA_DIR")
    return Path(env) if env else None


def _first_sentence(text: str) -> str:
    """The question up to its first '?' or '.', ending included."""
    m = re.search(r"[?.](\s|$)", text)
    return text[: m.start() + 1] if m else text


def list_all() -> None:
    """Registered ablations and tasks, one line each."""
    for name, path in ablation_mod.available().items():
        abl = ablation_mod.load(str(path))
        n = len(abl.variants())
        console.print(f"[bold]{name}[/]  {n} variants x {len(abl.tasks)} tasks ({', '.join(abl.tasks)}); "
                      f"profiles {', '.join(abl.profiles)} — {_first_sentence(abl.question)}")
    from tasks import TASKS

    for name in TASKS.names():
        cls = TASKS.get(name)
        doc = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        console.print(f"task [bold]{name}[/] (v{cls.version}, {cls.kind}) — {doc}")


def show(name: str, profile: str | None, overrides: list[str]) -> None:
    """The declaration and the expanded grid; nothing runs."""
    from harness.runner import plan

    abl = ablation_mod.load(name)
    prof_name, specs = plan(abl, profile, overrides, _data_dir())
    prof = abl.profiles[prof_name]
    console.print(f"[bold]{abl.name}[/]: {abl.question}")
    if abl.claims:
        console.print(f"claims: {', '.join(abl.claims)}")
    for path, values in abl.axes.items():
        console.print(f"axis {path}: {', '.join(map(str, values))}")
    console.print(f"baseline: {abl.baseline_label}")
    for tname, entry in abl.tasks.items():
        gate = f"; gate {entry.gate.describe()}" if entry.gate else ""
        console.print(f"task {tname}: primary {entry.primary.metric} "
                      f"({'higher' if entry.primary.higher_is_better else 'lower'} is better, "
                      f"smallest effect of interest {entry.primary.sesoi:g}){gate}")
    for pname, p in abl.profiles.items():
        mark = " (selected)" if pname == prof_name else ""
        subset = "".join([f"; only tasks {', '.join(p.only_tasks)}" if p.only_tasks else "",
                          f"; only variants {', '.join(p.only_variants)}" if p.only_variants else ""])
        console.print(f"profile {pname}{mark}: {len(p.seeds)} seeds, "
                      f"{'confirmatory' if p.confirmatory else 'pilot'}{subset} — {p.description}")
    _show_space(abl, prof_name)
    table = RichTable(title=f"{len(specs)} runs ({prof_name} profile, seeds {prof.seeds})")
    for col in ("run id", "task", "variant", "seed", "d_model", "layers", "steps", "train L", "eval lengths"):
        table.add_column(col)
    for s in specs:
        c = s.config
        table.add_row(s.run_id, s.task, s.variant_label, str(s.seed), str(c.model.d_model), str(c.model.n_layers),
                      str(c.train.steps), str(c.train.seq_len), ",".join(map(str, c.eval_lengths())))
    console.print(table)


def _show_space(abl: Any, profile: str) -> None:
    from harness.space import resolve_space

    space = resolve_space(abl, profile)
    console.print(f"tune space ({profile}): " + ("; ".join(f"{k} {v.describe()}" for k, v in space.items()) or "empty"))


def run(name: str, profile: str | None, overrides: list[str], results: Path, *, workers: int | None = None,
        threads: int = 1, wandb: str = "off", tuned: bool = False, storage: str | None = None,
        launch: Any = None) -> int:
    """Run every unfinished run of the grid; print progress and the comparison. Returns the exit
    code: 1 when some runs failed (raised, timed out or crashed), else 0.

    ``launch``: execution options (:class:`harness.launch.Launch`: executor, GPUs, resume,
    checkpoints, run timeout, ``--retry``); checked before any run starts.

    ``tuned``: each (task, variant) at its Optuna study's best parameters (``storage``, default
    ``<results>/optuna.db``), stored under profile ``<profile>+tuned`` (:mod:`harness.tune`)."""
    from harness.executors import run_grid
    from harness.launch import Launch, outcome_lines, progress_note
    from harness.runner import plan

    abl = ablation_mod.load(name)
    prof_name, specs = plan(abl, profile, overrides, _data_dir())
    ctx = Context(name, prof_name, results, tuple(overrides), storage)
    launch = launch or Launch()
    retry = launch.check(results, workers, threads)
    _check_results_dir(results)
    if tuned:
        from harness.tune import tuned_specs

        specs = tuned_specs(abl, prof_name, specs, results, storage, _data_dir(), ctx=ctx)
    todo, retried = launch.select(specs, results, abl.name, retry)
    placement = launch.place(workers, len(todo), threads)
    again = f" ({len(retried)} again: --retry {','.join(retry)})" if retried else ""
    console.print(f"{abl.name} / {prof_name}: {len(specs)} runs, {len(specs) - len(todo) + len(retried)} already in "
                  f"{results}, {len(todo)} to run{again} ({launch.describe(placement, threads)}, W&B {wandb})")

    from harness.encode import text

    with _grid_progress(len(todo)) as advance:
        def on_done(rec: dict[str, Any], done: int, total: int, eta: float) -> None:
            metric = abl.tasks[rec["task"]].primary.metric
            value = (rec.get("metrics") or {}).get(metric)
            shown = f"{metric}={text(value, '.4f')}" if isinstance(value, float) else rec.get("reason") or ""
            console.print(f"\\[{done}/{total}] {rec['status']:8s} {rec['task']:16s} {rec['variant_label']:12s} "
                          f"seed {rec['seed']}  {shown}  ({rec['wall_time_s']:.0f}s; ETA {_clock(eta)}){progress_note(rec)}")
            advance()

        records = run_grid(todo, results, abl, workers=placement.workers, threads=threads, wandb_mode=wandb,
                           data_dir=_data_dir(), on_done=on_done, **launch.grid_kwargs(placement, retried))
    _print_tables(abl, prof_name, results, primary_only=True, tuned=tuned, ctx=ctx)
    lines, code = outcome_lines(records, results, abl.name, ctx=ctx, tuned=tuned)
    for line in lines:
        console.print(line)
    return code


@contextmanager
def _grid_progress(total: int) -> Iterator[Callable[[], None]]:
    """A live grid-level bar (runs done / total, elapsed, ETA) in a terminal; nothing when piped,
    where the per-run lines carry the same figures."""
    if not console.is_terminal or total == 0:
        yield lambda: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn

    with Progress("runs", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), "ETA", TimeRemainingColumn(),
                  console=console, transient=True) as progress:
        bar = progress.add_task("grid", total=total)
        yield lambda: progress.advance(bar)


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds + 0.5), 60)
    return f"{m}m{s:02d}s"


def _check_results_dir(results: Path) -> None:
    if results.exists() and not results.is_dir():
        raise AblateError(f"--results-dir {results} exists and is not a folder; pass a folder path")
    try:
        results.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AblateError(f"cannot create --results-dir {results}: {exc.strerror}") from None
    if not os.access(results, os.W_OK):
        raise AblateError(f"--results-dir {results} is not writable; pass a folder you can write to")


def _check_results_readable(results: Path) -> None:
    """For the commands that read the store: a results path that is a file or cannot be read."""
    if results.exists() and not results.is_dir():
        raise AblateError(f"--results-dir {results} is not a folder; pass the folder `ablate run` wrote to")
    if results.is_dir() and not os.access(results, os.R_OK | os.X_OK):
        raise AblateError(f"--results-dir {results} cannot be read (permission denied); "
                          f"fix its permissions or pass a readable copy")


def status(name: str, profile: str | None, results: Path, overrides: list[str] | tuple[str, ...] = ()) -> None:
    """Per task and variant: ok / diverged / failed / timeout / running / pending counts, the runs
    in progress or interrupted, and every store file that is not a readable run (with its path)."""
    from harness.attempts import unfinished_state
    from harness.runner import plan
    from harness.store import STATUSES, read_record, run_dir, scan

    abl = ablation_mod.load(name)
    prof_name, specs = plan(abl, profile, overrides, _data_dir(), check_data=False)
    _check_results_readable(results)
    columns = (*STATUSES, "running", "pending")
    table = RichTable(title=f"{abl.name} / {prof_name} in {results}")
    for col in ("task", "variant", *columns):
        table.add_column(col)
    counts: dict[tuple[str, str], dict[str, int]] = {}
    notes = []
    for s in specs:
        folder = run_dir(results, abl.name, prof_name, s.run_id)
        rec = read_record(folder)
        state, why = (rec["status"], "") if rec else unfinished_state(folder)
        counts.setdefault((s.task, s.variant_label), dict.fromkeys(columns, 0))[state] += 1
        if rec is None and why != "not started":
            notes.append(f"{state} ({why}): {folder}")
    for (task, variant), c in counts.items():
        table.add_row(task, variant, *(str(c[k]) for k in columns))
    console.print(table)
    found = scan(results, abl.name, prof_name)
    planned = {sp.run_id for sp in specs}
    if other := sum(r.get("run_id") not in planned for r in found.records):
        console.print(f"{other} other finished runs in this folder were made with other overrides "
                      "(pass the same key=value overrides to see them)")
    for problem in found.problems:
        console.print(f"[yellow]store problem[/] {problem}")
    for note in notes:
        console.print(note)


def compare(name: str, profile: str | None, results: Path, metric: str | None = None, fmt: str = "table",
            tuned: bool = False, overrides: list[str] | tuple[str, ...] = (), source: Path | None = None) -> None:
    """The comparison table(s) from the store: every primary metric, or one ``metric``; ``tuned``:
    the runs of ``ablate run --tuned`` instead of the untuned ones; ``source``: a report's data
    file (:mod:`harness.report_data`) read instead of the store."""
    abl = ablation_mod.load(name)
    if source is not None:
        from harness.report_data import load_source

        if tuned:
            raise AblateError("--from reads a report's data file, which holds untuned runs; drop --tuned")
        found, prof_name, store, expected = load_source(
            source, abl, profile, lambda p: _expected_runs(abl, p, overrides, tuned=False))
        _print_tables(abl, prof_name, store, primary_only=metric is None, metric=metric, fmt=fmt,
                      expected=expected, found=found, ctx=Context(name, prof_name, store, tuple(overrides)))
        return
    prof_name, expected = _expected_runs(abl, profile, overrides, tuned)
    ctx = Context(name, prof_name, results, tuple(overrides))
    _check_results_readable(results)
    _check_store_exists(results, abl.name, prof_name, tuned, ctx=ctx)
    _print_tables(abl, prof_name, results, primary_only=metric is None, metric=metric, fmt=fmt, tuned=tuned,
                  expected=expected, ctx=ctx)


def plan_seeds(name: str, profile: str | None, pilot: str | None, results: Path, power: float = 0.8,
               alpha: float = 0.05, fmt: str = "table", overrides: list[str] | tuple[str, ...] = ()) -> Any:
    """``ablate plan``: the seeds each primary comparison of ``profile`` (default: the declared
    default) needs to detect its task's sesoi, from the spread of the ``pilot`` profile's runs
    (default: the first pilot profile with runs; ``overrides``: those its runs were made with).
    Prints the table and returns the :class:`harness.planning.SeedPlan`."""
    from harness import planning
    from harness.analysis import analyse

    abl = ablation_mod.load(name)
    prof_name = abl.profile(profile)[0]
    planning.check_levels(power, alpha)
    _check_results_readable(results)
    ctx = Context(name, prof_name, results, tuple(overrides))
    pilot_name = planning.pilot_profile(abl, results, pilot, ctx=ctx)
    pilot_name, expected = _expected_runs(abl, pilot_name, overrides, tuned=False)
    _check_store_exists(results, abl.name, pilot_name, ctx=dataclasses.replace(ctx, profile=pilot_name))
    result = analyse(abl, pilot_name, results, expected=expected)
    if not result.scan.records:
        other = f" ({result.foreign} made with other overrides: pass those key=value overrides)" if result.foreign else ""
        raise AblateError(f"no pilot runs of {abl.name} / {pilot_name} in {results}{other}; "
                          f"run `{ctx.command('run', profile=pilot_name)}` first")
    seeds = planning.seed_plan(abl, prof_name, result, power=power, alpha=alpha)
    if fmt == "table" and not console.is_terminal:
        fmt = "md"  # piped or captured: plain markdown instead of box drawing
    if fmt in ("table", "md"):
        console.print(planning.describe(seeds) + "\n", markup=False)
    console.print(planning.render(seeds, fmt), markup=False)
    return seeds


def _expected_runs(abl: Any, profile: str | None, overrides: list[str] | tuple[str, ...],
                   tuned: bool) -> tuple[str, set[str] | None]:
    """The profile name and the run ids of the grid these overrides describe (no data needed).
    Tuned runs carry their study's parameters in their ids: None, every record of the folder."""
    from harness.runner import plan

    prof_name, specs = plan(abl, profile, overrides, _data_dir(), check_data=False)
    return prof_name, None if tuned else {s.run_id for s in specs}


def _check_store_exists(results: Path, name: str, profile: str, tuned: bool = False, *, ctx: Context) -> None:
    """The profile's folder must exist; else the ``ablate run`` command (from ``ctx``) that fills it."""
    from harness.tune import tuned_profile

    folders = [results / name / tuned_profile(profile)] if tuned else [results / name / profile,
                                                                       results / name / tuned_profile(profile)]
    folder = folders[0]
    if not any(f.exists() for f in folders):  # a file there is a store problem, reported downstream
        raise AblateError(f"no runs of {name} / {profile}{' (tuned)' if tuned else ''} in {results}: "
                          f"{folder} does not exist; run `{ctx.command('run', *(['--tuned'] if tuned else []), storage=tuned)}` "
                          f"first or pass the --results-dir it wrote to")


def _print_tables(abl: Any, profile: str, results: Path, primary_only: bool, metric: str | None = None,
                  fmt: str = "table", tuned: bool = False, expected: set[str] | None = None,
                  found: Any = None, *, ctx: Context) -> None:
    from harness.analysis import analyse
    from harness.tables import render
    from harness.tune import tuned_profile
    from harness.versions import mix_warning

    store = tuned_profile(profile) if tuned else profile
    result = analyse(abl, profile, results, store_profile=store, expected=expected, found=found)
    # --format json / csv: stdout holds the data alone, so that it parses; the notes go to stderr
    def note(text: str) -> None:  # text may hold a command with [..] (an override): no rich markup
        if fmt in ("table", "md"):
            console.print(text, markup=False)
        else:
            print(text, file=sys.stderr)
    if result.foreign:
        note(f"({result.foreign} other runs in {results / abl.name / store} were made with other "
                      "overrides and are not compared here; pass those key=value overrides to compare them)")
    if result.scan.problems:
        note(f"({len(result.scan.problems)} unreadable store entries left out: see `{ctx.command('status')}`)")
    for task, mix in result.mixed_code.items():  # on stderr: --format json/csv stays parseable
        print(f"warning: {mix_warning(task, mix)}", file=sys.stderr)
    if not result.tables:
        note(f"no finished runs of {abl.name} / {store} in {results}")
        return
    tables = [t for t in result.tables if (t.family.startswith("primary") if primary_only else True)]
    if metric is not None:
        tables = [t for t in tables if t.metric == metric]
        if not tables:
            known = sorted({t.metric for t in result.tables})
            from harness.registry import did_you_mean

            raise AblateError(f"no results for metric {metric!r}{did_you_mean(metric, known)}; metrics: {', '.join(known)}")
    if not tables:
        note(f"no finished runs of {abl.name} / {profile} in {results}")
        return
    if fmt == "table" and not console.is_terminal:
        fmt = "md"  # piped or captured: plain markdown instead of box drawing
    console.print(render(tables, fmt, console), markup=fmt == "table")  # text formats verbatim


def report(name: str | None, profile: str | None, results: Path, out: Path, storage: str | None = None,
           overrides: list[str] | tuple[str, ...] = (), wandb: str = "off", source: Path | None = None) -> Path:
    """Write the markdown report and its figures; returns the markdown path. ``storage``: the
    Optuna storage of the tuning section (default ``<results>/optuna.db`` when it exists).
    ``wandb`` (off | offline | online): also log the W&B summary run of the ablation and profile
    (:mod:`harness.wandb_summary`); a W&B failure is a warning, the report stands. ``source``: a
    report's data file read instead of the store (:mod:`harness.report_data`): the same report, no
    data file and no W&B run written."""
    from harness.analysis import analyse
    from harness.report import write_report

    if name is None:
        raise AblateError("name the ablation to report (`ablate report NAME`), or pass --all for every registered one")
    abl = ablation_mod.load(name)
    found = None
    if source is not None:
        from harness.report_data import load_source

        found, prof_name, results, expected = load_source(
            source, abl, profile, lambda p: _expected_runs(abl, p, overrides, tuned=False))
    else:
        prof_name, expected = _expected_runs(abl, profile, overrides, tuned=False)
        _check_results_readable(results)
        _check_store_exists(results, abl.name, prof_name, ctx=Context(name, prof_name, results, tuple(overrides), storage))
    if out.exists() and not out.is_dir():
        raise AblateError(f"--out {out} exists and is not a folder; pass a folder for the report and its figures")
    _check_out_parent(out)
    _check_storage(storage)
    result = analyse(abl.for_profile(prof_name), prof_name, results, expected=expected, found=found)  # report and W&B share it
    path = write_report(abl, prof_name, results, out, data_dir=_data_dir(), storage=storage,
                        expected=expected, overrides=list(overrides), result=result, data=found is None)
    console.print(f"wrote {path}")
    if wandb != "off" and found is None:
        from harness.wandb_summary import log_report

        try:
            run_dir = log_report(abl, prof_name, results, out, expected=expected, mode=wandb, analysis=result)
            console.print(f"W&B summary run ({wandb}): {run_dir}")
        except Exception as exc:  # noqa: BLE001 - the report is written; W&B is a mirror of it
            console.print(f"[yellow]warning: the W&B summary run was not logged: {type(exc).__name__}: {exc}[/]")
    return path


def _check_out_parent(out: Path) -> None:
    """``--out`` that cannot be created: a file on its path (checked without creating anything)."""
    blocker = next((p for p in Path(out).absolute().parents if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise AblateError(f"cannot create --out {out}: {blocker} is a file, not a folder; pass a folder path")


def _check_storage(storage: str | None) -> None:
    """An Optuna ``--storage`` given to a report: opened now, so that a bad URL, a missing driver
    or an unreachable database is refused before any figure is written."""
    if storage is None:
        return
    if not storage.strip():
        raise AblateError("--storage is empty; pass a database URL (e.g. sqlite:///results/optuna.db) or leave it "
                          "out for RESULTS/optuna.db")
    from harness.tune_storage import open_storage, sqlite_exists

    if sqlite_exists(storage):  # a SQLite file that does not exist: no tuning section, nothing to open
        open_storage(storage)


def report_all(results: Path, out: Path, storage: str | None = None, *, name: str | None = None,
               profile: str | None = None) -> Path:
    """``ablate report --all``: the report of every registered ablation for each profile with
    runs, and ``out/README.md``, their index (:mod:`harness.index`); returns the index's path.
    ``name`` and ``profile`` are refused: --all means every ablation and every profile."""
    from rich.markup import escape

    from harness.index import report_all as write_all

    if name is not None:
        raise AblateError(f"--all reports every registered ablation; drop {name!r} (or drop --all to report only it)")
    if profile is not None:
        raise AblateError("--all reports every profile with runs; drop --profile")
    _check_results_readable(results)
    if out.exists() and not out.is_dir():
        raise AblateError(f"--out {out} exists and is not a folder; pass a folder for the reports and their figures")
    _check_out_parent(out)
    _check_storage(storage)
    path = write_all(results, out, data_dir=_data_dir(), storage=storage, echo=lambda line: console.print(escape(line)))
    console.print(f"wrote {path}")
    return path


def tune(name: str, profile: str | None, overrides: list[str], results: Path, *, trials: int,
         tasks: list[str] | None = None, variants: list[str] | None = None, storage: str | None = None,
         pruner: str = "median", threads: int = 1, heartbeat: int | None = None) -> int:
    """Top up one Optuna study per (task, variant) to ``trials`` finished trials, then print a
    summary. Returns 1 when some study has no complete trial (its line says why), else 0."""
    import torch
    from rich.markup import escape

    from harness import tune as tune_mod
    from harness.encode import text

    abl = ablation_mod.load(name)
    prof_name, plans = tune_mod.plan_studies(abl, profile, overrides, tasks, variants, _data_dir())
    if storage is None:  # the default storage lives in the results directory
        _check_results_dir(results)
    torch.set_num_threads(threads)
    done = tune_mod.tune(abl, prof_name, plans, results, trials=trials, overrides=overrides,
                         storage=storage, data_dir=_data_dir(), pruner=pruner,
                         heartbeat=heartbeat or tune_mod.HEARTBEAT_S, echo=lambda line: console.print(escape(line)))
    table = RichTable(title="tuning (objective on the validation split)")
    for col in ("study", "complete", "pruned", "failed (diverged)", "best value", "best parameters"):
        table.add_column(col)
    empty = []
    for study_plan, c in done:
        best = text(c["best_value"])  # – when there is none, ∞ when infinite
        params = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in (c["best_params"] or {}).items())
        table.add_row(study_plan.name, str(c["complete"]), str(c["pruned"]), f"{c['failed']} ({c['diverged']})", best, params)
        if c["best_value"] is None:
            empty.append((study_plan.name, c))
    if done:
        console.print(table)
    for study_name, c in empty:
        console.print(f"[red]no complete trial[/] in {study_name}: {c['pruned']} pruned, {c['failed']} failed"
                      + (f" (last failure: {c['last_reason']})" if c["last_reason"] else "")
                      + f"; `{escape(Context(name, prof_name, results, tuple(overrides), storage).command('run', '--tuned', storage=True))}` "
                      "will refuse this variant")
    return 1 if empty else 0


def reproduce(rid: str | None, results: Path, *, dry_run: bool = False, workers: int | None = None,
              threads: int = 1, wandb: str = "off", launch: Any = None) -> int:
    """``ablate reproduce [ID]``: the positive controls of ``harness/reproductions.yaml`` (or the
    one named ``rid``): list each grid they read with the runs missing from ``results``, run those
    (``dry_run``: list only) through :func:`run`, the runner of ``ablate run`` with its options,
    then print pass / fail / inconclusive per entry (:mod:`harness.reproduce`). Returns the exit
    code: 1 when some run failed, else 0 (a failed reproduction is a finding, not an error)."""
    from harness import reproduce as rep

    entries = rep.load_checked(rid)
    grids = rep.grids(entries, results)
    for g in grids:
        console.print(f"{g.ablation} / {g.profile}: {g.planned} runs, {g.missing} missing"
                      + (f" (`ablate run {g.ablation} --profile {g.profile}`)" if g.missing else ""), markup=False)
    code = 0
    if not dry_run:
        for g in grids:
            if g.missing:
                code = max(code, run(g.ablation, g.profile, [], results, workers=workers, threads=threads,
                                     wandb=wandb, launch=launch))
    elif sum(g.missing for g in grids):
        console.print(f"dry run: {sum(g.missing for g in grids)} runs would run; nothing ran", markup=False)
    outcomes = [rep.evaluate(e, results) for e in entries]
    for line in rep.summary_lines(outcomes):
        console.print(line, markup=False)
    return code
