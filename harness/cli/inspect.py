"""``ablate list``, ``ablate show``, ``ablate schema`` and ``ablate status``; nothing here trains or analyses.

They say what is declared, what a grid expands to, and how far its runs are.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table as RichTable

from harness.cli import options as o
from harness.cli import output
from harness.encode import short_question
from harness.errors import AblateError, RunStatus
from harness.experiment import metrics, plugins
from harness.experiment.plugins import families
from harness.hints import DEFAULT_RESULTS

if TYPE_CHECKING:
    from harness.analysis.sequential import Design
    from harness.experiment.ablation import Ablation
    from harness.experiment.declaration import Sequential
    from harness.experiment.selection import Selection


@o.guard()
def list_cmd(
    components: Annotated[
        bool, typer.Option("--components", help="also every component family (position, kernel, norm, ...)")
    ] = False,
    plugin: o.PluginOpt = None,
) -> None:
    """Registered ablations, tasks and plugins, one line each; plugin entries marked with their package."""
    # then the component families a plugin adds to, a plugin's entries marked (with --components, every family;
    # without either, torch is never imported)
    from harness.experiment import ablation as ablation_mod

    say = output.console.print
    for name, path in ablation_mod.available().items():
        abl = ablation_mod.load(str(path))
        say(
            f"[bold]{name}[/]  {len(abl.variants())} variants x {len(abl.tasks)} tasks ({', '.join(abl.tasks)}); "
            f"profiles {', '.join(abl.profiles)} — {short_question(abl.question, limit=len(abl.question))}"
        )
    from harness.tasks import TASKS

    for name in TASKS.names():
        cls = TASKS.get(name)
        doc = textwrap.shorten((cls.__doc__ or "").split("\n\n")[0], 120, placeholder=" …")  # its first paragraph
        say(f"task [bold]{name}[/]{_marked('task', name)} (v{cls.version}, {cls.kind}) — {doc}")
    for loaded in plugins.loaded():
        what = ", ".join(f"{family} {name}" for family, name in loaded.entries) or "no entries"
        say(f"plugin [bold]{escape(loaded.package)}[/] ({escape(loaded.ref.describe())}): {what}")
    touched = {family for p in plugins.loaded() for family, _ in p.entries}
    if not (components or touched - {"task"}):
        return  # families() imports torch
    for fam in families():
        if fam.key != "task" and (components or fam.key in touched):
            say(f"{fam.key} ({fam.config_key}): {', '.join(n + _marked(fam.key, n) for n in fam.registry.names())}")


def _marked(family: str, name: str) -> str:
    """`` [my-plugin 0.1.0]`` after a plugin's entry; nothing after a built-in one."""
    plugin = plugins.origin(family, name)
    return f" [cyan]{escape('[' + plugin.package + ']')}[/]" if plugin else ""


