"""From the run store to comparison tables: gates, pairing by seed, families, and each comparison's
verdict, decided once from what the analysis knows of it (:func:`harness.analysis.verdicts.decide`).

Everything here is computed from the store's tidy rows (:func:`harness.store.runs.tidy`); nothing is
typed in. The rules (families, the gate, the verdicts) are said once, in docs/statistics.md.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from harness.analysis import looks, primary_power, stats, untestable
from harness.analysis import verdicts as vd
from harness.analysis.holm import holm_across
from harness.analysis.outcomes import add_cost, outcome_tables
from harness.analysis.table import Table
from harness.encode import count
from harness.errors import AblateError
from harness.experiment import claims as claims_mod
from harness.experiment import metrics
from harness.experiment.ablation import Ablation
from harness.experiment.selection import Selection
from harness.experiment.versions import mixed_versions
from harness.store.record import Record
from harness.store.runs import StoreScan, scan, tidy


@dataclass
class Analysis:
    """Every comparison of one :class:`~harness.experiment.selection.Selection`'s stored runs."""

    selection: Selection
    runs: pd.DataFrame  # one row per run: status, gate, seed, variant, task
    rows: pd.DataFrame  # tidy metric rows of runs with status ok
    scan: StoreScan
    results: Path
    tables: list[Table] = field(default_factory=list)
    foreign: int = 0  # records of this folder made with other overrides
    mixed_code: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # task -> code run at >1 version
    unlearned: dict[str, untestable.Unlearned] = field(default_factory=dict)  # task -> baseline seeds at target
    power: list[primary_power.PrimaryPower] = field(default_factory=list)  # each primary comparison at its sesoi
    alpha: float = 0.05
    references: dict[tuple[str, str, str], Table | None] = field(default_factory=dict)  # made when a claim asks
    sequential: looks.State | None = None  # a group-sequential profile: where its looks stand

    @property
    def ablation(self) -> Ablation:
        """The declaration as the profile runs it (its tasks and variants only)."""
        return self.selection.ablation

    @property
    def profile(self) -> str:
        """The profile's name."""
        return self.selection.profile

    def table(self, task: str, metric: str, reference: str | None = None) -> Table | None:
        """The comparison of ``metric`` on ``task`` against the baseline (or against the variant
        ``reference``, as a claim names it), if the runs gave one."""
        if reference is not None and reference != self.ablation.baseline_label:
            key = (task, metric, reference)
            if key not in self.references:
                self.references[key] = _reference_table(self, task, metric, reference)
            return self.references[key]
        return next((t for t in self.tables if t.task == task and t.metric == metric), None)

    def seeds_done(self) -> SeedsDone:
        """How far the grid got (:class:`SeedsDone`). A run that diverged or failed is in the store:
        its outcome is a result (``mask_fill_fp16``'s -inf runs diverge)."""
        stored = set(self.runs["run_id"])
        specs = self.selection.specs
        seeds = self.selection.settings.seeds
        done = sum(all(s.run_id in stored for s in specs if s.seed == seed) for seed in seeds)
        return SeedsDone(done, len(seeds), sum(s.run_id in stored for s in specs), len(specs))

    def seeds_text(self) -> str:
        """The seeds a scale caveat names: ``8 seeds`` once every planned run is in the store, else
        ``8 seeds planned, 9 of 16 runs so far``: an unfinished grid has run fewer seeds, and each
        comparison's ``n`` says how many of its own pairs it read; a group-sequential design that
        finished before its last look: ``16 of at most 32 seeds (the group-sequential design finished at look 2
        of 4)``, its arms having stopped at the looks their comparisons were decided at."""
        d = self.seeds_done()
        if (st := self.stopped_early(d)) is not None:
            return (
                f"{st.seeds_used} of at most {count(d.declared, 'seed')} (the group-sequential design finished at "
                f"look {st.reached} of {len(st.design.looks)})"
            )
        return (
            count(d.declared, "seed")
            if d.complete
            else f"{count(d.declared, 'seed')} planned, {d.runs} of {count(d.planned, 'run')} so far"
        )

    def stopped_early(self, done: SeedsDone) -> looks.State | None:
        """The design's state when a group-sequential profile finished before running every seed it
        declares (``done``: :meth:`seeds_done`), else None."""
        st = self.sequential
        return st if st is not None and st.finished and not done.complete else None


class SeedsDone(NamedTuple):
    """How far a grid got: ``seeds`` (all of whose planned runs are in the store) of the
    ``declared`` ones, and ``runs`` of the ``planned`` runs."""

    seeds: int
    declared: int
    runs: int
    planned: int

    @property
    def complete(self) -> bool:
        return self.runs == self.planned


