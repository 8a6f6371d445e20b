"""The group-sequential design math (harness/analysis/sequential.py) against published bounds, and
the decision rule on hand-built families."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

from harness.analysis import sequential as sq

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


DESIGN = sq.Design((8, 16), "obrien_fleming", 0.05)


def _one(t, n=8, p_sign=0.004, delta=None, sd=1.0, sesoi=None):
    """decide on one experiment: t per (look, member)."""
    t = np.atleast_2d(np.asarray(t, dtype=float))[None]
    full = np.ones_like(t)
    d = t * sd / np.sqrt(n) if delta is None else np.asarray(delta, dtype=float).reshape(t.shape)
    return sq.decide(DESIGN, t, full * n, full * p_sign, d, full * sd, sesoi)


def test_a_rejection_passes_its_level_to_the_rest_of_the_family():
    """Maurer & Bretz (2013) with Holm's weights: at look 1 a t between the alpha / 2 and the alpha bound
    is rejected only once the other member is."""
    at_half, at_full = (
        sq.t_bounds(DESIGN.looks, 0.025, "obrien_fleming")[0],
        sq.t_bounds(DESIGN.looks, 0.05, "obrien_fleming")[0],
    )
    between = (at_half + at_full) / 2
    alone = _one([[between, 0.5]])
    assert list(alone.outcome[0]) == [sq.OPEN, sq.OPEN]
    both = _one([[between, -(at_half + 1)]])
    assert list(both.outcome[0]) == [sq.BETTER, sq.WORSE]
    assert list(both.level[0]) == [0.05, 0.025] and list(both.look[0]) == [0, 0]


def test_the_sign_flip_check_holds_a_direction_back():
    """A t past the bound with an exact sign-flip p above the level stays open (and may cross later)."""
    held = _one([[50.0]], p_sign=0.06)
    assert held.outcome[0, 0] == sq.OPEN
    assert _one([[50.0]], p_sign=0.0078).outcome[0, 0] == sq.BETTER


def test_where_the_exact_test_can_reach_the_bound_it_must():
    """At 16 pairs the exact test's smallest p (2 / 2**16) is below look 1's nominal p, so its p must
    reach that nominal p too, not only the Holm level: a direction the normal model alone carries waits."""
    design = sq.Design((16, 32), "obrien_fleming", 0.05)
    cut = design.p_table(1)[0, 0]  # alpha / 1 at look 1
    t, n = np.full((1, 1, 1), 50.0), np.full((1, 1, 1), 16.0)

    def outcome(p_sign: float) -> int:
        return sq.decide(design, t, n, np.full_like(t, p_sign), t / 4, np.ones_like(t)).outcome[0, 0]

    assert cut < 0.01
    assert outcome(0.01) == sq.OPEN and outcome(cut * 0.9) == sq.BETTER


def test_equivalence_by_a_repeated_interval_inside_the_sesoi():
    small = _one([[0.1]], delta=[[0.001]], sd=0.01, sesoi=[0.05])
    assert small.outcome[0, 0] == sq.EQUIVALENT
    assert -0.05 < small.rci_low[0, 0] < 0.001 < small.rci_high[0, 0] < 0.05
    wide = _one([[0.1]], delta=[[0.001]], sd=0.3, sesoi=[0.05])
    assert wide.outcome[0, 0] != sq.EQUIVALENT and wide.rci_high[0, 0] > 0.05


def test_futility_stops_a_comparison_far_from_its_sesoi_at_an_interim_look_only():
    """Conditional power at the sesoi: a tiny t with a sesoi far below the spread is hopeless."""
    hopeless = _one([[0.05]], delta=[[0.001]], sd=1.0, sesoi=[0.01])
    assert hopeless.outcome[0, 0] == sq.FUTILE and hopeless.look[0, 0] == 0
    t, n = np.array([[[3.0], [0.05]]]), np.array([[[8], [16]]])  # promising at look 1, hopeless at the last
    last = sq.decide(DESIGN, t, n, np.full_like(t, 0.5), t / np.sqrt(n), np.ones_like(t), [0.3])
    assert last.outcome[0, 0] == sq.OPEN and last.rci_low[0, 0] < 0 < last.rci_high[0, 0]
