"""The ``ablate`` command line: a thin typer shell over plain functions, one module per command
group (:mod:`harness.cli.inspect`, ``run``, ``compare``, ``report``, ``plan``, ``tune``, ``bench``,
``check``).

Bad input (unknown names, ill-typed overrides, impossible lengths, missing data) prints one
message and exits with code 2 before any run starts. ``ablate run`` exits with 1 when some runs
failed (raised), 0 otherwise (diverged runs are outcomes, recorded and reported).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup

from harness.bounds import INT_MAX

CLOSED_PIPE_EXIT = 141
"""The exit status of a command whose output pipe closed (``ablate list | head -1``): 128 + SIGPIPE,
what the shell reports for ``git log | head -1`` or ``seq 1 1000000 | head -1``."""


@contextmanager
def _quiet_when_the_reader_leaves() -> Iterator[None]:
    """A closed stdout pipe ends the command quietly with :data:`CLOSED_PIPE_EXIT`: no traceback, no
    message (click's own handler exits 1). What is still buffered goes to /dev/null, so that the
    interpreter's last flush does not fail either."""
    try:
        yield
    except BrokenPipeError:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):  # a stdout without a file descriptor
            pass
        raise typer.Exit(CLOSED_PIPE_EXIT) from None


class _Commands(TyperGroup):
    """The ``ablate`` command group: every command's parsing (``--help`` prints while parsing) and
    run, its output flushed before it returns, under :func:`_quiet_when_the_reader_leaves`."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with _quiet_when_the_reader_leaves():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with _quiet_when_the_reader_leaves():
            try:
                return super().invoke(ctx)
            finally:
                sys.stdout.flush()  # a closed pipe is found here, not at the interpreter's exit


app = typer.Typer(
    cls=_Commands,
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Controlled, repeated, statistically honest ablations of Transformer design choices.",
)


def _refuse(message: str) -> None:
    """Bad input found while the command line is parsed: one ``error:`` line, exit code 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def _given(flag: str, fix: str, convert: Callable[[str], Any] = Path) -> Callable[[Any], Any]:
    """The parser of a path option ``flag`` (a folder, a file, a database URL): an empty or blank
    value (``--results-dir ""``, an unset shell variable) is refused with ``fix`` before anything
    runs, never read as ``Path("")``, which is the current folder; an existing path that cannot be
    read is refused as typer's own ``Path`` type did, in one line."""

    def parse(value: Any) -> Any:
        if not isinstance(value, str):  # the option's default
            return value
        if not value.strip():
            why = (
                ""
                if convert is not Path
                else f" (only blanks: {value!r})"
                if value
                else " (it would mean the current folder)"
            )
            _refuse(f"{flag} is empty{why}; {fix}")
        if convert is Path and _exists(value) and not os.access(value, os.R_OK):  # as click.Path(readable=True)
            _refuse(f"{flag} {value} is not readable (permission denied); fix its permissions or pass a readable copy")
        return convert(value)

    return parse


def _exists(path: str) -> bool:
    try:
        os.stat(path)
    except OSError:
        return False
    return True


ProfileOpt = Annotated[
    Optional[str],
    typer.Option(
        "--profile",
        "-p",
        help="smoke | cpu | confirm | gpu, or another the ablation declares (default: the ablation's default_profile)",
    ),
]
ResultsOpt = Annotated[
    Path,
    typer.Option(
        "--results-dir",
        parser=_given("--results-dir", "pass the run store's folder, or leave the option out for results"),
        help="run store",
    ),
]
RESULTS = Path("results")
NameArg = Annotated[str, typer.Argument(help="ablation name or YAML path")]
OverridesArg = Annotated[Optional[list[str]], typer.Argument(help="key=value config overrides, e.g. model.d_model=128")]
MadeWithArg = Annotated[Optional[list[str]], typer.Argument(help="the key=value overrides the runs were made with")]
WorkersOpt = Annotated[
    Optional[int],
    typer.Option(
        min=1,
        max=INT_MAX,
        help="runs at once (default: one per GPU slot; on CPU, cores / --threads, at most the runs to do, "
        "or 1 when the grid's estimated time is too short to pay for a process pool, e.g. a smoke grid)",
    ),
]
ThreadsOpt = Annotated[int, typer.Option(min=1, max=INT_MAX, help="torch threads per run")]
RunTimeoutOpt = Annotated[
    Optional[float], typer.Option(help="seconds; a run over it is stopped and recorded as timeout")
]
FromOpt = Annotated[
    Path | None,
    typer.Option(
        "--from",
        parser=_given("--from", "pass a report's data file, e.g. --from reports/data/NAME.tar.gz"),
        help="a report's data file (reports/data/NAME.PROFILE.tar.gz) read instead of the store",
    ),
]
PluginOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--plugin",
        help="a plugin to load first: an importable module or a .py file (repeatable); "
        "installed plugins (entry points in ablate.plugins) load by themselves",
    ),
]
StorageOpt = Annotated[
    Optional[str],
    typer.Option(
        parser=_given(
            "--storage",
            "pass a database URL (e.g. sqlite:///results/optuna.db) or leave it out for RESULTS/optuna.db",
            str,
        ),
        help="Optuna storage URL (default sqlite:///RESULTS/optuna.db; postgresql+psycopg2://user:pw@host/db for many workers)",
    ),
]


