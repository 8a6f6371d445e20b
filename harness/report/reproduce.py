"""Positive controls: published results the harness should reproduce at CPU scale.

The registry is ``harness/experiment/reproductions.yaml`` (:class:`Reproduction` entries, validated here and
against the ablation declarations: a bad entry is refused with one line naming the entry and the
field). Each comparison of an entry is the paired test of the claims (:func:`harness.analysis.stats.compare`:
paired t-test by seed, t-interval, TOST equivalence within a margin) of a variant against a
*reference* variant of the same ablation and profile, which need not be the ablation's baseline;
an entry's comparisons are one Holm family. Runs below a task's gate are left out of metrics
beyond L, as in the reports.

Outcome of a comparison: ``pass`` when its verdict is the one expected, ``fail`` when the test
decided otherwise (the other direction, or equivalence, or a difference where equivalence was
expected) or when the reference's mean is below the comparison's ``reference_min``, ``inconclusive``
when it did not decide (or the profile is not confirmatory), ``not run`` without paired runs. An
entry passes when every comparison passes, fails when one fails, and is inconclusive otherwise
(``not run`` when none has runs).
"""

from __future__ import annotations

import functools
import importlib.resources
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from harness.analysis import stats
from harness.analysis import verdicts as vd
from harness.analysis.comparisons import analyse, beyond_training
from harness.errors import AblateError
from harness.experiment import ablation as ablation_mod
from harness.experiment import metrics
from harness.experiment import selection as selection_mod
from harness.registry import did_you_mean
from harness.store.runs import read_record, run_dir

REGISTRY = "reproductions.yaml"
EXPECT = ("better", "worse", "equivalent")


class Comparison(BaseModel):
    """One paired comparison that tests a published result."""

    model_config = ConfigDict(extra="forbid")
    ablation: str
    profile: str
    task: str
    metric: str
    variant: str = Field(description="the variant label compared")
    reference: str = Field(description="the variant label it is compared with (any point of the profile's grid)")
    expect: Literal["better", "worse", "equivalent"]
    margin: float | None = Field(
        None, gt=0, description="equivalence margin in metric units (default: the task's sesoi)"
    )
    higher_is_better: bool | None = Field(None, description="optional: must agree with the metrics table")
    reference_min: float | None = Field(
        None, description="the reference's mean must reach it (e.g. softmax at its target)"
    )

    @field_validator("metric")
    @classmethod
    def _known(cls, name: str) -> str:
        return metrics.known(name)

    @model_validator(mode="after")
    def _direction(self) -> Comparison:
        metrics.check_direction(self.metric, self.higher_is_better)
        return self

    def describe(self) -> str:
        return f"{self.ablation} / {self.profile}, {self.task} `{self.metric}`, {self.variant} vs {self.reference}"


