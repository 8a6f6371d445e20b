"""``ablate report --all``: the report of every registered ablation for each profile with runs in
the store, and an index, ``README.md`` next to them, with one row per ablation.

Every cell of the index is computed from the store and the declarations, never typed in: the
profiles reported (linked), the latest of them, the verdict of each claim in that profile's report
(:func:`harness.analysis.claims.claim_verdict` on the same analysis the report makes), for a
negative control (``control: {kind: negative}`` in its declaration) whether the latest report caught
the bug on each task (:func:`harness.analysis.claims.control_outcomes`), and its seeds. Where
that report has tuned runs (its Tuning section compares them), each claim's verdict on them too,
marked **changes with tuning** when it differs in kind (:func:`harness.report.tuning.claim_changes`).

Latest: a confirmatory profile before a pilot; among those, the one whose grid holds the most of
the claims' evidence comparisons, then the one whose newest run finished last (then the later in
declaration order). Only the runs of each profile's declared grid (no
key=value overrides) are reported; runs made with overrides are named, with the command that
reports them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from harness.analysis.claims import claim_verdict, control_outcomes, in_grid
from harness.analysis.comparisons import Analysis, analyse
from harness.analysis.guards import evaluate_all, guards_of
from harness.errors import AblateError
from harness.experiment import ablation as ablation_mod
from harness.experiment import claims as claims_mod
from harness.experiment.ablation import Ablation
from harness.experiment.selection import select
from harness.hints import command, results_option
from harness.report.guards import Guards, write_markdown
from harness.report.markdown import write_report
from harness.report.sections import control_text
from harness.report.tuning import CHANGES, ClaimChange, TuningInputs, claim_changes, read_tuning
from harness.store.runs import scan


@dataclass(frozen=True)
class Reported:
    """One report written: its profile, its file and what picks the latest."""

    profile: str
    path: Path
    confirmatory: bool
    newest: str  # the latest ``finished_at`` of its runs (ISO 8601, UTC); "" when unknown
    order: int  # the profile's place in the declaration
    evidence: int = 0  # the claims' evidence entries its grid holds (a positive control's profile may hold none)


@dataclass
class Entry:
    """One row of the index."""

    name: str
    question: str
    claims: list[str] = field(default_factory=list)
    reported: list[Reported] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # profiles with runs that were not reported
    verdicts: list[tuple[str, str]] = field(default_factory=list)  # (claim id, verdict) in the latest
    tuning: list[ClaimChange] = field(default_factory=list)  # untuned and tuned verdicts, when it has tuned runs
    seeds: str = "–"
    control: bool = False  # the declaration marks it a negative control
    guards: list[str] = field(default_factory=list)  # the claims its control guards
    controls: list[str] = field(default_factory=list)  # caught / not caught per task, in the latest

    @property
    def latest(self) -> Reported | None:
        return max(self.reported, key=lambda r: (r.confirmatory, r.evidence, r.newest, r.order), default=None)


def check_store(results: Path, out: Path | None = None) -> None:
    """Raises AblateError when no registered ablation has a profile folder in ``results``; when
    ``out/data`` holds reports' data files (a clone of the repository), the error names
    ``ablate restore``, which rebuilds the store from them."""
    for name in ablation_mod.available():
        if (Path(results) / name).is_dir() and any(p.is_dir() for p in (Path(results) / name).iterdir()):
            return
    restore = ""
    if out is not None and any((Path(out) / "data").glob("*.tar.gz")):
        files = shlex.join(["ablate", "restore", str(Path(out) / "data"), *results_option(results)])
        restore = f"; or `{files}` to rebuild it from the data files of the reports in {out}"
    raise AblateError(
        f"no runs of any registered ablation in {results}; run `{shlex.join(['ablate', 'run', 'NAME', *results_option(results)])}` "
        f"first or pass the --results-dir it wrote to{restore}"
    )


def report_all(
    results: Path,
    out: Path,
    data_dir: Path | None = None,
    storage: str | None = None,
    echo: Callable[[str], None] = print,
) -> Path:
    """Write every report and ``out/README.md``; returns the index's path. ``echo``: one line
    per report written or profile skipped."""
    check_store(results, out)
    evaluated = evaluate_all(results)  # the positive controls first: a claim's verdict waits for its own
    guards = guards_of(_all_claims(), results, evaluated)
    entries = [
        _report_ablation(name, results, out, data_dir, storage, echo, guards) for name in ablation_mod.available()
    ]
    for entry in entries:  # reports already in OUT whose runs are not in this store: linked, not rewritten
        written = {r.path.name for r in entry.reported}
        for old in sorted(Path(out).glob(f"{entry.name}.md")) + sorted(Path(out).glob(f"{entry.name}.*.md")):
            if old.name not in written:
                entry.notes.append(
                    f"[{old.stem.partition('.')[2] or _default_profile(entry.name)}]({old.name}): an earlier "
                    "report whose runs are not in this store (not regenerated)"
                )

    repro = write_markdown(results, out, evaluated=evaluated)  # the positive controls: published results reproduced
    echo(f"wrote {repro}")
    path = Path(out) / "README.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(index_markdown(entries, results, repro))
    return path


def _all_claims() -> list[str]:
    return list(claims_mod.load_claims())


def _default_profile(name: str) -> str:
    """The profile a report named ``NAME.md`` belongs to (the ablation's default)."""
    try:
        return ablation_mod.load(name).default_profile
    except AblateError:
        return "default profile"


def _report_ablation(
    name: str,
    results: Path,
    out: Path,
    data_dir: Path | None,
    storage: str | None,
    echo: Callable[[str], None],
    guards: Guards,
) -> Entry:
    try:
        abl = ablation_mod.load(name)
    except AblateError as exc:
        echo(f"skipped {name}: {exc}")
        return Entry(name, "–", notes=[f"declaration not loadable: {exc}"])
    entry = Entry(
        name,
        short_question(abl.question),
        list(abl.claims),
        control=abl.control is not None,
        guards=list(abl.control.guards) if abl.control is not None else [],
    )
    analyses: dict[str, tuple[Analysis, TuningInputs]] = {}  # per reported profile: its report's, for the verdicts
    for order, (pname, prof) in enumerate(abl.profiles.items()):
        found = scan(results, name, pname)
        if not found.records:
            continue
        try:
            sel = select(abl, pname, [], data_dir, check_data=False, results=results, storage=storage)
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
        result, tuning = analyse(sel, results), read_tuning(sel, results, storage, out)
        analyses[pname] = result, tuning
        path = write_report(sel, results, out, storage=storage, result=result, tuning=tuning, guards=guards)
        echo(f"wrote {path}")
        newest = max((r.finished_at or "" for r in mine), default="")
        entry.reported.append(Reported(pname, path, prof.confirmatory, newest, order, _evidence_in(sel.ablation)))
    if (latest := entry.latest) is not None:
        _verdicts(entry, *analyses[latest.profile], guards)
    return entry


def _evidence_in(view: Ablation) -> int:
    """How many evidence entries of the ablation's claims name a (task, variant) of the profile's
    grid ``view``: the latest report is the confirmatory one that tests the claims most, so that a
    newer profile made for a positive control (``pe_extrapolation``'s ``reproduce``) does not take
    the claims' verdicts from a grid that holds none of their comparisons."""
    claims = claims_mod.load_claims()
    return sum(in_grid(ev, view) for cid in view.claims for ev in claims.get(cid, {}).get("evidence", []))


def _verdicts(entry: Entry, result: Analysis, tuning: TuningInputs, guards: Guards) -> None:
    """The claims' verdicts (on the tuned runs too; withheld while a positive control in ``guards``
    has not passed) and the seeds of the latest profile, from the analyses its report made."""
    claims = claims_mod.load_claims()
    for cid in result.ablation.claims:  # the fallback of report._claims_section, so that the texts agree
        claim = claims.get(cid, {"claim": "(not in harness/experiment/claims.yaml)", "figure": "none"})
        entry.verdicts.append((cid, claim_verdict(claim, result, guards.get(cid, ()))[0]))
    entry.tuning = claim_changes(result.ablation, result, tuning, guards)  # as its Tuning section says it
    entry.controls = [control_text(c) for c in control_outcomes(result)]  # as the report says it
    entry.seeds = seeds_cell(result)


def seeds_cell(result: Analysis) -> str:
    """``k/n``: the seeds all of whose planned runs are in the store, of the ``n`` the profile
    declares; with ``(r/m runs)`` after it while some planned run is not
    (:meth:`~harness.analysis.comparisons.Analysis.seeds_done`); a group-sequential design that
    finished before its last look: the most seeds an arm ran, of the design's maximum."""
    d = result.seeds_done()
    if (st := result.stopped_early(d)) is not None:
        return f"{st.seeds_used}/{d.declared} (design finished at look {st.reached} of {len(st.design.looks)})"
    cell = f"{d.seeds}/{d.declared}"
    return cell if d.complete else f"{cell} ({d.runs}/{d.planned} runs)"


def short_question(question: str, limit: int = 100) -> str:
    """The question's first sentence, cut at a word before ``limit`` characters."""
    # a sentence ends at ? ! or . followed by a space, but not after an abbreviation ("et al.", "e.g.")
    first = re.split(r"(?<!\bal\.)(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[?.!])\s", " ".join(question.split()), maxsplit=1)[0]
    if len(first) <= limit:
        return first
    return first[:limit].rsplit(" ", 1)[0] + " …"


def index_markdown(entries: list[Entry], results: Path, reproductions: Path | None = None) -> str:
    """``README.md``: a header, the link to ``reproductions`` (the positive controls' page, when
    written) with each entry's outcome, and one table row per ablation."""
    lines = [
        "# Reports",
        "",
        f"*Generated by `{shlex.join(['ablate', 'report', '--all', *results_option(results)])}` on "
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC from the runs "
        f"in `{results}`: one row per registered ablation. Latest: the confirmatory profile whose grid holds "
        "the most of the claims' comparisons (then the one with the most recent run) when there is one, else the "
        "most recent pilot; the verdicts are those of its report, the seeds "
        "those whose every run is in the store (ok, diverged or failed) out of those the profile declares, with the "
        "runs that are while some are not (a group-sequential design that finished before its last look: the most "
        "seeds an arm ran, of the design's maximum). Negative control: for an ablation declared "
        "as one (a known bug), `caught` when the latest report judges the bug's variant `worse` on a task's primary "
        "metric with adjusted p < 0.05, `not caught` otherwise; the claims it guards are withheld unless it is caught on "
        "every task of its declared confirmatory profile. Where the latest report has tuned runs (`ablate tune`, "
        "then `ablate run --tuned`: every variant at its own best parameters), a claim's cell adds its verdict on them "
        f"(`tuned: ...`), and **{CHANGES}** marks a verdict of another kind than the untuned one. A claim guarded "
        "by a control that has not passed here (a published result not reproduced, a known bug not caught) reads "
        "`withheld (positive control ID: OUTCOME)` or `withheld (negative control NAME: OUTCOME)`; its report gives "
        "what the tests alone said.*",
        "",
        *(_reproductions_line(reproductions) if reproductions is not None else []),
        "| ablation | question | profiles reported | latest | claims: verdict in the latest report "
        "| negative control | seeds |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        latest = e.latest
        link = f"[{e.name}]({latest.path.name})" if latest else e.name
        profiles = ", ".join(f"[{r.profile}]({r.path.name})" for r in e.reported) or "no runs"
        if e.notes:
            profiles += "; " + "; ".join(e.notes)
        claims = (
            "<br>".join(_tuned_claim(c) + _untested(c.claim) for c in e.tuning)
            if e.tuning
            else "<br>".join(f"`{cid}`: {verdict}{_untested(cid)}" for cid, verdict in e.verdicts)
            if latest
            else "<br>".join(f"`{cid}`: no runs" for cid in e.claims)
        )
        control = ("<br>".join(e.controls) or "no runs") if e.control else "–"
        if e.guards:
            control += "<br>guards " + ", ".join(f"`{c}`" for c in e.guards)
        cells = [link, e.question, profiles, latest.profile if latest else "–", claims or "–", control, e.seeds]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def _untested(cid: str) -> str:
    """`` (does not test: *at a fixed 1e-4*)``: the parts of the claim's wording no comparison
    tests (its audit in claims.yaml); empty when it tests them all."""
    parts = claims_mod.load_claims().get(cid, {}).get("parts", [])
    words = [f"*{p['words']}*" for p in parts if p.get("not_tested")]
    return f" (does not test: {', '.join(words)})" if words else ""


def _tuned_claim(c: ClaimChange) -> str:
    """``\`id\`: supported; tuned: contradicted (**changes with tuning**)``."""
    return f"`{c.claim}`: {c.untuned}; tuned: {c.tuned}" + (f" (**{CHANGES}**)" if c.changed else "")


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _reproductions_line(path: Path) -> list[str]:
    """The index's link to the positive controls, with the outcome of each (read back from the
    page's summary table, so that the two never disagree)."""
    rows = [line.split(" | ") for line in Path(path).read_text().splitlines() if line.startswith("| [")]
    outcomes = ", ".join(f"{r[0].split(']')[0][3:]} **{r[-1].strip(' |*')}**" for r in rows)
    return [
        (
            f"Positive controls: [published results reproduced]({Path(path).name}) at this scale, before any "
            f"verdict on the claims: {outcomes or 'none'}."
        ),
        "",
    ]