class WandbMode(str, Enum):
    auto = "auto"
    off = "off"
    offline = "offline"
    online = "online"


WandbOpt = Annotated[
    WandbMode,
    typer.Option(help="auto: online when W&B credentials are set (WANDB_API_KEY or `wandb login`), else offline"),
]


class Executor(str, Enum):
    local = "local"
    ray = "ray"
    slurm = "slurm"


class Format(str, Enum):
    table = "table"
    md = "md"
    csv = "csv"
    json = "json"


FormatOpt = Annotated[Format, typer.Option("--format")]


INTERRUPTED_RUNS = "interrupted: finished runs are in the store; run the same command again to continue"
INTERRUPTED_TRIALS = (
    "interrupted: finished trials are in the storage (the interrupted one is not counted); "
    "run the same command again to continue"
)
INTERRUPTED_REPORT = (
    "interrupted: the report may be incomplete and no run in the store changed; run the same command again to write it"
)


def _guard(fn, *args, plugins: list[str] | None = None, on_interrupt: str = "interrupted", **kwargs):
    """Run ``fn``; bad input exits 2 with one line. ``plugins``: a command that plans or runs loads
    the installed plugins and its ``--plugin`` values first (None: a command that loads none).
    ``on_interrupt``: the line Ctrl-C prints (exit 130), what is kept and how to continue."""
    from harness.errors import AblateError

    try:
        if plugins is not None:
            from harness.experiment import plugins as plugin_loader

            plugin_loader.load_for_command(plugins)
        return fn(*args, **kwargs)
    except AblateError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        typer.echo(on_interrupt, err=True)
        raise typer.Exit(130) from None


@app.command("list")
def list_cmd(
    components: Annotated[
        bool, typer.Option("--components", help="also every component family (position, kernel, norm, ...)")
    ] = False,
    plugin: PluginOpt = None,
) -> None:
    """Registered ablations, tasks and plugins, one line each; plugin entries marked with their package."""
    from harness.cli import inspect as inspect_cmd

    _guard(inspect_cmd.list_all, components=components, plugins=plugin or [])


@app.command()
def show(
    name: NameArg,
    profile: ProfileOpt = None,
    overrides: OverridesArg = None,
    plugin: PluginOpt = None,
) -> None:
    """An ablation's question, claims, axes, profiles and its expanded grid (nothing runs)."""
    from harness.cli import inspect as inspect_cmd

    _guard(inspect_cmd.show, name, profile, overrides or [], plugins=plugin or [])


@app.command()
def schema(
    markdown: Annotated[
        bool, typer.Option("--markdown", help="the reference page of ablation files (docs/ablation-files.md) instead")
    ] = False,
    plugin: PluginOpt = None,
) -> None:
    """The JSON Schema of ablation files, with the registered names (for editors; shipped as
    harness/experiment/ablation.schema.json)."""
    from harness.cli import inspect as inspect_cmd

    _guard(inspect_cmd.schema, markdown=markdown, echo=typer.echo, plugins=plugin or [])


