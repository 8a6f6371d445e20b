"""The report section of a group-sequential profile (docs/sequential.md), from the analysis's
:class:`~harness.analysis.looks.State`: the design, and each primary comparison's look, bound and repeated CI."""

from __future__ import annotations

from harness.analysis import looks
from harness.analysis import sequential as sq
from harness.analysis.comparisons import Analysis
from harness.encode import text


def sequential_section(result: Analysis) -> list[str]:
    """Markdown lines of the section; none for a fixed profile."""
    st = result.sequential
    if st is None:
        return []
    d = st.design
    name = {"obrien_fleming": "O'Brien-Fleming-like", "pocock": "Pocock-like"}[d.spending]
    base = result.ablation.baseline_label
    lines = [
        "## Group-sequential design",
        "",
        f"Looks at {', '.join(map(str, d.looks))} seeds; Lan-DeMets {name} alpha spending, two-sided alpha "
        f"{d.alpha:g} over the primary family, Holm carried across looks (a rejected comparison passes its level "
        f"to the others: Maurer & Bretz 2013); bounds for the paired t by simulation of its null distribution "
        f"({sq.N_PATHS:,} paths); equivalence by repeated confidence intervals within ±sesoi; "
        + (
            f"non-binding futility below {sq.FUTILITY_POWER:.0%} conditional power at the sesoi"
            if d.futility
            else "no futility stop"
        )
        + f". {st.summary().capitalize()}.",
        "",
        "| task | comparison | decision | look (seeds) | level | bound on abs(t) | t | Δ | repeated CI |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in st.comparisons:
        at = c.look if c.look >= 0 else st.reached - 1
        where = f"{at + 1} ({c.pairs} pairs)" if at >= 0 else "none yet"
        decision = looks.OUTCOME_WORDS[c.outcome] if c.outcome != sq.OPEN else st.waits_for(c)
        lines.append(
            f"| {c.task} | {c.variant} vs {base} | {decision} | {where} | {text(c.level, '.3g')} | "
            f"{text(c.bound, '.3f')} | {text(c.t, '.2f')} | {text(c.delta, '.4g')} | "
            f"[{text(c.rci[0], '.4g')}, {text(c.rci[1], '.4g')}] |"
        )
    return lines + [
        "",
        "The repeated CI is the interval at the comparison's level and look (coverage 1 - level whatever the "
        "stopping rule did; J&T ch. 9): a direction is declared only when it excludes 0. An estimate at an early "
        "stop is biased away from zero (a comparison stops when its estimate happens to be large): read Δ at a "
        "stopping look as an upper bound of the effect's size. The tables above read every stored pair of each arm; "
        "their p adj are the fixed design's and do not decide here.",
        "",
    ]
