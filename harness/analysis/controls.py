"""The controls that guard a claim, checked and evaluated from the store.

Each, with its outcome, a :class:`harness.analysis.claims.ControlResult`. A claim's verdict that rules is withheld
while one has not passed. Their rules: docs/reports.md, "Positive controls" (the entries of
``harness/experiment/reproductions.yaml``) and docs/statistics.md, "Controls before verdicts" (the negative ones:
ablations declaring ``control:``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.analysis import stats, untestable
from harness.analysis import verdicts as vd
from harness.analysis.claims import NEGATIVE, ControlOutcome, ControlResult, control_outcomes
from harness.analysis.comparisons import Analysis, analyse
from harness.encode import count
from harness.errors import AblateError
from harness.experiment import ablation as ablation_mod
from harness.experiment import claims as claims_mod
from harness.experiment import metrics
from harness.experiment import selection as selection_mod
from harness.registry import did_you_mean
from harness.store.runs import load_record, run_dir

Controls = dict[str, tuple[ControlResult, ...]]  # claim id -> the controls that guard it, with their outcomes


def check(entry: claims_mod.PositiveControl) -> None:
    """Check a registry entry (a positive control): the claims it guards and the comparisons it names.

    Raises:
        AblateError: one line naming the entry and the field, unless each claim ``entry`` guards is in
            ``claims.yaml`` (once) and each comparison names a registered ablation, one of its profiles, a task of
            it, two distinct points of its grid, and, for an equivalence, a margin or a sesoi.
    """
    where = claims_mod.REGISTRY
    if problem := claims_mod.guards_problem(entry.guards):
        raise AblateError(f"{where}: entry {entry.id!r}, field {problem}")
    for j, comp in enumerate(entry.comparisons):
        at = f"{where}: entry {entry.id!r}, field comparisons.{j}"
        try:
            abl = ablation_mod.load(comp.ablation)
        except AblateError as exc:
            raise AblateError(f"{at}.ablation: {exc}") from None
        if comp.profile not in abl.profiles:
            hint = did_you_mean(comp.profile, list(abl.profiles))
            raise AblateError(f"{at}.profile: {abl.name} has no profile {comp.profile!r}{hint}")
        view = abl.for_profile(comp.profile)
        if comp.task not in view.tasks:
            hint = did_you_mean(comp.task, list(view.tasks))
            raise AblateError(f"{at}.task: {comp.task!r} is not a task of {abl.name} / {comp.profile}{hint}")
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


def load_checked(rid: str | None = None) -> list[claims_mod.PositiveControl]:
    """The registry's entries (or the one named ``rid``), each :func:`check`-ed (AblateError otherwise)."""
    entries = claims_mod.load_registry()
    ids = [e.id for e in entries]
    if rid is not None and rid not in ids:
        raise AblateError(f"no reproduction {rid!r}{did_you_mean(rid, ids)}; reproductions: {', '.join(ids)}")
    out = [e for e in entries if rid in (None, e.id)]
    for entry in out:
        check(entry)
    return out


@dataclass
class ComparisonResult:
    """One comparison's result.

    ``row`` and ``reference``: the variant's and the reference's ``stats.COLUMNS``; ``runs`` of its grid in the
    store, of ``planned``.
    """

    comparison: claims_mod.Comparison
    outcome: ControlOutcome = ControlOutcome.NOT_RUN  # pass | fail | inconclusive | not run
    why: str = ""  # an inconclusive one's: `baseline not learned 3/8`, `reference at ceiling on all 8 seeds`
    verdict: str = ""
    row: dict[str, Any] = field(default_factory=dict)
    reference: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    runs: int = 0
    planned: int = 0
    unlearned: untestable.Unlearned | None = None
    ceiling: int | None = None  # seeds, when the reference scored the metric's best value on every one
    facts: vd.Facts = vd.Facts()

    @property
    def text(self) -> str:
        """Its outcome in words: ``inconclusive (baseline not learned 3/8)``."""
        return self.outcome.text(self.why)


