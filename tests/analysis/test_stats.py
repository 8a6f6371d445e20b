"""harness.analysis.stats: each wrapper pinned to a direct scipy / statsmodels call, a published value or
an independent computation written out here."""

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.weightstats import ttost_paired

from harness.analysis import paired as PT
from harness.analysis import stats as S
from harness.analysis import verdicts as vd


def series(values, seeds=None):
    return pd.Series(values, index=range(len(values)) if seeds is None else seeds, dtype=float)


@pytest.fixture
def pair():
    rng = np.random.default_rng(0)
    seed_effect = rng.normal(size=12)
    return (series(seed_effect + rng.normal(0, 0.3, 12)), series(seed_effect + 0.2 + rng.normal(0, 0.3, 12)))


# ---------------------------------------------------------------- describe


def test_describe_matches_t_interval():
    x = np.array([0.61, 0.58, 0.66, 0.70, 0.59, 0.63])
    d = PT.describe(x, confidence=0.9)
    lo, hi = st.t.interval(0.9, len(x) - 1, loc=x.mean(), scale=st.sem(x))
    assert d.n == 6
    assert d.mean == pytest.approx(x.mean()) and d.sd == pytest.approx(x.std(ddof=1))
    assert (d.ci_low, d.ci_high) == pytest.approx((lo, hi))


def test_describe_nan_and_small_n():
    d = PT.describe([1.0, np.nan, 3.0, np.nan])
    assert (d.n, d.mean) == (2, 2.0)
    one = PT.describe([5.0, np.nan])
    assert (one.n, one.mean) == (1, 5.0)
    assert all(math.isnan(v) for v in (one.sd, one.ci_low, one.ci_high))
    assert math.isnan(PT.describe([]).mean)
    const = PT.describe([2.0, 2.0, 2.0])
    assert (const.sd, const.ci_low, const.ci_high) == (0.0, 2.0, 2.0)


# ---------------------------------------------------------------- paired_test


def test_paired_matches_ttest_rel(pair):
    base, var = pair
    r = PT.paired_test(base, var, higher_is_better=True, confidence=0.9)
    ref = st.ttest_rel(var, base)
    ci = ref.confidence_interval(0.9)
    assert r.n_pairs == 12
    assert (r.t, r.p) == pytest.approx((ref.statistic, ref.pvalue))
    assert (r.ci_low, r.ci_high) == pytest.approx((ci.low, ci.high))
    d = var - base
    assert r.delta == pytest.approx(d.mean())
    assert r.d_z == pytest.approx(d.mean() / d.std(ddof=1))
    assert (r.wins, r.ties, r.losses) == ((d > 0).sum(), 0, (d < 0).sum())
    assert r.prob_improvement == pytest.approx((d > 0).mean())


def test_paired_orientation_flips(pair):
    base, var = pair
    up = PT.paired_test(base, var, higher_is_better=True)
    down = PT.paired_test(base, var, higher_is_better=False)
    assert down.delta == pytest.approx(-up.delta) and down.t == pytest.approx(-up.t)
    assert (down.ci_low, down.ci_high) == pytest.approx((-up.ci_high, -up.ci_low))
    assert down.p == pytest.approx(up.p) and down.p_perm == pytest.approx(up.p_perm)
    assert (down.wins, down.losses) == (up.losses, up.wins)
    assert down.prob_improvement == pytest.approx(1 - up.prob_improvement)


def test_paired_on_common_seeds_any_order():
    base = series([1.0, 2.0, 3.0, 4.0, np.nan], seeds=[0, 1, 2, 3, 4])
    var = series([3.5, 2.5, 1.5, 9.0], seeds=[2, 1, 0, 7])  # shuffled; 3, 4 and 7 unpaired
    r = PT.paired_test(base, var, higher_is_better=True)
    assert r.n_pairs == 3
    assert r.diffs == (0.5, 0.5, 0.5)


def test_paired_small_n_gives_nan():
    r = PT.paired_test(series([1.0, 2.0]), series([2.0], seeds=[1]), higher_is_better=True)
    assert (r.n_pairs, r.delta) == (1, 0.0)
    assert all(math.isnan(v) for v in (r.t, r.p, r.p_perm, r.ci_low, r.d_z))
    empty = PT.paired_test(series([]), series([]), higher_is_better=True)
    assert empty.n_pairs == 0 and math.isnan(empty.delta)


