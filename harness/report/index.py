"""The reports' index, ``README.md`` beside the reports ``ablate report --all`` writes.

It has one row per registered ablation, every cell computed from the store and the declarations (docs/reports.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.analysis import claim_verdicts as cv
from harness.analysis.comparisons import Analysis
from harness.experiment import claims as claims_mod
from harness.report.controls import generated
from harness.report.tables import md_table
from harness.report.tuning import CHANGES, ClaimChange


@dataclass(frozen=True)
class Reported:
    """One report written: its profile, its file and what picks the latest."""

    profile: str
    path: Path
    confirmatory: bool
    newest: str  # the latest ``finished_at`` of its runs (ISO 8601, UTC); "" when unknown
    order: int  # the profile's place in the declaration
    evidence: int = 0  # the claims' evidence entries its grid holds (a positive control's profile may hold none)
    run_s: float = 0.0  # the wall time of its stored runs, summed (seconds)


@dataclass
class Entry:
    """One row of the index: a registered ablation, the reports written of it and the cells they give.

    ``name``, ``question`` (shortened) and ``claims`` come from the declaration; one that does not load gives
    ``question`` "–" and a note saying why. ``seeds``: :func:`seeds_cell` of the latest report, "–" without one.
    """

    name: str
    question: str
    claims: list[str] = field(default_factory=list)
    reported: list[Reported] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # profiles with runs that were not reported
    verdicts: list[tuple[str, str]] = field(default_factory=list)  # (claim id, verdict) in the report that decides it
    decided_in: dict[str, Reported] = field(default_factory=dict)  # a claim whose evidence another report holds more of
    tuning: list[ClaimChange] = field(default_factory=list)  # untuned and tuned verdicts, when it has tuned runs
    seeds: str = "–"
    control: bool = False  # the declaration marks it a negative control
    guards: list[str] = field(default_factory=list)  # the claims its control guards
    controls: list[str] = field(default_factory=list)  # caught / not caught per task, in the latest

    @property
    def run_minutes(self) -> float:
        """The wall time of every reported profile's stored runs, summed, in minutes of one worker."""
        return sum(r.run_s for r in self.reported) / 60

    @property
    def latest(self) -> Reported | None:
        """Confirmatory first, then most of the claims' evidence, then newest run, then declared later."""
        return max(self.reported, key=lambda r: (r.confirmatory, r.evidence, r.newest, r.order), default=None)


def seeds_cell(result: Analysis) -> str:
    """``k/n``: the seeds whose planned runs are all in the store, of the ``n`` declared.

    The index's legend says more.
    """
    d = result.seeds_done()
    if (st := result.stopped_early(d)) is not None:
        return f"{st.seeds_used}/{d.declared} (design finished at look {st.reached} of {len(st.design.looks)})"
    cell = f"{d.seeds}/{d.declared}"
    return cell if d.complete else f"{cell} ({d.runs}/{d.planned} runs)"


def index_markdown(entries: list[Entry], results: Path, reproductions: Path) -> str:
    """``README.md``: a header, the link to the positive controls' page ``reproductions``, one row per ablation."""
    lines = [
        "# Reports",
        "",
        f"{generated(results)}: one row per registered ablation ([how to read it](#reading-the-table)).*",
        "",
        *_reproductions_line(reproductions),
    ]
    rows = []
    for e in entries:
        latest = e.latest
        link = f"[{e.name}]({latest.path.name})" if latest else e.name
        profiles = "; ".join([", ".join(f"[{r.profile}]({r.path.name})" for r in e.reported) or "no runs", *e.notes])
        if e.tuning:
            m = {c.claim: f" (**{CHANGES}**)" if c.changed else "" for c in e.tuning}
            claims = [f"`{c.claim}`: {c.untuned}; tuned: {c.tuned}{m[c.claim]}{_untested(c.claim)}" for c in e.tuning]
        elif latest:
            claims = [f"`{cid}`: {verdict}{_elsewhere(e, cid)}{_untested(cid)}" for cid, verdict in e.verdicts]
        else:
            claims = [f"`{cid}`: no runs" for cid in e.claims]
        control = ("<br>".join(e.controls) or "no runs") if e.control else "–"
        if e.guards:
            control += "<br>guards " + ", ".join(f"`{c}`" for c in e.guards)
        shown = latest.profile if latest else "–"
        minutes = f"{e.run_minutes:,.0f}" if e.reported else "–"
        rows.append([link, e.question, profiles, shown, "<br>".join(claims) or "–", control, e.seeds, minutes])
    columns = ["ablation", "question", "profiles reported", "latest", "claims: verdict in the report that tests each"]
    table = md_table([*columns, "negative control", "seeds", "run-minutes"], rows)
    return "\n".join(lines + table + _compute_line(entries) + READING) + "\n"


