"""The positive controls evaluated from the store: each comparison of a registry entry
(:mod:`harness.experiment.reproductions`) is the paired test of the claims
(:func:`harness.analysis.stats.compare`: paired t-test by seed, t-interval, TOST equivalence within
a margin) of a variant against its reference; an entry's comparisons are one Holm family. Runs
below a task's gate are left out of metrics beyond L, as in the reports.

Outcome of a comparison: ``pass`` when its verdict is the one expected, ``fail`` when the test
decided otherwise (the other direction, or equivalence, or a difference where equivalence was
expected) or when the reference's mean is below the comparison's ``reference_min``, ``inconclusive``
when it did not decide (or the profile is not confirmatory), ``not run`` without paired runs. An
entry passes when every comparison passes, fails when one fails, and is inconclusive otherwise;
it is ``not run`` when none has runs and ``incomplete (k/n runs)`` while its grids have not all
finished, whatever the runs so far say.

A verdict needs a baseline that learned, as the claims' (:mod:`harness.analysis.untestable`): where
the task declares a convergence target and the comparison's reference reached it on at most half of
the profile's seeds, the comparison is ``inconclusive (baseline not learned k/n)`` whatever its test
says; where the reference scored the metric's best value (accuracy 1) on every seed and the
variant is not ``worse``, ``inconclusive (reference at ceiling on all n seeds)``: the task is too
easy at this scale to show the effect. Only a declared ``reference_min`` the reference's mean falls below still fails it: that entry
names the reference's level as part of the published result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis import stats, untestable
from harness.analysis import verdicts as vd
from harness.analysis.claims import Guard
from harness.analysis.comparisons import Analysis, analyse
from harness.encode import count
from harness.experiment import ablation as ablation_mod
from harness.experiment import metrics
from harness.experiment import selection as selection_mod
from harness.experiment.reproductions import Comparison, Reproduction
from harness.store.runs import read_record, run_dir


@dataclass
class Outcome:
    """One comparison's result."""

    comparison: Comparison
    outcome: str  # pass | fail | inconclusive [(baseline not learned k/n) | (reference at ceiling ...)] | not run
    verdict: str = ""
    row: dict[str, Any] = field(default_factory=dict)  # stats.COLUMNS of the variant
    reference: dict[str, Any] = field(default_factory=dict)  # descriptives of the reference
    note: str = ""
    runs: int = 0  # runs of the grid in the store
    planned: int = 0  # runs the grid declares
    unlearned: untestable.Unlearned | None = None  # the reference did not reach the task's target on most seeds
    ceiling: int | None = None  # seeds, when the reference scored the metric's best value on every one
    facts: vd.Facts = vd.Facts()  # what the comparison's test established (harness.analysis.verdicts)


@dataclass
class EntryResult:
    entry: Reproduction
    outcomes: list[Outcome]
    scale: list[str] = field(default_factory=list)  # "ablation / profile: d_model ..., seeds"

    @property
    def runs(self) -> tuple[int, int]:
        """(runs in the store, runs planned) over the grids the entry reads, each grid counted once."""
        grids = {(o.comparison.ablation, o.comparison.profile): (o.runs, o.planned) for o in self.outcomes}
        return sum(r for r, _ in grids.values()), sum(p for _, p in grids.values())

    @property
    def outcome(self) -> str:
        """not run | incomplete (k/n runs) | fail | pass | inconclusive. An entry whose grids have not
        all finished is incomplete whatever its runs so far say: a control passes or fails on its
        planned seeds, not on the first ones to finish."""
        words = [o.outcome for o in self.outcomes]
        if all(w == "not run" for w in words):
            return "not run"
        runs, planned = self.runs
        if runs < planned:
            return f"incomplete ({runs}/{planned} runs)"
        if "fail" in words:
            return "fail"
        return "pass" if all(w == "pass" for w in words) else "inconclusive"


