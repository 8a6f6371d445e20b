"""``ablate plan``: seeds from a pilot's spread, checked against a direct statsmodels solve."""

from __future__ import annotations

import json
import math

import pytest
from statsmodels.stats.power import TTestPower

from harness.analysis.looks import primary_comparisons
from harness.analysis.seed_planning import pilot_profile
from harness.cli import compare as plan_cmd
from harness.experiment.ablation import load
from harness.experiment.selection import select
from helpers.cli import assert_nothing_written, assert_refused, invoke
from helpers.fake_store import write_decl, write_runs

pytestmark = pytest.mark.usefixtures("cli_isolated")

# pilot differences (variant - baseline) by seed: SD 0.05 for learned, 0.1 for rope
DIFFS = {"sinusoidal": (0.0, 0.0, 0.0), "learned": (-0.07, -0.02, 0.03), "rope": (0.0, 0.1, 0.2)}
BASE = (0.5, 0.6, 0.7)


def _pilot(variant: str, seed: int) -> float:
    return BASE[seed] + DIFFS[variant][seed]


def _direct(effect: float, sd: float, alpha: float, power: float = 0.8) -> int:
    n = TTestPower().solve_power(effect_size=effect / sd, nobs=None, alpha=alpha, power=power, alternative="two-sided")
    return math.ceil(n - 1e-3)


@pytest.fixture
def store(tmp_path):
    decl = write_decl(
        tmp_path / "decl",
        pilot={"seeds": [0, 1, 2], "confirmatory": False},
        cpu={"seeds": list(range(12))},
        gpu={"seeds": list(range(8)), "only_variants": ["sinusoidal", "learned"]},
    )
    write_runs(tmp_path / "results", decl, "pilot", _pilot)
    return decl, tmp_path / "results"


def test_one_sd_at_alpha_05_power_08_needs_10_seeds(store):
    decl, results = store
    plan = plan_cmd.plan_seeds(str(decl), "gpu", None, results, fmt="json")
    assert plan.pilot == "pilot" and plan.family_size == 1 and plan.alpha_each == 0.05
    (row,) = plan.rows  # gpu's only_variants: one comparison
    assert (row.task, row.variant, row.pilot_n) == ("copy", "learned", 3)
    assert row.sd_diff == pytest.approx(0.05)
    assert row.needed == 10 == _direct(0.05, 0.05, 0.05)
    assert row.have == 8 and row.enough is False


def test_alpha_is_divided_by_the_primary_family(store, capsys):
    decl, results = store
    capsys.readouterr()
    plan = plan_cmd.plan_seeds(str(decl), "cpu", "pilot", results, power=0.9, alpha=0.05, fmt="json")
    confirm = select(load(str(decl)), "cpu", check_data=False)
    assert plan.family_size == len(primary_comparisons(confirm.ablation)) == 2
    rows = {r.variant: r for r in plan.rows}
    assert rows["learned"].needed == _direct(0.05, 0.05, 0.025, 0.9)
    assert rows["rope"].needed == _direct(0.05, 0.1, 0.025, 0.9)
    assert rows["learned"].enough is (rows["learned"].needed <= 12)
    assert rows["rope"].enough is False
    out = json.loads(capsys.readouterr().out)  # json: the raw numbers, nothing else
    assert [(r["variant"], r["seeds_needed"], r["alpha_each"]) for r in out] == [
        ("learned", rows["learned"].needed, 0.025),
        ("rope", rows["rope"].needed, 0.025),
    ]


def test_an_exploratory_variant_is_outside_the_planned_family(tmp_path):
    """The analysis leaves an exploratory variant out of the Holm family; the plan sizes the same family."""
    decl = write_decl(
        tmp_path / "decl",
        pilot={"seeds": [0, 1, 2], "confirmatory": False},
        cpu={"seeds": list(range(12)), "exploratory_variants": ["rope"]},
    )
    write_runs(tmp_path / "results", decl, "pilot", _pilot)
    plan = plan_cmd.plan_seeds(str(decl), "cpu", "pilot", tmp_path / "results", fmt="json")
    assert plan.family_size == 1 and plan.alpha_each == 0.05
    assert [r.variant for r in plan.rows] == ["learned"]
    assert plan.rows[0].needed == _direct(0.05, 0.05, 0.05)