def _compute_line(entries: list[Entry]) -> list[str]:
    """``Compute: 1,234 run-minutes; 8 of 16 claims ruled on: 154 run-minutes per claim ruled on.``."""
    minutes = sum(e.run_minutes for e in entries)
    verdicts = [v for e in entries for _, v in e.verdicts]
    ruled = sum(cv.claim_kind(v) in cv.RULINGS for v in verdicts)
    per = f": {minutes / ruled:,.0f} run-minutes per claim ruled on" if ruled else ""
    return [
        "",
        f"Compute: {minutes:,.0f} run-minutes (the wall time of every reported run, summed); {ruled} of "
        f"{len(verdicts)} claims ruled on in the reports that test them (supported, contradicted, mixed, no effect "
        f"of that size, in part or by condition){per}.",
    ]


READING = [
    "",
    "## Reading the table",
    "",
    "- **latest**: the confirmatory profile whose grid holds the most of the claims' comparisons (then the one with "
    "the most recent run) when there is one, else the most recent pilot; the verdicts are those of its report, but "
    "for a claim whose comparisons another confirmatory report holds more of (a profile run at the setting it "
    "names): that report's verdict, with its profile named (`in long`).",
    "- **seeds**: those whose every run is in the store (ok, diverged or failed) out of those the profile declares, "
    "with the runs that are while some are not (a group-sequential design that finished before its last look: the "
    "most seeds an arm ran, of the design's maximum).",
    "- **run-minutes**: the wall time of every run of the ablation's reported profiles, pilots included, summed: "
    "minutes of one worker, whatever ran at once.",
    "- **negative control**: for an ablation declared as one (a known bug), `caught` when the report of its "
    "declared profile (`control.profile`) judges "
    "the bug's variant `worse` on a task's primary metric, `not caught` otherwise; the claims "
    "it guards are withheld unless it is caught on every task of its declared confirmatory profile.",
    "- **tuned**: where the latest report has tuned runs (`ablate tune`, then `ablate run --tuned`: every variant at "
    f"its own best parameters), a claim's cell adds its verdict on them (`tuned: ...`), and **{CHANGES}** marks a "
    "verdict of another kind than the untuned one.",
    "- **withheld**: a claim guarded by a control that has not passed here (a published result not reproduced, a "
    "known bug not caught) reads `withheld (positive control ID: OUTCOME)` or `withheld (negative control NAME: "
    "OUTCOME)`; its report gives what the tests alone said.",
]
"""The index's legend, below its table: what each column's words mean."""


def _elsewhere(entry: Entry, cid: str) -> str:
    """`` (in [long](pe_extrapolation.long.md))`` for a claim decided in another report than the latest."""
    r = entry.decided_in.get(cid)
    return f" (in [{r.profile}]({r.path.name}))" if r is not None else ""


def _untested(cid: str) -> str:
    """`` (does not test: *at a fixed 1e-4*)``: the parts of the claim's wording no comparison tests."""
    words = [f"*{p.words}*" for p in claims_mod.load_claims()[cid].parts if p.not_tested]
    return f" (does not test: {', '.join(words)})" if words else ""


def _reproductions_line(path: Path) -> list[str]:
    """The link to the positive controls with each outcome, read back from the page's table: the two agree."""
    rows = [line.split(" | ") for line in Path(path).read_text(encoding="utf-8").splitlines() if line.startswith("| [")]
    outcomes = ", ".join(f"{r[0].split(']')[0][3:]} **{r[-1].strip(' |*')}**" for r in rows) or "none"
    link = f"[published results reproduced]({Path(path).name})"
    return [f"Positive controls: {link} at this scale, before any verdict on the claims: {outcomes}.", ""]