def test_paired_constant_differences_follow_scipy():
    base = series([0.0, 1.0, 2.0, 3.0, 4.0])
    shifted = PT.paired_test(base, base + 0.5, higher_is_better=True)  # exact in binary
    assert (shifted.t, shifted.p, shifted.d_z) == (np.inf, 0.0, np.inf)
    assert (shifted.ci_low, shifted.ci_high) == (0.5, 0.5)
    assert shifted.p_perm == pytest.approx(2 / 2**5)
    same = PT.paired_test(base, base, higher_is_better=True)
    assert math.isnan(same.p) and math.isnan(same.t) and math.isnan(same.d_z)
    assert (same.ties, same.prob_improvement, same.p_perm) == (5, 0.5, 1.0)


def test_sign_flip_minimum_p_at_five_seeds():
    r = PT.paired_test(series(np.zeros(5)), series([0.1, 0.3, 0.2, 0.5, 0.4]), True)
    assert r.p_perm == pytest.approx(0.0625)
    assert r.p < 0.05  # the t-test can go lower; the exact test cannot


def test_sign_flip_equals_enumeration():
    d = np.array([0.3, -0.1, 0.4, 0.2, -0.05, 0.25, 0.1, -0.2])
    flips = np.array(list(itertools.product([1, -1], repeat=len(d))))
    null = (flips * d).mean(axis=1)
    upper, lower = (null >= d.mean() - 1e-12).mean(), (null <= d.mean() + 1e-12).mean()
    expected = min(1.0, 2 * min(upper, lower))
    r = PT.paired_test(series(np.zeros(8)), series(d), higher_is_better=True)
    assert r.p_perm == pytest.approx(expected)


def test_duplicate_seeds_raise():
    with pytest.raises(ValueError, match="duplicate"):
        PT.paired_test(series([1.0, 2.0], seeds=[0, 0]), series([1.0, 2.0]), True)


# ---------------------------------------------------------------- adjust

P = [0.01, 0.04, 0.03, 0.005, 0.2]


def test_holm_equals_statsmodels_and_not_its_default():
    adj, m = S.adjust(P)
    assert m == 5
    np.testing.assert_allclose(adj, multipletests(P, method="holm")[1])
    assert not np.allclose(adj, multipletests(P)[1])  # statsmodels' default is Holm-Sidak


def test_adjust_skips_nan_and_passes_method():
    adj, m = S.adjust([0.01, np.nan, 0.04, 0.03], method="fdr_bh")
    assert m == 3 and math.isnan(adj[1])
    ref = multipletests([0.01, 0.04, 0.03], method="fdr_bh")[1]
    np.testing.assert_allclose(adj[[0, 2, 3]], ref)
    assert S.adjust([np.nan, 0.03])[0][1] == 0.03 and S.adjust([np.nan])[1] == 0


# ---------------------------------------------------------------- power


def test_mde_known_value():
    assert PT.mde(10, 1.0) == pytest.approx(0.996, abs=1e-3)
    assert PT.mde(10, 0.02) == pytest.approx(0.02 * PT.mde(10, 1.0))
    assert math.isnan(PT.mde(1, 1.0)) and math.isnan(PT.mde(5, np.nan))


def test_mde_has_the_stated_power():
    rng = np.random.default_rng(3)
    diffs = rng.normal(PT.mde(10, 1.0), 1.0, size=(20_000, 10))
    power = (st.ttest_1samp(diffs, 0.0, axis=1).pvalue < 0.05).mean()
    assert power == pytest.approx(0.8, abs=0.015)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 10, 20])
def test_seeds_needed_inverts_mde(n):
    assert PT.seeds_needed(PT.mde(n, 0.3), 0.3) == n
    assert PT.seeds_needed(-PT.mde(n, 0.3), 0.3) == n
    assert PT.seeds_needed(0.99 * PT.mde(n, 0.3), 0.3) == n + 1


def test_seeds_needed_edges():
    assert PT.seeds_needed(100.0, 1.0) == 2
    with pytest.raises(ValueError):
        PT.seeds_needed(0.0, 1.0)