@dataclass
class Evaluation:
    """A positive control evaluated: each comparison's :class:`ComparisonResult`, and its grids' scale."""

    entry: claims_mod.PositiveControl
    outcomes: list[ComparisonResult]
    scale: list[str] = field(default_factory=list)  # "ablation / profile: d_model ..., seeds"

    @property
    def runs(self) -> tuple[int, int]:
        """(runs in the store, runs planned) over the grids the entry reads, each grid counted once."""
        grids = {(o.comparison.ablation, o.comparison.profile): (o.runs, o.planned) for o in self.outcomes}
        return sum(r for r, _ in grids.values()), sum(p for _, p in grids.values())

    @property
    def outcome(self) -> ControlOutcome:
        """The control's outcome from its comparisons' and its grids' runs.

        ``not run`` (no comparison was), ``incomplete`` (not all its grids' runs are in the store), ``fail`` (a
        comparison failed), ``pass`` (all passed), else ``inconclusive``.
        """
        said = {o.outcome for o in self.outcomes}
        if said == {ControlOutcome.NOT_RUN}:
            return ControlOutcome.NOT_RUN
        runs, planned = self.runs
        if runs < planned:
            return ControlOutcome.INCOMPLETE
        if ControlOutcome.FAIL in said:
            return ControlOutcome.FAIL
        return ControlOutcome.PASS if said == {ControlOutcome.PASS} else ControlOutcome.INCONCLUSIVE

    @property
    def why(self) -> str:
        """An incomplete one's runs in the store of those planned (``29/32 runs``), else empty."""
        return "{}/{} runs".format(*self.runs) if self.outcome is ControlOutcome.INCOMPLETE else ""

    @property
    def text(self) -> str:
        """Its outcome in words: ``incomplete (29/32 runs)``."""
        return self.outcome.text(self.why)


def _compare(result: Analysis, comp: claims_mod.Comparison, alpha: float) -> ComparisonResult:
    """The variant against the reference (the baseline of :func:`harness.analysis.stats.compare`).

    Runs below the task's gate left out of metrics beyond L; ``not run`` when either has no value. ``result``: the
    analysis of the comparison's grid.
    """
    rows, runs, prof, task = result.rows, result.runs, result.selection.settings, comp.task
    pair = [comp.variant, comp.reference]
    data = rows[(rows["task"] == task) & (rows["metric"] == comp.metric) & rows["variant"].isin(pair)]
    data = data[~data["run_id"].isin(untestable.gated_out(runs, task, comp.metric, prof.apply_gate))]
    o = ComparisonResult(comp, runs=len(result.scan.records), planned=len(result.selection.specs))
    if not set(pair) <= set(data["variant"]):
        o.note = "no runs of both variants with this metric"
        return o
    entry, facts = result.ablation.tasks[task], {}
    margin = comp.margin if comp.margin is not None else entry.primary.sesoi
    how = {"higher_is_better": metrics.higher_is_better(comp.metric), "sesoi": margin, "alpha": alpha}
    frame = stats.compare(
        data[["variant", "seed", "value"]], baseline=comp.reference, confirmatory=prof.confirmatory, facts=facts, **how
    ).set_index("variant")
    o.facts = facts[comp.variant]
    o.row = {"variant": comp.variant, **frame.loc[comp.variant].to_dict(), "margin": margin}
    o.reference = {"variant": comp.reference, **frame.loc[comp.reference].to_dict()}
    if entry.target is not None:  # the claims' gating rule
        o.unlearned = untestable.unlearned(rows, task, comp.reference, len(prof.seeds))
    o.ceiling = untestable.seeds_at_ceiling(rows, task, comp.metric, comp.reference, paired_with=comp.variant)
    return o


def _holm(outcomes: list[ComparisonResult], alpha: float) -> None:
    """Adjust the entry's comparisons as one Holm family (p and TOST p) and decide their verdicts.

    By :data:`~harness.analysis.verdicts.RULES`, with what else is known of each (the reference's learning, its
    ceiling, the CI of Δ): no rule is applied again after the table.
    """
    tested = [o for o in outcomes if o.row and not math.isnan(o.row.get("p", math.nan))]
    fam = stats.adjust_family([o.row for o in tested], "holm", alpha)
    adjusted = {id(o): fam.at(j) for j, o in enumerate(tested)}
    for o in (o for o in outcomes if o.row):  # every compared one, a test or not (identical pairs)
        if id(o) in adjusted:
            o.row.update(adjusted[id(o)], family_size=fam.size)
        u, best = o.unlearned, metrics.best_value(o.comparison.metric)
        o.facts = replace(
            o.facts,
            **adjusted.get(id(o), {}),
            unlearned=u,
            planned=0 if u is None else u.planned,
            ceiling=None if o.ceiling is None else (best, o.ceiling),
            delta_ci=(o.row["delta_ci_low"], o.row["delta_ci_high"]),
        )
        o.row["verdict"] = vd.decide(o.facts)


