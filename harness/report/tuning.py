"""The report's "Tuning" section: the studies, the claims' verdicts untuned and tuned, and the tuned comparisons.

The section is read from the Optuna storage (:func:`read_tuning`) or from the summary of what it prints of each study
(:class:`TuningData`), kept in its data file (``restored/NAME.PROFILE.tuning.json``) so that ``--from`` and a restored
store print the same section without the Optuna storage. Plain JSON, no timestamp: the same studies give the same
bytes.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, field_validator

from harness.analysis.claim_verdicts import claim_kind
from harness.analysis.comparisons import Analysis, analyse
from harness.encode import text
from harness.errors import AblateError, first_line
from harness.experiment.ablation import Ablation
from harness.experiment.selection import Selection
from harness.redact import mask_url
from harness.report.controls import Controls, read_sidecar
from harness.report.figures import pyplot, save_png
from harness.report.sections import verdict
from harness.report.tables import markdown, title
from harness.store.record import Record
from harness.store.runs import StoreScan, scan
from harness.tune.storage import default_storage, open_storage, sqlite_exists
from harness.tune.studies import TUNING_SEED, counts, study_name
from harness.tuned import tuned_profile

Param = bool | int | float | str | None  # a number, a categorical choice


class StudyFigure(BaseModel):
    """One figure drawn for a study: its kind and its path in the report's folder (``figures/...png``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: str
    path: str

    @field_validator("path")
    @classmethod
    def _under_figures(cls, path: str) -> str:
        # copied by this path (--from, restore): never from or to outside the report's figures/
        parts = PurePosixPath(path).parts
        if len(parts) != 2 or parts[0] != "figures" or not path.endswith(".png") or "\\" in path:
            raise ValueError(f"a figure's path is figures/NAME.png, not {path!r}")
        return path


class StudySummary(BaseModel):
    """What the section prints of one (task, variant) study (``objectives`` above 1: not ablate tune's)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    task: str
    variant: str
    name: str
    objectives: int = 1
    complete: int = 0
    pruned: int = 0
    failed: int = 0
    diverged: int = 0
    best_value: float | None = None
    best_params: dict[str, Param] | None = None
    last_reason: str | None = None
    importances: dict[str, float] | None = None
    importance_problem: str | None = None
    figures: list[StudyFigure] = []

    @property
    def finished(self) -> int:
        """The trials ``ablate tune --trials`` counts (``diverged`` is a part of ``failed``)."""
        return self.complete + self.pruned + self.failed


class TuningData(BaseModel):
    """Every study of one ablation and profile, and the storage (password masked)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    ablation: str
    profile: str
    storage: str
    studies: list[StudySummary]


def restored_studies_path(results: Path, ablation: str, profile: str) -> Path:
    """Where ``ablate restore`` puts the studies' summary of ``ablation`` / ``profile``.

    Their figures go beside it.
    """
    return Path(results) / "restored" / f"{ablation}.{profile}.tuning.json"


def check_studies(data: TuningData | None, abl: Ablation, where: str) -> None:
    """Raises AblateError for a study of ``data`` whose task or variant ``abl`` does not have."""
    tasks, variants = list(abl.tasks), [abl.label(v) for v in abl.variants()]
    for s in data.studies if data is not None else []:
        if s.task not in tasks or s.variant not in variants:
            raise AblateError(
                f"{where}: study {s.name!r} is of task {s.task!r} / variant {s.variant!r}, which the ablation does "
                f"not have (tasks {', '.join(tasks)}; variants {', '.join(variants)}); regenerate the summary with "
                "`ablate report NAME` from the store, or delete it to leave the Tuning section out"
            )


def studies_json(data: TuningData) -> bytes:
    """The studies' summary ``data`` as its file's bytes: JSON indented one space, non-ASCII kept, a final newline."""
    return (json.dumps(data.model_dump(mode="python"), indent=1, ensure_ascii=False) + "\n").encode()


def copy_figures(data: TuningData, source: Path, out: Path) -> list[str]:
    """Copy the studies' figures from the report folder ``source`` to ``out``; returns those found in neither."""
    missing = []
    for fig in (f for s in data.studies for f in s.figures):
        src, dst = Path(source) / fig.path, Path(out) / fig.path
        if src.is_file() and src.resolve() != dst.resolve():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
        elif not dst.is_file():
            missing.append(str(src))
    return missing


CHANGES = "changes with tuning"
"""The mark of a claim whose verdict on the tuned runs differs in kind from the untuned one."""


@dataclass(frozen=True)
class TuningInputs:
    """What the section shows: the studies (None: no section) and the analysis of the tuned runs (None: none yet)."""

    studies: TuningData | None
    tuned: Analysis | None

    @property
    def runs(self) -> list[Record]:
        """The tuned runs the report counts and its data file holds: none without a study."""
        return self.tuned.scan.records if self.studies is not None and self.tuned is not None else []


NO_RUNS = "no runs"
"""The untuned verdict of a store that holds only tuned runs."""