class Reproduction(BaseModel):
    """A published result, and the comparisons that test it at CPU scale."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    paper: str = Field(min_length=1)
    source: str = Field(min_length=1, description="the table or figure")
    setting: str = Field(min_length=1, description="the published setting")
    result: str = Field(min_length=1, description="the published result")
    expected: str = Field(min_length=1, description="the direction the harness should see at CPU scale")
    differences: str = Field(min_length=1, description="what differs from the published setting")
    comparisons: list[Comparison] = Field(min_length=1)


def parse(data: Any, where: str = REGISTRY) -> list[Reproduction]:
    """Validate the registry's parsed YAML: a list of entries, each of the schema, ids distinct.

    Raises:
        AblateError: one line naming the entry and the field, for the first bad entry.
    """
    if not isinstance(data, list) or not data:
        raise AblateError(f"{where}: expected a non-empty list of reproduction entries")
    out: list[Reproduction] = []
    for i, raw in enumerate(data):
        name = raw.get("id", f"#{i + 1}") if isinstance(raw, dict) else f"#{i + 1}"
        try:
            entry = Reproduction.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(x) for x in err["loc"]) or "(entry)"
            raise AblateError(f"{where}: entry {name!r}, field {loc}: {err['msg']}") from None
        if entry.id in {e.id for e in out}:
            raise AblateError(f"{where}: entry {entry.id!r}, field id: repeated; each id must appear once")
        out.append(entry)
    return out


def check(entry: Reproduction, where: str = REGISTRY) -> None:
    """Validate each comparison of ``entry`` against the ablation it names: the ablation is
    registered, the profile exists, the task is in the profile, variant and reference are distinct
    points of its grid, and an equivalence has a margin.

    Raises:
        AblateError: one line naming the entry and the field.
    """
    for j, comp in enumerate(entry.comparisons):
        at = f"{where}: entry {entry.id!r}, field comparisons.{j}"
        try:
            abl = ablation_mod.load(comp.ablation)
        except AblateError as exc:
            raise AblateError(f"{at}.ablation: {exc}") from None
        if comp.profile not in abl.profiles:
            raise AblateError(
                f"{at}.profile: {abl.name} has no profile {comp.profile!r}"
                f"{did_you_mean(comp.profile, list(abl.profiles))}"
            )
        view = abl.for_profile(comp.profile)
        if comp.task not in view.tasks:
            raise AblateError(
                f"{at}.task: {comp.task!r} is not a task of {abl.name} / {comp.profile}"
                f"{did_you_mean(comp.task, list(view.tasks))}"
            )
        labels = [view.label(v) for v in view.variants()]
        for key in ("variant", "reference"):
            label = getattr(comp, key)
            if label not in labels:
                raise AblateError(
                    f"{at}.{key}: {label!r} is not a point of the {abl.name} / {comp.profile} grid"
                    f"{did_you_mean(label, labels)}; grid: {labels}"
                )
        if comp.variant == comp.reference:
            raise AblateError(f"{at}.reference: the same as the variant ({comp.variant!r}); nothing is compared")
        if comp.expect == "equivalent" and comp.margin is None and view.tasks[comp.task].primary.sesoi is None:
            raise AblateError(f"{at}.margin: an equivalence needs a margin and the task declares no sesoi")


@functools.cache
def load_registry() -> tuple[Reproduction, ...]:
    """The validated entries of ``harness/experiment/reproductions.yaml``."""
    text = importlib.resources.files("harness.experiment").joinpath(REGISTRY).read_text()
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise AblateError(f"{REGISTRY}: not valid YAML ({' '.join(str(exc).split())})") from None
    return tuple(parse(data))


def load_checked(rid: str | None = None) -> list[Reproduction]:
    """The registry's entries (or the one named ``rid``), each checked against its ablations."""
    entries = select(load_registry(), rid)
    for entry in entries:
        check(entry)
    return entries


def select(entries: tuple[Reproduction, ...] | list[Reproduction], rid: str | None) -> list[Reproduction]:
    """Every entry, or the one named ``rid`` (AblateError with the closest id otherwise)."""
    if rid is None:
        return list(entries)
    ids = [e.id for e in entries]
    if rid not in ids:
        raise AblateError(f"no reproduction {rid!r}{did_you_mean(rid, ids)}; reproductions: {', '.join(ids)}")
    return [e for e in entries if e.id == rid]


# --- statistics ---------------------------------------------------------------------------------


@dataclass
class Outcome:
    """One comparison's result."""

    comparison: Comparison
    outcome: str  # pass | fail | inconclusive | not run
    verdict: str = ""
    row: dict[str, Any] = field(default_factory=dict)  # stats.COLUMNS of the variant
    reference: dict[str, Any] = field(default_factory=dict)  # descriptives of the reference
    note: str = ""
    runs: int = 0  # runs of the grid in the store
    planned: int = 0  # runs the grid declares


@dataclass
class EntryResult:
    entry: Reproduction
    outcomes: list[Outcome]
    scale: list[str] = field(default_factory=list)  # "ablation / profile: d_model ..., seeds"

    @property
    def outcome(self) -> str:
        words = [o.outcome for o in self.outcomes]
        if all(w == "not run" for w in words):
            return "not run"
        if "fail" in words:
            return "fail"
        return "pass" if all(w == "pass" for w in words) else "inconclusive"


