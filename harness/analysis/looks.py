"""Where a group-sequential profile stands: the looks reached, what they decided, and the runs the next look needs.

The looks its stored runs have reached are replayed from the store in order (docs/sequential.md, "Running it";
each comparison judged on the pairs of the look's seeds, gated as the comparison tables are); what the rule of
:mod:`harness.analysis.sequential` decided for each primary comparison.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from harness.analysis import paired, untestable
from harness.analysis import sequential as sq
from harness.analysis import verdicts as vd
from harness.encode import count
from harness.encode import text as encode_text
from harness.errors import AblateError
from harness.experiment import metrics
from harness.experiment.ablation import Ablation
from harness.experiment.grid import RunSpec
from harness.experiment.selection import Selection
from harness.store.record import Record

if TYPE_CHECKING:
    from harness.analysis.power import PrimaryPower

OUTCOME_WORDS = {
    sq.BETTER: "better",
    sq.WORSE: "worse",
    sq.EQUIVALENT: "equivalent",
    sq.OPEN: "open",
    sq.FUTILE: "stopped for futility",
}


def design_of(sel: Selection, alpha: float = 0.05, tuned: bool = False) -> sq.Design | None:
    """The design that decides the selection's primary comparisons (None: a pilot profile, which decides nothing).

    A profile's ``sequential:`` block; a confirmatory profile without one is a **fixed design**, one look at all its
    seeds (at ``alpha``, no futility stop), decided by the same rule (docs/statistics.md, "Tests that hold without
    normality"), so the t-test's error rate under skew is not its own. So are ``tuned`` runs (``ablate run --tuned``
    runs every seed: no looks), whatever the profile declares.

    Raises:
        AblateError: for a declared first look at which the exact sign-flip test, the least a test that leaves the
            differences' distribution free needs, could reject nothing at the family's first Holm level (alpha /
            members). A fixed design with too few seeds is not refused: its comparisons read underpowered
            (:attr:`State.too_few`).
    """
    seq = sel.settings.sequential
    if seq is None or tuned:
        if not sel.settings.confirmatory:
            return None
        return sq.Design((len(sel.settings.seeds),), FIXED_SPENDING, alpha, futility=False)
    members = len(primary_comparisons(sel.ablation))
    need = paired.sign_flip_min_seeds(seq.alpha / max(members, 1))
    if seq.looks[0] < need:
        raise AblateError(
            f"profile {sel.profile!r}: sequential looks start at {seq.looks[0]} seeds, where no test that leaves "
            f"the differences' distribution free can reach p < {seq.alpha:g} / {members} (the exact sign-flip test's "
            f"smallest p is 2 / 2^n), so the first look could decide nothing; start the looks at {need} seeds or more"
        )
    return sq.Design(tuple(seq.looks), seq.spending, seq.alpha, seq.futility)


FIXED_SPENDING = "obrien_fleming"
"""A one-look design spends all of alpha at its look whatever the function; this one names it."""


def primary_comparisons(abl: Ablation) -> list[tuple[str, str]]:
    """``(task, variant)`` of every primary comparison of a profile's view ``abl``: its Holm family.

    Every variant but the baseline and the exploratory ones, on every task; what a sequential design tests at each
    look and what ``ablate plan`` sizes seeds for.
    """
    skip = set(abl.exploratory_variants) | {abl.baseline_label}
    return [(task, abl.label(v)) for task in abl.tasks for v in abl.variants() if abl.label(v) not in skip]


@dataclass(frozen=True)
class ComparisonState:
    """One primary comparison's place in the design: its decision, the look it stopped at, and its numbers there.

    Its decision: an outcome code of :mod:`harness.analysis.sequential`; the look it stopped at (-1: open). At that
    look (or the latest reached): its pairs, mean difference, its Holm level L, the interval that decides every
    kind of verdict (coverage 1 - L: the hull of the two intervals that decide, the paired t's repeated CI, |t|
    bound ``bound``, and the bootstrap-t's), and the skewness with which the skew guard held one back.
    """

    task: str
    variant: str
    sesoi: float
    outcome: int
    look: int
    pairs: int
    delta: float
    t: float
    rci: tuple[float, float]
    level: float
    bound: float
    skewed: float = float("nan")  # the pooled skewness with which the skew guard held a verdict back, else NaN
    margins: tuple[float, float] = (0.0, 0.0)  # what the skew guard added to the bound of each end

    def bound_text(self) -> str:
        """``3.110``, or ``3.110 (+9.80 on the upper end: skew guard)`` where the guard widened an end."""
        ends = [f"+{encode_text(x, '.3g')} on the {end} end" for x, end in zip(self.margins, ("lower", "upper")) if x]
        return encode_text(self.bound, ".3f") + (f" ({', '.join(ends)}: skew guard)" if ends else "")

    def interval_text(self) -> str:
        """``[-0.045, +0.032] at 1 - 0.0125 (|t| bound 3.11)``: the deciding interval, its coverage and bound.

        The interval decides every kind of verdict: a direction when it excludes 0, equivalence when it lies within
        ±sesoi.
        """
        if not self.pairs:
            return "none yet"
        low, high = (encode_text(x, ".4g") for x in self.rci)
        return f"[{low}, {high}] at 1 - {self.level:.3g} (|t| bound {self.bound_text()})"


@dataclass(frozen=True)
class State:
    """How far a sequential profile got.

    ``reached`` looks complete (0..K), each comparison's state, and the arms (task, variant) the next look runs
    (empty: the design is finished).
    """

    design: sq.Design
    comparisons: list[ComparisonState]
    reached: int
    needed: frozenset[tuple[str, str]]
    seeds_used: int  # the most seeds any arm has run
    fixed: bool = False  # a fixed design (no ``sequential:`` block): one look at every seed
    too_few: int | None = None  # a fixed design's seeds are too few for any verdict: the fewest that could give one

    def at_end(self, seeds: str = ", {}") -> str:
        """``at 8 seeds`` (a fixed design) or ``by the last look, 32 seeds`` (``seeds``: how the seeds follow it)."""
        last = count(self.design.looks[-1], "seed")
        return f"at {last}" if self.fixed else "by the last look" + seeds.format(last)

    @property
    def finished(self) -> bool:
        """Every comparison decided or the last look reached: nothing is left to run."""
        return not self.needed

    def summary(self) -> str:
        """``look 1 of 3 reached (8 seeds); next: look 2 (16 seeds), 3 arms`` or ``finished``.

        A fixed design's: ``8 seeds: every run in``.
        """
        k, looks = self.reached, self.design.looks
        if self.too_few is not None:
            return (
                f"{count(looks[0], 'seed')}, too few for any verdict: a test that leaves the differences' "
                f"distribution free needs {self.too_few}"
            )
        if self.fixed:
            return f"{count(looks[0], 'seed')}: " + ("every run in" if k else "waits for its runs")
        done = f"no look of {len(looks)} reached yet"
        if k:
            done = f"look {k} of {len(looks)} reached ({count(looks[k - 1], 'seed')})"
        if self.finished:
            return f"{done}; finished: {count(self.seeds_used, 'seed')} used of {looks[-1]}"
        return f"{done}; next: look {k + 1} ({count(looks[k], 'seed')}) for {count(len(self.needed), 'arm')}"

    def waits_for(self, c: ComparisonState) -> str:
        """What one comparison waits for, in words."""
        if self.too_few is not None:
            return f"too few seeds (needs {self.too_few})"
        if c.outcome != sq.OPEN:
            seeds = count(self.design.looks[c.look], "seed")
            return f"{OUTCOME_WORDS[c.outcome]} at " + (seeds if self.fixed else f"look {c.look + 1} ({seeds})")
        if self.reached == len(self.design.looks):
            return f"not decided {self.at_end(' ({})')}"
        return f"open: {self.next_look()}"

    def next_look(self) -> str:
        """``waits for look 2 (16 seeds)``, or ``waits for its 8 seeds`` (a fixed design)."""
        seeds = count(self.design.looks[self.reached], "seed")
        return f"waits for its {seeds}" if self.fixed else f"waits for look {self.reached + 1} ({seeds})"


def _values(
    sel: Selection, records: list[Record], ids: frozenset[str]
) -> tuple[dict[tuple[str, str, int], float], set]:
    """The primary metric of each ok run of ``ids`` (NaN: none), gated, and the (task, variant, seed) of every one."""
    stored, values = set(), {}
    for r in records:
        if r.run_id not in ids:
            continue
        stored.add((r.task, r.variant_label, r.seed))
        metric = sel.ablation.tasks[r.task].primary.metric
        gated = sel.settings.apply_gate and metrics.beyond_training(metric)
        if r.status.trained and (not gated or untestable.passed_gate(sel.ablation, r)):
            value = r.metric(metric)
            values[(r.task, r.variant_label, r.seed)] = np.nan if value is None else float(value)
    return values, stored


def state(sel: Selection, records: list[Record], alpha: float = 0.05, ids: frozenset[str] | None = None) -> State:
    """Replay the looks of the selection's stored ``records`` (module docstring).

    ``ids``: the run ids of the tuned runs to read (:meth:`Selection.tuned_run_ids`), decided as a fixed design;
    None: the selection's own runs.

    Raises:
        AblateError: as :func:`design_of`.
        ValueError: for a pilot profile (no design).
    """
    design = design_of(sel, alpha, tuned=ids is not None)
    if design is None:
        raise ValueError(f"profile {sel.profile!r} has no sequential design")
    abl, base = sel.ablation, sel.ablation.baseline_label
    members = primary_comparisons(sel.ablation)
    m = len(members)
    sesoi = np.array([abl.tasks[task].primary.sesoi for task, _ in members])
    values, stored = _values(sel, records, sel.run_ids if ids is None else ids)
    seeds = sel.settings.seeds
    fixed = sel.settings.sequential is None or ids is not None
    # the fewest seeds at which a test that leaves the differences' distribution free can decide (design_of)
    need = paired.sign_flip_min_seeds(design.alpha / max(m, 1))
    too_few = need if fixed and design.looks[0] < need else None
    stats_by_look: list[list[paired.Paired]] = []
    boots: list[np.ndarray] = []  # per look reached, (m, 2, m)
    skews: list[float] = []  # per look reached, the family's pooled skewness
    decided = sq.decide(design, *(np.empty((1, 0, m)) for _ in range(4)), np.empty((1, 0, m, 2, m)), sesoi)
    for k, n_k in enumerate(design.looks if too_few is None else ()):
        arms = _open_arms(members, decided, base)
        if not arms or not all((task, arm, s) in stored for task, arm in arms for s in seeds[:n_k]):
            break
        stats_by_look.append([_paired(sel, values, task, v, seeds[:n_k]) for task, v in members])
        boots.append(np.concatenate([_bootstrap(design, m, k, p) for p in stats_by_look[-1]]))
        skews.append(_pooled_skewness(stats_by_look[-1]))
        fields = ("t", "n_pairs", "delta", "sd_diff")  # each (1, looks, members)
        looked = (np.array([[[getattr(p, f) for p in k] for k in stats_by_look]]) for f in fields)
        decided = sq.decide(design, *looked, np.stack(boots)[None], sesoi, np.array([skews]))
    reached = len(stats_by_look)
    needed = frozenset(_open_arms(members, decided, base) if reached < len(design.looks) else ())
    comps = []
    for i, (task, v) in enumerate(members):
        at = decided.look[0, i] if decided.look[0, i] >= 0 else reached - 1
        st = stats_by_look[at][i] if at >= 0 else None
        got = (st.n_pairs, st.delta, st.t) if st else (0, np.nan, np.nan)
        outcome, look, level, bound, *ci, skewed, low, high, _ = (x[0, i].item() for x in vars(decided).values())
        margins = (0.0 if np.isnan(low) else low, 0.0 if np.isnan(high) else high)
        comps.append(
            ComparisonState(task, v, float(sesoi[i]), outcome, look, *got, tuple(ci), level, bound, skewed, margins)
        )
    used = max(Counter((task, arm) for task, arm, _ in stored).values(), default=0)
    return State(design, comps, reached, needed, used, fixed=fixed, too_few=too_few)


def _bootstrap(design: sq.Design, m: int, k: int, test: paired.Paired) -> np.ndarray:
    """The bootstrap-t quantiles :func:`harness.analysis.sequential.decide` reads for one comparison at look ``k``.

    Shape (1, 2, m); NaN (nothing decided) without a finite difference in every pair.
    """
    d = np.asarray(test.diffs, dtype=float)
    if len(d) < 3 or not np.isfinite(d).all():
        return np.full((1, 2, m), np.nan)
    return sq.bootstrap_inputs(design, m, k, paired.bootstrap_t(d[None]))


def _pooled_skewness(tests: list[paired.Paired]) -> float:
    """The skewness of every member's finite differences about its own mean, pooled over the family."""
    finite = [d[np.isfinite(d)] for d in (np.asarray(t.diffs, dtype=float) for t in tests)]
    residuals = np.concatenate([d - d.mean() for d in finite if len(d)] or [np.zeros(1)])
    return float(sq.pooled_skewness(residuals[None])[0])


def _open_arms(members: list[tuple[str, str]], decided: sq.Decisions, base: str) -> set[tuple[str, str]]:
    """The (task, variant) arms of the comparisons still open: each variant and its task's baseline."""
    return {(task, arm) for i, (task, v) in enumerate(members) if decided.outcome[0, i] == sq.OPEN for arm in (base, v)}


def _paired(sel: Selection, values: dict, task: str, variant: str, seeds: list[int]) -> paired.Paired:
    """The paired test of ``variant`` against the baseline on ``task`` over ``seeds``."""
    base, mine = (
        pd.Series({s: values.get((task, arm, s), np.nan) for s in seeds}, dtype=float)
        for arm in (sel.ablation.baseline_label, variant)
    )
    return paired.paired_test(base, mine, metrics.higher_is_better(sel.ablation.tasks[task].primary.metric))


def underpowered(
    st: State | None, power: list[PrimaryPower], exploratory: Collection[str]
) -> dict[tuple[str, str, str], int]:
    """The seeds each underpowered primary comparison needs, by (task, metric, variant).

    Those of a fixed design (a sequential one plans its own seeds) that more seeds may decide: not one the skew
    guard held back (its verdict says why) nor an exploratory variant's.
    """
    held = set() if st is None else {(c.task, c.variant) for c in st.comparisons if np.isfinite(c.skewed)}
    fixed = st is None or st.fixed
    return {
        (p.task, p.metric, p.variant): p.needed
        for p in power
        if p.underpowered and fixed and (p.task, p.variant) not in held and p.variant not in exploratory
    }


def next_specs(sel: Selection, st: State) -> list[RunSpec]:
    """The selection's runs the next look needs: the first n seeds of each arm an open comparison uses.

    And of each exploratory variant (outside the family, but in the grid: a claim may compare against it), while
    any comparison is open.
    """
    if st.finished:
        return []
    seeds = set(sel.settings.seeds[: st.design.looks[st.reached]])
    return [s for s in to_come(sel, st) if s.seed in seeds]


def to_come(sel: Selection, st: State) -> list[RunSpec]:
    """The selection's runs a look may still make, at any seed: those of the arms :func:`next_specs` runs."""
    explore = set(sel.ablation.exploratory_variants) if st.needed else set()
    return [s for s in sel.specs if (s.task, s.variant_label) in st.needed or s.variant_label in explore]


def verdict(st: State, c: ComparisonState) -> str:
    """The verdict of a comparison's sequential decision (one of the facts of its verdict)."""
    looks = st.design.looks
    if st.too_few is not None:
        return vd.underpowered(st.too_few)
    if c.outcome in (sq.BETTER, sq.WORSE):
        return vd.direction(c.outcome == sq.BETTER)
    if c.outcome == sq.EQUIVALENT:
        return vd.equivalent(c.sesoi)
    held = ""
    if np.isfinite(c.skewed) and c.pairs * len(st.comparisons) < sq.SKEW_MIN_VALUES:
        held = f"; a verdict held back: {c.pairs * len(st.comparisons)} differences cannot show their skewness"
    elif np.isfinite(c.skewed):
        held = f"; skewed differences held a verdict back (pooled skewness {c.skewed:.2g})"
    if c.outcome == sq.FUTILE:
        state = f"stopped for futility at look {c.look + 1}, {count(looks[c.look], 'seed')}"
    elif st.reached == len(looks):
        state = f"not decided {st.at_end()}"
    else:
        nxt = f"next look {st.reached + 1} at {count(looks[st.reached], 'seed')}"
        state = f"open: {st.next_look() if st.fixed else nxt}"
    return vd.inconclusive_sequential(state + held)
