"""The controls in the reports, as :mod:`harness.analysis.controls` evaluates them.

That is the positive controls' page (``reports/reproductions.md``), what ``ablate reproduce`` prints, and the
controls' file beside a data file, which ``--from`` reads for the same verdicts (docs/reports.md, "Controls").
"""

from __future__ import annotations

import json
import shlex
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, TypeVar

import pandas as pd
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from harness.analysis.claims import POSITIVE, ControlOutcome, ControlResult, delta_ci
from harness.analysis.controls import ComparisonResult, Controls, Evaluation
from harness.encode import count, text
from harness.errors import AblateError, first_line
from harness.files import write_atomic
from harness.hints import results_option
from harness.report.tables import md_table
from harness.store.archive import SUFFIX

M = TypeVar("M", bound=BaseModel)


def read_sidecar(
    path: Path, model: type[M], data_file: Path, what: str, ablation: str, profile: str, fix: str
) -> M | None:
    """A JSON file of one report's ablation and profile validated as ``model``; None when there is none.

    Raises:
        AblateError: not JSON of this model (naming it as ``what``, with ``fix``), or of another ablation or profile.
    """
    if not path.is_file():
        return None
    try:
        data = model.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValidationError) as exc:
        first = first_line(exc)
        raise AblateError(f"{data_file}: its {what} {path} is unreadable ({first}); {fix}") from None
    found = (getattr(data, "ablation"), getattr(data, "profile"))  # noqa: B009 - fields of the model
    if found != (ablation, profile):
        raise AblateError(
            f"{data_file}: its {what} {path} is of {found[0]} / {found[1]}, not of {ablation} / {profile}; "
            "regenerate it with `ablate report NAME`"
        )
    return data


class _Kept(BaseModel):
    """A control as the controls' file keeps it: its outcome in words (``incomplete (29/32 runs)``), read apart."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    outcome: Annotated[  # the words, parsed (ValueError: not an outcome's); anything but a string fails as a tuple
        tuple[ControlOutcome, str], BeforeValidator(lambda v: ControlOutcome.parse(v) if isinstance(v, str) else v)
    ]
    kind: str = POSITIVE
    profile: str | None = None

    def control(self) -> ControlResult:
        """The control, its outcome and why apart."""
        return ControlResult(self.id, *self.outcome, self.kind, self.profile)


class _File(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    ablation: str
    profile: str
    guards: dict[str, tuple[_Kept, ...]]


def _controls_path(data_file: Path) -> Path:  # data/NAME.PROFILE.guards.json beside data/NAME.PROFILE.tar.gz
    return Path(data_file).with_name(Path(data_file).name.removesuffix(SUFFIX) + ".guards.json")


def write_controls(controls: Controls, data_file: Path, ablation: str, profile: str) -> None:
    """Write ``controls`` beside ``data_file``; with none, remove a file left from an earlier report."""
    path = _controls_path(data_file)
    if not controls:
        path.unlink(missing_ok=True)
        return
    by_claim = {
        cid: [{"id": g.id, "outcome": g.text, "kind": g.kind, "profile": g.profile} for g in gs]
        for cid, gs in sorted(controls.items())
    }
    body = {"ablation": ablation, "profile": profile, "guards": by_claim}
    write_atomic(path, (json.dumps(body, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))


def read_controls(data_file: Path, ablation: str, profile: str) -> Controls | None:
    """The controls kept beside ``data_file``, or None (AblateError: not of this format, ablation or profile)."""
    fix = "regenerate both with `ablate report NAME` from the store"
    data = read_sidecar(_controls_path(data_file), _File, data_file, "controls' file", ablation, profile, fix)
    return None if data is None else {cid: tuple(k.control() for k in kept) for cid, kept in data.guards.items()}


def evidence_line(o: ComparisonResult) -> str:
    """One comparison as the claims' evidence lines read: Δ, its CI, adjusted p, pairs, verdict."""
    c = o.comparison
    head = f"{c.ablation} / {c.profile}, {c.task} `{c.metric}`, {c.variant} vs {c.reference}: "
    if o.outcome is ControlOutcome.NOT_RUN:
        planned = f"not run ({o.runs} of {o.planned} runs of the grid in the store); expects {c.expect}"
        return head + (f"not evaluated: {o.note}" if o.note and not o.planned else planned)
    r = o.row
    adjusted = "no adjusted p (no test: in no family)"
    if pd.notna(r.get("family_size")):
        adjusted = f"adjusted p = {text(r['p_adj'], '.3g')} (Holm over {int(r['family_size'])})"
    line = (
        f"{head}{c.variant} {text(r['mean'])} vs {c.reference} {text(o.reference['mean'])} (means); "
        f"Δ = {text(r['delta'], '+.4g')} ({delta_ci(r)}, + = {c.variant} better), {adjusted}, "
        f"n = {count(int(r['n_pairs']), 'seed')}"
    )
    if c.expect == "equivalent":
        line += f", TOST p adj = {text(r['p_tost_adj'], '.3g')} within ±{r['margin']:g}"
    line += f" → {o.verdict}; expects {c.expect}: **{o.text}**"
    return line + (f" ({o.note})" if o.note else "")