@app.command()
def run(
    name: NameArg,
    overrides: OverridesArg = None,
    profile: ProfileOpt = None,
    results_dir: ResultsOpt = RESULTS,
    workers: WorkersOpt = None,
    threads: ThreadsOpt = 1,
    wandb: WandbOpt = WandbMode.auto,
    tuned: Annotated[
        bool,
        typer.Option(
            "--tuned", help="each variant at its study's best parameters (ablate tune); stored as profile P+tuned"
        ),
    ] = False,
    storage: StorageOpt = None,
    executor: Annotated[
        Executor,
        typer.Option(help="local: this machine (--workers); ray: a Ray cluster; slurm: SLURM jobs through submitit"),
    ] = Executor.local,
    address: Annotated[
        Optional[str],
        typer.Option(help="Ray cluster to connect to (auto, HOST:PORT, ray://HOST:10001); default: a local instance"),
    ] = None,
    gpus_per_run: Annotated[
        Optional[int],
        typer.Option(help="GPUs per run; default 1 when GPUs are visible (one worker per GPU), 0: CPU only"),
    ] = None,
    devices: Annotated[str, typer.Option(help="Lightning devices for one run (e.g. 2, with --strategy ddp)")] = "1",
    strategy: Annotated[str, typer.Option(help="Lightning strategy for one run")] = "auto",
    resume: Annotated[
        bool, typer.Option("--resume/--no-resume", help="continue interrupted runs from their last checkpoint")
    ] = True,
    keep_checkpoints: Annotated[
        bool, typer.Option("--keep-checkpoints", help="keep checkpoints of finished runs")
    ] = False,
    checkpoint_every: Annotated[
        float,
        typer.Option(help="seconds between two checkpoints of a run, written at validation passes (0: at every pass)"),
    ] = 120.0,
    run_timeout: RunTimeoutOpt = None,
    retry: Annotated[
        Optional[str], typer.Option(help="also rerun finished runs with these statuses, e.g. failed,diverged,timeout")
    ] = None,
    claim_timeout: Annotated[
        float,
        typer.Option(help="seconds without a heartbeat after which another process's claim on a run is taken over"),
    ] = 600.0,
    slurm_partition: Annotated[Optional[str], typer.Option(help="SLURM partition (--executor slurm)")] = None,
    slurm_time: Annotated[
        Optional[int], typer.Option(min=1, max=INT_MAX, help="SLURM time limit per run, minutes (default 60)")
    ] = None,
    submitit_cluster: Annotated[
        str, typer.Option(help="slurm; or local / debug: the same submitit jobs without SLURM")
    ] = "slurm",
    plugin: PluginOpt = None,
) -> None:
    """Train every run of the grid not yet in the store, then print the comparison table."""
    from harness.cli import run as run_cmd
    from harness.execution.cluster import Engine
    from harness.execution.launch import Launch
    from harness.execution.run_folder import RunOptions

    launch = Launch(
        options=RunOptions(
            resume=resume,
            keep_checkpoints=keep_checkpoints,
            checkpoint_every=checkpoint_every,
            run_timeout=run_timeout,
            claim_timeout=claim_timeout,
            devices=int(devices) if devices.isdigit() else devices,
            strategy=strategy,
        ),
        engine=Engine(
            executor.value, address=address, partition=slurm_partition, time_min=slurm_time, cluster=submitit_cluster
        ),
        gpus_per_run=gpus_per_run,
        retry=retry,
    )
    code = _guard(
        run_cmd.run,
        name,
        profile,
        overrides or [],
        results_dir,
        workers=workers or None,
        threads=threads,
        wandb=_wandb_mode(wandb),
        tuned=tuned,
        storage=storage,
        launch=launch,
        plugins=plugin or [],
        on_interrupt=INTERRUPTED_RUNS,
    )
    raise typer.Exit(code)


@app.command()
def status(
    name: str,
    overrides: MadeWithArg = None,
    profile: ProfileOpt = None,
    results_dir: ResultsOpt = RESULTS,
    plugin: PluginOpt = None,
) -> None:
    """Done / failed / diverged / pending, per variant and task."""
    from harness.cli import inspect as inspect_cmd

    _guard(inspect_cmd.status, name, profile, results_dir, overrides or [], plugins=plugin or [])