@pytest.mark.parametrize("alpha, es", [(1e-4, 1.0), (1e-4, 2.0), (1e-6, 0.5), (1e-5, 0.2)])
def test_seeds_needed_at_small_alpha_reaches_the_power(alpha, es):
    # statsmodels' root finder stops at its bracket or a wrong root there (1e-4, es 1: 25.2, needs 30)
    def power(n):
        return st.nct.sf(st.t.isf(alpha / 2, n - 1), n - 1, es * np.sqrt(n))

    n = PT.seeds_needed(es, 1.0, alpha=alpha, power=0.8)
    assert power(n) >= 0.8 > power(n - 1)


def test_seeds_needed_says_when_it_cannot_size():
    with pytest.raises(ValueError, match="out of the range the power solver handles"):
        PT.seeds_needed(1.0, 1.0, alpha=1e-300)


# ---------------------------------------------------------------- tost, verdict


def test_tost_matches_two_one_sided_ttests():
    d = np.array([0.01, -0.02, 0.0, 0.015, -0.005, 0.012])
    p = PT.tost_paired(d, 0.03)
    lower = st.ttest_1samp(d, -0.03, alternative="greater").pvalue
    upper = st.ttest_1samp(d, 0.03, alternative="less").pvalue
    assert p == pytest.approx(max(lower, upper))
    assert p == pytest.approx(ttost_paired(d, np.zeros_like(d), -0.03, 0.03)[0])
    assert math.isnan(PT.tost_paired([0.1], 0.03))


@pytest.mark.parametrize(
    "kw, expected",
    [
        ({"p_adj": 0.01, "ci_low": 0.1, "ci_high": 0.3, "perm_p_adj": 0.02}, "better"),
        ({"p_adj": 0.01, "ci_low": -0.3, "ci_high": -0.1, "perm_p_adj": 0.02}, "worse"),
        ({"p_adj": 0.01, "ci_low": 0.1, "ci_high": 0.3, "perm_p_adj": 0.02, "confirmatory": False}, "pilot"),
        (
            {"p_adj": 0.5, "ci_low": -0.01, "ci_high": 0.01, "perm_p_adj": 0.5, "sesoi": 0.05, "tost_p": 0.01},
            "equivalent (±0.05)",
        ),
        (
            {
                "p_adj": 0.5,
                "ci_low": -0.1,
                "ci_high": 0.1,
                "perm_p_adj": 0.5,
                "sesoi": 0.05,
                "tost_p": 0.2,
                "mde": 0.1234,
            },
            "inconclusive (MDE 0.123)",
        ),
        ({"p_adj": np.nan, "ci_low": np.nan, "ci_high": np.nan, "perm_p_adj": np.nan}, "inconclusive"),
        # the t-test rejects, the exact sign-flip test does not: no direction
        (
            {"p_adj": 0.011, "ci_low": 0.02, "ci_high": 0.1, "perm_p_adj": 0.0625, "mde": 0.05},
            "inconclusive (t-test only: exact sign-flip p adj 0.0625)",
        ),
        (
            {"p_adj": 0.011, "ci_low": 0.001, "ci_high": 0.01, "perm_p_adj": 0.0625, "sesoi": 0.05, "tost_p": 0.001},
            "equivalent (±0.05)",
        ),
        ({"p_adj": 0.2, "ci_low": -0.01, "ci_high": 0.1, "perm_p_adj": 0.01, "mde": 0.05}, "inconclusive (MDE 0.05)"),
    ],
)
def test_verdict(kw, expected):
    """The rules of a tested comparison (verdicts.RULES) from its adjusted p, CI and TOST p."""
    low, high = kw.pop("ci_low"), kw.pop("ci_high")
    tost, perm = kw.pop("tost_p", np.nan), kw.pop("perm_p_adj")
    facts = vd.Facts(n_pairs=8, better=(low + high) / 2 > 0, p_perm_adj=perm, p_tost_adj=tost, **kw)
    assert vd.decide(facts) == expected


def test_t_test_and_exact_test_disagree_at_small_n():
    """Differences [0.1] x 5 + [0] x 3. The paired t-test rejects (p 0.011),
    the exact sign-flip test cannot (p = 2 / 2**5 = 0.0625: the three zero differences do not
    change the mean when flipped): the rule in ``verdict`` gives no direction."""
    base = np.full(8, 0.5)
    var = base + np.array([0.1] * 5 + [0.0] * 3)
    out = S.compare(tidy({"base": base, "var": var}), baseline="base", higher_is_better=True).iloc[1]
    ref_t = st.ttest_rel(var, base).pvalue
    d = var - base
    flips = np.array(list(itertools.product([1, -1], repeat=8)))
    ref_exact = np.mean(np.abs((flips * d).mean(axis=1)) >= abs(d.mean()) - 1e-12)
    assert ref_t == pytest.approx(0.011, abs=5e-4) and ref_exact == pytest.approx(0.0625)
    assert (out.p, out.p_perm) == pytest.approx((ref_t, ref_exact))
    assert out.verdict == "inconclusive (t-test only: exact sign-flip p adj 0.0625)"


