"""Runs that diverge or raise are outcomes of their variant: the exact McNemar table
(``finished``), claim evidence on it, and the per-cell probe table of the report."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from scipy.stats import binomtest

from harness.analysis import stats
from harness.analysis.claims import claim_verdict
from harness.analysis.comparisons import analyse
from harness.experiment.ablation import load
from harness.experiment.metrics import OUTCOME
from harness.experiment.selection import select
from harness.report.probes import probe_section
from helpers.fake_store import write_decl, write_runs
from helpers.mini_claims import claim_of


def frame(baseline: list[int], variant: list[int]) -> pd.DataFrame:
    rows = [("base", s, v) for s, v in enumerate(baseline)] + [("var", s, v) for s, v in enumerate(variant)]
    return pd.DataFrame(rows, columns=["variant", "seed", "value"])


def test_all_eight_pairs_discordant_gives_the_smallest_exact_p():
    out = stats.outcome_compare(frame([1] * 8, [0] * 8), baseline="base").set_index("variant")
    assert out.loc["var", "p"] == pytest.approx(2 * 0.5**8)  # 0.0078
    assert out.loc["var", "p"] == pytest.approx(binomtest(0, 8, 0.5).pvalue)
    assert out.loc["var", "verdict"] == "worse" and out.loc["var", "delta"] == -1


def test_mixed_pairs_match_a_direct_binomial_test_on_the_discordant_ones():
    base, var = [1, 1, 1, 1, 1, 1, 0, 1, 1, 1], [0, 0, 1, 0, 1, 1, 1, 0, 1, 1]
    out = stats.outcome_compare(frame(base, var), baseline="base").set_index("variant")
    assert out.loc["var", "p"] == pytest.approx(binomtest(1, 5, 0.5).pvalue)  # 4 losses, 1 win
    assert out.loc["var", "verdict"] == "inconclusive"


def test_no_discordant_pair_is_the_same_outcome_not_a_test():
    out = stats.outcome_compare(frame([1] * 8, [1] * 8), baseline="base").set_index("variant")
    assert out.loc["var", "p"] == 1 and out.loc["var", "verdict"] == "same outcome in all 8 pairs"


def test_pilot_gives_no_verdict():
    out = stats.outcome_compare(frame([1] * 8, [0] * 8), baseline="base", confirmatory=False)
    assert out.iloc[1]["verdict"] == "pilot"


def _fail(results, abl_name, profile, variant, status, reason, metrics):
    for rec_path in (results / abl_name / profile).glob("*/record.json"):
        rec = json.loads(rec_path.read_text())
        if rec["variant_label"] == variant:
            rec.update(status=status, reason=reason, metrics=metrics)
            rec_path.write_text(json.dumps(rec))


def test_analysis_claims_and_probe_table_see_runs_that_did_not_finish(tmp_path, monkeypatch):
    decl = write_decl(tmp_path / "abl", cpu={"seeds": list(range(8))})
    results = tmp_path / "results"
    write_runs(results, decl, "cpu", lambda v, s: 0.9)
    _fail(
        results,
        "mini",
        "cpu",
        "rope",
        "failed",
        "RuntimeError: value cannot be converted to type c10::Half without overflow",
        {"leak_raised_init": 1.0},
    )
    for rec_path in (results / "mini" / "cpu").glob("*/record.json"):  # probes on the runs that finished
        rec = json.loads(rec_path.read_text())
        if rec["status"] == "ok":
            rec["metrics"] |= {
                "leak_logits_init": 0.0,
                "leak_logits_real_init": 0.0,
                "leak_logits_real": 0.0,
                "leak_logits": 0.5,
                "nonfinite_grad_steps": 0.0,
            }
            rec_path.write_text(json.dumps(rec))
    abl = load(str(decl))
    result = analyse(select(abl, "cpu", check_data=False), results)
    table = result.table("copy", OUTCOME)
    assert table is not None and table.family.startswith("outcome")
    row = table.frame.set_index("variant")
    assert row.loc["rope", "verdict"] == "worse" and row.loc["learned", "verdict"] == "same outcome in all 8 pairs"

    claim = claim_of(
        evidence=[
            {
                "task": "copy",
                "metric": OUTCOME,
                "variant": "rope",
                "expect": "worse",
                "tests": "whether the cell runs at all",
            },
            {"task": "copy", "metric": OUTCOME, "variant": "learned", "expect": "worse"},
        ]
    )
    verdict, lines = claim_verdict(claim, result)
    assert verdict == "mixed: 1 comparison(s) support it, 1 contradict it"
    assert "finished 0/8 runs vs 8/8" in lines[0] and "c10::Half without overflow" in lines[0]
    assert "(this comparison tests whether the cell runs at all)" in lines[0]
    assert "**supported**" in lines[0] and "**contradicted**" in lines[1]

    text = "\n".join(probe_section(result))
    rope = next(line for line in text.splitlines() if line.startswith("| rope"))
    assert "| 0/8 | 8 failed: RuntimeError" in rope and "| 8/8 |" in rope  # finished, probe raised
    learned = next(line for line in text.splitlines() if line.startswith("| learned"))
    assert learned.count("0 (exact) / 0 (exact)") == 1 and "0 (exact) / 0.5" in learned


def test_no_probe_table_without_probes(tmp_path):
    decl = write_decl(tmp_path / "abl", cpu={"seeds": [0, 1]})
    write_runs(tmp_path / "results", decl, "cpu", lambda v, s: 0.5)
    assert probe_section(analyse(select(load(str(decl)), "cpu", check_data=False), tmp_path / "results")) == []


def test_identical_pairs_are_said_so_not_inconclusive():
    df = pd.DataFrame({"variant": ["b"] * 4 + ["v"] * 4, "seed": list(range(4)) * 2, "value": [150.0] * 8})
    out = stats.compare(df, baseline="b", higher_is_better=False)
    assert out.iloc[1]["verdict"] == "identical in all 4 pairs"
    assert stats.compare(df, baseline="b", higher_is_better=False, confirmatory=False).iloc[1]["verdict"] == "pilot"


def test_aa_report_counts_false_positives_from_the_store(tmp_path):
    import yaml

    from harness.cli.report import report as write_report

    decl = write_decl(tmp_path / "abl", cpu={"seeds": list(range(8))})
    data = yaml.safe_load(decl.read_text())
    decl.write_text(yaml.safe_dump({**data, "identical_arms": True}, sort_keys=False))
    # rope is 0.1 better in every seed (with some spread): a false positive; learned only wobbles
    write_runs(
        tmp_path / "results",
        decl,
        "cpu",
        lambda v, s: (
            0.5
            + 0.01 * s
            + (0.1 + 0.001 * s if v == "rope" else 0)
            + (0.002 * ((s * 5) % 3 - 1) if v == "learned" else 0)
        ),
    )
    text = write_report(str(decl), "cpu", tmp_path / "results", tmp_path / "out").read_text()
    assert "## A/A check: false positives" in text and "## Claims" not in text
    assert "primary metric: **1 of 2** comparisons between identical arms declared better or worse" in text


@pytest.mark.parametrize(
    "extra, verdict, words",
    [
        # rope 0.02-0.027 worse in every seed: real, and its CI inside ±sesoi (0.05): negligible
        (
            lambda s: 0.02 + 0.001 * s,
            "no effect of that size (every comparison that decided lies inside ±0.05)",
            "inside the smallest effect of interest ±0.05",
        ),
        # rope 0.02 or 0.06 worse, 0.04 on average: real, below the sesoi, but its CI reaches past it
        (
            lambda s: 0.02 + 0.04 * (s % 2),
            "supported in direction only (the effect is smaller than the smallest effect of interest)",
            "below the smallest effect of interest 0.05",
        ),
    ],
)
def test_a_real_effect_below_the_sesoi_is_no_effect_of_that_size_or_direction_only(tmp_path, extra, verdict, words):
    decl = write_decl(tmp_path / "abl", cpu={"seeds": list(range(8))})
    write_runs(tmp_path / "results", decl, "cpu", lambda v, s: 0.5 + 0.01 * s - (extra(s) if v == "rope" else 0))
    result = analyse(select(load(str(decl)), "cpu", check_data=False), tmp_path / "results")
    claim = claim_of(evidence=[{"task": "copy", "metric": "acc@x2", "variant": "rope", "expect": "worse"}])
    got, lines = claim_verdict(claim, result)
    assert got == verdict
    assert words in lines[0], lines[0]


@pytest.mark.parametrize(
    "statuses,command,deterministic",
    [
        (["failed", "failed"], "ablate run mini --profile cpu --retry failed`", True),
        (["timeout"], "ablate run mini --profile cpu --retry timeout`", False),
        (["failed", "timeout"], "ablate run mini --profile cpu --retry failed,timeout`", True),
        (["crashed"], "ablate run mini --profile cpu`", False),  # not stored: the plain command runs it again
    ],
)
def test_the_retry_hint_names_the_statuses_that_occurred(tmp_path, statuses, command, deterministic):
    """It named `--retry failed,timeout` whatever happened, and promised that a retry runs them
    again, where a run failed by its own config (mask_fill_fp16's -1e9 in fp16) fails again."""
    from harness.cli.grid_lines import outcome_lines
    from harness.execution.attempt import Unstored
    from harness.store.record import Record

    fields = [{"run_id": f"r{i}", "task": "copy", "variant_label": "v", "seed": i} for i in range(len(statuses))]
    records = [
        Unstored(**f, status=s, reason="r")
        if s == "crashed"
        else Record.model_construct(**f, status=s, reason="r", profile="cpu")
        for f, s in zip(fields, statuses)
    ]
    lines, code = outcome_lines(records, select(load(str(write_decl(tmp_path))), "cpu", check_data=False))
    last = lines[-1]
    assert code == 1 and last.startswith(f"{len(statuses)} run(s) did not finish; `")
    assert f"{command} runs them again" in last, last
    assert ("fails again; fix it first" in last) is deterministic


def test_stalled_runs_are_said_in_one_line(tmp_path):
    """A stalled run is a result (exit 0); one is said with its reason, several in one line with the
    first as the example (a 40-step smoke grid stalls every run: it printed a line a run)."""
    from harness.cli.grid_lines import outcome_lines
    from harness.store.record import Record

    ctx = select(load(str(write_decl(tmp_path))), "cpu", check_data=False)
    records = [
        Record.model_construct(run_id=f"r{i}", task="copy", variant_label="v", seed=i, status="stalled", reason="why")
        for i in range(3)
    ]
    lines, code = outcome_lines(records[:1], ctx)
    assert (lines, code) == (["[yellow]stalled[/] copy v seed 0: why"], 0)
    lines, code = outcome_lines(records, ctx)
    assert code == 0 and len(lines) == 1, lines
    assert lines[0].startswith("[yellow]3 runs stalled[/], e.g. copy v seed 0: why; `ablate status mini")