def test_markdown_table_names_the_test_the_level_and_the_verdict(store, capsys):
    decl, results = store
    capsys.readouterr()
    plan_cmd.plan_seeds(str(decl), "gpu", None, results, fmt="md")
    out = capsys.readouterr().out
    assert "alpha 0.05 / 1 primary comparisons = 0.05 (Bonferroni" in out
    assert "| copy   | learned   | acc@x2   | 3 " in out and "| 8: too few " in out
    assert "| 10 " in out


def test_too_few_pilot_seeds_gives_no_number(tmp_path):
    decl = write_decl(tmp_path / "decl")
    results = tmp_path / "results"
    write_runs(results, decl, "pilot", lambda v, s: None if v == "learned" and s > 0 else _pilot(v, s))
    result = invoke("plan", str(decl), "--results-dir", str(results))
    assert result.exit_code == 0, result.output
    assert "too few pilot seeds (1 paired with the baseline; an SD needs 2)" in result.stdout
    rows = {r.variant: r for r in plan_cmd.plan_seeds(str(decl), None, None, results).rows}
    assert rows["learned"].needed is None and rows["learned"].enough is None and rows["learned"].pilot_n == 1
    assert rows["rope"].needed == _direct(0.05, 0.1, 0.025)  # the other variant is still planned


def test_plan_at_a_small_or_an_extreme_level(store):
    decl, results = store
    plan = plan_cmd.plan_seeds(str(decl), "cpu", "pilot", results, alpha=2e-4, fmt="json")
    rows = {r.variant: r for r in plan.rows}
    assert plan.alpha_each == 1e-4 and rows["learned"].needed == 30  # statsmodels' root finder: 25.2
    # 1e-100 is accepted, but divided by the 2 comparisons the solver cannot handle it: a note, no traceback
    result = invoke("plan", str(decl), "--profile", "cpu", "--alpha", "1e-100", "--results-dir", str(results))
    assert result.exit_code == 0 and result.exception is None, result.output
    assert "cannot size: alpha 5e-101 is out of the range the power solver handles" in result.stdout
    assert result.stderr == ""


def test_plan_refuses_a_store_without_pilot_runs(tmp_path):
    decl = write_decl(tmp_path / "decl")
    results = tmp_path / "results"
    assert_refused(
        invoke("plan", "pe_extrapolation", "--profile", "confirm", "--results-dir", str(results)),
        "no pilot runs of pe_extrapolation",
        "looked for profile(s) smoke",
        "--pilot PROFILE",
    )
    assert_refused(invoke("plan", str(decl), "--pilot", "cpu", "--results-dir", str(results)), "no runs of mini / cpu")
    assert_nothing_written(results)


@pytest.mark.parametrize(
    "args, words",
    [
        (["--profile", "laptop"], ["has no profile 'laptop'", "profiles: smoke, cpu"]),
        (["--pilot", "smokey"], ["has no profile 'smokey'", "did you mean 'smoke'"]),
        (["--pilot", ""], ["has no profile ''", "profiles: smoke, cpu"]),  # not the default profile
        (["--profile", ""], ["has no profile ''"]),
        (["--power", "1.5"], ["--power must be between 0 and 1 (exclusive), got 1.5"]),
        (["--alpha", "0"], ["--alpha must be between 0 and 1 (exclusive), got 0"]),
        (
            ["--alpha", "1e-300"],
            ["--alpha 1e-300 is below 1e-100, where the power solver breaks down"],
        ),  # was: a traceback
    ],
)
def test_plan_refuses_bad_profiles_and_levels(tmp_path, args, words):
    confirm = [] if "--profile" in args else ["--profile", "confirm"]
    assert_refused(
        invoke("plan", "pe_extrapolation", *confirm, *args, "--results-dir", str(tmp_path / "results")), *words
    )
    assert_nothing_written(tmp_path / "results")


