"""The declarations of ``ablate list``, ``show``, ``schema``, ``check`` and ``bench attention``.

They are the commands outside the run store (:mod:`harness.cli.inspect` and :mod:`harness.cli.tools` run them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from harness.bounds import INT_MAX
from harness.cli import options as o
from harness.dtypes import DTYPE_NAMES


def list_cmd(
    components: Annotated[
        bool, typer.Option("--components", help="also every component family (position, kernel, norm, ...)")
    ] = False,
    plugin: o.PluginOpt = None,
) -> None:
    """Registered ablations, tasks and plugins, one line each; plugin entries marked with their package."""
    from harness.cli import inspect as inspect_cmd

    o.guard(inspect_cmd.list_all, components=components, plugins=plugin or [])


def show(
    name: o.NameArg,
    profile: o.ProfileOpt = None,
    overrides: o.OverridesArg = None,
    plugin: o.PluginOpt = None,
) -> None:
    """An ablation's question, claims, axes, profiles and its expanded grid (nothing runs)."""
    from harness.cli import inspect as inspect_cmd

    o.guard(inspect_cmd.show, name, profile, overrides or [], plugins=plugin or [])


def schema(
    markdown: Annotated[
        bool, typer.Option("--markdown", help="the reference page of ablation files (docs/ablation-files.md) instead")
    ] = False,
    plugin: o.PluginOpt = None,
) -> None:
    """The JSON Schema of ablation files, with the registered names.

    For editors; shipped as harness/experiment/ablation.schema.json.
    """
    from harness.experiment import reference
    from harness.experiment import schema as schema_mod

    # verbatim, no console: a terminal's width must not wrap it
    o.guard(lambda: typer.echo(reference.markdown() if markdown else schema_mod.text(), nl=False), plugins=plugin or [])


CheckFormat = o.choices("CheckFormat", "table", "json")


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
    plugin: o.PluginOpt = None,
) -> None:
    """The contract suite on components and tasks (shapes, causality, precisions, lengths, ...); exit 1 if one fails."""
    from harness.cli import tools as tools_cmd

    o.guard(tools_cmd.check, names or [], fmt=fmt.value, every=every, seed=seed, threads=threads, plugins=plugin or [])


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
    dtype: Annotated[
        str, typer.Option(help=f"{' | '.join(DTYPE_NAMES.values())} (or {', '.join(DTYPE_NAMES)})")
    ] = "float32",
    threads: Annotated[
        Optional[int],
        typer.Option(min=1, max=INT_MAX, help="torch threads (default: 1 on cpu, torch's default on cuda)"),
    ] = None,
    out: Annotated[
        Path,
        typer.Option(
            parser=o.given("--out", "pass a folder, or leave the option out for results/bench"),
            help="folder for attention-DEVICE-DTYPE.json (the report reads RESULTS/bench)",
        ),
    ] = Path("results/bench"),
) -> None:
    """Time forward + backward of one attention layer per kernel and length, with peak memory; writes JSON."""
    from harness.cli import tools as tools_cmd

    def ints(text: Optional[str]) -> Optional[list[int]]:
        try:
            return [int(x) for x in text.split(",") if x.strip()] if text is not None else None  # "": [], refused
        except ValueError:
            typer.echo(f"error: --lengths {text}: expected comma-separated integers", err=True)
            raise typer.Exit(2) from None

    names = [k.strip() for k in kernels.split(",") if k.strip()] if kernels is not None else None
    o.guard(
        tools_cmd.attention,
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