def paired_rows(result: Any, task: str, metric: str, variants: tuple[str, str]) -> pd.DataFrame:
    """``(variant, seed, value)`` of two variants on one task and metric from an analysis, runs
    below the task's gate left out of metrics beyond L (as :func:`harness.analysis.comparisons.analyse` does)."""
    rows = result.rows
    data = rows[(rows["task"] == task) & (rows["metric"] == metric) & rows["variant"].isin(variants)]
    prof = result.ablation.profiles[result.profile]
    if beyond_training(metric) and prof.apply_gate:
        runs = result.runs
        gated = set(runs.loc[(runs["task"] == task) & (runs["status"] == "ok") & ~runs["passed_gate"], "run_id"])
        data = data[~data["run_id"].isin(gated)]
    return data[["variant", "seed", "value"]]


def compare_pair(
    data: pd.DataFrame,
    variant: str,
    reference: str,
    higher_is_better: bool,
    margin: float | None,
    alpha: float,
    confirmatory: bool,
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The paired comparison of ``variant`` against ``reference`` (:func:`harness.analysis.stats.compare`
    with the reference as its baseline): ``(variant row, reference row)`` as dicts of
    ``stats.COLUMNS``, or None when either has no value."""
    present = set(data["variant"])
    if variant not in present or reference not in present:
        return None
    frame = stats.compare(
        data,
        baseline=reference,
        higher_is_better=higher_is_better,
        sesoi=margin,
        alpha=alpha,
        confirmatory=confirmatory,
        p_adjust="holm",
    )
    by = frame.set_index("variant")
    return {"variant": variant, **by.loc[variant].to_dict()}, {"variant": reference, **by.loc[reference].to_dict()}


def _holm(outcomes: list[Outcome], alpha: float, confirmatory: dict[int, bool]) -> None:
    """Adjust the entry's comparisons as one Holm family (p and TOST p) and redo the verdicts."""
    tested = [i for i, o in enumerate(outcomes) if o.row and not math.isnan(o.row.get("p", math.nan))]
    if not tested:
        return
    rows = [outcomes[i].row for i in tested]
    fam = stats.adjust_family(
        [r["p"] for r in rows],
        [r.get("p_perm", math.nan) for r in rows],
        [r.get("p_tost", math.nan) for r in rows],
        [r["n_pairs"] for r in rows],
        [r["sd_diff"] for r in rows],
        "holm",
        alpha,
    )
    for j, (i, row) in enumerate(zip(tested, rows)):
        row.update(
            p_adj=fam.p_adj[j],
            p_perm_adj=fam.p_perm_adj[j],
            p_tost_adj=fam.p_tost_adj[j],
            family_size=fam.size,
            mde=fam.mde[j],
        )
        if vd.kind(row["verdict"]) is vd.Kind.IDENTICAL:
            continue
        row["verdict"] = stats.verdict(
            fam.p_adj[j],
            row["delta_ci_low"],
            row["delta_ci_high"],
            perm_p_adj=fam.p_perm_adj[j],
            sesoi=row.get("margin"),
            tost_p=fam.p_tost_adj[j],
            alpha=alpha,
            confirmatory=confirmatory[i],
            mde=fam.mde[j],
        )


def judge(verdict: str, expect: str) -> str:
    """pass / fail / inconclusive of a verdict against the expected one (as claims are judged)."""
    if vd.kind(verdict) is vd.Kind.PILOT or not verdict:
        return "inconclusive"
    if vd.matches(verdict, expect):
        return "pass"
    if vd.rules(verdict):
        return "fail"
    return "inconclusive"


def evaluate(entry: Reproduction, results: Path, alpha: float = 0.05) -> EntryResult:
    """Every comparison of ``entry`` from the store ``results`` (each grid read once)."""
    cache: dict[tuple[str, str], Any] = {}
    outcomes: list[Outcome] = []
    confirmatory: dict[int, bool] = {}
    scale: list[str] = []
    for comp in entry.comparisons:
        key = (comp.ablation, comp.profile)
        if key not in cache:
            abl = ablation_mod.load(comp.ablation)
            sel = selection_mod.select(abl, comp.profile, [], check_data=False)
            result = analyse(sel, results)
            cache[key] = (result, len(sel.specs))
            if result.scan.records:
                scale.append(_scale(result))
        result, planned = cache[key]
        view = result.ablation
        spec = view.tasks[comp.task].primary
        hib = metrics.higher_is_better(comp.metric)
        margin = comp.margin if comp.margin is not None else spec.sesoi
        prof = view.profiles[comp.profile]
        data = paired_rows(result, comp.task, comp.metric, (comp.variant, comp.reference))
        pair = compare_pair(data, comp.variant, comp.reference, hib, margin, alpha, prof.confirmatory)
        runs = len(result.scan.records)
        if pair is None:
            outcomes.append(
                Outcome(comp, "not run", runs=runs, planned=planned, note="no runs of both variants with this metric")
            )
            confirmatory[len(outcomes) - 1] = prof.confirmatory
            continue
        row, ref = pair
        row["margin"] = margin
        if row["n_pairs"] < 2:
            row["verdict"] = vd.TOO_FEW
        outcomes.append(Outcome(comp, "", row=row, reference=ref, runs=runs, planned=planned))
        confirmatory[len(outcomes) - 1] = prof.confirmatory
    _holm(outcomes, alpha, confirmatory)
    for o in outcomes:
        if o.outcome == "not run":
            continue
        o.verdict = str(o.row["verdict"])
        o.outcome = judge(o.verdict, o.comparison.expect)
        low = o.comparison.reference_min
        if low is not None and vd.kind(o.verdict) is not vd.Kind.PILOT and not o.reference.get("mean", math.nan) >= low:
            o.outcome = "fail"
            o.note = f"the reference's mean {o.reference.get('mean', math.nan):.4g} is below {low:g}"
    return EntryResult(entry, outcomes, scale)


def _scale(result: Any) -> str:
    base = result.ablation.baseline_label
    rec = next((r for r in result.scan.records if r.variant_label == base), result.scan.records[0])
    c = rec.config
    prof = result.ablation.profiles[result.profile]
    return (
        f"{result.ablation.name} / {result.profile}: d_model {c['model']['d_model']}, {c['model']['n_layers']} layers "
        f"({rec.variant_label}), {c['train']['steps']} steps, L = {c['train']['seq_len']}; {len(prof.seeds)} seeds"
    )


# --- text ---------------------------------------------------------------------------------------


def evidence_line(o: Outcome) -> str:
    """One comparison as the claims' evidence lines read: Δ, its CI, adjusted p, pairs, verdict."""
    c = o.comparison
    head = f"{c.describe()}: "
    if o.outcome == "not run":
        return head + (
            f"not evaluated: {o.note}"
            if o.note and not o.planned
            else f"not run ({o.runs} of {o.planned} runs of the grid in the store); expects {c.expect}"
        )
    r, ref = o.row, o.reference
    line = (
        head + f"{c.variant} {r['mean']:.4g} vs {c.reference} {ref['mean']:.4g} (means); "
        f"Δ = {r['delta']:+.4g} (95% CI [{r['delta_ci_low']:+.4g}, {r['delta_ci_high']:+.4g}], + = {c.variant} better), "
        f"adjusted p = {r['p_adj']:.3g} (Holm over {int(r['family_size'])}), n = {int(r['n_pairs'])} seeds"
    )
    if c.expect == "equivalent":
        line += f", TOST p adj = {r['p_tost_adj']:.3g} within ±{r['margin']:g}"
    line += f" → {o.verdict}; expects {c.expect}: **{o.outcome}**"
    return line + (f" ({o.note})" if o.note else "")


def summary_lines(results: list[EntryResult]) -> list[str]:
    """What ``ablate reproduce`` prints: one line per entry, then its evidence, then the caveat."""
    out = []
    for res in results:
        out.append(f"{res.entry.id}: {res.outcome.upper()}  ({res.entry.paper.split(',')[0]}, {res.entry.source})")
        out += [f"  - {evidence_line(o)}" for o in res.outcomes]
    out.append(
        "Scale caveat: each outcome holds at the scale run here (see reports/reproductions.md), "
        "not necessarily at the published scale."
    )
    return out


def markdown(results: list[EntryResult], store: Path) -> str:
    """``reports/reproductions.md``: a table of entries and outcomes, then one section per entry."""
    lines = [
        "# Reproductions: published results as positive controls",
        "",
        (
            f"*Generated by `ablate report --all` on {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC from the runs in "
            f"`{store}`; the entries are `harness/experiment/reproductions.yaml`; `ablate reproduce [ID]` runs what is missing.*"
        ),
        "",
        (
            "Each comparison is the paired test of the claims (paired t-test by seed and its t-interval; TOST "
            "for an equivalence), of a variant against a reference variant; an entry's comparisons are one Holm "
            "family. pass: every comparison gave the verdict the published result predicts; fail: one gave "
            "another (a finding, not a bug: its section says what the harness saw and what differs from the "
            "published setting); inconclusive: the tests did not decide."
        ),
        "",
        "| reproduction | paper | source | expected at CPU scale | outcome |",
        "|---|---|---|---|---|",
    ]
    for res in results:
        e = res.entry
        lines.append(
            f"| [{e.id}](#{e.id}) | {_cell(e.paper)} | {_cell(e.source)} | {_cell(e.expected)} | **{res.outcome}** |"
        )
    lines.append("")
    for res in results:
        e = res.entry
        lines += [
            f"## {e.id}",
            "",
            f"**{res.outcome}**. {e.paper}, {e.source}.",
            "",
            f"- Published setting: {e.setting}.",
            f"- Published result: {e.result}.",
            f"- Expected at CPU scale: {e.expected}.",
            "",
            "Evidence:",
            "",
        ]
        lines += [f"- {evidence_line(o)}" for o in res.outcomes]
        lines.append("")
        if res.outcome in ("fail", "inconclusive"):
            lines += [
                f"What the harness saw: {_saw(res)}",
                "",
                f"What might explain the difference: {' '.join(e.differences.split())}",
                "",
            ]
        if res.outcome == "not run":
            lines += [f"Not run yet: `ablate reproduce {e.id}`.", ""]
        scale = "; ".join(res.scale) or "no runs"
        lines += [
            (
                f"Scale caveat: this outcome holds at the scale run here ({scale}), not necessarily at the "
                "published scale."
            ),
            "",
        ]
    return "\n".join(lines)


def _saw(res: EntryResult) -> str:
    parts = []
    for o in res.outcomes:
        c = o.comparison
        if o.outcome == "not run":
            parts.append(f"{c.variant} vs {c.reference} not run")
        else:
            parts.append(
                f"{c.variant} vs {c.reference} on `{c.metric}`: {o.verdict} (means {o.row['mean']:.4g} vs "
                f"{o.reference['mean']:.4g}, Δ {o.row['delta']:+.3g} with + = {c.variant} better)"
                + (f"; {o.note}" if o.note else "")
            )
    return "; ".join(parts) + "."


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def write_markdown(results_dir: Path, out: Path, entries: tuple[Reproduction, ...] | None = None) -> Path:
    """Evaluate every entry from the store and write ``out/reproductions.md``; returns its path."""
    entries = load_registry() if entries is None else entries
    results = []
    for entry in entries:
        try:
            check(entry)
        except AblateError as exc:  # e.g. an ablation not registered here: the page says so
            results.append(EntryResult(entry, [Outcome(c, "not run", note=str(exc)) for c in entry.comparisons]))
            continue
        results.append(evaluate(entry, results_dir))
    path = Path(out) / "reproductions.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown(results, results_dir))
    return path


# --- what is missing ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Grid:
    """One (ablation, profile) an entry needs, and how many of its runs are not in the store."""

    ablation: str
    profile: str
    planned: int
    missing: int


def grids(entries: list[Reproduction], results: Path) -> list[Grid]:
    """The (ablation, profile) grids the entries read, in order, each once, with missing counts."""
    seen: dict[tuple[str, str], Grid] = {}
    for entry in entries:
        for comp in entry.comparisons:
            key = (comp.ablation, comp.profile)
            if key in seen:
                continue
            specs = selection_mod.select(ablation_mod.load(comp.ablation), comp.profile, [], check_data=False).specs
            missing = sum(read_record(run_dir(results, s.ablation, s.profile, s.run_id)) is None for s in specs)
            seen[key] = Grid(comp.ablation, comp.profile, len(specs), missing)
    return list(seen.values())
