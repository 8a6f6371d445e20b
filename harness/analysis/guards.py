"""The controls that guard a claim (:class:`harness.analysis.claims.Guard`), evaluated from the
store: a claim's verdict that rules is withheld while one of them has not passed
(:func:`harness.analysis.claims.claim_verdict`).

- Positive controls: the entries of ``harness/experiment/reproductions.yaml`` that list the claim
  under ``guards`` (a published result the harness must see), outcome pass | fail | inconclusive
  | not run (:mod:`harness.analysis.reproductions`).
- Negative controls: the registered ablations whose ``control:`` lists the claim under ``guards``
  (a known bug the harness must catch), outcome ``caught`` when every task of its confirmatory
  ``control.profile`` judges the bug as expected with adjusted p < 0.05
  (:func:`harness.analysis.claims.control_outcomes`), ``not caught`` otherwise, ``not run`` without
  runs and ``incomplete (k/n runs)`` before its grid has finished.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from harness.analysis.claims import NEGATIVE, Guard, control_outcomes
from harness.analysis.comparisons import analyse
from harness.analysis.reproductions import EntryResult, Outcome, evaluate, guards_from
from harness.errors import AblateError
from harness.experiment import ablation as ablation_mod
from harness.experiment import reproductions as registry
from harness.experiment import selection as selection_mod
from harness.experiment.ablation import Ablation

Guards = dict[str, tuple[Guard, ...]]
"""Claim id -> the controls that guard it, with their outcomes."""


def merge(*parts: Guards) -> Guards:
    """One mapping from several, each claim's guards in the order given."""
    out: Guards = {}
    for part in parts:
        for cid, guards in part.items():
            out[cid] = (*out.get(cid, ()), *guards)
    return out


def positive_guards(claims: list[str] | tuple[str, ...], results: Path, alpha: float = 0.05) -> Guards:
    """:func:`~harness.analysis.reproductions.guards_from` the registry's entries that guard one of
    ``claims``, evaluated from the store (an entry that does not check here counts as not run)."""
    evaluated = []
    for entry in registry.load_registry():
        if not set(entry.guards) & set(claims):
            continue
        try:
            registry.check(entry)
        except AblateError as exc:
            evaluated.append(EntryResult(entry, [Outcome(c, "not run", note=str(exc)) for c in entry.comparisons]))
            continue
        evaluated.append(evaluate(entry, results, alpha))
    return guards_from(evaluated)


def negative_outcome(abl: Ablation, results: Path) -> str:
    """caught | not caught | not run | incomplete (k/n runs), for an ablation declaring ``control:``."""
    sel = selection_mod.select(abl, abl.control.profile, [], check_data=False)
    result = analyse(sel, results)
    done = sum(r.run_id in sel.run_ids for r in result.scan.records)
    if not done:
        return "not run"
    if done < len(sel.specs):
        return f"incomplete ({done}/{len(sel.specs)} runs)"
    outcomes = control_outcomes(result)
    return "caught" if outcomes and all(o.caught for o in outcomes) else "not caught"


def _registered_controls(claims: list[str] | tuple[str, ...]) -> Iterator[Ablation]:
    """The registered ablations whose ``control:`` guards one of ``claims`` (one that does not load
    is skipped: `report --all` names it in its index)."""
    for name in ablation_mod.available():
        try:
            abl = ablation_mod.load(name)
        except AblateError:
            continue
        if abl.control is not None and set(abl.control.guards) & set(claims):
            yield abl


def _negative(abl: Ablation, outcome: str, claims: list[str] | tuple[str, ...]) -> Guards:
    """``abl``'s negative control, with ``outcome``, for each of ``claims`` it guards."""
    if abl.control is None:
        return {}
    guard = Guard(abl.name, outcome, NEGATIVE, abl.control.profile)
    return {cid: (guard,) for cid in abl.control.guards if cid in claims}


def negative_guards(claims: list[str] | tuple[str, ...], results: Path) -> Guards:
    """The registered negative controls that guard one of ``claims``, evaluated from the store."""
    return merge(*(_negative(abl, negative_outcome(abl, results), claims) for abl in _registered_controls(claims)))


def declared_guards(claims: list[str] | tuple[str, ...], outcome: str) -> Guards:
    """Every control declared to guard one of ``claims`` (the registry's entries, the registered
    negative controls), each with the same ``outcome``: for a report whose controls' outcomes are
    unknown (a data file read without the file of its controls)."""
    out: Guards = {}
    for entry in registry.load_registry():
        out = merge(out, {cid: (Guard(entry.id, outcome),) for cid in entry.guards if cid in claims})
    return merge(out, *(_negative(abl, outcome, claims) for abl in _registered_controls(claims)))


def guards_of(claims: list[str] | tuple[str, ...], results: Path) -> Guards:
    """Every control that guards one of ``claims``: positive ones first, then negative ones."""
    return merge(positive_guards(claims, results), negative_guards(claims, results))