@o.guard()
def show_cmd(
    name: o.NameArg,
    profile: o.ProfileOpt = None,
    overrides: o.OverridesArg = None,
    plugin: o.PluginOpt = None,
) -> None:
    """An ablation's question, claims, axes, profiles and its expanded grid (nothing runs)."""
    from harness.analysis.controls import declared_controls  # the statistics (scipy): show needs them, status not
    from harness.experiment import ablation as ablation_mod
    from harness.experiment.search_space import resolve_space

    abl = ablation_mod.load(name)
    sel = output.selection(abl, profile, overrides, typed=name, check_data=True)
    say = output.console.print
    say(f"[bold]{abl.name}[/]: {abl.question}")
    if abl.claims:
        say(f"claims: {', '.join(abl.claims)}")
        for cid, controls in declared_controls(list(abl.claims)).items():
            names = ", ".join(f"{g.kind} {g.id}" for g in controls)
            say(f"  {cid}: guarded by {names} (a verdict waits for each to pass at this scale)")
    if (control := abl.control) is not None:
        guards = f"; guards the claims {', '.join(control.guards)}" if control.guards else ""
        say(
            f"control: negative; {control.variant or 'every variant but the baseline'} is a known bug, "
            f"expected {control.expect} in profile {control.profile}{guards}"
        )
    for path, values in abl.axes.items():
        say(f"axis {path}: {', '.join(map(str, values))}")
    say(f"baseline: {abl.baseline_label}")
    for tname, entry in abl.tasks.items():
        gate = f"; gate {entry.gate.describe()}" if entry.gate else ""
        better = "higher" if metrics.higher_is_better(entry.primary.metric) else "lower"
        say(
            f"task {tname}: primary {entry.primary.metric} ({better} is better, smallest effect of interest "
            f"{entry.primary.sesoi:g}){gate}"
        )
    for pname, p in abl.profiles.items():
        subset = f"; only tasks {', '.join(p.only_tasks)}" if p.only_tasks else ""
        subset += f"; only variants {', '.join(p.only_variants)}" if p.only_variants else ""
        subset += f"; sequential: {_design(p.sequential)}" if p.sequential else ""
        selected, kind = " (selected)" if pname == sel.profile else "", "confirmatory" if p.confirmatory else "pilot"
        say(
            f"profile {pname}{selected}: {len(p.seeds)} seeds, {kind}{subset}"
            + (f" — {p.description}" if p.description else "")
        )
    if (line := _too_few_seeds(abl, sel)) is not None:
        say(line)
    space = resolve_space(abl, sel.profile)
    say(f"tune space ({sel.profile}): " + ("; ".join(f"{k} {v.describe()}" for k, v in space.items()) or "empty"))
    columns = ("run id", "task", "variant", "seed", "d_model", "layers", "steps", "train L", "eval lengths")
    table = RichTable(*columns, title=f"{len(sel.specs)} runs ({sel.profile} profile, seeds {sel.settings.seeds})")
    for s in sel.specs:
        c = s.config
        table.add_row(
            *(s.run_id, s.task, s.variant_label),
            *map(str, (s.seed, c.model.d_model, c.model.n_layers, c.train.steps, c.train.seq_len)),
            ",".join(map(str, c.eval_lengths())),
        )
    say(table)


def _design(seq: Sequential | Design) -> str:
    return f"looks at {', '.join(map(str, seq.looks))} seeds, {seq.spending} spending, alpha {seq.alpha:g}"


def _too_few_seeds(abl: Ablation, sel: Selection, alpha: float = 0.05) -> str | None:
    """A line when a fixed confirmatory profile lists too few seeds for any verdict.

    That is, fewer seeds than the exact sign-flip test needs to reject at its first Holm step (alpha / the primary
    comparisons): then no comparison can read better or worse, whatever the data (docs/statistics.md). ``alpha``: the
    analysis' own default.
    """
    prof = sel.settings
    if not prof.confirmatory or prof.sequential is not None:
        return None
    arms = {(s.task, s.variant_label) for s in sel.specs}
    family = sum(1 for _, v in arms if v != abl.baseline_label and v not in abl.exploratory_variants)
    if family == 0:
        return None
    from harness.analysis import paired as power  # scipy and statsmodels: ~1 s that status needs only here

    needed = power.sign_flip_min_seeds(alpha / family)
    if len(prof.seeds) >= needed:
        return None
    return (
        f"note: profile {sel.profile} lists {len(prof.seeds)} seeds; with {family} primary comparison(s) "
        f"the exact sign-flip test needs at least {needed} paired seeds to reject at alpha {alpha:g} / "
        f"{family}, so no comparison can read better or worse: list at least {needed} seeds, or make it a "
        "pilot (confirmatory: false)"
    )


@o.guard()
def schema_cmd(
    markdown: Annotated[
        bool, typer.Option("--markdown", help="the reference page of ablation files (docs/ablation-files.md) instead")
    ] = False,
    plugin: o.PluginOpt = None,
) -> None:
    """The JSON Schema of ablation files, with the registered names.

    For editors; shipped as harness/experiment/ablation.schema.json.
    """
    from harness.experiment import reference, schema

    typer.echo(reference.markdown() if markdown else schema.text(), nl=False)  # verbatim: no console to wrap it