def _unlearned(u: untestable.Unlearned | None) -> str:
    """``3/8`` (seeds that reached the target, of those planned), ``3/8, 2 not run``; empty for None."""
    return "" if u is None else f"{u.reached}/{u.planned}" + (f", {u.not_run} not run" if u.not_run else "")


OUTCOMES = (  # a control comparison's outcome and why from its verdict: the first that holds (docs/statistics.md)
    vd.Rule(
        "not learned",
        lambda o: vd.kind(o.verdict) is vd.Kind.NOT_LEARNED,
        lambda o: (ControlOutcome.INCONCLUSIVE, f"baseline not learned {_unlearned(o.unlearned)}"),
    ),
    vd.Rule(
        "at ceiling",
        lambda o: vd.kind(o.verdict) is vd.Kind.CEILING,
        lambda o: (ControlOutcome.INCONCLUSIVE, f"reference at ceiling on all {o.ceiling} seeds"),
    ),
    vd.Rule(
        "no verdict",
        lambda o: not o.verdict or vd.kind(o.verdict) is vd.Kind.PILOT,
        lambda o: (ControlOutcome.INCONCLUSIVE, ""),
    ),
    vd.Rule("pass", lambda o: vd.matches(o.verdict, o.comparison.expect), lambda o: (ControlOutcome.PASS, "")),
    vd.Rule("fail", lambda o: vd.rules(o.verdict), lambda o: (ControlOutcome.FAIL, "")),
    vd.Rule("inconclusive", lambda o: True, lambda o: (ControlOutcome.INCONCLUSIVE, "")),
)


def _judge(o: ComparisonResult) -> None:
    """A tested comparison's outcome from its verdict (:data:`OUTCOMES`), then the control's own bar.

    The bar: the reference's mean at least ``reference_min`` (what the published result needs, not a verdict rule).
    """
    o.verdict = str(o.row["verdict"])
    u = o.unlearned
    o.outcome, o.why = vd.first(OUTCOMES, o)
    low, mean = o.comparison.reference_min, o.reference.get("mean", math.nan)
    if low is not None and vd.kind(o.verdict) is not vd.Kind.PILOT and not mean >= low:
        o.outcome, o.why = ControlOutcome.FAIL, ""
        o.note = f"the reference's mean {mean:.4g} is below {low:g}"
        if u is not None:
            seeds = f"the {u.run} seeds run ({u.planned} planned)" if u.not_run else f"{u.planned} seeds"
            o.note += f"; it reached the task's target on {u.reached} of {seeds}"


def evaluate(entry: claims_mod.PositiveControl, results: Path, alpha: float = 0.05) -> Evaluation:
    """Every comparison of ``entry`` from the store ``results`` (each grid read once)."""
    grids: dict[tuple[str, str], Analysis] = {}
    res = Evaluation(entry, [])
    for comp in entry.comparisons:
        if (comp.ablation, comp.profile) not in grids:
            sel = selection_mod.select(ablation_mod.load(comp.ablation), comp.profile, [], check_data=False)
            grids[comp.ablation, comp.profile] = result = analyse(sel, results)
            if result.scan.records:
                res.scale.append(_scale(result))
        res.outcomes.append(_compare(grids[comp.ablation, comp.profile], comp, alpha))
    _holm(res.outcomes, alpha)
    for o in res.outcomes:
        if o.row:  # compared: both variants have runs with the metric
            _judge(o)
    return res


def _scale(result: Analysis) -> str:
    base = result.ablation.baseline_label
    rec = next((r for r in result.scan.records if r.variant_label == base), result.scan.records[0])
    c = rec.config
    return (
        f"{result.ablation.name} / {result.profile}: d_model {c.model.d_model}, {count(c.model.n_layers, 'layer')} "
        f"({rec.variant_label}), {count(c.train.steps, 'step')}, L = {c.train.seq_len}; {result.seeds_text()}"
    )