# ---------------------------------------------------------------- friedman


def test_friedman_matches_scipy_on_complete_seeds():
    rng = np.random.default_rng(4)
    table = pd.DataFrame(rng.normal(size=(8, 3)) + [0.0, 0.5, 1.0], columns=["a", "b", "c"])
    table.iloc[2, 1] = np.nan
    r = PT.friedman(table)
    full = table.dropna().to_numpy()
    ref = st.friedmanchisquare(*full.T)
    assert r.n_seeds == 7 and (r.statistic, r.p) == pytest.approx((ref.statistic, ref.pvalue))
    ranks = np.array([[sorted(row, reverse=True).index(v) + 1 for v in row] for row in full])
    np.testing.assert_allclose(r.mean_ranks.to_numpy(), ranks.mean(axis=0))
    assert r.mean_ranks.idxmin() == "c"
    assert PT.friedman(table, higher_is_better=False).mean_ranks.idxmin() == "a"


def test_friedman_degenerate_is_nan():
    two = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [2.0, 3.0, 4.0]})
    assert math.isnan(PT.friedman(two).p)
    one_seed = pd.DataFrame({"a": [1.0], "b": [2.0], "c": [3.0]})
    assert math.isnan(PT.friedman(one_seed).statistic) and PT.friedman(one_seed).n_seeds == 1


# ---------------------------------------------------------------- compare


def tidy(wide: dict[str, np.ndarray]) -> pd.DataFrame:
    return pd.DataFrame([{"variant": v, "seed": s, "value": x} for v, xs in wide.items() for s, x in enumerate(xs)])


@pytest.fixture
def table():
    rng = np.random.default_rng(5)
    seed = rng.normal(size=10)
    noise = lambda: rng.normal(0, 0.1, 10)
    return tidy(
        {
            "rope": seed + 0.3 + noise(),
            "base": seed + noise(),
            "alibi": seed + 0.001 + noise(),
            "nope": seed - 0.02 + noise(),
        }
    )


def test_compare_layout_and_family(table):
    out = S.compare(table, baseline="base", higher_is_better=True)
    assert list(out.columns) == S.COLUMNS
    assert list(out.variant) == ["base", "rope", "alibi", "nope"]
    base = out.iloc[0]
    assert base.verdict == "baseline" and math.isnan(base.p) and base.n == 10
    rest = out.iloc[1:]
    assert (rest.family_size == 3).all()
    np.testing.assert_allclose(rest.p_adj, multipletests(rest.p, method="holm")[1])
    ref = st.ttest_rel(table.value[table.variant == "rope"], table.value[table.variant == "base"])
    assert rest.p.iloc[0] == pytest.approx(ref.pvalue)
    assert rest.verdict.iloc[0] == "better"
    np.testing.assert_allclose(rest.p_perm_adj, multipletests(rest.p_perm, method="holm")[1])
    d = table.value[table.variant == "rope"].to_numpy() - table.value[table.variant == "base"].to_numpy()
    assert rest.mde.iloc[0] == pytest.approx(PT.mde(10, d.std(ddof=1), alpha=0.05 / 3))


def test_compare_lower_is_better_and_equivalence(table):
    out = S.compare(table, baseline="base", higher_is_better=False, sesoi=0.2).set_index("variant")
    assert out.loc["rope", "verdict"] == "worse" and out.loc["rope", "delta"] < 0
    assert out.loc["alibi", "verdict"] == "equivalent (±0.2)"
    pilot = S.compare(table, baseline="base", higher_is_better=True, confirmatory=False)
    assert set(pilot.verdict[1:]) == {"pilot"}


def test_compare_missing_seeds_and_errors(table):
    out = S.compare(table.drop(index=[0, 1]), baseline="base", higher_is_better=True)
    assert out.set_index("variant").loc["rope", ["n", "n_pairs"]].tolist() == [8, 8]
    with pytest.raises(ValueError, match="duplicate"):
        S.compare(pd.concat([table, table.head(1)]), baseline="base", higher_is_better=True)
    with pytest.raises(ValueError, match="not among"):
        S.compare(table, baseline="sinusoidal", higher_is_better=True)


