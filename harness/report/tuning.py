"""The report's "Tuning" section: per task and variant the study's best parameters, its complete /
pruned / failed trial counts, Optuna's own optimisation-history and parameter-importance figures
(matplotlib backend, PNG), and the tuned comparison beside the untuned one.

Everything is read from the Optuna storage and the run store; nothing is typed in.
"""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis.comparisons import analyse
from harness.encode import text
from harness.experiment.selection import Selection
from harness.hints import Context
from harness.report.tables import markdown, title
from harness.tune.storage import default_storage, mask_url, open_storage, sqlite_exists
from harness.tune.studies import TUNING_SEED, counts, study_name, tuned_profile


def tuning_section(
    sel: Selection, results: Path, storage: str | None, fig_dir: Path, md_dir: Path, ctx: Context | None = None
) -> list[str]:
    """Markdown lines of the section; empty when the storage holds no study of this profile.
    ``ctx``: the report command's context, for the ``ablate run`` commands it suggests."""
    import optuna

    abl, profile = sel.ablation, sel.profile
    url = storage or default_storage(results)
    if not sqlite_exists(url):
        return []
    store = open_storage(url)
    known = set(optuna.get_all_study_names(store))
    studies = [
        (task, abl.label(v))
        for task in abl.tasks
        for v in abl.variants()
        if study_name(abl.name, profile, task, abl.label(v)) in known
    ]
    if not studies:
        return []
    lines = [
        "## Tuning",
        "",
        f"Each (task, variant) has its own Optuna study in `{mask_url(url)}` (TPE sampler, pruning on the "
        f"validation metric at L), so every variant gets the same search budget. Trials train at seed "
        f"{TUNING_SEED}, which is not a comparison seed, and are scored on the task's primary metric computed "
        f"on the **validation** split at the same evaluation lengths; the comparisons use the test split. "
        f"The first trial of each study is the declared (untuned) config. Tuned runs (`ablate run --tuned`) "
        f"are stored as profile `{tuned_profile(profile)}`.",
        "",
        "| task | variant | complete | pruned | failed (diverged) | best (validation) | best parameters | importance |",
        "|---|---|---|---|---|---|---|---|",
    ]
    figures: list[str] = []
    for task, variant in studies:
        name = study_name(abl.name, profile, task, variant)
        study = optuna.load_study(study_name=name, storage=store)
        if len(study.directions) != 1:
            lines.append(
                f"| {task} | {variant} | | | | **not a study of ablate tune: {len(study.directions)} "
                f"objectives; left out** | | |"
            )
            continue
        c = counts(study)
        metric = abl.tasks[task].primary.metric
        best = "no complete trial" if c["best_value"] is None else f"`{metric}` = {_fmt(c['best_value'])}"
        importance, figs = _figures(
            study, c, metric, fig_dir / _slug(f"{abl.name}.{profile}-tune-{task}-{variant}"), md_dir
        )
        lines.append(
            f"| {task} | {variant} | {c['complete']} | {c['pruned']} | {c['failed']} ({c['diverged']}) | "
            f"{best} | {_params(c['best_params'])} | {importance} |"
        )
        figures += [f"![{name}: {kind}]({rel})" for kind, rel in figs]
        if c["best_value"] is None:
            why = f"; last failure: {c['last_reason']}" if c["last_reason"] else ""
            lines.append(f"| | | **every trial of {variant} was pruned or failed{why}: not tuned** | | | | | |")
    lines += [
        "",
        *(
            figures
            and ["Optimisation history and parameter importance per study (Optuna's plots):", "", " ".join(figures), ""]
        ),
    ]
    return lines + _comparison(
        sel, results, ctx or Context(sel.ablation.name, sel.profile, results, sel.overrides, storage)
    )


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", text)


def _params(params: dict[str, Any] | None) -> str:
    if not params:
        return "–"
    return ", ".join(f"`{k}` {v:.3g}" if isinstance(v, float) else f"`{k}` {v}" for k, v in params.items())


