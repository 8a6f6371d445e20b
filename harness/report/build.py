"""What a report shows, computed from the store or a data file, and the files that hold it.

One report (:func:`write_report`: its analysis, markdown, figures and data file), every registered ablation's reports
with their index (:func:`write_all`), and the contents of a report's W&B summary run (:func:`summary`). ``ablate
report`` (:mod:`harness.cli.report`) checks its options, calls these and prints what they wrote.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from harness.analysis import comparisons
from harness.analysis import controls as controls_mod
from harness.analysis.claims import control_outcomes, in_grid
from harness.analysis.comparisons import Analysis
from harness.encode import json_safe, short_question
from harness.errors import AblateError, RunStatus
from harness.experiment import ablation as ablation_mod
from harness.experiment import claims as claims_mod
from harness.experiment.ablation import Ablation
from harness.experiment.selection import Selection, select
from harness.files import data_dir, write_atomic
from harness.hints import command
from harness.report import index
from harness.report.bench import files as bench_files
from harness.report.controls import Controls, write_controls
from harness.report.controls import markdown as reproductions_markdown
from harness.report.markdown import overrides_tag, write_markdown
from harness.report.sections import control_text, verdict
from harness.report.source import DataFile
from harness.report.tuning import (
    TuningInputs,
    claim_changes,
    read_tuning,
    restored_studies_path,
    studies_json,
    tuned_analysis,
)
from harness.store import archive
from harness.store.runs import scan


def report_controls(abl: Ablation, results: Path, data: DataFile | None = None) -> Controls:
    """The controls that guard ``abl``'s claims, evaluated over the store ``results``.

    With a data file ``data``: the outcomes kept beside it, or unknown where it kept none.
    """
    controls = controls_mod.controls_of(list(abl.claims), results) if data is None else data.controls
    return controls_mod.declared_controls(list(abl.claims)) if controls is None else controls


def write_report(
    sel: Selection,
    results: Path,
    out: Path,
    controls: Controls,
    storage: str | None = None,
    data: DataFile | None = None,
) -> tuple[Path, Analysis, TuningInputs]:
    """Analyse the selection's runs (the store's, or the data file ``data``'s) and write their report.

    From the store, also its data file ``out/data/NAME[.PROFILE].tar.gz`` and the controls' file beside it. Returns the
    report's path, its analysis and its Tuning section's inputs.
    """
    abl, profile = sel.ablation, sel.profile
    controls = {cid: g for cid, g in controls.items() if cid in abl.claims}
    result = comparisons.analyse(sel, results, found=data.scan if data is not None else None)
    if data is None:
        tuning, bench = read_tuning(sel, results, storage, out), Path(results) / "bench"
    else:
        tuning, bench = TuningInputs(data.tuning, tuned_analysis(sel, results, data.tuned)), data.bench
    path = write_markdown(sel, result, out, tuning, controls, bench)
    if data is not None:
        return path, result, tuning
    extra = {f"bench/{p.name}": p.read_bytes() for p in bench_files(abl, bench)}
    if tuning.studies is not None:
        extra[restored_studies_path(Path(), abl.name, profile).as_posix()] = studies_json(tuning.studies)
    records, problems = [*result.scan.records, *tuning.runs], result.scan.problems
    written = archive.write(archive.data_path(path), results, records, abl.name, profile, problems, extra)
    write_controls(controls, written, abl.name, profile)
    return path, result, tuning


class Summary(NamedTuple):
    """What a report's W&B summary run logs, but its figures (``training.wandb_upload.log_summary_run``)."""

    profile: str
    """The profile of its runs (cpu+tuned for runs of ``ablate run --tuned``)."""
    config: dict[str, object]
    """The ablation, the profile, its runs' counts and any key=value overrides."""
    tables: dict[str, tuple[list[str], list[list[object]]]]
    """``compare/TASK/METRIC`` -> the comparison table's columns and rows."""
    claims: list[list[str]]
    """``[claim id, verdict, evidence]`` per claim of the ablation."""
    tag: str
    """``with-HASH`` for runs made with key=value overrides (the summary run's folder's suffix), else ``""``."""


