"""The primary comparisons of an ablation form one Holm family (README, harness/analysis.py):
everything a verdict reads, and every number printed beside the adjusted p, belongs to it.
Expected values are computed here with scipy / statsmodels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats as st
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower

from harness.analysis import paired as power
from harness.analysis.comparisons import analyse
from harness.experiment.ablation import load
from harness.experiment.selection import select
from helpers.fake_store import write_decl, write_runs

SEEDS = list(range(8))


def tost_p(d: np.ndarray, margin: float) -> float:
    """Two one-sided t-tests of the mean difference against -margin and +margin: the larger p."""
    lower = st.ttest_1samp(d, -margin, alternative="greater").pvalue
    upper = st.ttest_1samp(d, margin, alternative="less").pvalue
    return float(max(lower, upper))


def test_equivalence_is_adjusted_in_the_primary_holm_family(tmp_path):
    """Item 1: baseline 0.5 over 8 seeds, two variants with per-seed differences drawn by
    default_rng(4) and default_rng(5) (normal, sd 0.06), sesoi 0.05. Raw TOST p 0.0328 and
    0.0383; Holm over the family gives 0.0655 for both: neither is equivalent."""
    diffs = {
        "learned": np.random.default_rng(4).normal(0, 0.06, 8),
        "rope": np.random.default_rng(5).normal(0, 0.06, 8),
    }
    raw = [tost_p(diffs[v], 0.05) for v in ("learned", "rope")]
    holm = multipletests(raw, method="holm")[1]
    assert raw == pytest.approx([0.0328, 0.0383], abs=5e-5) and holm == pytest.approx([0.0655, 0.0655], abs=5e-5)

    decl = write_decl(tmp_path / "decl", cpu={"seeds": SEEDS})
    write_runs(tmp_path / "results", decl, "cpu", lambda v, s: 0.5 + (diffs[v][s] if v in diffs else 0.0))
    table = analyse(select(load(str(decl)), "cpu", check_data=False), tmp_path / "results").table("copy", "acc@x2")
    assert table.family == "primary (fixed design, Holm over 2 comparisons)"
    rows = table.frame.set_index("variant").loc[["learned", "rope"]]
    np.testing.assert_allclose(rows["p_tost"], raw, rtol=1e-9)
    np.testing.assert_allclose(rows["p_tost_adj"], holm, rtol=1e-9)
    assert not any(v.startswith("equivalent") for v in rows["verdict"]), list(rows["verdict"])


def two_task_decl(folder) -> object:
    """write_decl's ablation with two tasks (copy, reverse) and one variant (learned)."""
    path = write_decl(folder, cpu={"seeds": SEEDS})
    decl = yaml.safe_load(path.read_text())
    decl["axes"] = {"model.position": ["sinusoidal", "learned"]}
    decl["tasks"]["reverse"] = decl["tasks"]["copy"]
    path.write_text(yaml.safe_dump(decl, sort_keys=False))
    return path


def test_mde_and_every_p_use_the_family_of_the_adjusted_p(tmp_path):
    """Item 2: two tasks x one variant x 8 seeds: a Holm family of 2, so the MDE printed beside
    the adjusted p (and in "inconclusive (MDE x)") is at alpha / 2, not alpha / 1; the sign-flip
    and TOST p are adjusted over the same two comparisons."""
    rng = np.random.default_rng(7)
    diffs = {"copy": rng.normal(0.004, 0.01, 8), "reverse": rng.normal(0.0, 0.01, 8)}
    decl = two_task_decl(tmp_path / "decl")
    from harness.experiment.grid import plan

    task_of = {s.run_id: s.task for s in plan(load(str(decl)), "cpu", [], check_data=False)[1]}
    assert set(task_of.values()) == {"copy", "reverse"}
    write_runs(tmp_path / "results", decl, "cpu", lambda v, s: 0.5)  # then give each task its differences
    import json

    for rec_path in (tmp_path / "results" / "mini" / "cpu").glob("*/record.json"):
        rec = json.loads(rec_path.read_text())
        if rec["variant_label"] == "learned":
            value = 0.5 + diffs[rec["task"]][rec["seed"]]
            rec["metrics"] = {"acc@x1": value, "acc@x2": value}
            rec_path.write_text(json.dumps(rec))
    result = analyse(select(load(str(decl)), "cpu", check_data=False), tmp_path / "results")
    rows = [result.table(task, "acc@x2").frame.set_index("variant").loc["learned"] for task in ("copy", "reverse")]
    p = [r["p"] for r in rows]
    np.testing.assert_allclose([r["p_adj"] for r in rows], multipletests(p, method="holm")[1])
    np.testing.assert_allclose(
        [r["p_perm_adj"] for r in rows], multipletests([r["p_perm"] for r in rows], method="holm")[1]
    )
    np.testing.assert_allclose(
        [r["p_tost_adj"] for r in rows], multipletests([r["p_tost"] for r in rows], method="holm")[1]
    )
    for task, r in zip(("copy", "reverse"), rows):
        sd = float(np.std(diffs[task], ddof=1))
        expected = TTestPower().solve_power(effect_size=None, nobs=8, alpha=0.05 / 2, power=0.8) * sd
        assert r["family_size"] == 2
        assert r["mde"] == pytest.approx(expected, rel=1e-6)
        assert r["mde"] > power.mde(8, sd, 0.05) * 1.1  # not the family-of-one value
        if r["verdict"].startswith("inconclusive (MDE"):
            assert r["verdict"] == f"inconclusive (MDE {expected:.3g})"