def evaluate_all(results: Path, entries: Collection[claims_mod.PositiveControl] | None = None) -> list[Evaluation]:
    """Every entry (default: the registry's) evaluated from the store.

    One that does not :func:`check` here (e.g. an ablation not registered) is ``not run``, with the reason.
    """
    out = []
    for entry in claims_mod.load_registry() if entries is None else entries:
        try:
            check(entry)
        except AblateError as exc:
            out.append(Evaluation(entry, [ComparisonResult(c, note=str(exc)) for c in entry.comparisons]))
            continue
        out.append(evaluate(entry, results))
    return out


def grids(entries: list[claims_mod.PositiveControl], results: Path) -> list[tuple[str, str, int, int]]:
    """(ablation, profile, runs planned, runs not in the store) of each grid the entries read, in order, once."""
    out = []
    for ablation, profile in dict.fromkeys((c.ablation, c.profile) for e in entries for c in e.comparisons):
        specs = selection_mod.select(ablation_mod.load(ablation), profile, [], check_data=False).specs
        missing = sum(load_record(run_dir(results, s.ablation, s.profile, s.run_id))[0] is None for s in specs)
        out.append((ablation, profile, len(specs), missing))
    return out


def negative_outcome(abl: ablation_mod.Ablation, results: Path) -> tuple[ControlOutcome, str]:
    """Caught | not caught | not run | incomplete, for an ablation declaring ``control:``, and its why.

    The why: an incomplete one's runs in the store of those planned (``29/32 runs``), else empty.
    """
    sel = selection_mod.select(abl, abl.control.profile, [], check_data=False)
    result = analyse(sel, results)
    done = len(result.scan.records)  # analyse keeps the records of the selection's runs only
    if not done:
        return ControlOutcome.NOT_RUN, ""
    if done < len(sel.specs):
        return ControlOutcome.INCOMPLETE, f"{done}/{len(sel.specs)} runs"
    outcomes = control_outcomes(result)
    return ControlOutcome.CAUGHT if outcomes and all(o.caught for o in outcomes) else ControlOutcome.NOT_CAUGHT, ""


def _negatives(
    claims: Collection[str], outcome: Callable[[ablation_mod.Ablation], tuple[ControlOutcome, str]]
) -> list[tuple[list[str], ControlResult]]:
    """The registered ablations whose ``control:`` guards one of ``claims``: the claims each guards, and its result.

    One that does not load is skipped: `report --all` names it in its index.
    """
    out = []
    for name in ablation_mod.available():
        try:
            abl = ablation_mod.load(name)
        except AblateError:
            continue
        if abl.control is not None and set(abl.control.guards) & set(claims):
            out.append((abl.control.guards, ControlResult(abl.name, *outcome(abl), NEGATIVE, abl.control.profile)))
    return out


def _by_claim(claims: Collection[str], guarded: list[tuple[list[str], ControlResult]]) -> Controls:
    """Each of ``claims`` -> the controls that name it, in order."""
    return {c: tuple(g for ids, g in guarded if c in ids) for ids, _ in guarded for c in ids if c in claims}


def controls_of(claims: Collection[str], results: Path, evaluated: list[Evaluation] | None = None) -> Controls:
    """Every control that guards one of ``claims``, positive ones first, evaluated from the store.

    ``evaluated``: the positive ones already evaluated (default: those guarding ``claims``).
    """
    if evaluated is None:
        evaluated = evaluate_all(results, [e for e in claims_mod.load_registry() if set(e.guards) & set(claims)])
    positive = [(r.entry.guards, ControlResult(r.entry.id, r.outcome, r.why)) for r in evaluated]
    return _by_claim(claims, positive + _negatives(claims, lambda abl: negative_outcome(abl, results)))


def declared_controls(claims: Collection[str]) -> Controls:
    """Every control declared to guard one of ``claims``, each of outcome ``unknown`` (none is evaluated).

    For a report whose controls' outcomes are unknown (a data file read without its controls' file).
    """
    unknown = ControlOutcome.UNKNOWN
    positive = [(e.guards, ControlResult(e.id, unknown)) for e in claims_mod.load_registry()]
    return _by_claim(claims, positive + _negatives(claims, lambda _: (unknown, "")))