@dataclass(frozen=True)
class ClaimChange:
    """A claim's verdict on the untuned and on the tuned runs."""

    claim: str
    untuned: str
    tuned: str

    @property
    def changed(self) -> bool:
        """The two verdicts differ in kind, not only in a number in brackets."""
        if NO_RUNS in (self.untuned, self.tuned):  # nothing to change from
            return False
        a, b = claim_kind(self.untuned), claim_kind(self.tuned)
        return a != b if a is not None and b is not None else self.untuned != self.tuned


def read_tuning(sel: Selection, results: Path, storage: str | None, out: Path) -> TuningInputs:
    """The studies of the selection and the analysis of its tuned runs in the store (``<profile>+tuned``).

    The studies are read from ``storage`` (default ``<results>/optuna.db``), else from the summary ``ablate restore``
    copied.
    """
    abl = sel.ablation
    studies = collect_studies(sel, results, storage, out)
    if studies is None:
        path = restored_studies_path(results, abl.name, sel.profile)
        fix = f"run `ablate restore` on the data file again, or delete {path}"
        studies = read_sidecar(path, TuningData, path, "studies' summary", abl.name, sel.profile, fix)
        if studies is not None:  # its figures copied into ``out``
            copy_figures(studies, path.parent, out)
        check_studies(studies, abl, f"the studies' summary restored in {path}")
    return TuningInputs(studies, tuned_analysis(sel, results, scan(results, abl.name, tuned_profile(sel.profile))))


def tuned_analysis(sel: Selection, results: Path, found: StoreScan) -> Analysis | None:
    """The analysis of the tuned runs ``found`` (the store's, or a data file's); None when there are none."""
    return analyse(sel, results, store_profile=tuned_profile(sel.profile), found=found) if found.records else None


def collect_studies(sel: Selection, results: Path, storage: str | None, out: Path) -> TuningData | None:
    """Summarise every study of the selection in ``storage``, its figures drawn under ``out/figures``; None: none."""
    import optuna

    abl, profile = sel.ablation, sel.profile
    url = storage or default_storage(results)
    if not sqlite_exists(url):
        return None
    store = open_storage(url)
    known = set(optuna.get_all_study_names(store))
    names = {
        study_name(abl.name, profile, t, abl.label(v)): (t, abl.label(v)) for t in abl.tasks for v in abl.variants()
    }
    if not (found := [n for n in names if n in known]):
        return None
    summaries = []
    for name in found:
        task, variant = names[name]
        study = optuna.load_study(study_name=name, storage=store)
        about = {"task": task, "variant": variant, "name": name}
        if len(study.directions) != 1:
            summaries.append(StudySummary(**about, objectives=len(study.directions)))
            continue
        c = counts(study)
        stem = Path(out) / "figures" / re.sub(r"[^A-Za-z0-9_.+-]+", "_", f"{abl.name}.{profile}-tune-{task}-{variant}")
        metric = abl.tasks[task].primary.metric
        imp, problem, figs = _figures(study, metric, stem, Path(out)) if c["complete"] else (None, None, [])
        kept = {k: v for k, v in c.items() if k in StudySummary.model_fields}  # not running, interrupted
        summaries.append(StudySummary(**about, **kept, importances=imp, importance_problem=problem, figures=figs))
    return TuningData(ablation=abl.name, profile=profile, storage=mask_url(url), studies=summaries)


