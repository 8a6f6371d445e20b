"""The group-sequential design math (harness/analysis/sequential.py) against published bounds, and
the decision rule on hand-built families."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

from harness.analysis import sequential as sq
from harness.experiment.declaration import SPENDING_FUNCTIONS

THIRDS = [1 / 3, 2 / 3, 1]


def crossing_probability(bounds, fractions, sides: int = 2) -> float:
    """Probability under the null that the z statistic crosses ``bounds`` (one per look, upper;
    ``sides`` 2: also below minus them) at some look, the looks at information ``fractions``: the
    canonical joint distribution (corr(Z_i, Z_j) = sqrt(t_i / t_j), J&T section 3.1) integrated by
    ``scipy.stats.multivariate_normal``'s CDF (Genz, absolute error 1e-6)."""
    b, t = np.asarray(bounds, dtype=float), np.asarray(fractions, dtype=float)[: len(bounds)]
    if len(b) == 1:
        return float(stats.norm.sf(b[0]) * sides)
    corr = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    mvn = stats.multivariate_normal(np.zeros(len(b)), corr, abseps=1e-6, releps=0)
    low = -b if sides == 2 else np.full(len(b), -np.inf)
    return float(1.0 - mvn.cdf(b, lower_limit=low, rng=np.random.default_rng(0)))


def normal_bounds(fractions, alpha: float, spending: str, sides: int = 2) -> np.ndarray:
    """Z boundaries with known variance, the reference the paired t bounds tend to: look by look,
    the bound at which the cumulative crossing probability equals the spent alpha (J&T section 7.2)."""
    out: list[float] = []
    for a in sq.spent(spending, alpha, fractions):
        out.append(
            optimize.brentq(lambda c, a=a: crossing_probability([*out, c], fractions, sides) - a, 0.1, 40, xtol=1e-5)
        )
    return np.array(out)


def test_the_spending_functions_implemented_are_those_a_declaration_may_name():
    """The statistics may not import the declarations: the two lists of names are checked here instead."""
    assert list(sq.SPENDING) == list(SPENDING_FUNCTIONS)
    with pytest.raises(ValueError, match="choose one of obrien_fleming, pocock"):
        sq.spent("obrien-fleming", 0.05, THIRDS)


def test_obrien_fleming_bounds_are_gsdesigns():
    """Three equal looks, one-sided 0.025, Lan-DeMets O'Brien-Fleming-like spending: R gsDesign's
    gsDesign(k = 3, test.type = 1, sfu = sfLDOF) upper bounds 3.710, 2.511, 1.993."""
    bounds = normal_bounds(THIRDS, 0.025, "obrien_fleming", sides=1)
    assert bounds == pytest.approx([3.710, 2.511, 1.993], abs=6e-4)


def test_the_crossing_probability_gives_the_classical_pocock_constant():
    """Jennison & Turnbull (2000) Table 2.1: the Pocock constant of 3 equal looks at two-sided 0.05 is 2.289."""
    c = optimize.brentq(lambda c: crossing_probability([c] * 3, THIRDS, 2) - 0.05, 1.5, 4, xtol=1e-5)
    assert c == pytest.approx(2.289, abs=6e-4)


def test_pocock_like_spending_is_nearly_flat_and_spends_alpha():
    bounds = normal_bounds(THIRDS, 0.025, "pocock", sides=1)
    assert np.ptp(bounds) < 0.02 and bounds == pytest.approx(2.289, abs=0.015)
    assert crossing_probability(bounds, THIRDS, 1) == pytest.approx(0.025, abs=1e-5)


def test_unknown_spending_is_refused():
    with pytest.raises(ValueError, match="unknown spending function 'linear'"):
        sq.spent("linear", 0.05, [0.5, 1])