@app.command()
def compare(
    name: str,
    overrides: MadeWithArg = None,
    profile: ProfileOpt = None,
    results_dir: ResultsOpt = RESULTS,
    metric: Annotated[Optional[str], typer.Option(help="one metric (default: every primary)")] = None,
    fmt: FormatOpt = Format.table,
    tuned: Annotated[bool, typer.Option("--tuned", help="the runs of `ablate run --tuned`")] = False,
    source: FromOpt = None,
    plugin: PluginOpt = None,
) -> None:
    """The statistical comparison table, from the store (or a report's data file, --from)."""
    from harness.cli import compare as compare_cmd

    _guard(
        compare_cmd.compare,
        name,
        profile,
        results_dir,
        metric=metric,
        fmt=fmt.value,
        tuned=tuned,
        overrides=overrides or [],
        source=source,
        plugins=plugin or [],
    )


@app.command()
def report(
    name: Annotated[Optional[str], typer.Argument(help="ablation name or YAML path (not with --all)")] = None,
    overrides: MadeWithArg = None,
    profile: ProfileOpt = None,
    results_dir: ResultsOpt = RESULTS,
    out: Annotated[
        Path,
        typer.Option(
            parser=_given("--out", "pass a folder, or leave the option out for reports"),
            help="folder for the markdown and figures",
        ),
    ] = Path("reports"),
    storage: StorageOpt = None,
    every: Annotated[
        bool,
        typer.Option("--all", help="every registered ablation, each profile with runs, and OUT/README.md, their index"),
    ] = False,
    wandb: Annotated[
        WandbMode,
        typer.Option(
            help="the summary run (comparison tables, figures, verdicts); "
            "auto: online when W&B credentials are set (WANDB_API_KEY or `wandb login`), else offline"
        ),
    ] = WandbMode.auto,
    source: FromOpt = None,
    plugin: PluginOpt = None,
) -> None:
    """Write reports/NAME.md (NAME.PROFILE.md for a non-default profile) and its PNG figures;
    --all: every registered ablation, and reports/README.md, their index."""
    from harness.cli import report as report_cmd

    if every:
        _guard(
            report_cmd.report_all,
            results_dir,
            out,
            storage=storage,
            name=name,
            profile=profile,
            source=source,
            wandb=None if wandb is WandbMode.auto else wandb.value,
            plugins=plugin or [],
            on_interrupt=INTERRUPTED_REPORT,
        )
        return
    _guard(
        report_cmd.report,
        name,
        profile,
        results_dir,
        out,
        storage=storage,
        overrides=overrides or [],
        wandb="off" if source is not None and wandb is WandbMode.auto else _wandb_mode(wandb),  # --from: no W&B
        source=source,
        plugins=plugin or [],
        on_interrupt=INTERRUPTED_REPORT,
    )


@app.command()
def reproduce(
    rid: Annotated[
        str | None,
        typer.Argument(metavar="ID", help="one entry of harness/experiment/reproductions.yaml (default: every one)"),
    ] = None,
    results_dir: ResultsOpt = RESULTS,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="list the grids and the runs missing; run nothing")
    ] = False,
    workers: WorkersOpt = None,
    threads: ThreadsOpt = 1,
    wandb: WandbOpt = WandbMode.auto,
    run_timeout: RunTimeoutOpt = None,
    plugin: PluginOpt = None,
) -> None:
    """Positive controls: run what the published results of harness/experiment/reproductions.yaml need (as
    `ablate run` does) and print pass / fail / inconclusive per entry."""
    from harness.cli import reproduce as reproduce_cmd
    from harness.execution.launch import Launch
    from harness.execution.run_folder import RunOptions

    launch = Launch(options=RunOptions(run_timeout=run_timeout))
    code = _guard(
        reproduce_cmd.reproduce,
        rid,
        results_dir,
        dry_run=dry_run,
        workers=workers,
        threads=threads,
        wandb=_wandb_mode(wandb),
        launch=launch,
        plugins=plugin or [],
        on_interrupt=INTERRUPTED_RUNS,
    )
    raise typer.Exit(code)


