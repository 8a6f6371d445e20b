"""Does the decision rule keep the family's error rate on the data ablations make, and what does it buy?

Simulates paired experiments and sends each through the decision code a profile uses
(:func:`harness.analysis.sequential.decide`, its t bounds from :func:`~harness.analysis.sequential.t_bounds`
and its bootstrap-t quantiles from :func:`harness.analysis.paired.bootstrap_t` and
:func:`~harness.analysis.sequential.bootstrap_inputs`), for O'Brien-Fleming and Pocock spending over looks
at 8, 16, 24 and 32 seeds, and fixed designs of 32 and of 8 seeds (one look: the same code, each member at its
Holm level; 8 seeds is what a confirmatory profile without ``sequential:`` runs), with families of m = 1 and
m = 4 comparisons:

- type I error: every true difference 0, the family's rate of a ``better`` or ``worse``;
- false equivalence: every true difference +sesoi (or -sesoi), the rate of any wrong verdict
  (``equivalent``, or the wrong direction); futility off, so that every comparison may run to the end;
- a mixture (m = 4): two at 0, two at +sesoi, any wrong verdict;
- power at 1x and 3x sesoi (``better``), with the mean seeds run.

A scenario fails when the lower end of its 95 % Clopper-Pearson interval is above alpha.

Differences (the m members of an experiment independent, the hardest case for Holm): normal; lognormal
with sigma 0.5 and 1, centred at their mean (skewness 1.75 and 6.18); bimodal 1/2 N(-1, .5^2) +
1/2 N(1, .5^2); Student t with 2 df (no variance); each but t2 scaled to unit variance, the sesoi 0.5 (t2:
0.5 of its scale). And discrete with ties: accuracies on 64 examples (each arm's correct count binomial,
p 0.8; the m variants against one shared baseline, so correlated), the sesoi half the SD of a difference.

Only where a comparison's paired-t interval at the family's most lenient level decides something
(the hull of it and the bootstrap-t interval decides only then) is the bootstrap computed; elsewhere
its input is NaN, which decides nothing either: the decisions are the code's, at less cost.

    python benchmarks/sequential.py                            # 10,000 experiments a scenario
    python benchmarks/sequential.py --experiments 1000         # a quick look
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.analysis import paired  # noqa: E402
from harness.analysis import sequential as sq  # noqa: E402

DISTRIBUTIONS = ("normal", "lognormal 0.5", "lognormal 1", "bimodal", "t2", "accuracy/64")
SESOI = 0.5
"""The smallest effect of interest in units of the differences' SD (t2: of its scale)."""
EXAMPLES, ACCURACY = 64, 0.8
ACCURACY_SD = np.sqrt(2 * ACCURACY * (1 - ACCURACY) / EXAMPLES)  # SD of a difference of two accuracies
ROWS_PER_CHUNK = 4_000  # bootstrap rows at once: 4,000 x 1,999 x 8 bytes, 64 MB


def _lognormal(rng: np.random.Generator, sigma: float, shape: tuple[int, ...]) -> np.ndarray:
    x = np.exp(sigma * rng.standard_normal(shape))
    mean, var = np.exp(sigma**2 / 2), (np.exp(sigma**2) - 1) * np.exp(sigma**2)
    return (x - mean) / np.sqrt(var)


def differences(rng: np.random.Generator, dist: str, effects: np.ndarray, s: int, n: int) -> np.ndarray:
    """Paired differences (S, n, m), member i's true mean ``effects[i]`` (in sesoi units of the scenario)."""
    m = len(effects)
    if dist == "accuracy/64":
        p = np.clip(ACCURACY + effects * SESOI * ACCURACY_SD, 0, 1)
        base = rng.binomial(EXAMPLES, ACCURACY, (s, n, 1))
        return (rng.binomial(EXAMPLES, p, (s, n, m)) - base) / EXAMPLES
    shape = (s, n, m)
    if dist == "normal":
        x = rng.standard_normal(shape)
    elif dist.startswith("lognormal"):
        x = _lognormal(rng, float(dist.split()[1]), shape)
    elif dist == "bimodal":
        x = (rng.choice((-1.0, 1.0), shape) + 0.5 * rng.standard_normal(shape)) / np.sqrt(1.25)
    elif dist == "t2":
        x = rng.standard_t(2, shape)
    else:
        raise ValueError(dist)
    return x + effects * SESOI