def test_t_bounds_start_at_the_student_quantile_and_tend_to_the_normal_ones():
    """Look 1 is exact; with hundreds of pairs per look the paired t is nearly normal, so its bounds read
    as z (same nominal p) are the normal bounds, up to the simulation's error."""
    few = sq.t_bounds((8, 16, 24), 0.05, "obrien_fleming")
    assert few[0] == pytest.approx(stats.t.isf(sq.spent("obrien_fleming", 0.05, [1 / 3])[0] / 2, 7))
    assert (np.diff(few) < 0).all()
    many = (300, 600, 900)
    as_z = stats.norm.isf(stats.t.sf(sq.t_bounds(many, 0.05, "pocock"), np.array(many) - 1))
    assert as_z == pytest.approx(normal_bounds(THIRDS, 0.05, "pocock"), abs=0.02)


def test_t_bounds_keep_the_error_rate_on_fresh_null_paths():
    """Paths the bounds were not fitted on (another seed) cross them at the spent alpha."""
    looks = (4, 8, 12)
    bounds = sq.t_bounds(looks, 0.05, "obrien_fleming")
    x = np.random.default_rng(7).standard_normal((200_000, 12))
    n = np.array(looks)
    t = np.stack([abs(x[:, :k].mean(1)) / (x[:, :k].std(1, ddof=1) / np.sqrt(k)) for k in n], axis=1)
    rate = (t >= bounds).any(axis=1).mean()
    assert abs(rate - 0.05) < 3 * np.sqrt(0.05 * 0.95 / 200_000)


DESIGN = sq.Design((16, 32), "obrien_fleming", 0.05)


def _one(t, n=16, delta=None, sd=1.0, sesoi=None, boot=0.0, skew=None, design=DESIGN):
    """decide on one experiment: t per (look, member); ``boot``: every bootstrap-t quantile (0: the t
    interval alone decides, its bound being above 0)."""
    t = np.atleast_2d(np.asarray(t, dtype=float))[None]
    full = np.ones_like(t)
    d = t * sd / np.sqrt(n) if delta is None else np.asarray(delta, dtype=float).reshape(t.shape)
    m = t.shape[2]
    q = np.full((*t.shape, 2, m), boot, dtype=float)
    sk = None if skew is None else np.full(t.shape[:2], skew, dtype=float)
    return sq.decide(design, t, full * n, d, full * sd, q, sesoi, sk)


def test_a_member_passes_its_level_on_only_when_both_its_nulls_are_rejected():
    """Holm over direction and equivalence: a member declared better keeps its level (its "not equivalent"
    null may be true); one whose interval excludes 0 and lies within ±sesoi passes it to the rest."""
    design = sq.Design((8,), "obrien_fleming", 0.05)
    at_half, at_full = (stats.t.isf(a / 2, 7) for a in (0.025, 0.05))
    between = (at_half + at_full) / 2  # member 1: rejected at alpha, not at alpha / 2

    def family(delta_2: float, sd_2: float):
        t = np.array([[[between, delta_2 / (sd_2 / np.sqrt(8))]]])
        sd = np.array([[[1.0, sd_2]]])
        delta = t * sd / np.sqrt(8)
        n, q = np.full_like(t, 8.0), np.zeros((1, 1, 2, 2, 2))
        return sq.decide(design, t, n, delta, sd, q, [0.01, 0.5], np.zeros((1, 1)))

    big = family(3.0, 1.0)  # member 2 better, far beyond the sesoi: its equivalence null is true
    assert list(big.outcome[0]) == [sq.OPEN, sq.BETTER] and not big.resolved.any()
    assert list(big.level[0]) == [0.025, 0.025]
    small = family(0.3, 0.01)  # member 2's interval excludes 0 and lies within ±0.5: both nulls rejected
    assert small.resolved[0, 1] and list(small.outcome[0]) == [sq.BETTER, sq.BETTER]
    assert list(small.level[0]) == [0.05, 0.025]