def metric_order(names: list[str]) -> list[str]:
    """Per-length metrics first (by name, then length), then the others by name."""

    def key(m: str) -> tuple:
        length = metrics.length_of(m)
        return (0, *length) if length else (1, m, 0)

    return sorted(names, key=key)


def compared_metrics(frame: pd.DataFrame, extra: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """Metrics compared across variants: those every analysis compares
    (:func:`harness.experiment.metrics.compared`) and ``extra``."""
    return metric_order([m for m in frame["metric"].unique() if metrics.compared(m) or m in extra])


def claimed_metrics(abl: Ablation, task: str) -> set[str]:
    """Metrics an evidence entry of the ablation's claims names for ``task`` (e.g. ``tokens_per_s``)."""
    claims = claims_mod.load_claims()
    return {ev["metric"] for cid in abl.claims for ev in claims.get(cid, {}).get("evidence", []) if ev["task"] == task}


def analyse(
    sel: Selection,
    results: Path,
    alpha: float = 0.05,
    store_profile: str | None = None,
    found: StoreScan | None = None,
) -> Analysis:
    """Read the store and build every comparison table of the selection's runs: those of its run
    ids (the grid with its overrides); other records of the folder are set aside and counted in
    ``Analysis.foreign``.

    Args:
        store_profile: the store folder to read when it is not the selection's profile: the tuned
            runs of ``ablate run --tuned`` live under ``<profile>+tuned`` and are analysed with the
            declaration's profile (seeds, gate, confirmatory), apart from the untuned ones. Their
            ids carry their studies' parameters: a record of that folder is compared when its id
            is the selection's run at its recorded parameters (the grid with these overrides).
        found: the records to compare instead of the store's (a report's data file).

    Raises:
        AblateError: the store holds several runs of one (task, variant, seed) of the selection.
    """
    abl, profile = sel.ablation, sel.profile
    found = found if found is not None else scan(results, abl.name, store_profile or profile)
    if store_profile is None:
        ids = sel.run_ids
    else:  # a tuned run belongs to the selection when its id is that of the selection's run at its parameters
        ids = sel.tuned_run_ids((r.task, r.variant_label, r.seed, r.tuned_params) for r in found.records)
    foreign = sum(r.run_id not in ids for r in found.records)
    found.records = [r for r in found.records if r.run_id in ids]
    _refuse_mixed_grids(abl, profile, found.records)
    frame = tidy(found.records)
    runs = _runs(abl, found.records)
    ok_ids = set(runs.loc[runs["status"] == "ok", "run_id"])
    rows = frame[frame["run_id"].isin(ok_ids)]
    prof = sel.settings
    out = Analysis(sel, runs, rows, found, Path(results), foreign=foreign, alpha=alpha)
    for task in abl.tasks:  # harness.experiment.versions: a comparison must not mix code versions unnoticed
        if mix := mixed_versions([r for r in found.records if r.task == task and r.run_id in ok_ids]):
            out.mixed_code[task] = mix
    planned = len(prof.seeds)  # the seeds a comparison is judged against: seeds run, not learned, not run
    if prof.sequential is not None:  # a group-sequential profile plans the seeds of the looks reached
        out.sequential = looks.state(sel, found.records)
        at = prof.sequential.looks[max(out.sequential.reached, 1) - 1]
        planned = max(at, out.sequential.seeds_used)
    primaries: list[Table] = []
    for task, entry in abl.tasks.items():
        sub = rows[rows["task"] == task]
        for metric in compared_metrics(sub, claimed_metrics(abl, task) | {entry.primary.metric}):
            if metric == metrics.STEPS_TO_TARGET and entry.target is None:
                continue  # no convergence target: every run holds the step budget, a comparison of nothing
            hib = metrics.higher_is_better(metric)
            is_primary = metric == entry.primary.metric
            table = _compare(
                abl,
                runs,
                sub,
                task,
                metric,
                hib,
                entry.primary.sesoi if is_primary else None,
                prof.confirmatory,
                prof.apply_gate,
                alpha,
                "fdr_bh",
            )
            table.family = "primary" if is_primary else "exploratory (BH)"
            table.frame["planned"] = planned
            (primaries if is_primary else out.tables).append(table)
    holm_across(primaries, alpha, abl.exploratory_variants)
    out.power = primary_power.primary_power(primaries, alpha)
    named = {task for task in abl.tasks if metrics.OUTCOME in claimed_metrics(abl, task)}
    out.tables += outcome_tables(abl, runs, prof.confirmatory, alpha, planned, named)
    out.unlearned = untestable.unlearned_tasks(abl, rows, planned)
    looked: dict[tuple[str, str], str] = {}  # (task, variant) -> the verdict of the looks
    if out.sequential is not None:  # the looks decide, not the fixed design's Holm family
        looked = {(c.task, c.variant): looks.verdict(out.sequential, c) for c in out.sequential.comparisons}
        for table in primaries:
            table.family = (
                f"primary (group-sequential, Holm over {count(len(out.sequential.comparisons), 'comparison')})"
            )
    short = {(p.task, p.metric, p.variant): p.needed for p in out.power if p.underpowered and out.sequential is None}
    for table in primaries:
        _decide(out, table, planned, looked, short if prof.confirmatory else {})
    for table in out.tables:
        _decide(out, table, planned, {}, {})
    out.tables = primaries + out.tables
    return out


def _decide(
    out: Analysis,
    table: Table,
    planned: int,
    looked: dict[tuple[str, str], str],
    short: dict[tuple[str, str, str], int],
) -> None:
    """The verdict of each comparison of ``table`` (:func:`harness.analysis.verdicts.decide`), from
    its test's facts and what else the analysis knows of it: the looks' verdict (``looked``), the
    seeds it needs when it had fewer (``short``), whether the task was learned, its gate, censoring
    and ceiling (:mod:`harness.analysis.untestable`)."""
    frame, rows, confirmatory = table.frame, out.rows, out.selection.settings.confirmatory
    base, decided = frame["variant"].iloc[0], []
    for variant in frame["variant"].iloc[1:]:
        at_best = untestable.seeds_at_ceiling(rows, table.task, table.metric, base, paired_with=variant)
        facts = replace(
            table.facts.get(variant, vd.Facts(n_pairs=0 if "n_pairs" in frame else None)),
            sequential=looked.get((table.task, variant)),
            needed=short.get((table.task, table.metric, variant)),
            unlearned=out.unlearned.get(table.task) if confirmatory else None,
            below_gate=untestable.below_gate(
                out.runs, table.task, table.metric, variant, base, confirmatory and out.selection.settings.apply_gate
            ),
            planned=planned,
            censored=table.metric == metrics.STEPS_TO_TARGET and untestable.censored(rows, table.task, variant, base),
            ceiling=(metrics.best_value(table.metric), at_best) if confirmatory and at_best is not None else None,
        )
        decided.append(vd.decide(facts))
    if decided and ("verdict" in frame or any(v is not None for v in decided)):
        frame.loc[frame.index[1:], "verdict"] = [np.nan if v is None else v for v in decided]


def _reference_table(result: Analysis, task: str, metric: str, ref: str) -> Table | None:
    """Every variant of ``task`` against the variant ``ref`` instead of the baseline on ``metric``
    (a claim's evidence entry with ``against``: Post-LN without warm-up against Post-LN with it),
    paired by seed as the other tables, the gate applied beyond L; outcome metrics by the exact
    McNemar test. In no confirmatory family: the table is its own Benjamini-Hochberg family
    (``exploratory (against REF, BH)``). None when ``ref`` has no run of the task."""
    abl, prof = result.ablation, result.selection.settings
    runs = result.runs[result.runs["task"] == task]
    if ref not in set(runs["variant"]):
        return None
    sesoi = None
    if metric == metrics.OUTCOME:
        data = pd.DataFrame({"variant": runs["variant"], "seed": runs["seed"], "value": (runs["status"] == "ok") * 1.0})
        frame = stats.outcome_compare(data, baseline=ref, alpha=result.alpha, confirmatory=prof.confirmatory)
    else:
        kept = runs[runs["status"] == "ok"]
        if metrics.beyond_training(metric) and prof.apply_gate:
            kept = kept[kept["passed_gate"]]
        data = result.rows[(result.rows["metric"] == metric) & result.rows["run_id"].isin(set(kept["run_id"]))]
        if ref not in set(data["variant"]):
            return None
        entry = abl.tasks[task]
        sesoi = entry.primary.sesoi if metric == entry.primary.metric else None
        frame = stats.compare(
            data[["variant", "seed", "value"]],
            baseline=ref,
            higher_is_better=metrics.higher_is_better(metric),
            sesoi=sesoi,
            alpha=result.alpha,
            confirmatory=prof.confirmatory,
            p_adjust="fdr_bh",
        )
    order = [ref] + [v for v in frame["variant"] if v != ref]
    frame = frame.set_index("variant").reindex(order).reset_index()
    hib = metrics.higher_is_better(metric)
    return Table(task, metric, hib, f"exploratory (against {ref}, BH)", frame, sesoi, ref)


def _refuse_mixed_grids(abl: Ablation, profile: str, records: list[Record]) -> None:
    seen = Counter((r.task, r.variant_label, r.seed) for r in records)
    dupes = [k for k, n in seen.items() if n > 1]
    if dupes:
        task, variant, seed = dupes[0]
        raise AblateError(
            f"the store holds {len(records)} runs of {abl.name}/{profile} from more than one config "
            f"(e.g. {seen[dupes[0]]} runs of {task} {variant} seed {seed}); pass the key=value overrides "
            f"the runs to compare were made with (as given to `ablate run`), or use another --results-dir"
        )


def _runs(abl: Ablation, records: list[Record]) -> pd.DataFrame:
    cols = ["run_id", "task", "variant", "seed", "status", "reason", "passed_gate", "n_params", "wall_time_s"]
    rows = []
    for rec in records:
        entry = abl.tasks.get(rec.task)
        gate = entry.gate if entry is not None else None
        passed = rec.status == "ok" and (gate is None or gate.passes(rec.metric(gate.metric)))
        rows.append(
            {
                "run_id": rec.run_id,
                "task": rec.task,
                "variant": rec.variant_label,
                "seed": rec.seed,
                "status": rec.status,
                "reason": rec.reason,
                "passed_gate": passed,
                "n_params": rec.n_params,
                "wall_time_s": rec.wall_time_s,
            }
        )
    return pd.DataFrame(rows, columns=cols)


def _compare(
    abl: Ablation,
    runs: pd.DataFrame,
    rows: pd.DataFrame,
    task: str,
    metric: str,
    hib: bool,
    sesoi: float | None,
    confirmatory: bool,
    apply_gate: bool,
    alpha: float,
    p_adjust: str,
) -> Table:
    data = rows[rows["metric"] == metric]
    task_runs = runs[runs["task"] == task]
    excluded = pd.Series(dtype=int)
    if metrics.beyond_training(metric) and apply_gate:
        gated = task_runs[(task_runs["status"] == "ok") & ~task_runs["passed_gate"]]
        data = data[~data["run_id"].isin(set(gated["run_id"]))]
        excluded = gated.groupby("variant").size()
    not_ok = task_runs[task_runs["status"] != "ok"].groupby("variant").size()
    order = [abl.baseline_label] + [abl.label(v) for v in abl.variants() if abl.label(v) != abl.baseline_label]
    present = [v for v in order if v in set(task_runs["variant"])]
    values = data[["variant", "seed", "value"]]
    if not values.empty and abl.baseline_label not in set(values["variant"]):
        # no value of the baseline (its runs pending, failed or below the gate): its row reads n = 0 and
        # each variant keeps its own numbers, with no pair (``too few pairs``), rather than n = 0 for all
        values = pd.concat([values, pd.DataFrame({"variant": [abl.baseline_label], "seed": [-1], "value": [np.nan]})])
        present = [abl.baseline_label] + [v for v in present if v != abl.baseline_label]
    facts: dict[str, vd.Facts] = {}
    if abl.baseline_label in set(values["variant"]):
        frame = stats.compare(
            values,
            baseline=abl.baseline_label,
            higher_is_better=hib,
            sesoi=sesoi,
            alpha=alpha,
            confirmatory=confirmatory,
            p_adjust=p_adjust,
            facts=facts,
        )
        frame = frame.set_index("variant").reindex(present).reset_index()
    else:
        frame = pd.DataFrame({"variant": present})
    frame["below_gate"] = [int(excluded.get(v, 0)) for v in frame["variant"]]
    frame["not_ok"] = [int(not_ok.get(v, 0)) for v in frame["variant"]]
    # ok runs left in the comparison with no value of the metric (no row, or NaN): n counts them out, say so
    valued = set(data.loc[pd.to_numeric(data["value"], errors="coerce").notna(), "run_id"])
    kept = task_runs[(task_runs["status"] == "ok") & ~task_runs["run_id"].isin(valued)]
    if metrics.beyond_training(metric) and apply_gate:
        kept = kept[kept["passed_gate"]]
    no_value = kept.groupby("variant").size()
    frame["no_value"] = [int(no_value.get(v, 0)) for v in frame["variant"]]
    add_cost(frame, task_runs)
    return Table(task, metric, hib, "", frame, sesoi, facts=facts)
