"""The CLI's subcommands as plain functions (tests call them directly); output through rich.

Each raises :class:`~harness.errors.AblateError` for bad input, before any run starts.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table as RichTable

from harness import ablation as ablation_mod
from harness.errors import AblateError

console = Console(highlight=False, soft_wrap=True)


def _data_dir() -> Path | None:
    env = os.environ.get("ABLATE_DATA_DIR")
    return Path(env) if env else None


def list_all() -> None:
    """Registered ablations and tasks, one line each."""
    for name, path in ablation_mod.available().items():
        abl = ablation_mod.load(str(path))
        n = len(abl.variants())
        console.print(f"[bold]{name}[/]  {n} variants x {len(abl.tasks)} tasks ({', '.join(abl.tasks)}); "
                      f"profiles {', '.join(abl.profiles)} — {abl.question.split('?')[0]}?")
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
        console.print(f"profile {pname}{mark}: {len(p.seeds)} seeds, "
                      f"{'confirmatory' if p.confirmatory else 'pilot'} — {p.description}")
    table = RichTable(title=f"{len(specs)} runs ({prof_name} profile, seeds {prof.seeds})")
    for col in ("run id", "task", "variant", "seed", "d_model", "layers", "steps", "train L", "eval lengths"):
        table.add_column(col)
    for s in specs:
        c = s.config
        table.add_row(s.run_id, s.task, s.variant_label, str(s.seed), str(c.model.d_model), str(c.model.n_layers),
                      str(c.train.steps), str(c.train.seq_len), ",".join(map(str, c.eval_lengths())))
    console.print(table)


def run(name: str, profile: str | None, overrides: list[str], results: Path, *, workers: int | None = None,
        threads: int = 1, wandb: str = "off") -> int:
    """Run every unfinished run of the grid; print progress and the comparison. Returns the exit
    code: 1 when some runs failed (raised), else 0."""
    from harness.executors import run_grid
    from harness.runner import plan
    from harness.store import read_record, run_dir

    abl = ablation_mod.load(name)
    prof_name, specs = plan(abl, profile, overrides, _data_dir())
    _check_results_dir(results)
    todo = [s for s in specs if read_record(run_dir(results, abl.name, prof_name, s.run_id)) is None]
    workers = workers or max(1, min(os.cpu_count() or 1, len(todo)))
    console.print(f"{abl.name} / {prof_name}: {len(specs)} runs, {len(specs) - len(todo)} already in "
                  f"{results}, {len(todo)} to run ({workers} worker(s) x {threads} thread(s), W&B {wandb})")

    with _grid_progress(len(todo)) as advance:
        def on_done(rec: dict[str, Any], done: int, total: int, eta: float) -> None:
            metric = abl.tasks[rec["task"]].primary.metric
            value = (rec.get("metrics") or {}).get(metric)
            shown = f"{metric}={value:.4f}" if isinstance(value, float) else rec.get("reason") or ""
            console.print(f"\\[{done}/{total}] {rec['status']:8s} {rec['task']:16s} {rec['variant_label']:12s} "
                          f"seed {rec['seed']}  {shown}  ({rec['wall_time_s']:.0f}s; ETA {_clock(eta)})")
            advance()

        records = run_grid(todo, results, abl, workers=workers, threads=threads, wandb_mode=wandb,
                           data_dir=_data_dir(), on_done=on_done)
    failed = [r for r in records if r["status"] == "failed"]
    _print_tables(abl, prof_name, results, primary_only=True)
    for rec in failed:
        console.print(f"[red]failed[/] {rec['task']} {rec['variant_label']} seed {rec['seed']}: {rec['reason']} "
                      f"(traceback in {run_dir(results, abl.name, prof_name, rec['run_id']) / 'traceback.txt'})")
    return 1 if failed else 0


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


def status(name: str, profile: str | None, results: Path) -> None:
    """Per task and variant: ok / diverged / failed / pending counts, and unreadable store files."""
    from harness.runner import plan
    from harness.store import read_record, run_dir, scan

    abl = ablation_mod.load(name)
    prof_name, specs = plan(abl, profile, (), _data_dir())
    table = RichTable(title=f"{abl.name} / {prof_name} in {results}")
    for col in ("task", "variant", "ok", "diverged", "failed", "pending"):
        table.add_column(col)
    counts: dict[tuple[str, str], dict[str, int]] = {}
    for s in specs:
        rec = read_record(run_dir(results, abl.name, prof_name, s.run_id))
        c = counts.setdefault((s.task, s.variant_label), {"ok": 0, "diverged": 0, "failed": 0, "pending": 0})
        c[rec["status"] if rec else "pending"] += 1
    for (task, variant), c in counts.items():
        table.add_row(task, variant, *(str(c[k]) for k in ("ok", "diverged", "failed", "pending")))
    console.print(table)
    found = scan(results, abl.name, prof_name)
    for problem in found.problems:
        console.print(f"[yellow]store problem[/] {problem}")
    for folder in found.incomplete:
        console.print(f"interrupted (will rerun): {folder}")


def compare(name: str, profile: str | None, results: Path, metric: str | None = None, fmt: str = "table") -> None:
    """The comparison table(s) from the store: every primary metric, or one ``metric``."""
    abl = ablation_mod.load(name)
    prof_name, _ = abl.profile(profile)
    _print_tables(abl, prof_name, results, primary_only=metric is None, metric=metric, fmt=fmt)


def _print_tables(abl: Any, profile: str, results: Path, primary_only: bool, metric: str | None = None,
                  fmt: str = "table") -> None:
    from harness.analysis import analyse
    from harness.tables import render

    result = analyse(abl, profile, results)
    if not result.tables:
        console.print(f"no finished runs of {abl.name} / {profile} in {results}")
        return
    tables = [t for t in result.tables if (t.family.startswith("primary") if primary_only else True)]
    if metric is not None:
        tables = [t for t in tables if t.metric == metric]
        if not tables:
            known = sorted({t.metric for t in result.tables})
            from harness.registry import did_you_mean

            raise AblateError(f"no results for metric {metric!r}{did_you_mean(metric, known)}; metrics: {', '.join(known)}")
    if not tables:
        console.print(f"no finished runs of {abl.name} / {profile} in {results}")
        return
    if fmt == "table" and not console.is_terminal:
        fmt = "md"  # piped or captured: plain markdown instead of box drawing
    console.print(render(tables, fmt, console))


def report(name: str, profile: str | None, results: Path, out: Path) -> Path:
    """Write the markdown report and its figures; returns the markdown path."""
    from harness.report import write_report

    abl = ablation_mod.load(name)
    prof_name, _ = abl.profile(profile)
    path = write_report(abl, prof_name, results, out, data_dir=_data_dir())
    console.print(f"wrote {path}")
    return path