def sesoi_of(dist: str) -> float:
    return SESOI * ACCURACY_SD if dist == "accuracy/64" else SESOI


def look_inputs(d: np.ndarray, design: sq.Design, sesoi: float) -> tuple[np.ndarray, ...]:
    """t, n, mean and SD of the differences at each look, each (S, K, m), the bootstrap-t quantiles
    (S, K, m, 2, m), computed where the t interval at the most lenient level decides something, and the
    family's pooled skewness (S, K)."""
    s, _, m = d.shape
    looks = np.array(design.looks)
    n = looks[None, :, None].astype(float)
    mean = np.cumsum(d, axis=1)[:, looks - 1] / n
    csq = np.cumsum((d - d[:, :1]) ** 2, axis=1)[:, looks - 1]  # shifted by the first value: accurate sums
    shifted = mean - d[:, :1]
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt(np.maximum(csq - n * shifted**2, 0.0) / (n - 1))
        t = mean / (sd / np.sqrt(n))
    boot = np.full((s, len(looks), m, 2, m), np.nan)
    skew = np.empty((s, len(looks)))
    p_dir = design.p_table(m)[0]  # j = 1: the most lenient level
    for k, n_k in enumerate(design.looks):
        skew[:, k] = sq.pooled_skewness((d[:, :n_k, :] - mean[:, k][:, None, :]).reshape(s, -1))
        c = stats.t.isf(p_dir[k] / 2, n_k - 1)
        with np.errstate(invalid="ignore"):
            where = (np.abs(t[:, k]) > c) | (np.abs(mean[:, k]) + c * sd[:, k] / np.sqrt(n_k) < sesoi)
        rows = np.moveaxis(d[:, :n_k, :], 2, 1)[where]  # (rows, n_k)
        out = np.empty((len(rows), 2, m))
        for start in range(0, len(rows), ROWS_PER_CHUNK):
            chunk = rows[start : start + ROWS_PER_CHUNK]
            out[start : start + len(chunk)] = sq.bootstrap_inputs(design, m, k, paired.bootstrap_t(chunk))
        boot[:, k][where] = out
    return t, np.broadcast_to(n, t.shape), mean, sd, boot, skew


@dataclass
class Result:
    errors: int  # experiments with a wrong verdict anywhere in the family
    count: int
    power: float  # share of the members with a true effect declared in its direction
    seeds: float  # mean seeds run (the last look any member of the family ran)

    @property
    def rate(self) -> float:
        return self.errors / self.count

    @property
    def interval(self) -> tuple[float, float]:
        low, high = proportion_confint(self.errors, self.count, alpha=0.05, method="beta")
        return float(low), float(high)


def simulate(design: sq.Design, dist: str, effects, count: int, seed: int) -> Result:
    """``count`` experiments of a family with true differences ``effects`` (x sesoi, one per member)."""
    rng = np.random.default_rng(seed)
    effects = np.asarray(effects, dtype=float)
    sesoi = sesoi_of(dist)
    d = differences(rng, dist, effects, count, design.looks[-1])
    t, n, mean, sd, boot, skew = look_inputs(d, design, sesoi)
    dec = sq.decide(design, t, n, mean, sd, boot, np.full(len(effects), sesoi), skew)
    out = dec.outcome
    wrong = np.where(
        effects == 0,
        np.isin(out, (sq.BETTER, sq.WORSE)),
        (out == np.where(effects > 0, sq.WORSE, sq.BETTER)) | ((np.abs(effects) >= 1) & (out == sq.EQUIVALENT)),
    )
    right = out == np.where(effects > 0, sq.BETTER, sq.WORSE)
    stopped = np.where(dec.look >= 0, dec.look, len(design.looks) - 1)
    power = float(right[:, effects != 0].mean()) if (effects != 0).any() else float("nan")
    return Result(int(wrong.any(axis=1).sum()), count, power, float(np.array(design.looks)[stopped.max(axis=1)].mean()))


