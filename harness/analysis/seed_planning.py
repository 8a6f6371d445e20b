"""How many seeds a confirmatory profile needs, from a pilot's spread (``ablate plan``).

The computation, as the user reads it: :func:`describe`. Does not do: allow for the uncertainty of the pilot's SD,
or for runs lost to the gate or to divergence. A variant with fewer than 2 pilot pairs, or no spread at all, gets
no number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from rich.table import Table as RichTable

from harness import encode
from harness.analysis import paired
from harness.analysis.comparisons import Analysis
from harness.analysis.looks import primary_comparisons
from harness.errors import AblateError
from harness.experiment.ablation import Ablation
from harness.experiment.selection import Selection


@dataclass(frozen=True)
class PlanRow:
    """One primary comparison: what the pilot shows and the seeds it implies."""

    task: str
    variant: str
    metric: str
    pilot_n: int  # seeds paired with the baseline in the pilot
    sd_diff: float  # SD of the paired differences in the pilot (NaN when unknown)
    delta: float  # the effect to detect: the task's sesoi
    needed: int | None  # seeds needed; None when the pilot cannot say (``note``)
    have: int  # seeds the confirmatory profile declares
    note: str = ""  # why there is no number

    @property
    def enough(self) -> bool | None:
        """Whether the profile declares the seeds needed (None: the pilot cannot say)."""
        return None if self.needed is None else self.have >= self.needed


@dataclass
class SeedPlan:
    """The plan ``ablate plan`` prints: a :class:`PlanRow` per primary comparison of the profile, from the pilot.

    ``results``: the store the pilot's runs are in; ``power`` and ``alpha``: the power and the family-wise level
    each comparison is sized for.
    """

    ablation: str
    profile: str  # the confirmatory profile being planned
    pilot: str  # the profile whose runs give the spread
    results: Path
    power: float
    alpha: float
    family_size: int  # primary comparisons of the profile (the Holm family)
    rows: list[PlanRow] = field(default_factory=list)

    @property
    def alpha_each(self) -> float:
        """The level each comparison is sized at: ``alpha`` over the family's size (Holm's first, strictest step)."""
        return self.alpha / max(self.family_size, 1)


def check_levels(power: float, alpha: float) -> None:
    """Raises AblateError unless 0 < power < 1 and 1e-100 <= alpha < 1."""
    for name, value, example in (("--power", power, 0.8), ("--alpha", alpha, 0.05)):
        if not 0 < value < 1:
            raise AblateError(f"{name} must be between 0 and 1 (exclusive), got {value:g}; e.g. {name} {example}")
    if alpha < 1e-100:  # scipy's t quantiles, and so the power solver, break down below
        raise AblateError(f"--alpha {alpha:g} is below 1e-100, where the power solver breaks down; e.g. --alpha 0.05")


def pilot_profile(abl: Ablation, results: Path, given: str | None, ctx: Selection) -> str:
    """The profile whose runs give the spread.

    ``given`` (checked), else the first pilot profile, in declaration order, with a folder in the store; a plumbing
    check (``plumbing: true``, as smoke) only when no other pilot has one. ``ctx``: the command's context, for the
    ``ablate run`` command the error suggests.

    Raises:
        AblateError: for an unknown profile, or no pilot profile with runs in ``results``.
    """
    if given is not None:
        return abl.profile(given)[0]
    pilots = [name for name, p in abl.profiles.items() if not p.confirmatory]
    with_runs = [name for name in pilots if (Path(results) / abl.name / name).is_dir()]
    if with_runs:  # a plumbing check last: its spread means little
        return min(with_runs, key=lambda n: abl.profiles[n].plumbing)
    if not pilots:
        raise AblateError(
            f"{abl.name} declares no pilot profile (confirmatory: false); pass --pilot PROFILE, "
            f"a profile with runs in {results}"
        )
    raise AblateError(
        f"no pilot runs of {abl.name} in {results} (looked for profile(s) {', '.join(pilots)}); "
        f"run `{ctx.command('run', profile=pilots[0])}` first, or pass --pilot PROFILE"
    )


def seed_plan(sel: Selection, pilot: Analysis, power: float = 0.8, alpha: float = 0.05) -> SeedPlan:
    """The seeds each primary comparison of the confirmatory profile ``sel`` needs, from the ``pilot`` analysis.

    At ``power`` and the family-wise level ``alpha`` (both checked by :func:`check_levels`).
    """
    view, prof = sel.ablation, sel.settings
    pairs = primary_comparisons(view)
    out = SeedPlan(sel.name, sel.profile, pilot.profile, pilot.results, power, alpha, len(pairs))
    for task, variant in pairs:
        spec = view.tasks[task].primary
        table = pilot.table(task, spec.metric)
        r = {} if table is None else table.row(variant)
        n = 0 if pd.isna(r.get("n_pairs")) else int(r["n_pairs"])
        sd = math.nan if n < 2 else float(r["sd_diff"])
        needed, note = _needed(spec.sesoi, sd, n, out.alpha_each, power, table is None)
        out.rows.append(PlanRow(task, variant, spec.metric, n, sd, spec.sesoi, needed, len(prof.seeds), note))
    return out


def _needed(delta: float, sd: float, n: int, alpha: float, power: float, no_task: bool) -> tuple[int | None, str]:
    if no_task:
        return None, "no pilot runs of this task"
    if n < 2:
        return None, f"too few pilot seeds ({n} paired with the baseline; an SD needs 2)"
    if not sd > 0:
        return None, "SD 0 in the pilot: cannot size"
    try:  # a direction also needs the exact sign-flip test to reject (verdicts.RULES): at least its floor
        return paired.seeds_for_verdict(delta, sd, alpha=alpha, power=power), ""
    except ValueError as exc:  # an extreme level or effect / SD: no number rather than a traceback
        return None, f"cannot size: {exc}"


FRAME_COLUMNS = (  # noqa: SIM905 - one line, not one per name
    "task variant metric pilot pilot_n sd_diff delta power alpha family_size alpha_each seeds_needed profile "
    "profile_seeds enough note"
).split()


def frame(plan: SeedPlan) -> pd.DataFrame:
    """The plan's rows as raw numbers (CSV and JSON output)."""
    shared = {k: getattr(plan, k) for k in ("pilot", "power", "alpha", "family_size", "alpha_each", "profile")}
    rows = [
        {**vars(r), **shared, "seeds_needed": r.needed, "profile_seeds": r.have, "enough": r.enough} for r in plan.rows
    ]
    if not rows:
        return pd.DataFrame()
    return pd.DataFrame(rows, columns=FRAME_COLUMNS).astype({"seeds_needed": "Int64", "enough": "boolean"})