def test_a_comparison_with_an_infinite_value_is_in_no_family_and_the_label_agrees(tmp_path):
    """A run whose primary metric is inf (a loss that overflowed) makes its comparison's tests
    undefined: it is left out of the Holm family, and the family's label counts what its members'
    ``family_size`` says (the label read 7 while the undefined row kept its own family size 3)."""
    diffs = {
        "learned": np.random.default_rng(4).normal(0, 0.06, 8),
        "rope": np.random.default_rng(5).normal(0, 0.06, 8),
    }

    def value(variant: str, seed: int) -> float:
        if variant == "rope" and seed == 0:
            return float("inf")
        return 0.5 + (diffs[variant][seed] if variant in diffs else 0.0)

    decl = write_decl(tmp_path / "decl", cpu={"seeds": SEEDS})
    write_runs(tmp_path / "results", decl, "cpu", value)
    table = analyse(select(load(str(decl)), "cpu", check_data=False), tmp_path / "results").table("copy", "acc@x2")
    rows = table.frame.set_index("variant")
    assert table.family == "primary (fixed design, Holm over 2 comparisons)"  # the design's, declared before data
    assert rows.loc["learned", "family_size"] == 1  # the t-test's family, which does not decide here
    assert rows.loc["learned", "p_adj"] == pytest.approx(st.ttest_rel(0.5 + diffs["learned"], [0.5] * 8).pvalue)
    assert np.isnan(rows.loc["rope", "p_perm"]) and rows.loc["rope", "family_size"] is pd.NA
    assert rows.loc["rope", "verdict"] == "undefined (a non-finite value in 1 of 8 pairs)"


def test_an_exploratory_variant_stays_out_of_the_primary_family(tmp_path):
    """A profile's ``exploratory_variants`` (a variant added after the confirmatory runs) leave the
    family, and so the adjusted p of every confirmatory comparison, as they were without it."""
    diffs = {
        "learned": np.random.default_rng(4).normal(0.03, 0.06, 8),
        "rope": np.random.default_rng(5).normal(0.03, 0.06, 8),
    }

    def table(folder, **profile):
        decl = write_decl(tmp_path / folder / "decl", cpu={"seeds": SEEDS, **profile})
        results = tmp_path / folder / "results"
        write_runs(results, decl, "cpu", lambda v, s: 0.5 + (diffs[v][s] if v in diffs else 0.0))
        result = analyse(select(load(str(decl)), "cpu", check_data=False), results)
        powers[folder] = result.power
        return result.table("copy", "acc@x2")

    powers = {}
    alone = table("alone", only_variants=["sinusoidal", "learned"])
    beside = table("beside", exploratory_variants=["rope"])
    assert [p.variant for p in powers["beside"]] == ["learned"]  # sized as the family it is in
    assert powers["beside"][0].alpha_each == powers["alone"][0].alpha_each == 0.05
    assert alone.family == "primary (fixed design, Holm over 1 comparison)"
    assert beside.family == "primary (fixed design, Holm over 1 comparison; rope: exploratory, BH within the table)"
    learned = [t.frame.set_index("variant").loc["learned"] for t in (alone, beside)]
    assert learned[1]["p_adj"] == pytest.approx(learned[0]["p_adj"], rel=1e-12)
    assert learned[0]["p_adj"] == pytest.approx(learned[0]["p"], rel=1e-12)  # Holm over one: the raw p
    assert table("holm").family == "primary (fixed design, Holm over 2 comparisons)"  # without the mark: in the family