def test_the_bootstrap_t_interval_holds_a_direction_the_t_test_alone_would_take():
    """The deciding interval is the hull of the t interval and the bootstrap-t one: a bootstrap-t whose
    upper quantile lies beyond the observed t (skewed resamples) keeps the member open."""
    at16 = dict(n=16, design=sq.Design((16, 32), "obrien_fleming", 0.05))
    assert _one([[50.0]], **at16).outcome[0, 0] == sq.BETTER
    assert _one([[50.0]], boot=60.0, **at16).outcome[0, 0] == sq.OPEN
    assert _one([[50.0]], boot=np.nan, **at16).outcome[0, 0] == sq.OPEN  # no bootstrap (too few pairs)


def test_the_skew_guard_widens_the_end_on_the_skews_side_by_the_edgeworth_shift():
    """Pooled skewness past SKEW_LIMIT x sqrt(n): under right skew the upper end's |t| bound grows by
    skew_margin (the t-test's lower tail is what skew inflates), so `worse` needs that much more and `better`
    does not; equivalence is read off the widened interval."""
    limit = sq.SKEW_LIMIT * np.sqrt(16)
    design = sq.Design((16, 32), "obrien_fleming", 0.05)
    plain = _one([[-50.0]], n=16, skew=0.0, design=design)
    bound = plain.bound[0, 0]
    margin = sq.skew_margin(bound, 16)
    assert margin == pytest.approx(sq.SKEW_COVERED * (2 * bound**2 + 1) / 24)
    assert plain.margin_low[0, 0] == plain.margin_high[0, 0] == 0.0
    between = -(bound + margin / 2)  # past the plain bound, inside the widened one
    held = _one([[between]], n=16, skew=limit + 0.1, design=design)
    assert held.outcome[0, 0] == sq.OPEN and held.skewed[0, 0] == pytest.approx(limit + 0.1)
    assert held.margin_high[0, 0] == pytest.approx(margin) and held.margin_low[0, 0] == 0.0
    assert held.rci_high[0, 0] == pytest.approx(between / 4 + (bound + margin) / 4)  # sd 1, se 1/4
    assert _one([[between]], n=16, skew=limit - 0.1, design=design).outcome[0, 0] == sq.WORSE
    assert _one([[-(bound + margin + 0.5)]], n=16, skew=limit + 0.1, design=design).outcome[0, 0] == sq.WORSE
    assert _one([[-between]], n=16, skew=limit + 0.1, design=design).outcome[0, 0] == sq.BETTER
    eq = dict(n=16, delta=[[0.001]], sd=0.05, sesoi=[0.05], design=design)  # plain half-width about 0.035
    assert _one([[0.1]], skew=0.0, **eq).outcome[0, 0] == sq.EQUIVALENT
    widened = _one([[0.1]], skew=-(limit + 0.1), **eq)
    assert widened.outcome[0, 0] == sq.OPEN and widened.rci_low[0, 0] < -0.05 and np.isfinite(widened.skewed[0, 0])


def test_a_single_comparison_at_8_pairs_has_both_ends_widened_its_skewness_unseen():
    """8 differences of one comparison cannot show a skew (SKEW_MIN_VALUES): both ends are widened, so only a
    large |t| decides; two comparisons (16 values) read their skewness instead."""
    assert 8 < sq.SKEW_MIN_VALUES <= 16
    at8 = dict(n=8, skew=0.0, design=sq.Design((8, 16), "obrien_fleming", 0.05))
    bound = _one([[1.0]], **at8).bound[0, 0]
    margin = sq.skew_margin(bound, 8)
    blind = _one([[bound + margin / 2]], **at8)
    assert blind.outcome[0, 0] == sq.OPEN
    assert blind.margin_low[0, 0] == blind.margin_high[0, 0] == pytest.approx(margin)
    assert _one([[-(bound + margin + 0.5)]], **at8).outcome[0, 0] == sq.WORSE
    two = _one([[bound + margin / 2, bound + margin / 2]], **at8)
    assert two.outcome[0].tolist() == [sq.BETTER, sq.BETTER] and (two.margin_high[0] == 0).all()