@app.command("plan")
def plan_cmd(
    name: NameArg,
    overrides: MadeWithArg = None,
    profile: Annotated[
        Optional[str],
        typer.Option("--profile", "-p", help="the confirmatory profile to plan (default: the ablation's default)"),
    ] = None,
    pilot: Annotated[
        Optional[str],
        typer.Option(
            "--from", help="the profile whose runs give the spread (default: the first pilot profile with runs)"
        ),
    ] = None,
    results_dir: ResultsOpt = RESULTS,
    power: Annotated[float, typer.Option(help="target power of each primary comparison")] = 0.8,
    alpha: Annotated[
        float, typer.Option(help="family-wise level of the primary comparisons (divided by their number)")
    ] = 0.05,
    fmt: FormatOpt = Format.table,
    plugin: PluginOpt = None,
) -> None:
    """Seeds the confirmatory profile needs to detect each task's smallest effect of interest, from a pilot's spread."""
    from harness.cli import plan as seeds_cmd

    _guard(
        seeds_cmd.plan_seeds,
        name,
        profile,
        pilot,
        results_dir,
        power=power,
        alpha=alpha,
        fmt=fmt.value,
        overrides=overrides or [],
        plugins=plugin or [],
    )


class Pruner(str, Enum):
    median = "median"
    hyperband = "hyperband"
    none = "none"


@app.command()
def tune(
    name: NameArg,
    overrides: OverridesArg = None,
    profile: ProfileOpt = None,
    trials: Annotated[
        int,
        typer.Option(
            min=1, max=INT_MAX, help="finished trials (complete + pruned + failed; not one stopped by Ctrl-C) per study"
        ),
    ] = 20,
    variant: Annotated[
        Optional[list[str]], typer.Option(help="only variants with this axis value, e.g. position=rope (repeatable)")
    ] = None,
    task: Annotated[Optional[list[str]], typer.Option(help="only this task (repeatable)")] = None,
    storage: StorageOpt = None,
    results_dir: ResultsOpt = RESULTS,
    pruner: Annotated[Pruner, typer.Option(help="Optuna pruner on the validation metric at L")] = Pruner.median,
    threads: Annotated[int, typer.Option(min=1, max=INT_MAX, help="torch threads for this worker")] = 1,
    heartbeat: Annotated[
        Optional[int],
        typer.Option(
            min=1, max=INT_MAX, help="seconds between heartbeats; a trial silent 3x as long is failed (default 10)"
        ),
    ] = None,
    plugin: PluginOpt = None,
) -> None:
    """Optuna search per (task, variant), resumable; run several at once on one --storage for many workers."""
    from harness.cli import tune as tune_cmd

    code = _guard(
        tune_cmd.tune,
        name,
        profile,
        overrides or [],
        results_dir,
        trials=trials,
        tasks=task or None,
        variants=variant or None,
        storage=storage,
        pruner=pruner.value,
        threads=threads,
        heartbeat=heartbeat,
        plugins=plugin or [],
        on_interrupt=INTERRUPTED_TRIALS,
    )
    raise typer.Exit(code)


@app.command()
def restore(
    files: Annotated[
        Optional[list[Path]],
        typer.Argument(
            help="reports' data files (reports/data/NAME[.PROFILE].tar.gz), or a folder of them: reports/data"
        ),
    ] = None,
    results_dir: ResultsOpt = RESULTS,
) -> None:
    """Rebuild the run store from reports' data files: their runs, validation histories and tuned
    runs become finished runs again, with the studies' summaries and bench files they hold
    (not checkpoints, logger folders or the Optuna studies); runs already in the store are kept.
    Then `ablate report --all` makes every report and the index, and `ablate run NAME` trains only
    the runs the store lacks."""
    from harness.cli import restore as restore_cmd

    raise typer.Exit(
        _guard(
            restore_cmd.restore,
            files or [],
            results_dir,
            on_interrupt="interrupted: the runs restored so far are in the store; the same command again "
            "restores the rest (a run folder left without record.json is completed)",
        )
    )


@app.command()
def sync(
    results_dir: ResultsOpt = RESULTS,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="list the offline runs that wait; upload nothing")] = False,
) -> None:
    """Upload the offline W&B runs of the store (`wandb sync`); needs W&B credentials (WANDB_API_KEY or
    `wandb login`) and network."""
    from harness.report import wandb_sync

    raise typer.Exit(_guard(wandb_sync.sync, results_dir, dry_run=dry_run, echo=typer.echo))