@pytest.mark.parametrize("args", [[], ["--profile", "smoke"], ["--profile", "cpu"]])
def test_plan_refuses_a_pilot_profile(tmp_path, args):
    """pe_extrapolation's default profile (cpu) and smoke are pilots: there is nothing to plan
    (it used to print a seed plan for them)."""
    assert_refused(
        invoke("plan", "pe_extrapolation", *args, "--results-dir", str(tmp_path / "results")),
        "ablate plan sizes a confirmatory profile; pe_extrapolation / ",
        "is a pilot (confirmatory: false); plan one of confirm, init, long, gpu, reproduce, e.g. --profile confirm",
    )
    assert_nothing_written(tmp_path / "results")


def test_a_smoke_pilot_is_the_last_resort_and_is_warned_about(tmp_path):
    """With runs of both, the default pilot is cpu, not smoke (declared first); with smoke alone, or
    --pilot smoke, the plan comes with a warning line that its spread means little."""
    abl = load("pe_extrapolation")
    results = tmp_path / "results"
    for prof in ("smoke", "cpu"):
        (results / "pe_extrapolation" / prof).mkdir(parents=True)
    confirm = select(abl, "confirm", check_data=False)  # the profile to plan: the hints' grid
    assert pilot_profile(abl, results, None, confirm) == "cpu"
    (results / "pe_extrapolation" / "cpu").rmdir()
    assert pilot_profile(abl, results, None, confirm) == "smoke"
    decl = write_decl(
        tmp_path / "decl",
        smoke={"seeds": [0, 1, 2], "confirmatory": False, "plumbing": True},
        cpu={"seeds": list(range(12))},
    )
    write_runs(results, decl, "smoke", _pilot)
    out = invoke("plan", str(decl), "--profile", "cpu", "--results-dir", str(results))
    assert out.exit_code == 0, out.output
    assert out.stderr.startswith("warning: the spread comes from the smoke profile"), out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_plan_refuses_a_results_dir_that_is_a_file(tmp_path):
    store = tmp_path / "store"
    store.write_text("not a folder")
    assert_refused(
        invoke("plan", "pe_extrapolation", "--profile", "confirm", "--results-dir", str(store)), "is not a folder"
    )
    assert store.read_text() == "not a folder"


def test_plan_never_asks_for_fewer_seeds_than_the_exact_test_needs(tmp_path):
    """A large effect / SD (0.05 / 0.02) needs 5 seeds by the t-test, but a verdict also needs
    the exact sign-flip test, whose smallest p at m seeds is 2 / 2**m: at alpha 0.05 / 2, 7 seeds."""
    from harness.analysis.comparisons import analyse
    from harness.analysis.seed_planning import seed_plan

    decl = write_decl(
        tmp_path / "decl", pilot={"seeds": [0, 1, 2], "confirmatory": False}, cpu={"seeds": list(range(12))}
    )
    write_runs(
        tmp_path / "results",
        decl,
        "pilot",
        lambda v, s: BASE[s] + {"sinusoidal": 0, "learned": 0.5, "rope": 0.5}[v] + 0.02 * s * (v == "rope"),
    )
    abl = load(str(decl))
    pilot = analyse(select(abl, "pilot", check_data=False), tmp_path / "results")
    plan = seed_plan(select(abl, "cpu", check_data=False), pilot)
    learned = next(r for r in plan.rows if r.variant == "learned")
    rope = next(r for r in plan.rows if r.variant == "rope")
    assert learned.needed is None  # SD 0 in the pilot
    assert rope.sd_diff == pytest.approx(0.02) and _direct(0.05, 0.02, 0.025) < 7 and rope.needed == 7
    assert min(m for m in range(1, 40) if 2 / 2**m < 0.025) == 7
