"""From the run store's tidy rows to comparison tables.

Gates, pairing by seed, families, each comparison's verdict, decided once from what the analysis knows of it,
and the outcome tables (whether each run finished); the primary family, the primary comparisons of all tasks as
one Holm family, and each one's power at its task's smallest effect of interest with the seeds it needs (``ablate
plan``'s computation on the profile's own runs). The rules (families, the gate, the verdicts, enough seeds for the
question) are said once, in docs/statistics.md.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from harness.analysis import looks, stats, trend, untestable
from harness.analysis import verdicts as vd
from harness.analysis.power import PrimaryPower, primary_power
from harness.analysis.table import Table
from harness.encode import count
from harness.errors import TRAINED, AblateError, RunStatus
from harness.experiment import claims as claims_mod
from harness.experiment import metrics
from harness.experiment.ablation import Ablation
from harness.experiment.selection import Selection
from harness.experiment.versions import mixed_versions
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
    power: list[PrimaryPower] = field(default_factory=list)  # each primary comparison at its sesoi
    alpha: float = 0.05
    references: dict[tuple[str, str, str], Table | None] = field(default_factory=dict)  # made when a claim asks
    sequential: looks.State | None = None  # a confirmatory profile: where its design's looks (or one look) stand
    planned: int = 0  # the seeds a comparison is judged against (those of the looks reached, in a sequential design)
    trends: dict[tuple, Table | None] = field(default_factory=dict)  # made when a claim asks

    @property
    def ablation(self) -> Ablation:
        """The declaration as the profile runs it (its tasks and variants only)."""
        return self.selection.ablation

    @property
    def profile(self) -> str:
        """The name of the profile the selection runs."""
        return self.selection.profile

    def table(self, task: str, metric: str, reference: str | None = None) -> Table | None:
        """The comparison of ``metric`` on ``task`` against the baseline, if the runs gave one.

        Or against the variant ``reference``, as a claim names it.
        """
        if reference is not None and reference != self.ablation.baseline_label:
            if (key := (task, metric, reference)) not in self.references:
                self.references[key] = _reference_table(self, task, metric, reference)
            return self.references[key]
        return next((t for t in self.tables if t.task == task and t.metric == metric), None)

    def trend_table(self, ev: claims_mod.Evidence) -> Table | None:
        """The trend an evidence entry names (``ev.trend``), decided by the rules of every comparison.

        The slope of its paired difference along the axis, one per seed (:mod:`harness.analysis.trend`).
        """
        key = (ev.task, ev.variant, *trend.levels(self.ablation, ev))
        if key not in self.trends:
            unlearned = self.unlearned.get(ev.task)
            how = (self.selection.settings, self.runs, self.rows, unlearned, self.planned, self.alpha)
            self.trends[key] = trend.table(ev, self.ablation, *how)
        return self.trends[key]

    def seeds_done(self) -> SeedsDone:
        """How far the grid got (:class:`SeedsDone`).

        A run that diverged or failed is in the store: its outcome is a result (``mask_fill_fp16``'s -inf runs diverge).
        """
        stored = set(self.runs["run_id"])
        specs = self.selection.specs
        seeds = self.selection.settings.seeds
        done = sum(all(s.run_id in stored for s in specs if s.seed == seed) for seed in seeds)
        return SeedsDone(done, len(seeds), sum(s.run_id in stored for s in specs), len(specs))

    def seeds_text(self) -> str:
        """The seeds a scale caveat names.

        ``8 seeds``, ``8 seeds planned, 9 of 16 runs so far`` (an unfinished grid), or ``16 of at most 32 seeds
        (the group-sequential design finished at look 2 of 4)``.
        """
        d = self.seeds_done()
        if (st := self.stopped_early(d)) is not None:
            return (
                f"{st.seeds_used} of at most {count(d.declared, 'seed')} (the group-sequential design finished at "
                f"look {st.reached} of {len(st.design.looks)})"
            )
        planned = f" planned, {d.runs} of {count(d.planned, 'run')} so far"
        return count(d.declared, "seed") + ("" if d.complete else planned)

    def stopped_early(self, done: SeedsDone) -> looks.State | None:
        """The design's state when a group-sequential profile finished before running every seed it declares.

        Else None. ``done``: :meth:`seeds_done`.
        """
        st = self.sequential
        return st if st is not None and st.finished and not done.complete else None


class SeedsDone(NamedTuple):
    """How far a grid got.

    ``seeds`` with every planned run stored, of the ``declared`` ones, and ``runs`` of the ``planned`` runs.
    """

    seeds: int
    declared: int
    runs: int
    planned: int

    @property
    def complete(self) -> bool:
        """Every planned run is stored."""
        return self.runs == self.planned


def analyse(
    sel: Selection,
    results: Path,
    store_profile: str | None = None,
    found: StoreScan | None = None,
) -> Analysis:
    """Read the store and build every comparison table of the selection's runs.

    Those of its run ids (the grid with its overrides); other records of the folder are counted in
    ``Analysis.foreign``. ``store_profile``: the folder to read when not the selection's profile (``<profile>+tuned``,
    whose record is compared when its id is the selection's run at its recorded parameters); ``found``: the records
    to compare instead of the store's (a report's data file).

    Raises:
        AblateError: when the store holds several runs of one (task, variant, seed) of the selection.
    """
    abl, profile = sel.ablation, sel.profile
    found = found if found is not None else scan(results, abl.name, store_profile or profile)
    tuned = ((r.task, r.variant_label, r.seed, r.tuned_params) for r in found.records)
    ids = sel.run_ids if store_profile is None else sel.tuned_run_ids(tuned)
    foreign = sum(r.run_id not in ids for r in found.records)
    found.records = [r for r in found.records if r.run_id in ids]
    seen = Counter((r.task, r.variant_label, r.seed) for r in found.records)
    if dupes := [k for k, n in seen.items() if n > 1]:
        (task, variant, seed), n = dupes[0], seen[dupes[0]]
        raise AblateError(
            f"the store holds {len(found.records)} runs of {abl.name}/{profile} from more than one config "
            f"(e.g. {n} runs of {task} {variant} seed {seed}); pass the key=value overrides "
            f"the runs to compare were made with (as given to `ablate run`), or use another --results-dir"
        )
    runs = pd.DataFrame(
        [
            (
                r.run_id,
                r.task,
                r.variant_label,
                r.seed,
                r.status,
                r.reason,
                untestable.passed_gate(abl, r),
                r.n_params,
                r.wall_time_s,
            )
            for r in found.records
        ],
        columns=["run_id", "task", "variant", "seed", "status", "reason", "passed_gate", "n_params", "wall_time_s"],
    )
    # runs that trained to their end: a stalled one is compared too, flagged (its loss is its arm's outcome)
    ok_ids, prof = set(runs.loc[runs["status"].isin(TRAINED), "run_id"]), sel.settings
    rows = tidy(found.records).loc[lambda frame: frame["run_id"].isin(ok_ids)]
    # planned: the seeds a comparison is judged against (seeds run, not learned, not run)
    out = Analysis(sel, runs, rows, found, Path(results), foreign=foreign, planned=len(prof.seeds))
    for task in abl.tasks:  # harness.experiment.versions: a comparison must not mix code versions unnoticed
        if mix := mixed_versions([r for r in found.records if r.task == task and r.run_id in ok_ids]):
            out.mixed_code[task] = mix
    # a confirmatory profile's looks decide (a fixed design: one look at every seed); a group-sequential one plans
    # the seeds of the looks reached; tuned runs (``ablate run --tuned`` runs every seed: no looks) are a fixed design
    if looks.design_of(sel, tuned=store_profile is not None) is not None:
        st = out.sequential = looks.state(sel, found.records, ids=ids if store_profile is not None else None)
        out.planned = max(st.design.looks[max(st.reached, 1) - 1], st.seeds_used)
    primaries: list[Table] = []
    for task, entry in abl.tasks.items():
        sub = rows[rows["task"] == task]
        # the primary, the metrics the claims name, and (below) those every analysis compares
        extra = claims_mod.claimed_metrics(abl.claims, task) | {entry.primary.metric}
        names = {m for m in sub["metric"].unique() if metrics.compared(m) or m in extra}
        # per-length metrics first (by name, then length), then the others by name
        for metric in sorted(names, key=lambda m: (0, *metrics.length_of(m)) if metrics.length_of(m) else (1, m, 0)):
            if metric == metrics.STEPS_TO_TARGET and entry.target is None:
                continue  # no convergence target: every run holds the step budget, a comparison of nothing
            is_primary = metric == entry.primary.metric
            table = _compare(out, task, metric)
            table.family = "primary" if is_primary else "exploratory (BH)"
            (primaries if is_primary else out.tables).append(table)
    holm_across(primaries, out.alpha, abl.exploratory_variants)
    out.power = primary_power(primaries, out.alpha)
    for task in abl.tasks:  # whether each run finished: where some did not, or a claim names `finished`
        sub = runs[runs["task"] == task]
        asked = (sub["status"] != RunStatus.OK).any() or metrics.OUTCOME in claims_mod.claimed_metrics(abl.claims, task)
        if asked and abl.baseline_label in set(sub["variant"]):  # (an empty sub has no baseline)
            out.tables.append(_outcome_table(out, task, abl.baseline_label))
    out.unlearned = untestable.unlearned_tasks(abl, rows, out.planned)
    looked: dict[tuple[str, str], str] = {}  # (task, variant) -> the verdict of the looks
    if (st := out.sequential) is not None:  # the looks decide, not the t-test's Holm family
        looked = {(c.task, c.variant): looks.verdict(st, c) for c in st.comparisons}
        design = "fixed design" if st.fixed else "group-sequential"
        for table in primaries:
            table.name_primary(
                f"{design}, Holm over {count(len(st.comparisons), 'comparison')}", abl.exploratory_variants
            )
    short = looks.underpowered(out.sequential, out.power, abl.exploratory_variants)
    for table in primaries:
        _decide(out, table, looked, short if prof.confirmatory else {})
    for table in out.tables:
        _decide(out, table, {}, {})
    out.tables = primaries + out.tables
    return out


def _decide(out: Analysis, table: Table, looked: dict[tuple, str], short: dict[tuple, int]) -> None:
    """The verdict of each comparison of ``table`` from its test's facts and what else the analysis knows of it.

    The looks' verdict (``looked``), the seeds it needs (``short``), learning, gate, ceiling.
    """
    frame, rows, confirmatory = table.frame, out.rows, out.selection.settings.confirmatory
    base, decided = frame["variant"].iloc[0], []
    unmoved = metrics.unmoved_by_learning(table.metric)  # a probe at init, a speed
    unlearned = out.unlearned.get(table.task) if confirmatory and not unmoved else None
    for variant in frame["variant"].iloc[1:]:
        row = table.row(variant)
        at_best = untestable.seeds_at_ceiling(rows, table.task, table.metric, base, paired_with=variant)
        facts = replace(
            table.facts.get(variant, vd.Facts(n_pairs=0 if "n_pairs" in frame else None)),
            sequential=looked.get((table.task, variant)),
            needed=short.get((table.task, table.metric, variant)),
            unlearned=unlearned,
            below_gate=untestable.below_gate(
                out.runs, table.task, table.metric, variant, base, confirmatory and out.selection.settings.apply_gate
            ),
            planned=out.planned,
            censored=table.metric == metrics.STEPS_TO_TARGET and untestable.censored(rows, table.task, variant, base),
            ceiling=(metrics.best_value(table.metric), at_best) if confirmatory and at_best is not None else None,
            delta_ci=(row["delta_ci_low"], row["delta_ci_high"]) if "delta_ci_low" in row else None,
        )
        decided.append(vd.decide(facts))
    if decided and ("verdict" in frame or any(v is not None for v in decided)):
        frame.loc[frame.index[1:], "verdict"] = [np.nan if v is None else v for v in decided]


def _reference_table(result: Analysis, task: str, metric: str, ref: str) -> Table | None:
    """Every variant of ``task`` against the variant ``ref`` on ``metric`` (a claim's evidence entry with ``against``).

    As the other tables but its own BH family; None when ``ref`` has no run of the task.
    """
    if ref not in set(result.runs.loc[result.runs["task"] == task, "variant"]):
        return None
    table = _outcome_table(result, task, ref) if metric == metrics.OUTCOME else _compare(result, task, metric, ref)
    table.family, table.reference = f"exploratory (against {ref}, BH)", ref
    _decide(result, table, {}, {})  # the rules of every comparison, none re-applied after
    return table


def _order(abl: Ablation, present: Iterable[str], first: str) -> list[str]:
    """The variants ``present``, ``first`` first, then in declaration order."""
    order = [first] + [abl.label(v) for v in abl.variants() if abl.label(v) != first]
    return [v for v in order if v in set(present)]


def _compare(out: Analysis, task: str, metric: str, base: str | None = None) -> Table:
    """``metric`` on ``task``, every variant against ``base`` (the baseline unless given), BH within the table.

    With TOST at the task's sesoi when ``metric`` is its primary.
    """
    abl, prof, hib = out.ablation, out.selection.settings, metrics.higher_is_better(metric)
    primary = abl.tasks[task].primary
    sesoi = primary.sesoi if metric == primary.metric else None
    base = base or abl.baseline_label
    data = out.rows[(out.rows["task"] == task) & (out.rows["metric"] == metric)]
    task_runs = out.runs[out.runs["task"] == task]
    ok = task_runs["status"].isin(TRAINED)  # stalled runs stay in, counted in `stalled` (flagged)
    gated = untestable.gated_out(task_runs, task, metric, prof.apply_gate)
    below, data = task_runs["run_id"].isin(gated), data[~data["run_id"].isin(gated)]
    present = _order(abl, task_runs["variant"], base)
    values = data[["variant", "seed", "value"]]
    if metrics.is_ratio(metric):  # per-seed ratios: the paired difference of logs (a value <= 0 has none)
        values = values.assign(value=np.log(pd.to_numeric(values["value"]).where(lambda v: v > 0)))
    if not values.empty and base not in set(values["variant"]):
        # no value of the baseline (its runs pending, failed or below the gate): its row reads n = 0 and
        # each variant keeps its own numbers, with no pair (``too few pairs``), rather than n = 0 for all
        values = pd.concat([values, pd.DataFrame({"variant": [base], "seed": [-1], "value": [np.nan]})])
        present = [base] + [v for v in present if v != base]
    facts: dict[str, vd.Facts] = {}
    if base in set(values["variant"]):
        how = {"higher_is_better": hib, "sesoi": sesoi, "alpha": out.alpha, "confirmatory": prof.confirmatory}
        frame = stats.compare(values, baseline=base, p_adjust="fdr_bh", facts=facts, **how)
        frame = frame.set_index("variant").reindex(present).reset_index()
    else:
        frame = pd.DataFrame({"variant": present})
    # ok runs left in the comparison with no value of the metric (no row, or NaN): n counts them out, say so
    valued = set(data.loc[pd.to_numeric(data["value"], errors="coerce").notna(), "run_id"])
    no_value = task_runs[ok & ~below & ~task_runs["run_id"].isin(valued)]
    stalled = task_runs[(task_runs["status"] == RunStatus.STALLED) & task_runs["run_id"].isin(valued)]
    _add_counts(
        frame, task_runs, below_gate=task_runs[below], not_ok=task_runs[~ok], no_value=no_value, stalled=stalled
    )
    frame["planned"] = out.planned
    return Table(task, metric, hib, "", frame, sesoi, facts=facts)


def _add_counts(frame: pd.DataFrame, task_runs: pd.DataFrame, **runs: pd.DataFrame) -> None:
    """Per variant: a column of the number of each of ``runs``, the parameters and the median wall time per run.

    The median: a worker's first run also pays for its start-up, which would weigh on one variant's mean.
    """
    for column, some in runs.items():
        frame[column] = [int(n) for n in some.groupby("variant").size().reindex(frame["variant"], fill_value=0)]
    by_variant = task_runs.groupby("variant")
    params, walls = by_variant["n_params"].first(), by_variant["wall_time_s"].median()
    frame["n_params"] = [params.get(v, np.nan) for v in frame["variant"]]
    frame["wall_time_s"] = [walls.get(v, np.nan) for v in frame["variant"]]


def why_not_finished(statuses: Sequence[str], reasons: Sequence[str | None]) -> list[tuple[str, int]]:
    """``("status: reason", count)`` of the runs that did not finish, most common first.

    The reason is cut before the figures that differ per run: a diverged run's last finite loss, a stalled run's best.
    """
    cut = (str(r or "").split(" (last finite")[0].split(": best ")[0][:90] for r in reasons)
    texts = [f"{st}: {r}" for st, r in zip(statuses, cut) if st != RunStatus.OK]
    return Counter(texts).most_common()


def _outcome_table(out: Analysis, task: str, base: str) -> Table:
    """Whether each run of ``task`` finished, variant against ``base`` (:func:`stats.outcome_compare`)."""
    runs = out.runs[out.runs["task"] == task]
    facts: dict[str, vd.Facts] = {}
    how = {"alpha": out.alpha, "confirmatory": out.selection.settings.confirmatory, "facts": facts}
    finished = runs[["variant", "seed"]].assign(value=(runs["status"] == RunStatus.OK) * 1.0)
    frame = stats.outcome_compare(finished, baseline=base, **how)
    frame = frame.set_index("variant").reindex(_order(out.ablation, frame["variant"], base)).reset_index()
    frame["below_gate"], frame["not_ok"], frame["planned"] = 0, 0, out.planned
    _add_counts(frame, runs)
    hib = metrics.higher_is_better(metrics.OUTCOME)
    return Table(task, metrics.OUTCOME, hib, "outcome (exact McNemar, BH)", frame, facts=facts)


def holm_across(tables: list[Table], alpha: float, exploratory: Collection[str] = ()) -> None:
    """Re-adjust the primary comparisons of all tasks as one Holm family, in each table's frame and facts.

    Each p a verdict reads, and the MDE; the rows of ``exploratory`` variants stay out of it, with their table's
    Benjamini-Hochberg adjustment.
    """
    where = [
        (table, ri)
        for table in tables
        if "p" in table.frame
        for ri, (p, variant) in enumerate(zip(table.frame["p"], table.frame["variant"]))
        if pd.notna(p) and ri > 0 and variant not in exploratory
    ]
    if not where:
        return
    fam = stats.adjust_family([table.frame.loc[ri] for table, ri in where], "holm", alpha)
    for i, (table, ri) in enumerate(where):
        frame, facts, adjusted = table.frame, table.facts, fam.at(i)
        frame.loc[ri, list(adjusted)], frame.loc[ri, "family_size"] = list(adjusted.values()), fam.size
        facts[frame.loc[ri, "variant"]] = replace(facts[frame.loc[ri, "variant"]], **adjusted)
    for table in tables:
        if "family_size" in table.frame:  # an exploratory variant is in no primary family
            table.frame.loc[table.frame["variant"].isin(list(exploratory)), "family_size"] = None
        table.name_primary(f"Holm over {count(fam.size, 'comparison')}", exploratory)