class CheckFormat(str, Enum):
    table = "table"
    json = "json"


@app.command()
def check(
    names: Annotated[
        Optional[list[str]], typer.Argument(help="KEY=NAME as in an override (position=rope, task=copy) or a bare name")
    ] = None,
    every: Annotated[bool, typer.Option("--all", help="every registered component and task")] = False,
    fmt: Annotated[CheckFormat, typer.Option("--format")] = CheckFormat.table,
    seed: Annotated[
        int, typer.Option(min=0, max=INT_MAX, help="of the weights, tokens and task data")
    ] = 0,  # max: harness.bounds.INT_MAX (past 2**64 torch's manual_seed overflows)
    threads: Annotated[int, typer.Option(min=1, max=INT_MAX, help="torch threads")] = 1,
    plugin: PluginOpt = None,
) -> None:
    """The contract suite on components and tasks (shapes, causality, precisions, lengths, ...); exit 1 if one fails."""
    from harness.cli import check as check_cmd

    raise typer.Exit(
        _guard(
            check_cmd.check,
            names or [],
            fmt=fmt.value,
            every=every,
            seed=seed,
            threads=threads,
            plugins=plugin or [],
        )
    )


bench_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Benchmarks outside the run store.")
app.add_typer(bench_app, name="bench")


@bench_app.command("attention")
def bench_attention(
    device: Annotated[Optional[str], typer.Option(help="cpu | cuda (default: cuda when available)")] = None,
    lengths: Annotated[
        Optional[str],
        typer.Option(help="comma-separated sequence lengths (default: cpu 128..4096, cuda 512..32768, powers of 2)"),
    ] = None,
    kernels: Annotated[
        Optional[str], typer.Option(help="comma-separated kernel names (default: all: math,sdpa,flash,linear)")
    ] = None,
    d_model: Annotated[int, typer.Option(min=1, max=INT_MAX)] = 64,
    n_heads: Annotated[int, typer.Option(min=1, max=INT_MAX)] = 4,
    batch: Annotated[int, typer.Option(min=1, max=INT_MAX)] = 1,
    repeats: Annotated[
        int, typer.Option(min=1, max=10_000, help="timed calls per kernel and length; the median is reported")
    ] = 10,
    dtype: Annotated[str, typer.Option(help="float32 | bfloat16 | float16 (or fp32, bf16, fp16)")] = "float32",
    threads: Annotated[
        Optional[int],
        typer.Option(min=1, max=INT_MAX, help="torch threads (default: 1 on cpu, torch's default on cuda)"),
    ] = None,
    out: Annotated[
        Path,
        typer.Option(
            parser=_given("--out", "pass a folder, or leave the option out for results/bench"),
            help="folder for attention-DEVICE-DTYPE.json (the report reads RESULTS/bench)",
        ),
    ] = Path("results/bench"),
) -> None:
    """Time forward + backward of one attention layer per kernel and length, with peak memory; writes JSON."""
    from harness.cli import bench as bench_command

    def ints(text: Optional[str]) -> Optional[list[int]]:
        try:
            return [int(x) for x in text.split(",") if x.strip()] if text is not None else None  # "": [], refused
        except ValueError:
            typer.echo(f"error: --lengths {text}: expected comma-separated integers", err=True)
            raise typer.Exit(2) from None

    names = [k.strip() for k in kernels.split(",") if k.strip()] if kernels is not None else None
    _guard(
        bench_command.attention,
        device=device,
        lengths=ints(lengths),
        kernels=names,
        d_model=d_model,
        n_heads=n_heads,
        batch=batch,
        repeats=repeats,
        dtype=dtype,
        threads=threads,
        out=out,
    )


def _wandb_mode(mode: WandbMode) -> str:
    """``auto``: online when W&B would find credentials (``WANDB_API_KEY`` or ``wandb login``'s
    ``.netrc`` entry), else offline."""
    if mode is WandbMode.auto:
        from harness.credentials import has_wandb_credentials

        return "online" if has_wandb_credentials() else "offline"
    return mode.value


def main() -> None:
    app()


if __name__ == "__main__":
    main()
