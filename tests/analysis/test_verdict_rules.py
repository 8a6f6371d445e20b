"""The rules of a comparison's verdict (harness.analysis.verdicts.RULES): the table docs/statistics.md
lists is the one the code applies, and where two rules hold, the earlier one gives the verdict."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from harness.analysis import claim_verdicts as cv
from harness.analysis import controls, stats
from harness.analysis import verdicts as vd

DOCS = Path(__file__).resolve().parents[2] / "docs" / "statistics.md"

TESTED = {"n_pairs": 8, "better": True, "p_adj": 0.5, "p_perm_adj": 0.5, "p_tost_adj": 0.5, "mde": 0.1, "sesoi": 0.05}
REJECTS = {**TESTED, "p_adj": 0.01, "p_perm_adj": 0.01}
CEILING = (1.0, 8)
OPEN = "inconclusive (open: next look 2 at 16 seeds)"


def _numbered_tables(section: str) -> list[list[str]]:
    """The rule names of each numbered table of a section of docs/statistics.md, in order."""
    tables: list[list[str]] = []
    for line in section.splitlines():
        if m := re.match(r"\s*\| (\d+) \| ([^|]+) \|", line):
            if m.group(1) == "1":
                tables.append([])
            assert int(m.group(1)) == len(tables[-1]) + 1, line
            tables[-1].append(m.group(2).strip())
    return tables


def _section(title: str) -> str:
    return DOCS.read_text().split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_the_docs_list_the_rules_in_their_order() -> None:
    (comparisons,) = _numbered_tables(_section("Comparison verdicts"))
    assert comparisons == [rule.name for rule in vd.RULES]
    evidence, claims = _numbered_tables(_section("Claims and their verdicts"))
    assert evidence == [rule.name for rule in cv.EVIDENCE_RULES]
    assert claims == [rule.name for rule in cv.CLAIM_RULES]
    (table,) = _numbered_tables(_section("Controls before verdicts"))
    assert table == [name for name, _, _ in controls.OUTCOMES]


# (the rule that wins, what else holds, the facts, the verdict)
COLLISIONS = [
    (
        "not learned",
        "a gate nobody passed, censored, too few pairs",
        vd.Facts(n_pairs=1, unlearned=(3, 8, 8), below_gate="", planned=8, censored=True),
        "not learned (3/8 seeds reached target)",
    ),
    (
        "below the gate",
        "censored, too few pairs",
        vd.Facts(n_pairs=0, below_gate="baseline ", planned=8, censored=True),
        "not learned (baseline 0/8 passed the gate)",
    ),
    ("censored", "too few pairs", vd.Facts(n_pairs=1, censored=True), vd.CENSORED),
    (
        "too few pairs",
        "a non-finite value, a pilot",
        vd.Facts(n_pairs=1, non_finite=1, confirmatory=False),
        "too few pairs",
    ),
    ("no value", "a baseline at the ceiling", vd.Facts(n_pairs=None, ceiling=CEILING), None),
    (
        "undefined",
        "a pilot",
        vd.Facts(n_pairs=8, non_finite=2, confirmatory=False),
        "undefined (a non-finite value in 2 of 8 pairs)",
    ),
    (
        "undefined",
        "a baseline at the ceiling, the looks' verdict",
        vd.Facts(n_pairs=8, non_finite=2, ceiling=CEILING, sequential=OPEN),
        "undefined (a non-finite value in 2 of 8 pairs)",
    ),
    ("worse", "both tests reject (better)", vd.Facts(**{**REJECTS, "better": False}, ceiling=CEILING), "worse"),
    (
        "negligible",
        "worse: both tests reject (16 heads against 4 on tinyshakespeare)",
        vd.Facts(**{**REJECTS, "better": False}, delta_ci=(-0.0152, -0.0064)),
        "negligible (95% CI of Δ inside ±0.05)",
    ),
    (
        "negligible",
        "equivalent: TOST rejects",
        vd.Facts(**{**TESTED, "p_tost_adj": 0.01}, delta_ci=(-0.01, 0.02)),
        "negligible (95% CI of Δ inside ±0.05)",
    ),
    (
        "worse",
        "a baseline at the ceiling (the looks)",
        vd.Facts(n_pairs=8, sequential="worse", ceiling=CEILING),
        "worse",
    ),
    (
        "worse",
        "the fixed design's tests say better (the looks decide)",
        vd.Facts(**{**REJECTS, "better": True}, sequential="worse"),
        "worse",
    ),
    (
        "at ceiling",
        "a negligible difference",
        vd.Facts(**TESTED, ceiling=CEILING, delta_ci=(-0.01, 0.0)),
        "at ceiling (baseline 1 on all 8 seeds)",
    ),
    (
        "at ceiling",
        "identical pairs",
        vd.Facts(n_pairs=8, ties=8, ceiling=CEILING),
        "at ceiling (baseline 1 on all 8 seeds)",
    ),
    (
        "at ceiling",
        "the looks' verdict",
        vd.Facts(**TESTED, sequential=OPEN, ceiling=CEILING),
        "at ceiling (baseline 1 on all 8 seeds)",
    ),
    (
        "at ceiling",
        "underpowered",
        vd.Facts(**TESTED, needed=20, ceiling=CEILING),
        "at ceiling (baseline 1 on all 8 seeds)",
    ),
    (
        "same outcome",
        "identical pairs (whether runs finished)",
        vd.Facts(n_pairs=4, ties=4, p_adj=1.0, p_perm_adj=1.0, outcome=True),
        "same outcome in all 4 pairs",
    ),
    (
        "identical",
        "the looks' verdict",
        vd.Facts(n_pairs=8, ties=8, sequential=OPEN),
        "identical in all 8 pairs",
    ),
    (
        "the looks decided",
        "underpowered, the tests reject nothing",
        vd.Facts(**TESTED, needed=20, sequential="better"),
        "better",
    ),
    ("the looks", "the t-test's and sign-flip's rejection", vd.Facts(**REJECTS, sequential=OPEN), OPEN),
    ("pilot", "both tests reject", vd.Facts(**REJECTS, confirmatory=False), "pilot"),
    ("better", "equivalent within the sesoi", vd.Facts(**{**REJECTS, "p_tost_adj": 0.01}), "better"),
    (
        "equivalent",
        "underpowered, the t-test alone rejects",
        vd.Facts(**{**TESTED, "p_adj": 0.01, "p_tost_adj": 0.01}, needed=20),
        "equivalent (±0.05)",
    ),
    (
        "underpowered",
        "the t-test alone rejects",
        vd.Facts(**{**TESTED, "p_adj": 0.01, "p_perm_adj": 0.0625}, needed=20),
        "underpowered at this scale (needs 20 seeds)",
    ),
    (
        "t-test only",
        "inconclusive with its MDE",
        vd.Facts(**{**TESTED, "p_adj": 0.011, "p_perm_adj": 0.0625}),
        "inconclusive (t-test only: exact sign-flip p adj 0.0625)",
    ),
]


@pytest.mark.parametrize(
    ("rule", "also", "facts", "verdict"), COLLISIONS, ids=[f"{c[0]} over {c[1]}" for c in COLLISIONS]
)
def test_the_earlier_rule_wins(rule: str, also: str, facts: vd.Facts, verdict: str | None) -> None:
    holding = [r.name for r in vd.RULES if r.holds(facts)]
    assert holding[0] == rule and len(holding) >= 2 + (rule != vd.RULES[-2].name), holding  # the last holds always
    assert vd.decide(facts) == verdict


def test_an_outcome_table_where_every_pair_agrees() -> None:
    """Rule 9 in its outcome-table words, from whether runs finished (the exact McNemar test)."""
    runs = pd.DataFrame({"variant": ["b"] * 4 + ["v"] * 4, "seed": list(range(4)) * 2, "value": [1.0] * 8})
    assert stats.outcome_compare(runs, baseline="b").loc[1, "verdict"] == "same outcome in all 4 pairs"
    assert stats.outcome_compare(runs, baseline="b", confirmatory=False).loc[1, "verdict"] == "pilot"
    diverged = runs.assign(value=[1.0] * 4 + [0.0] * 4)
    assert stats.outcome_compare(diverged, baseline="b").loc[1, "verdict"] == "inconclusive"  # 4 pairs: p 0.125
    one = runs[runs["seed"] == 0]
    assert stats.outcome_compare(one, baseline="b").loc[1, "verdict"] == "too few pairs"


def test_an_outcome_table_is_decided_whatever_the_baseline_learned() -> None:
    """Whether runs finish is an outcome of its own: ``warmup-needed``'s fixed-lr grid (no run learned
    its target without warm-up) read ``not learned`` on its divergence table too."""
    unlearned = {"unlearned": (0, 8, 8), "planned": 8}
    assert vd.decide(vd.Facts(n_pairs=8, outcome=True, ties=8, **unlearned)) == "same outcome in all 8 pairs"
    assert vd.decide(vd.Facts(**{**REJECTS, "better": False}, outcome=True, **unlearned)) == vd.WORSE
    assert vd.decide(vd.Facts(**REJECTS, **unlearned)) == "not learned (0/8 seeds reached target)"


def test_every_rule_but_the_last_wins_a_collision() -> None:
    assert {c[0] for c in COLLISIONS} == {rule.name for rule in vd.RULES[:-1]}