def test_aa_false_positive_rate():
    """1,000 A/A tables (10 seeds, identical arms, seed-level shared noise): claims of
    better/worse should occur at about alpha."""
    rng = np.random.default_rng(6)
    n_sim, n_seeds = 1000, 10
    seeds = np.tile(np.arange(n_seeds), 2)
    variant = np.repeat(["base", "same"], n_seeds)
    claims = 0
    for _ in range(n_sim):
        value = np.tile(rng.normal(0, 1, n_seeds), 2) + rng.normal(0, 0.2, 2 * n_seeds)
        df = pd.DataFrame({"variant": variant, "seed": seeds, "value": value})
        out = S.compare(df, baseline="base", higher_is_better=True)
        claims += out.verdict.iloc[1] in ("better", "worse")
    # within binomial noise of alpha: a two-sided exact binomial test of the count does not reject
    # at 0.001 (about alpha +- 0.022 at 1,000 tables); measured 47/1000 (53 with the t-test alone)
    from scipy.stats import binomtest

    assert binomtest(claims, n_sim, 0.05).pvalue > 0.001, claims / n_sim


# ---------------------------------------------------------------- non-finite values
# A loss or perplexity that overflowed to inf: numpy gave the sign-flip test p 0.0 at 2 pairs (the
# exact test's minimum there is 0.5), a NaN t-test p and a RuntimeWarning on stderr.


@pytest.fixture
def no_runtime_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        yield


@pytest.mark.usefixtures("no_runtime_warning")
def test_describe_with_an_infinite_value_has_no_sd():
    d = PT.describe([1.0, 2.0, math.inf])
    assert (d.n, d.mean) == (3, math.inf)
    assert all(math.isnan(x) for x in (d.sd, d.ci_low, d.ci_high))
    assert math.isnan(PT.describe([math.inf, -math.inf]).mean)


@pytest.mark.usefixtures("no_runtime_warning")
def test_paired_with_an_infinite_value_is_undefined_but_keeps_its_signs():
    base = series([1.0, 2.0, 3.0, math.inf])
    var = series([1.5, 1.0, math.inf, math.inf])  # seed 2: variant overflowed; seed 3: both did
    res = PT.paired_test(base, var, higher_is_better=False)
    assert (res.n_pairs, res.non_finite) == (4, 2)
    assert (res.wins, res.ties, res.losses) == (1, 1, 2)  # inf loss is a loss; two infinities tie
    assert res.prob_improvement == pytest.approx(1.5 / 4)
    for name in ("t", "p", "p_perm", "ci_low", "ci_high", "d_z", "sd_diff"):
        assert math.isnan(getattr(res, name)), name
    assert math.isnan(res.delta)  # -inf (seed 2) and NaN (inf - inf, seed 3)
    one = PT.paired_test(series([1.0, 2.0, 3.0]), series([1.5, 1.0, math.inf]), higher_is_better=False)
    assert one.delta == -math.inf and math.isnan(one.p_perm) and one.non_finite == 1
    assert math.isnan(PT.tost_paired(one.diffs, 0.1))


@pytest.mark.usefixtures("no_runtime_warning")
@pytest.mark.parametrize("confirmatory", [True, False])
def test_compare_with_an_infinite_value_leaves_that_comparison_out_of_the_family(table, confirmatory):
    table = table.copy()
    table.loc[(table.variant == "alibi") & (table.seed == 3), "value"] = math.inf
    out = S.compare(table, baseline="base", higher_is_better=False, confirmatory=confirmatory).set_index("variant")
    alibi = out.loc["alibi"]
    assert alibi.verdict == "undefined (a non-finite value in 1 of 10 pairs)"
    assert pd.isna(alibi.family_size) and all(math.isnan(alibi[c]) for c in ("p", "p_perm", "p_adj", "p_perm_adj"))
    assert alibi.delta == -math.inf and alibi["mean"] == math.inf and math.isnan(alibi.sd)
    members = out.loc[["rope", "nope"]]
    assert (members.family_size == 2).all()
    np.testing.assert_allclose(members.p_adj, multipletests(members.p, method="holm")[1])
    np.testing.assert_allclose(members.p_perm_adj, multipletests(members.p_perm, method="holm")[1])