def summary(analysis: Analysis, controls: Controls, overrides: Sequence[str] = ()) -> Summary:
    """The W&B summary run of a report: its comparison tables, and its claims' verdicts and evidence."""
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
    claims = [[cid, v, "\n".join(ev)] for cid in abl.claims for v, ev in [verdict(cid, analysis, controls)]]
    config: dict[str, object] = {
        "ablation": abl.model_dump(mode="json"),
        "profile": profile,
        "runs": len(analysis.runs),
        "runs_ok": int((analysis.runs["status"] == RunStatus.OK).sum()),
    }
    if tag := overrides_tag(overrides):
        config["overrides"] = list(overrides)
    return Summary(profile, config, tables, claims, tag)


def write_all(results: Path, out: Path, storage: str | None, echo: Callable[[str], None]) -> Path:
    """Every registered ablation's reports, the positive controls' page and their index; returns the index's path.

    A report per profile with runs of its declared grid; the index is ``out/README.md``. ``echo`` is told each file
    written but the index, and each report skipped.
    """
    evaluated = controls_mod.evaluate_all(results)  # the positive controls first: a claim's verdict waits for its own
    controls = controls_mod.controls_of(list(claims_mod.load_claims()), results, evaluated)
    entries = [_report_ablation(name, results, out, storage, controls, echo) for name in ablation_mod.available()]
    for entry in entries:  # reports already in OUT whose runs are not in this store: linked, not rewritten
        written = {r.path.name for r in entry.reported}
        for old in sorted(Path(out).glob(f"{entry.name}.md")) + sorted(Path(out).glob(f"{entry.name}.*.md")):
            if old.name not in written and ".with-" not in old.name:  # runs made with overrides: not indexed
                entry.notes.append(
                    f"[{old.stem.partition('.')[2] or _default_profile(entry.name)}]({old.name}): an "
                    "earlier report whose runs are not in this store (not regenerated)"
                )
    Path(out).mkdir(parents=True, exist_ok=True)
    write_atomic(repro := Path(out) / "reproductions.md", reproductions_markdown(evaluated, results).encode("utf-8"))
    echo(f"wrote {repro}")
    write_atomic(path := Path(out) / "README.md", index.index_markdown(entries, results, repro).encode("utf-8"))
    return path


def _default_profile(name: str) -> str:
    try:
        return ablation_mod.load(name).default_profile
    except AblateError:
        return "default profile"


def _report_ablation(
    name: str, results: Path, out: Path, storage: str | None, controls: Controls, echo: Callable[[str], None]
) -> index.Entry:
    try:
        abl = ablation_mod.load(name)
    except AblateError as exc:
        echo(f"skipped {name}: {exc}")
        return index.Entry(name, "–", notes=[f"declaration not loadable: {exc}"])
    control = abl.control
    guarded = list(control.guards) if control is not None else []
    entry = index.Entry(
        name, short_question(abl.question), list(abl.claims), control=control is not None, guards=guarded
    )
    claims = claims_mod.load_claims()
    made: dict[str, tuple[Analysis, TuningInputs]] = {}  # per reported profile: its report's, for the verdicts
    held: dict[str, dict[str, int]] = {}  # per reported profile: each claim's evidence entries its grid holds
    for order, (pname, prof) in enumerate(abl.profiles.items()):
        found = scan(results, name, pname)
        if not found.records:
            continue
        try:
            sel = select(abl, pname, [], data_dir(), check_data=False, results=results, storage=storage)
        except AblateError as exc:
            entry.notes.append(f"{pname}: not reported ({exc})")
            echo(f"skipped {name} / {pname}: {exc}")
            continue
        mine = [r for r in found.records if r.run_id in sel.run_ids]
        if not mine:
            entry.notes.append(
                f"{pname}: {len(found.records)} runs made with key=value overrides "
                f"(`{command('report', name, pname, results=results, overrides=('KEY=VALUE', '...'))}`)"
            )
            echo(f"skipped {name} / {pname}: its {len(found.records)} runs were made with key=value overrides")
            continue
        path, result, tuning = write_report(sel, results, out, controls, storage)
        made[pname] = result, tuning
        echo(f"wrote {path}")
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
            entry.verdicts.append((cid, verdict(cid, made[where.profile][0], controls)[0]))
            if where != latest:
                entry.decided_in[cid] = where
        entry.tuning = claim_changes(result.ablation, result, tuning, controls)  # as its Tuning section says it
        judged = made.get(control.profile, (result,))[0] if control is not None else result  # its profile's
        entry.controls = [control_text(c) for c in control_outcomes(judged)]  # as that report says it
        entry.seeds = index.seeds_cell(result)
    return entry