def tuning_section(sel: Selection, result: Analysis, tuning: TuningInputs, controls: Controls) -> list[str]:
    """Markdown lines of the section (none without a study); ``result``: the untuned runs' analysis."""
    data = tuning.studies
    if data is None:
        return []
    abl, profile = sel.ablation, sel.profile
    lines = [
        "## Tuning",
        "",
        f"Each (task, variant) has its own Optuna study in `{data.storage}` (TPE sampler, pruning on the "
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
    for s in data.studies:
        if s.objectives != 1:
            left = f"**not a study of ablate tune: {s.objectives} objectives; left out**"
            lines.append(f"| {s.task} | {s.variant} | | | | {left} | | |")
            continue
        metric = abl.tasks[s.task].primary.metric
        best = "no complete trial" if s.best_value is None else f"`{metric}` = {text(s.best_value)}"
        params = (s.best_params or {}).items()
        params = ", ".join(f"`{k}` {v:.3g}" if isinstance(v, float) else f"`{k}` {v}" for k, v in params) or "–"
        none = "not computable" + (f" ({s.importance_problem})" if s.importance_problem else "")
        ranked = none if s.importances is None else ", ".join(f"`{k}` {v:.2f}" for k, v in s.importances.items())
        importance = "–" if s.complete == 0 else ranked
        lines.append(
            f"| {s.task} | {s.variant} | {s.complete} | {s.pruned} | {s.failed} ({s.diverged}) | "
            f"{best} | {params} | {importance} |"
        )
        figures += [f"![{s.name}: {f.kind}]({f.path})" for f in s.figures]
        if s.best_value is None:
            why = f"; last failure: {s.last_reason}" if s.last_reason else ""
            lines.append(f"| | | **every trial of {s.variant} was pruned or failed{why}: not tuned** | | | | | |")
    lines.append("")
    if figures:
        plots = "Optimisation history and parameter importance per study (Optuna's plots):"
        lines += [plots, "", " ".join(figures), ""]
    return lines + _claims_table(claim_changes(abl, result, tuning, controls)) + _comparison(sel, result, tuning.tuned)


def claim_changes(abl: Ablation, result: Analysis, tuning: TuningInputs, controls: Controls) -> list[ClaimChange]:
    """Each claim's verdict on ``result`` (the untuned runs) and on the tuned runs; empty without tuned runs."""
    if tuning.studies is None or tuning.tuned is None:
        return []
    return [
        ClaimChange(
            cid,
            verdict(cid, result, controls)[0] if result.scan.records else NO_RUNS,
            verdict(cid, tuning.tuned, controls)[0],
        )
        for cid in abl.claims
    ]


def _claims_table(changes: list[ClaimChange]) -> list[str]:
    if not changes:
        return []
    rows = [(f"`{c.claim}`", c.untuned, c.tuned, "**yes**" if c.changed else "no") for c in changes]
    frame = pd.DataFrame(rows, columns=["claim", "untuned verdict", "tuned verdict", CHANGES])
    return [
        "### Claims: untuned vs tuned",
        "",
        "Each claim's verdict on the untuned runs (the report's) and on the tuned runs, judged by the same "
        f"rules; `{CHANGES}`: **yes** when the two are of another kind (e.g. supported and inconclusive), not "
        "when only a number in brackets differs.",
        "",
        frame.to_markdown(index=False),
        "",
    ]


def _figures(
    study: Any, metric: str, stem: Path, md_dir: Path
) -> tuple[dict[str, float] | None, str | None, list[StudyFigure]]:
    """The history and importance figures: ``(importances or None, Optuna's reason if any, the figures)``."""
    plt = pyplot()  # Optuna draws through pyplot: on Agg, whatever MPLBACKEND names (before it imports matplotlib)
    import optuna
    from optuna.visualization import matplotlib as ovm

    def save(ax: Any, kind: str, suffix: str) -> StudyFigure:
        ax.set_title(f"{study.study_name}: {kind}", fontsize=9)
        ax.figure.set_size_inches(6, 3.5)
        path = save_png(ax.figure, stem.with_name(f"{stem.name}-{suffix}.png"), dpi=90, bbox_inches="tight")
        plt.close(ax.figure)
        return StudyFigure(kind=kind, path=path.relative_to(md_dir).as_posix())

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ax = ovm.plot_optimization_history(study)
        ax.set_ylabel(f"{metric} (validation)")
        out = [save(ax, "optimisation history", "history")]
        try:
            importances = optuna.importance.get_param_importances(study)
            if not importances or any(math.isnan(v) for v in importances.values()):
                return None, None, out
            ax = ovm.plot_param_importances(study)
        except Exception as exc:  # noqa: BLE001 - too few or identical trials: say so, draw nothing
            return None, first_line(exc)[:80], out
        out.append(save(ax, "parameter importance", "importance"))
    return {k: float(v) for k, v in importances.items()}, None, out


def _comparison(sel: Selection, untuned: Analysis, tuned: Analysis | None) -> list[str]:
    """Per task, the untuned and tuned primary comparisons side by side, then the tuned table."""
    abl = sel.ablation
    lines = []
    for task, entry in abl.tasks.items():
        metric = entry.primary.metric
        u, t = untuned.table(task, metric), None if tuned is None else tuned.table(task, metric)
        lines += [f"### Untuned vs tuned: `{task}` · `{metric}`", ""]
        if t is None:
            lines += [f"No tuned runs yet: `{sel.command('run', '--tuned', storage=True)}`.", ""]
            continue
        order = [abl.baseline_label] + [abl.label(v) for v in abl.variants() if abl.label(v) != abl.baseline_label]
        if u is None:
            lines += [f"No untuned runs in the store (`{sel.command('run')}`).", ""]
        lines += [_side_by_side(u, t, order), "", f"**Tuned: {title(t)}**", "", markdown(t), ""]
    return lines


def _side_by_side(untuned: Any, tuned: Any, order: list[str]) -> str:
    def cols(table: Any, tag: str) -> pd.DataFrame:
        if table is None:
            return pd.DataFrame(columns=["variant"])
        col = table.frame.set_index("variant").reindex(columns=["mean", "delta", "verdict"])  # absent: NaN, "–"
        out = {f"{tag} mean": col["mean"].map(text), f"{tag} Δ (+ = better)": col["delta"].map(text)}
        out[f"{tag} verdict"] = col["verdict"].map(lambda x: x if isinstance(x, str) else "–")
        return pd.DataFrame(out).reset_index()

    both = cols(untuned, "untuned").merge(cols(tuned, "tuned"), on="variant", how="outer").fillna("–")
    both["variant"] = pd.Categorical(both["variant"], categories=order, ordered=True)
    return both.sort_values("variant").to_markdown(index=False)