def designs(alpha: float) -> dict[str, sq.Design]:
    looks = (8, 16, 24, 32)
    return {
        "O'Brien-Fleming": sq.Design(looks, "obrien_fleming", alpha),
        "Pocock": sq.Design(looks, "pocock", alpha),
        "fixed 32": sq.Design((32,), "obrien_fleming", alpha),
        "fixed 8": sq.Design((8,), "obrien_fleming", alpha),
    }


SCENARIOS = {  # name -> effects (x sesoi) per family size
    "type I": {1: (0,), 4: (0, 0, 0, 0)},
    "false equivalence at +sesoi": {1: (1,), 4: (1, 1, 1, 1)},
    "false equivalence at -sesoi": {1: (-1,), 4: (-1, -1, -1, -1)},
    "mixture 2 at 0, 2 at +sesoi": {4: (0, 0, 1, 1)},
}


def error_table(alpha: float, count: int, seed: int, only: str | None = None) -> tuple[list[str], bool]:
    lines = [
        "| scenario | differences | m | design | wrong verdicts | 95 % interval | passes |",
        "|---|---|---|---|---|---|---|",
    ]
    ok = True
    for (name, by_m), dist in itertools.product(SCENARIOS.items(), DISTRIBUTIONS):
        if only and only not in dist:
            continue
        for (m, effects), (label, design) in itertools.product(by_m.items(), designs(alpha).items()):
            if name != "type I":  # every comparison may run to its last look
                design = sq.Design(design.looks, design.spending, design.alpha, futility=False)
            r = simulate(design, dist, effects, count, seed)
            low, high = r.interval
            ok &= low <= alpha
            lines.append(
                f"| {name} | {dist} | {m} | {label} | {r.rate:.4f} | [{low:.4f}, {high:.4f}] | "
                f"{'yes' if low <= alpha else '**no**'} |"
            )
            print(lines[-1], flush=True)
    return lines, ok


def power_table(alpha: float, count: int, seed: int, only: str | None = None) -> list[str]:
    lines = [
        "| differences | m | design | power at 1x sesoi | mean seeds | power at 3x sesoi | mean seeds |",
        "|---|---|---|---|---|---|---|",
    ]
    for dist, m, (label, design) in itertools.product(DISTRIBUTIONS, (1, 4), designs(alpha).items()):
        if only and only not in dist:
            continue
        one, three = (simulate(design, dist, (size,) * m, count, seed) for size in (1, 3))
        lines.append(
            f"| {dist} | {m} | {label} | {one.power:.3f} | {one.seeds:.1f} | {three.power:.3f} | {three.seeds:.1f} |"
        )
        print(lines[-1], flush=True)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=10_000, help="experiments per error scenario")
    parser.add_argument("--power-experiments", type=int, default=4_000, help="experiments per power scenario")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--only", help="only the differences whose name contains this")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    print(f"alpha {args.alpha:g}; {args.experiments:,} experiments per error scenario\n", flush=True)
    errors, ok = error_table(args.alpha, args.experiments, args.seed, args.only)
    power = power_table(args.alpha, args.power_experiments, args.seed + 1, args.only)
    print("\n" + "\n".join(errors) + "\n\n" + "\n".join(power) + "\n")
    print(f"{time.perf_counter() - started:.0f} s; every scenario at or below alpha: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