def summary_lines(results: list[Evaluation]) -> list[str]:
    """What ``ablate reproduce`` prints: per entry its outcome (``INCOMPLETE (29/32 runs)``) and evidence."""
    out = []
    for res in results:
        word = res.outcome.value.upper() + res.text.removeprefix(res.outcome.value)  # INCOMPLETE (29/32 runs)
        head = f"{res.entry.id}: {word}  ({res.entry.paper.split(',')[0]}, {res.entry.source})"
        out += [head, *(f"  - {evidence_line(o)}" for o in res.outcomes)]
    out.append(
        "Scale caveat: each outcome holds at the scale run here (see reports/reproductions.md), "
        "not necessarily at the published scale."
    )
    return out


def generated(store: Path) -> str:
    """The start of the first line of a page ``ablate report --all`` writes: its command, time (UTC) and ``store``."""
    made = shlex.join(["ablate", "report", "--all", *results_option(store)])
    return f"*Generated by `{made}` on {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC from the runs in `{store}`"


def markdown(results: list[Evaluation], store: Path) -> str:
    """``reports/reproductions.md``: a table of entries and outcomes, then one section per entry."""
    lines = [
        "# Reproductions: published results as positive controls",
        "",
        f"{generated(store)}; the entries are `harness/experiment/reproductions.yaml`; "
        f"`{_reproduce('[ID]', store)}` runs what is missing.*",
        "",
        "Each comparison is the paired test of the claims (paired t-test by seed and its t-interval; TOST for an "
        "equivalence), of a variant against a reference variant; an entry's comparisons are one Holm family. pass: "
        "every comparison gave the verdict the published result predicts; fail: one gave another (a finding, not a "
        "bug: its section says what the harness saw and what differs from the published setting); inconclusive: the "
        "tests did not decide, or the reference did not learn the task (`inconclusive (baseline not learned k/n)`: "
        "it reached the task's convergence target on k of its n seeds, not more than half, as a claim's baseline "
        "must); incomplete (k/n runs): its grids have not all finished, so it is not judged yet, whatever its first "
        "runs say; not run: none of its runs is in the store. An entry guards the claims whose verdicts rest on the "
        "effect it checks: until it passes, their reports withhold a verdict (`withheld (positive control ID: "
        "OUTCOME)`) and say what the tests alone gave. Negative controls (a known bug an ablation's `control:` "
        "declares) guard claims the same way; the index shows which, and whether each was caught.",
        "",
    ]
    columns = ["reproduction", "paper", "source", "expected at CPU scale", "guards the claims", "outcome"]
    rows = []
    for res in results:
        e, guarded = res.entry, ", ".join(f"`{c}`" for c in res.entry.guards) or "none"
        rows.append((f"[{e.id}](#{e.id})", e.paper, e.source, e.expected, guarded, f"**{res.text}**"))
    lines += [*md_table(columns, rows), ""]
    for res in results:
        e = res.entry
        guarded = ", ".join(f"`{c}`" for c in e.guards) + " (their verdicts are withheld unless this entry passes)"
        why = f"; {' '.join(e.guards_why.split())}." if e.guards_why else "."
        lines += [f"## {e.id}", "", f"**{res.text}**. {e.paper}, {e.source}.", ""]
        lines += [f"- Published setting: {e.setting}.", f"- Published result: {e.result}."]
        lines += [f"- Expected at CPU scale: {e.expected}.", f"- Guards: {guarded if e.guards else 'no claim'}{why}"]
        lines += ["", "Evidence:", "", *(f"- {evidence_line(o)}" for o in res.outcomes), ""]
        if res.outcome.fell_short:
            saw = [
                f"{o.comparison.variant} vs {o.comparison.reference} not run"
                if o.outcome is ControlOutcome.NOT_RUN
                else f"{o.comparison.variant} vs {o.comparison.reference} on `{o.comparison.metric}`: {o.verdict} "
                f"(means {o.row['mean']:.4g} vs {o.reference['mean']:.4g}, Δ {o.row['delta']:+.3g} with + = "
                f"{o.comparison.variant} better)" + (f"; {o.note}" if o.note else "")
                for o in res.outcomes
            ]
            said, explain = "; ".join(saw), " ".join(e.differences.split())
            lines += [f"What the harness saw: {said}.", "", f"What might explain the difference: {explain}", ""]
        if res.outcome is ControlOutcome.NOT_RUN:
            lines += [f"Not run yet: `{_reproduce(e.id, store)}`.", ""]
        elif res.outcome is ControlOutcome.INCOMPLETE:
            missing = count(res.runs[1] - res.runs[0], "run")
            lines += [f"Not decided until its grids finish ({missing} missing): `{_reproduce(e.id, store)}`.", ""]
        scale = "; ".join(res.scale) or "no runs"
        lines += [
            f"Scale caveat: this outcome holds at the scale run here ({scale}), not necessarily at the "
            "published scale.",
            "",
        ]
    return "\n".join(lines)


def _reproduce(rid: str, store: Path) -> str:
    """The ``ablate reproduce`` command that runs ``rid`` into the store this page was made from."""
    return " ".join(["ablate", "reproduce", rid, *map(shlex.quote, results_option(store))])