@o.guard()
def status(
    name: o.NameArg,
    profile: o.ProfileOpt = None,
    results: o.ResultsOpt = DEFAULT_RESULTS,
    overrides: o.MadeWithArg = None,
    plugin: o.PluginOpt = None,
) -> None:
    """Runs by state, per variant and task.

    The states: ok, stalled, diverged, failed, timeout, running, pending; then the runs that need a look.
    """
    # then the runs that need a look: those in progress or interrupted, those with suspect numbers, and every store
    # file that is not a readable run (with its path)
    from harness.analysis import declared
    from harness.execution.attempt import unfinished_state
    from harness.experiment import ablation as ablation_mod
    from harness.store.runs import load_record, run_dir, scan

    sel = output.selection(ablation_mod.load(name), profile, overrides, results, typed=name)
    output.check_results_readable(results)
    found = scan(results, sel.name, sel.profile)
    later = {s.run_id for s in sel.specs}  # runs a look may still make
    sequential, st = sel.settings.sequential is not None, None
    if sel.settings.confirmatory:  # the design that decides: a sequential one's looks, or a fixed one's one look
        from harness.analysis import looks  # scipy

        looks.design_of(sel)  # a design that could decide nothing is refused before the table
        st = looks.state(sel, found.records)
    if sequential:
        later = {s.run_id for s in looks.to_come(sel, st)}
    columns = (*RunStatus, "running", "pending") + (("not needed",) if sequential else ())
    table = RichTable("task", "variant", *columns, title=f"{sel.name} / {sel.profile} in {results}")
    counts: dict[tuple[str, str], dict[str, int]] = {}
    notes = []
    for s in sel.specs:
        folder = run_dir(results, sel.name, sel.profile, s.run_id)
        rec = load_record(folder)[0]
        state, why = (rec.status, "") if rec else unfinished_state(folder)
        if state == "pending" and s.run_id not in later:  # the design decided what it was for
            state = "not needed"
        counts.setdefault((s.task, s.variant_label), dict.fromkeys(columns, 0))[state] += 1
        if rec is None and why != "not started":
            notes.append(f"{state} ({why}): {folder}")
        if rec is not None:  # stalled runs and suspect numbers, as the report's failures section lists them
            notes += [f"stalled ({rec.reason}): {folder}"] if rec.status == RunStatus.STALLED else []
            notes += [f"flagged ({flag}): {folder}" for flag in rec.flags or {}]
            if rec.undefined_metrics:
                notes.append(f"no value of {', '.join(sorted(rec.undefined_metrics))} (non-finite logits): {folder}")
    for (task, variant), c in counts.items():
        table.add_row(task, variant, *(str(c[k]) for k in columns))
    say = output.console.print
    say(table)
    if other := sum(r.run_id not in sel.run_ids for r in found.records):
        say(
            f"{other} other finished runs in this folder were made with other overrides (pass the same "
            "key=value overrides to see them)"
        )
    for problem in found.problems:
        say(f"[yellow]store problem[/] {problem}")
    try:  # every run pending because the store is elsewhere (a misspelt --results-dir, another profile)?
        output.check_store_exists(sel)
    except AblateError as exc:
        say(escape(str(exc)))
    for note in notes:
        say(note)
    stored = [r for r in found.records if r.run_id in sel.run_ids]
    if warning := declared.check(sel, stored).warning(sel.settings.confirmatory):
        say(f"[yellow]warning[/] {escape(warning)}")
    if st is not None:  # the look the design reached and what each primary comparison waits for
        kind = "fixed design: one look" if st.fixed else f"sequential design: {_design(st.design)}"
        say(f"{kind}; {st.summary()}")
        for c in st.comparisons:
            where = f"{c.task} {escape(c.variant)} vs {escape(sel.ablation.baseline_label)}"
            say(f"  {where}: {st.waits_for(c)}; deciding interval {escape(c.interval_text())}")
