"""The declarations of ``ablate list``, ``show``, ``schema`` and ``status`` (:mod:`harness.cli.inspect` runs them)."""

from __future__ import annotations

from typing import Annotated

import typer

from harness.cli import options as o


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
    """The JSON Schema of ablation files, with the registered names (for editors; shipped as
    harness/experiment/ablation.schema.json)."""
    from harness.experiment import reference
    from harness.experiment import schema as schema_mod

    def write() -> None:  # verbatim, no console: a terminal's width must not wrap it
        typer.echo(reference.markdown() if markdown else schema_mod.text(), nl=False)

    o.guard(write, plugins=plugin or [])


def status(
    name: str,
    overrides: o.MadeWithArg = None,
    profile: o.ProfileOpt = None,
    results_dir: o.ResultsOpt = o.RESULTS,
    plugin: o.PluginOpt = None,
) -> None:
    """Done / failed / diverged / pending, per variant and task."""
    from harness.cli import inspect as inspect_cmd

    o.guard(inspect_cmd.status, name, profile, results_dir, overrides or [], plugins=plugin or [])