def paired_rows(result: Analysis, task: str, metric: str, variants: tuple[str, str]) -> pd.DataFrame:
    """``(variant, seed, value)`` of two variants on one task and metric from an analysis, runs
    below the task's gate left out of metrics beyond L (as :func:`harness.analysis.comparisons.analyse` does)."""
    rows = result.rows
    data = rows[(rows["task"] == task) & (rows["metric"] == metric) & rows["variant"].isin(variants)]
    prof = result.ablation.profiles[result.profile]
    if metrics.beyond_training(metric) and prof.apply_gate:
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
) -> tuple[dict[str, Any], dict[str, Any], vd.Facts] | None:
    """The paired comparison of ``variant`` against ``reference`` (:func:`harness.analysis.stats.compare`
    with the reference as its baseline): ``(variant row, reference row)`` as dicts of
    ``stats.COLUMNS``, and the facts of the comparison; None when either has no value."""
    present = set(data["variant"])
    if variant not in present or reference not in present:
        return None
    facts: dict[str, vd.Facts] = {}
    frame = stats.compare(
        data,
        baseline=reference,
        higher_is_better=higher_is_better,
        sesoi=margin,
        alpha=alpha,
        confirmatory=confirmatory,
        p_adjust="holm",
        facts=facts,
    )
    by = frame.set_index("variant")
    row, ref = {"variant": variant, **by.loc[variant].to_dict()}, {"variant": reference, **by.loc[reference].to_dict()}
    return row, ref, facts[variant]


def _holm(outcomes: list[Outcome], alpha: float) -> None:
    """Adjust the entry's comparisons as one Holm family (p and TOST p) and decide their verdicts."""
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
        adjusted = {k: row[k] for k in ("p_adj", "p_perm_adj", "p_tost_adj", "mde")}
        row["verdict"] = vd.decide(replace(outcomes[i].facts, **adjusted))


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
            continue
        row, ref, facts = pair
        row["margin"] = margin
        outcome = Outcome(comp, "", row=row, reference=ref, runs=runs, planned=planned, facts=facts)
        if view.tasks[comp.task].target is not None:  # the gating rule of the claims, on the reference
            reached = untestable.seeds_at_target(result.rows, comp.task, comp.reference)
            if not untestable.learned(reached, len(prof.seeds)):
                run = untestable.seeds_run(result.rows, comp.task, comp.reference)
                outcome.unlearned = untestable.Unlearned(reached, len(prof.seeds), run)
        outcome.ceiling = untestable.seeds_at_ceiling(
            result.rows, comp.task, comp.metric, comp.reference, paired_with=comp.variant
        )
        outcomes.append(outcome)
    _holm(outcomes, alpha)
    for o in outcomes:
        if o.outcome == "not run":
            continue
        o.verdict = str(o.row["verdict"])
        o.outcome = judge(o.verdict, o.comparison.expect)
        if o.unlearned is not None:  # no pass or fail from a reference that did not learn the task
            left = f", {o.unlearned.not_run} not run" if o.unlearned.not_run else ""
            o.outcome = f"inconclusive (baseline not learned {o.unlearned.reached}/{o.unlearned.planned}{left})"
        elif o.ceiling is not None and untestable.undecided_at_ceiling(o.verdict):  # too easy to separate them
            o.outcome = f"inconclusive (reference at ceiling on all {o.ceiling} seeds)"
        low = o.comparison.reference_min
        if low is not None and vd.kind(o.verdict) is not vd.Kind.PILOT and not o.reference.get("mean", math.nan) >= low:
            o.outcome = "fail"
            o.note = f"the reference's mean {o.reference.get('mean', math.nan):.4g} is below {low:g}" + (
                f"; it reached the task's target on {_seeds_reached(o.unlearned)}" if o.unlearned else ""
            )
    return EntryResult(entry, outcomes, scale)


def _seeds_reached(u: untestable.Unlearned) -> str:
    """``0 of 8 seeds``; ``0 of the 3 seeds run (8 planned)`` while the grid is unfinished."""
    return (
        f"{u.reached} of {u.planned} seeds"
        if not u.not_run
        else f"{u.reached} of the {u.run} seeds run ({u.planned} planned)"
    )


def _scale(result: Analysis) -> str:
    base = result.ablation.baseline_label
    rec = next((r for r in result.scan.records if r.variant_label == base), result.scan.records[0])
    c = rec.config
    return (
        f"{result.ablation.name} / {result.profile}: d_model {c.model.d_model}, {count(c.model.n_layers, 'layer')} "
        f"({rec.variant_label}), {count(c.train.steps, 'step')}, L = {c.train.seq_len}; {result.seeds_text()}"
    )


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


def guards_from(evaluated: list[EntryResult]) -> dict[str, tuple[Guard, ...]]:
    """Claim id -> the positive controls that guard it (entries listing it under ``guards``), with
    their outcomes (:attr:`EntryResult.outcome`), from entries already evaluated."""
    out: dict[str, tuple[Guard, ...]] = {}
    for res in evaluated:
        for cid in res.entry.guards:
            out[cid] = (*out.get(cid, ()), Guard(res.entry.id, res.outcome))
    return out