def test_equivalence_by_the_deciding_interval_inside_the_sesoi():
    small = _one([[0.1]], delta=[[0.001]], sd=0.01, sesoi=[0.05])
    assert small.outcome[0, 0] == sq.EQUIVALENT
    assert -0.05 < small.rci_low[0, 0] < 0.001 < small.rci_high[0, 0] < 0.05
    wide = _one([[0.1]], delta=[[0.001]], sd=0.3, sesoi=[0.05])
    assert wide.outcome[0, 0] != sq.EQUIVALENT and wide.rci_high[0, 0] > 0.05


def test_futility_stops_a_comparison_far_from_its_sesoi_at_an_interim_look_only():
    """Conditional power at the sesoi: a tiny t with a sesoi far below the spread is hopeless."""
    hopeless = _one([[0.05]], delta=[[0.001]], sd=1.0, sesoi=[0.01])
    assert hopeless.outcome[0, 0] == sq.FUTILE and hopeless.look[0, 0] == 0
    t, n = np.array([[[3.0], [0.05]]]), np.array([[[16], [32]]])  # promising at look 1, hopeless at the last
    q = np.zeros((1, 2, 1, 2, 1))
    last = sq.decide(DESIGN, t, n, t / np.sqrt(n), np.ones_like(t), q, [0.3])
    assert last.outcome[0, 0] == sq.OPEN and last.rci_low[0, 0] < 0 < last.rci_high[0, 0]


def test_a_verdict_the_skew_guard_held_back_says_why():
    from harness.analysis import looks

    design = sq.Design((8, 16), "obrien_fleming", 0.05)

    def verdict(pairs: int, skewed: float) -> str:
        c = looks.ComparisonState("copy", "rope", 0.5, sq.OPEN, -1, pairs, 0.1, 1.0, (-1.0, 1.0), 0.05, 2.0, skewed)
        return looks.verdict(looks.State(design, [c], 2, frozenset(), 16), c)

    assert verdict(16, 2.5).endswith("; skewed differences held a verdict back (pooled skewness 2.5))")
    assert verdict(8, 0.1).endswith("; a verdict held back: 8 differences cannot show their skewness)")
    assert verdict(16, float("nan")) == "inconclusive (not decided by the last look, 16 seeds)"


@pytest.mark.parametrize("n", [8, 16, 32])
def test_the_skew_margin_keeps_the_t_tests_lower_tail_on_the_most_skewed_differences(n: int) -> None:
    """Centred lognormal differences with sigma 1 (skewness 6.18, the most the benchmark draws): a t below
    -b (b the two-sided 0.05 bound) happens far more often than 0.025, below -(b + skew_margin) no more."""
    rng = np.random.default_rng(20_261_206)
    x = np.exp(rng.standard_normal((200_000, n)))
    d = x - np.exp(0.5)  # mean 0
    t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / np.sqrt(n))
    b = stats.t.isf(0.025, n - 1)
    assert (t < -b).mean() > 0.1
    assert (t < -(b + sq.skew_margin(b, n))).mean() <= 0.025


def test_differences_that_never_vary_give_a_bootstrap_t_of_zero_and_are_decided():
    """Every seed -0.3 apart: no resample has a spread, T* is 0 (not NaN), and the interval is the point."""
    from harness.analysis import paired

    d = np.full((1, 8), -0.3)
    assert (paired.bootstrap_t(d) == 0).all()
    design = sq.Design((8,), "obrien_fleming", 0.05)
    q = sq.bootstrap_inputs(design, 1, 0, paired.bootstrap_t(d))[None, None]
    out = sq.decide(design, np.array([[[-np.inf]]]), np.array([[[8.0]]]), np.array([[[-0.3]]]), np.zeros((1, 1, 1)), q)
    assert out.outcome[0, 0] == sq.WORSE and out.rci_low[0, 0] == out.rci_high[0, 0] == pytest.approx(-0.3)
