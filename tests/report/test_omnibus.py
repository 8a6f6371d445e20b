"""Across all variants: Friedman + Nemenyi CD against scipy and Demsar (2006), the per-seed
paired-lines figure, and the report lines, on a fake store (records written here, no training)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats as st

from harness.analysis import paired as R
from harness.experiment.selection import select
from harness.report import figures
from harness.report.markdown import across_variants, seed_table, skip_reason

PNG = b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------- statistics


@pytest.mark.parametrize("k, n, q, cd", [(4, 10, 2.569, 1.483), (3, 10, 2.343, 1.048), (10, 5, 3.164, 6.058)])
def test_nemenyi_cd_matches_demsar_table_5(k, n, q, cd):
    # Demsar (JMLR 2006) Table 5a gives q_0.05; CD = q sqrt(k (k + 1) / (6 N))
    assert R.nemenyi_cd(k, n) == pytest.approx(cd, abs=1e-3)
    assert R.nemenyi_cd(k, n) / math.sqrt(k * (k + 1) / (6 * n)) == pytest.approx(q, abs=1e-3)


def test_nemenyi_cd_alpha_010_and_degenerate():
    assert R.nemenyi_cd(4, 10, alpha=0.10) / math.sqrt(4 * 5 / 60) == pytest.approx(2.291, abs=1e-3)  # Table 5b
    assert math.isnan(R.nemenyi_cd(1, 10)) and math.isnan(R.nemenyi_cd(4, 0))


def test_friedman_df_k_and_cd_match_direct_scipy():
    rng = np.random.default_rng(7)
    wide = pd.DataFrame(rng.normal(size=(10, 4)) + [0.0, 0.3, 0.6, 0.9], columns=list("abcd"))
    wide.iloc[4, 2] = np.nan  # seed 4 is not a complete block
    res = R.friedman(wide, higher_is_better=False)
    ref = st.friedmanchisquare(*wide.dropna().to_numpy().T)
    assert (res.statistic, res.p) == pytest.approx((ref.statistic, ref.pvalue))
    assert (res.n_seeds, res.k, res.df) == (9, 4, 3)
    q = st.studentized_range.ppf(0.95, 4, np.inf) / np.sqrt(2)
    assert res.cd == pytest.approx(q * np.sqrt(4 * 5 / (6 * 9)))
    assert res.mean_ranks.idxmin() == "a"  # lower is better: the smallest column ranks first


def test_seed_table_and_skip_reasons():
    rows = pd.DataFrame(
        {
            "variant": ["b", "a", "b", "a", "c"],
            "seed": [1, 1, 0, 0, 0],
            "metric": "m",
            "value": [4.0, 3.0, 2.0, 1.0, 5.0],
        }
    )
    wide = seed_table(rows, "m", ["a", "b", "c"])
    assert list(wide.columns) == ["a", "b", "c"] and list(wide.index) == [0, 1]
    assert wide.loc[1, "b"] == 4.0 and np.isnan(wide.loc[1, "c"])
    assert "at least 3" in skip_reason(10, 2) and "only 2 seed(s)" in skip_reason(2, 4)
    assert skip_reason(3, 3) is None


# ---------------------------------------------------------------- figures


def test_paired_lines_one_line_per_seed_excluded_runs_not_drawn(tmp_path):
    wide = pd.DataFrame(
        {"base": [0.5, 0.6, 0.7], "x": [0.55, np.nan, 0.8], "y": [0.4, 0.5, 0.6]},
        index=pd.Index([0, 1, 2], name="seed"),
    )
    fig = figures.new_figure(6.4, 4.8)
    ax = fig.add_subplot()
    lines = figures.draw_paired_lines(ax, wide)
    assert len(lines) == len(ax.get_lines()) == 3
    assert [ln.get_label() for ln in lines] == ["seed 0", "seed 1", "seed 2"]
    np.testing.assert_array_equal(lines[1].get_xdata(), [0, 1, 2])
    assert np.isnan(lines[1].get_ydata()[1])  # the excluded run: no marker, line broken there
    assert [t.get_text() for t in ax.get_xticklabels()] == ["base\n(n=3)", "x\n(n=2)", "y\n(n=3)"]
    out = figures.paired_lines(wide, "acc@x2", True, "t", tmp_path / "p.png")
    assert out.read_bytes()[:8] == PNG


def test_critical_difference_figure_is_written(tmp_path):
    ranks = pd.Series({"a": 1.2, "b": 2.1, "c": 2.7})
    out = figures.critical_difference(ranks, 1.05, 0.05, "t", tmp_path / "cd.png")
    assert out.read_bytes()[:8] == PNG


# ---------------------------------------------------------------- report

POSITIONS = ("sinusoidal", "learned", "rope")
SEEDS = (0, 1, 2, 3)


def _write_store(folder, seeds=SEEDS, positions=POSITIONS):
    """A 3-variant ablation with a gate, and one ok record per run with made-up metrics:
    rope seed 3 is below the gate, so its acc@x2 is left out."""
    from harness.execution.attempt import spec_record
    from harness.experiment.ablation import load
    from harness.experiment.grid import plan
    from harness.store.runs import run_dir, write_record
    from helpers.tiny_grid import write_tiny

    path = write_tiny(folder, name="omni", seeds=seeds, positions=positions)
    decl = yaml.safe_load(path.read_text())
    decl["tasks"]["copy"]["gate"] = {"metric": "acc@x1", "min": 0.5}
    path.write_text(yaml.safe_dump(decl))
    abl = load(str(path))
    for spec in plan(abl, "cpu", check_data=False)[1]:
        i, below = positions.index(spec.variant_label), spec.variant_label == "rope" and spec.seed == 3
        metrics = {"acc@x1": 0.3 if below else 0.9, "acc@x2": 0.5 + 0.1 * i + 0.01 * spec.seed}
        rec = spec_record(spec, status="ok", metrics=metrics, wall_time_s=1.0, n_params=100)
        write_record(run_dir(folder / "results", "omni", "cpu", spec.run_id), rec)
    return abl


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    from harness.cli.report import report as write_report

    folder = tmp_path_factory.mktemp("omni")
    abl = _write_store(folder)
    md = write_report(abl.source, "cpu", folder / "results", folder / "reports")
    return md, md.read_text()


def test_report_shows_friedman_line_and_figures(report):
    md, text = report
    line = next(x for x in text.splitlines() if x.startswith("**Across all variants**"))
    # rope seed 3 is below the gate: 3 complete blocks remain; rope is best on every seed
    assert "Friedman χ²(2) = 6, p = 0.0498, 3 blocks (seeds), 3 variants" in line
    assert "mean ranks (1 = best): rope 1.00, learned 2.00, sinusoidal 3.00" in line
    assert f"Nemenyi CD = {R.nemenyi_cd(3, 3):.3g}" in line
    for png in ("omni-copy-acc_x2-per-seed.png", "omni-copy-acc_x2-ranks.png"):
        assert f"](figures/{png})" in text
        assert (md.parent / "figures" / png).read_bytes()[:8] == PNG


def test_report_says_why_friedman_is_left_out(tmp_path):
    from harness.analysis.comparisons import analyse

    abl = _write_store(tmp_path, seeds=(0, 1))
    result = analyse(select(abl, "cpu", check_data=False), tmp_path / "results")
    table = result.table("copy", "acc@x2")
    lines = across_variants(table, result.rows, tmp_path, tmp_path, "omni")
    assert lines[0] == "![copy: acc@x2 per seed](omni-copy-acc_x2-per-seed.png)"
    assert lines[2] == (
        "**Across all variants** (`acc@x2`): Friedman test left out: only 2 seed(s) have a value "
        "for every variant; it needs at least 3."
    )
    assert not (tmp_path / "omni-copy-acc_x2-ranks.png").exists()
