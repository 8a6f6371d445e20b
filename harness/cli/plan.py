"""``ablate plan``: the seeds each primary comparison needs, from a pilot's spread."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.analysis import seed_planning as planning
from harness.analysis.comparisons import analyse
from harness.analysis.seed_planning import SeedPlan
from harness.cli import output
from harness.errors import AblateError
from harness.experiment import ablation as ablation_mod


def plan_seeds(
    name: str,
    profile: str | None,
    pilot: str | None,
    results: Path,
    power: float = 0.8,
    alpha: float = 0.05,
    fmt: str = "table",
    overrides: list[str] | tuple[str, ...] = (),
) -> SeedPlan:
    """``ablate plan``: the seeds each primary comparison of ``profile`` (default: the declared
    default) needs to detect its task's sesoi, from the spread of the ``pilot`` profile's runs
    (default: the first pilot profile with runs; ``overrides``: those its runs were made with).
    Prints the table and returns the :class:`harness.analysis.seed_planning.SeedPlan`."""
    abl = ablation_mod.load(name)
    prof_name, prof = abl.profile(profile)
    planning.check_levels(power, alpha)
    if not prof.confirmatory:
        confirm = [n for n, p in abl.profiles.items() if p.confirmatory]
        raise AblateError(
            f"ablate plan sizes a confirmatory profile; {abl.name} / {prof_name} is a pilot (confirmatory: false)"
            + (
                f"; plan one of {', '.join(confirm)}, e.g. --profile {confirm[0]}"
                if confirm
                else f", and {abl.name} declares no confirmatory profile"
            )
        )
    output.check_results_readable(results)
    target = output.selection(abl, prof_name, overrides, results, typed=name)
    sel = output.selection(abl, planning.pilot_profile(abl, results, pilot, target), overrides, results, typed=name)
    output.check_store_exists(sel, flag="--from")
    if sel.profile == planning.SMOKE:
        others = [n for n, p in abl.profiles.items() if not p.confirmatory and n != planning.SMOKE]
        print(
            f"warning: the spread comes from the {planning.SMOKE} profile, whose runs check the plumbing and are too short for their spread to mean anything"
            + (f"; run a pilot ({', '.join(others)}) and plan --from it" if others else ""),
            file=sys.stderr,
        )
    result = analyse(sel, results)
    if not result.scan.records:
        other = (
            f" ({result.foreign} made with other overrides: pass those key=value overrides)" if result.foreign else ""
        )
        raise AblateError(
            f"no pilot runs of {abl.name} / {sel.profile} in {results}{other}; run `{sel.command('run')}` first"
        )
    seeds = planning.seed_plan(target, result, power=power, alpha=alpha)
    if fmt == "table" and not output.console.is_terminal:
        fmt = "md"  # piped or captured: plain markdown instead of box drawing
    if fmt in ("table", "md"):
        output.console.print(planning.describe(seeds) + "\n", markup=False)
    output.console.print(planning.render(seeds, fmt), markup=False)
    return seeds