def describe(plan: SeedPlan) -> str:
    """The line above the table: the test, the level and where the spread comes from."""
    return (
        f"{plan.ablation}: seeds for profile {plan.profile}, from the spread of pilot {plan.pilot} in "
        f"{plan.results}. Two-sided paired t-test at power {plan.power:g}; level alpha {plan.alpha:g} / "
        f"{plan.family_size} primary comparisons = {plan.alpha_each:.4g} (Bonferroni: the first, strictest "
        "Holm step, so conservative); δ = each task's smallest effect of interest; at least "
        f"{paired.sign_flip_min_seeds(plan.alpha_each)} seeds, the fewest at which the exact sign-flip test "
        "that a verdict also needs can reject at this level. A pilot of few seeds estimates the SD loosely: "
        "treat the numbers as a floor."
    )


def render(plan: SeedPlan, fmt: str) -> Any:
    """A rich table (``table``), or markdown, CSV or JSON text."""
    if fmt == "csv":
        return encode.to_csv(frame(plan))
    if fmt == "json":
        return encode.dumps(frame(plan).astype(object).to_dict(orient="records"), indent=1)
    last = [f"seeds needed (power {plan.power:g})", f"{plan.profile} has"]
    cols, rows = ["task", "variant", "metric", "pilot n", "SD of Δ", "δ (sesoi)", *last], []
    for r in plan.rows:
        sd = "–" if math.isnan(r.sd_diff) else f"{r.sd_diff:.4g}"
        have = f"{r.have}: " + ("–" if r.enough is None else "enough" if r.enough else "too few")
        need = str(r.needed) if r.needed is not None else r.note
        rows.append([r.task, r.variant, r.metric, str(r.pilot_n), sd, f"{r.delta:g}", need, have])
    if fmt == "md":
        return pd.DataFrame(rows, columns=cols).to_markdown(index=False, disable_numparse=True)

    table = RichTable(title=f"{plan.ablation}: seeds for {plan.profile} from pilot {plan.pilot}", title_justify="left")
    for c in cols:
        table.add_column(c, overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table