def _figures(study: Any, c: dict[str, Any], metric: str, stem: Path, md_dir: Path) -> tuple[str, list[tuple[str, str]]]:
    """Save the optimisation history and the parameter importances (when Optuna can compute them);
    returns the importances as text and ``(kind, relative path)`` per figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import optuna
    from optuna.visualization import matplotlib as ovm

    if c["complete"] == 0:
        return "–", []
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ax = ovm.plot_optimization_history(study)
        ax.set_title(f"{study.study_name}: optimisation history", fontsize=9)
        ax.set_ylabel(f"{metric} (validation)")
        out.append(("optimisation history", _save(plt, ax, stem.with_name(stem.name + "-history.png"), md_dir)))
        try:
            importances = optuna.importance.get_param_importances(study)
            if not importances or any(math.isnan(v) for v in importances.values()):
                return "not computable", out
            ax = ovm.plot_param_importances(study)
            ax.set_title(f"{study.study_name}: parameter importance", fontsize=9)
        except Exception as exc:  # noqa: BLE001 - too few or identical trials: say so, draw nothing
            return f"not computable ({(str(exc).splitlines() or [type(exc).__name__])[0][:80]})", out
        out.append(("parameter importance", _save(plt, ax, stem.with_name(stem.name + "-importance.png"), md_dir)))
    text = ", ".join(f"`{k}` {v:.2f}" for k, v in importances.items())
    return text, out


def _save(plt: Any, ax: Any, path: Path, md_dir: Path) -> str:
    fig = ax.figure if hasattr(ax, "figure") else ax.flat[0].figure
    fig.set_size_inches(6, 3.5)
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    return path.relative_to(md_dir).as_posix()


def _comparison(sel: Selection, results: Path, ctx: Context) -> list[str]:
    """Per task, the primary comparison of the untuned and the tuned runs side by side, then the
    tuned table in full."""
    abl, profile = sel.ablation, sel.profile
    untuned = analyse(sel, results)
    tuned = analyse(sel, results, store_profile=tuned_profile(profile))
    lines = []
    for task, entry in abl.tasks.items():
        metric = entry.primary.metric
        u, t = untuned.table(task, metric), tuned.table(task, metric)
        lines += [f"### Untuned vs tuned: `{task}` · `{metric}`", ""]
        if t is None:
            lines += [f"No tuned runs yet: `{ctx.command('run', '--tuned', storage=True)}`.", ""]
            continue
        order = [abl.baseline_label] + [abl.label(v) for v in abl.variants() if abl.label(v) != abl.baseline_label]
        if u is None:
            lines += [f"No untuned runs in the store (`{ctx.command('run')}`).", ""]
        lines += [_side_by_side(u, t, order), "", f"**Tuned: {title(t)}**", "", markdown(t), ""]
    return lines


def _side_by_side(untuned: Any, tuned: Any, order: list[str]) -> str:
    def cols(table: Any, tag: str) -> pd.DataFrame:
        if table is None:
            return pd.DataFrame(columns=["variant"])
        f = table.frame.set_index("variant")
        out = pd.DataFrame(index=f.index)
        out[f"{tag} mean"] = [_fmt(x) for x in f.get("mean", pd.Series(index=f.index, dtype=float))]
        out[f"{tag} Δ (+ = better)"] = [_fmt(x) for x in f.get("delta", pd.Series(index=f.index, dtype=float))]
        out[f"{tag} verdict"] = [
            str(x) if isinstance(x, str) else "–" for x in f.get("verdict", pd.Series(index=f.index))
        ]
        return out.reset_index()

    both = cols(untuned, "untuned").merge(cols(tuned, "tuned"), on="variant", how="outer").fillna("–")
    both["variant"] = pd.Categorical(both["variant"], categories=order, ordered=True)
    return both.sort_values("variant").to_markdown(index=False)


def _fmt(x: Any) -> str:
    return text(x)  # – when undefined, ∞ when infinite
