"""Positive controls (harness/experiment/reproductions.yaml, harness/analysis/controls.py): the registry's validation
(bad entries exit 2 with one line naming the entry and the field), the verdict -> pass / fail /
inconclusive mapping on a synthetic store, the paired statistics against scipy, and
reports/reproductions.md with its link from the index."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import scipy.stats
import yaml

from harness.analysis import controls as ev
from harness.errors import AblateError
from harness.experiment import ablation as ablation_mod
from harness.experiment import claims as reg
from harness.report.controls import markdown as markdown_page
from helpers.cli import assert_refused, invoke
from helpers.fake_store import write_decl, write_runs

NAMED = {"press2022-alibi", "xiong2020-preln", "arora2023-mqar", "haviv2022-nope"}


def _entry(**comparison) -> dict:
    comp = {
        "ablation": "mini",
        "profile": "cpu",
        "task": "copy",
        "metric": "acc@x2",
        "variant": "rope",
        "reference": "learned",
        "expect": "better",
    } | comparison
    return {
        "id": "x2020",
        "paper": "X et al. 2020",
        "source": "Table 1",
        "setting": "big",
        "result": "rope wins",
        "expected": "rope better",
        "differences": "smaller",
        "comparisons": [comp],
    }


@pytest.fixture
def mini(tmp_path, monkeypatch):
    """A registered ablation `mini` (copy, acc@x2, sesoi 0.05; sinusoidal baseline, learned, rope)
    with 8 confirmatory seeds in `cpu` and 3 pilot seeds in `pilot`."""
    folder = tmp_path / "ablations"
    decl = write_decl(folder, pilot={"seeds": [0, 1, 2], "confirmatory": False}, cpu={"seeds": list(range(8))})
    monkeypatch.setattr(ablation_mod, "ABLATIONS_DIR", folder)
    return decl


def test_the_shipped_registry_is_valid_and_has_the_four_named_entries():
    entries = ev.load_checked()
    assert {e.id for e in entries} >= NAMED
    pairs = {(c.variant, c.reference) for e in entries for c in e.comparisons}
    assert ("alibi", "rope") in pairs and ("rope", "sinusoidal") in pairs  # a reference that is not the baseline


@pytest.mark.parametrize(
    "change,words",
    [
        (lambda e: e.pop("paper"), ["entry 'x2020', field paper", "Field required"]),
        (lambda e: e["comparisons"][0].update(expect="faster"), ["field comparisons.0.expect"]),
        (lambda e: e["comparisons"][0].update(colour="red"), ["field comparisons.0.colour", "Extra inputs"]),
        (lambda e: e.update(comparisons=[]), ["field comparisons"]),
        (lambda e: e["comparisons"][0].update(margin=-1), ["field comparisons.0.margin"]),
        (lambda e: e.update(id="Bad Id"), ["entry 'Bad Id', field id"]),
    ],
)
def test_schema_errors_name_the_entry_and_the_field(change, words):
    entry = _entry()
    change(entry)
    with pytest.raises(AblateError) as err:
        reg.parse([entry])
    assert "\n" not in str(err.value)
    for w in words:
        assert w in str(err.value), (w, str(err.value))


def test_a_repeated_id_or_an_empty_registry_is_refused():
    with pytest.raises(AblateError, match="field id: repeated"):
        reg.parse([_entry(), _entry()])
    with pytest.raises(AblateError, match="non-empty list"):
        reg.parse({"id": "x"})


@pytest.mark.parametrize(
    "comparison,words",
    [
        ({"ablation": "minni"}, ["field comparisons.0.ablation", "did you mean 'mini'"]),
        ({"profile": "gpu"}, ["field comparisons.0.profile", "no profile 'gpu'"]),
        ({"task": "reverse"}, ["field comparisons.0.task"]),
        ({"variant": "alibi"}, ["field comparisons.0.variant", "not a point of the mini / cpu grid"]),
        ({"reference": "rope"}, ["field comparisons.0.reference", "the same as the variant"]),
    ],
)
def test_comparisons_are_checked_against_the_declarations(mini, comparison, words):
    entry = reg.parse([_entry(**comparison)])[0]
    with pytest.raises(AblateError) as err:
        ev.check(entry)
    for w in words:
        assert w in str(err.value), (w, str(err.value))


def test_reproduce_exits_2_on_a_bad_registry(mini, tmp_path, monkeypatch):
    monkeypatch.setattr(reg, "load_registry", lambda: tuple(reg.parse([_entry(variant="alibi")])))
    assert_refused(
        invoke("reproduce", "--dry-run", "--results-dir", str(tmp_path / "r")),
        "entry 'x2020', field comparisons.0.variant",
    )
    monkeypatch.setattr(reg, "load_registry", lambda: reg.parse([_entry(expect="faster")]))
    assert_refused(
        invoke("reproduce", "--dry-run", "--results-dir", str(tmp_path / "r")),
        "entry 'x2020', field comparisons.0.expect",
    )
    monkeypatch.setattr(reg, "load_registry", lambda: tuple(reg.parse([_entry()])))
    assert_refused(
        invoke("reproduce", "x202", "--results-dir", str(tmp_path / "r")),
        "no reproduction 'x202'",
        "did you mean 'x2020'",
    )


def test_reproduce_checks_its_options_and_store_before_reading_any_grid(mini, tmp_path, monkeypatch):
    """--dry-run too: a --run-timeout ablate run refuses, or a --results-dir that is a file, exits 2
    with nothing written (they used to be accepted by the dry run and print a plan)."""
    monkeypatch.setattr(reg, "load_registry", lambda: tuple(reg.parse([_entry()])))
    results = tmp_path / "r"
    for extra in ([], ["--dry-run"]):
        out = invoke("reproduce", *extra, "--run-timeout", "-1", "--results-dir", str(results))
        assert_refused(out, "--run-timeout must be a positive number of seconds, got -1")
        assert not results.exists()
    out = invoke("reproduce", "--dry-run", "--run-timeout", "nan", "--results-dir", str(results))
    assert_refused(out, "--run-timeout must be a finite number of seconds, got nan")
    assert not results.exists()
    afile = tmp_path / "store"
    afile.write_text("x")
    assert_refused(invoke("reproduce", "--dry-run", "--results-dir", str(afile)), "is not a folder")
    assert afile.read_text() == "x"
    under = afile / "sub"  # the dry run printed a plan whose `ablate run ... --results-dir store/sub` exits 2
    for command in (["reproduce", "--dry-run"], ["status", "mini", "--profile", "cpu"]):
        assert_refused(invoke(*command, "--results-dir", str(under)), f"cannot be a folder: {afile} is a file")
    assert afile.read_text() == "x"


@pytest.mark.parametrize("extra", [[], ["--dry-run"]])
def test_reproduce_refuses_wandb_online_without_credentials_before_any_line(mini, tmp_path, monkeypatch, extra):
    """As ``ablate run`` does, before any output: the dry run printed its plan and exit 0, and the
    real one printed the grid's line, then refused in the runner."""
    monkeypatch.setattr(reg, "load_registry", lambda: tuple(reg.parse([_entry()])))
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc
    monkeypatch.delenv("NETRC", raising=False)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    results = tmp_path / "r"
    out = invoke("reproduce", *extra, "--wandb", "online", "--results-dir", str(results))
    assert "ablate sync" in assert_refused(out, "--wandb online needs W&B credentials")
    assert not results.exists()


def test_dry_run_hint_runs_the_grid_in_the_same_store(mini, tmp_path, monkeypatch):
    monkeypatch.setattr(reg, "load_registry", lambda: tuple(reg.parse([_entry()])))
    results = tmp_path / "my results"
    out = invoke("reproduce", "--dry-run", "--results-dir", str(results))
    assert out.exit_code == 0, out.output
    assert f"(`ablate run mini --profile cpu --results-dir '{results}'`)" in out.stdout
    assert not results.exists()


NOISE = [0.12, -0.2, 0.25, -0.1, 0.18, -0.22, 0.05, -0.08]


def _value(variant: str, seed: int) -> float:
    """rope clearly above learned and sinusoidal; learned = sinusoidal + a large zero-mean noise."""
    base = 0.5 + 0.01 * seed
    return {"sinusoidal": base, "rope": base + 0.2 + 0.002 * (seed % 3), "learned": base + NOISE[seed]}[variant]


def _evaluate(results, **comparison):
    entry = reg.parse([_entry(**comparison)])[0]
    ev.check(entry)
    return ev.evaluate(entry, results)


def test_verdicts_map_to_pass_fail_inconclusive(mini, tmp_path):
    results = tmp_path / "results"
    write_runs(results, mini, "cpu", _value)
    write_runs(results, mini, "pilot", _value)
    cases = [
        ({"variant": "rope", "reference": "learned", "expect": "better"}, "pass", "better"),  # reference != baseline
        ({"variant": "learned", "reference": "rope", "expect": "better"}, "fail", "worse"),
        ({"variant": "rope", "reference": "sinusoidal", "expect": "equivalent", "margin": 0.05}, "fail", "better"),
        ({"variant": "learned", "reference": "sinusoidal", "expect": "better"}, "inconclusive", "inconclusive"),
        ({"variant": "rope", "reference": "learned", "profile": "pilot"}, "inconclusive", "pilot"),
        ({"variant": "rope", "reference": "learned", "reference_min": 0.9}, "fail", "better"),
    ]
    for comparison, outcome, verdict in cases:
        res = _evaluate(results, **comparison)
        got = res.outcomes[0]
        assert (res.outcome, got.verdict.split(" (")[0]) == (outcome, verdict), (comparison, got.verdict, got.note)
    assert "below 0.9" in _evaluate(results, reference_min=0.9).outcomes[0].note


@pytest.mark.parametrize("reached", [4, 5])
def test_a_reference_that_did_not_learn_gives_no_pass_or_fail(mini, tmp_path, reached):
    """The claims' gating rule on the reference: copy declares a target (acc >= 0.9); learned, the
    reference, reached it on ``reached`` of 8 seeds. At 4 (not more than half) no comparison against
    it passes or fails; at 5 it does. A declared ``reference_min`` the reference misses still fails."""
    decl = yaml.safe_load(mini.read_text())
    decl["tasks"]["copy"]["target"] = {"metric": "acc", "min": 0.9}
    mini.write_text(yaml.safe_dump(decl, sort_keys=False))
    results = tmp_path / "results"
    write_runs(
        results, mini, "cpu", _value, extra=lambda v, s: {"target_reached": float(v != "learned" or s < reached)}
    )
    res = _evaluate(results, variant="rope", reference="learned", expect="better")
    (o,) = res.outcomes
    if reached == 4:  # the rule table decides (rule "not learned"), as for every comparison; nothing after it
        assert o.verdict == "not learned (4/8 seeds reached target)"
        assert (o.text, res.outcome) == ("inconclusive (baseline not learned 4/8)", "inconclusive")
        page = markdown_page([res], results)
        assert "→ not learned (4/8 seeds reached target); expects better: **inconclusive (baseline not learned" in page
    else:
        assert o.verdict == "better"
        assert (o.outcome, res.outcome) == ("pass", "pass")
    # a reference that learned (rope, 8/8): the verdict decides, here against the expectation
    assert _evaluate(results, variant="learned", reference="rope", expect="better").outcome == "fail"
    floor = _evaluate(results, variant="rope", reference="learned", expect="better", reference_min=0.9)
    assert floor.outcome == "fail"
    if reached == 4:
        assert floor.outcomes[0].note.endswith("is below 0.9; it reached the task's target on 4 of 8 seeds")


def test_the_statistics_are_the_paired_t_test_of_scipy(mini, tmp_path):
    results = tmp_path / "results"
    write_runs(results, mini, "cpu", _value)
    row = _evaluate(results, variant="learned", reference="rope", expect="worse").outcomes[0].row
    learned = np.array([_value("learned", s) for s in range(8)])
    rope = np.array([_value("rope", s) for s in range(8)])
    ref = scipy.stats.ttest_rel(learned, rope)
    assert row["n_pairs"] == 8
    assert row["delta"] == pytest.approx((learned - rope).mean(), rel=1e-12)
    assert row["p"] == pytest.approx(ref.pvalue, rel=1e-9) and row["p_adj"] == pytest.approx(ref.pvalue, rel=1e-9)
    ci = ref.confidence_interval()
    assert (row["delta_ci_low"], row["delta_ci_high"]) == pytest.approx((ci.low, ci.high), rel=1e-9)


def test_an_entrys_comparisons_are_one_holm_family(mini, tmp_path):
    results = tmp_path / "results"
    write_runs(results, mini, "cpu", _value)
    two = reg.parse([_entry()])[0].model_copy(deep=True)
    two.comparisons.append(two.comparisons[0].model_copy(update={"variant": "learned", "reference": "sinusoidal"}))
    res = ev.evaluate(two, results)
    raw = [o.row["p"] for o in res.outcomes]
    lo, hi = sorted(raw)
    adjusted = sorted(o.row["p_adj"] for o in res.outcomes)
    assert adjusted[0] == pytest.approx(2 * lo) and adjusted[1] == pytest.approx(max(2 * lo, hi))
    assert all(o.row["family_size"] == 2 for o in res.outcomes)


def test_missing_runs_are_not_run_and_the_dry_run_lists_them(mini, tmp_path, monkeypatch):
    results = tmp_path / "results"
    write_runs(results, mini, "cpu", lambda v, s: _value(v, s) if s < 6 else None)
    monkeypatch.setattr(reg, "load_registry", lambda: tuple(reg.parse([_entry(profile="pilot")])))
    out = invoke("reproduce", "--dry-run", "--results-dir", str(results))
    assert out.exit_code == 0, out.output
    assert "mini / pilot: 9 runs, 9 missing" in out.stdout and "nothing ran" in out.stdout
    assert "x2020: NOT RUN" in out.stdout
    assert not (results / "mini" / "pilot").exists()  # nothing ran
    monkeypatch.setattr(reg, "load_registry", lambda: tuple(reg.parse([_entry(reference="sinusoidal")])))
    out = invoke("reproduce", "--dry-run", "--results-dir", str(results))
    assert "mini / cpu: 24 runs, 6 missing" in out.stdout
    # the 6 pairs so far decide their comparison (the exact sign-flip test needs 6: 2 / 2**6 < 0.05),
    # but the entry waits for its planned seeds, as the claims it guards do
    assert "n = 6 seeds" in out.stdout and "expects better: **pass**" in out.stdout
    assert "x2020: INCOMPLETE (18/24 runs)  (" in out.stdout  # as the page and the claims read it


def test_reproductions_page_and_the_index_link(mini, tmp_path, monkeypatch):
    results = tmp_path / "results"
    write_runs(results, mini, "cpu", _value)
    entries = [_entry(), copy.deepcopy(_entry()), copy.deepcopy(_entry())]
    entries[1].update(id="y2021", differences="a tiny model trained briefly")
    entries[1]["comparisons"][0].update(variant="learned", reference="rope")
    entries[2].update(id="z2022")
    entries[2]["comparisons"][0].update(ablation="gone")
    monkeypatch.setattr(reg, "load_registry", lambda: tuple(reg.parse(entries)))
    out = tmp_path / "reports"
    result = invoke("report", "--all", "--results-dir", str(results), "--out", str(out))
    assert result.exit_code == 0, result.output
    page = (out / "reproductions.md").read_text()
    assert "| [x2020](#x2020) | X et al. 2020 | Table 1 | rope better | none | **pass** |" in page
    assert "| [y2021](#y2021) |" in page and "**fail** |" in page
    fail = page.split("## y2021")[1].split("## z2022")[0]
    assert "What the harness saw: learned vs rope on `acc@x2`: worse" in fail
    assert "What might explain the difference: a tiny model trained briefly" in fail
    assert "Scale caveat: this outcome holds at the scale run here (mini / cpu: d_model 16" in fail
    assert "not evaluated: reproductions.yaml: entry 'z2022', field comparisons.0.ablation" in page
    assert "What the harness saw" not in page.split("## x2020")[1].split("## y2021")[0]  # a pass needs no excuse
    # the page's commands read the store it was made from
    assert f"*Generated by `ablate report --all --results-dir {results}` on " in page
    assert f"`ablate reproduce [ID] --results-dir {results}` runs what is missing" in page
    index = (out / "README.md").read_text()
    assert "[published results reproduced](reproductions.md)" in index
    assert "x2020 **pass**, y2021 **fail**, z2022 **not run**" in index


def test_reproduce_runs_what_is_missing_through_the_runner(tmp_path, monkeypatch):
    """Without --dry-run the missing runs of each grid an entry reads are trained (as by
    `ablate run`, with its --workers), then the entry is judged from them; a second call runs nothing."""
    from helpers.tiny_grid import write_tiny

    folder = tmp_path / "ablations"
    write_tiny(folder, steps=20, val_every=10, seeds=(0, 1))
    monkeypatch.setattr(ablation_mod, "ABLATIONS_DIR", folder)
    entry = _entry(ablation="tiny", variant="learned", reference="sinusoidal", metric="acc@x1")
    monkeypatch.setattr(reg, "load_registry", lambda: tuple(reg.parse([entry])))
    results = tmp_path / "results"
    out = invoke("reproduce", "x2020", "--results-dir", str(results), "--workers", "1", "--wandb", "off")
    assert out.exit_code == 0, out.output
    assert "tiny / cpu: 4 runs, 4 missing" in out.stdout
    assert len(list((results / "tiny" / "cpu").glob("*/record.json"))) == 4
    assert "x2020: INCONCLUSIVE" in out.stdout and "pilot" in out.stdout  # tiny's profile is not confirmatory
    again = invoke("reproduce", "x2020", "--results-dir", str(results), "--wandb", "off")
    assert "tiny / cpu: 4 runs, 0 missing" in again.stdout and "to run" not in again.stdout


def test_a_reference_at_ceiling_gives_no_pass_or_fail_unless_the_variant_falls(mini, tmp_path):
    """learned, the reference, scores 1 on every seed: rope, also 1 everywhere, can be neither
    better nor shown equal in any useful sense (inconclusive, reference at ceiling); sinusoidal,
    far below, is worse as expected (pass) and worse against an expectation of better (fail)."""
    results = tmp_path / "results"
    write_runs(results, mini, "cpu", lambda v, s: {"learned": 1.0, "rope": 1.0}.get(v, 0.5 + 0.01 * s))
    for expect in ("better", "worse", "equivalent"):
        (o,) = _evaluate(results, variant="rope", reference="learned", expect=expect, margin=0.05).outcomes
        assert o.text == "inconclusive (reference at ceiling on all 8 seeds)", (expect, o.verdict)
    assert _evaluate(results, variant="sinusoidal", reference="learned", expect="worse").outcome == "pass"
    assert _evaluate(results, variant="sinusoidal", reference="learned", expect="better").outcome == "fail"


def test_a_reference_at_ceiling_counts_the_seeds_of_the_pairs(mini, tmp_path):
    """While rope has run on 5 of the reference's 8 seeds, the outcome says 5 seeds, as the
    comparison's n does (it said 8 beside n = 5)."""
    results = tmp_path / "results"
    write_runs(results, mini, "cpu", lambda v, s: 1.0 if v == "learned" or (v == "rope" and s < 5) else None)
    (o,) = _evaluate(results, variant="rope", reference="learned", expect="equivalent", margin=0.05).outcomes
    assert o.row["n_pairs"] == 5
    assert o.text == "inconclusive (reference at ceiling on all 5 seeds)"


def test_the_scale_caveat_of_an_unfinished_grid_says_how_far_it_got(mini, tmp_path):
    """While 13 of the grid's 24 runs are in the store, the scale caveat says so beside the
    profile's 8 seeds (it said '8 seeds' beside an evidence line of n = 5 seeds); a finished grid
    says '8 seeds'."""
    results = tmp_path / "results"
    write_runs(results, mini, "cpu", lambda v, s: 1.0 if v == "learned" or (v == "rope" and s < 5) else None)
    res = _evaluate(results, variant="rope", reference="learned", expect="equivalent", margin=0.05)
    assert res.outcomes[0].row["n_pairs"] == 5
    assert res.scale[0].endswith("; 8 seeds planned, 13 of 24 runs so far"), res.scale
    page = markdown_page([res], results)
    assert "8 seeds planned, 13 of 24 runs so far), not necessarily at the published scale" in page
    full = tmp_path / "full"
    write_runs(full, mini, "cpu", _value)
    assert _evaluate(full, variant="rope", reference="learned", expect="better").scale[0].endswith("; 8 seeds")


def test_an_evidence_line_of_one_pair_says_why_it_has_no_interval(mini, tmp_path):
    """With one pair there is no spread to test: the line gives `–` and why, never `nan`
    (arora2023-mqar's 16-pair half printed `95% CI [+nan, +nan]` with one seed run)."""
    from harness.report.controls import evidence_line

    results = tmp_path / "results"
    write_runs(results, mini, "cpu", lambda v, s: {"learned": 0.6, "rope": 0.5}.get(v) if s == 0 else None)
    (o,) = _evaluate(results, variant="rope", reference="learned", expect="worse").outcomes
    line = evidence_line(o)
    assert "95% CI – (one pair: no spread to test)" in line, line
    assert "nan" not in line.lower() and "n = 1 seed →" in line, line


@pytest.mark.parametrize("used", [True, False])
def test_a_report_without_claims_names_the_reproductions_its_runs_serve(mini, tmp_path, monkeypatch, used):
    """ln_grad_init tests no claim: its Claims section held only a caveat about 'these verdicts'.
    It now says it tests none, names the reproduction its runs are the evidence of, and calls its
    numbers results."""
    from harness.cli.report import report as write_report
    from harness.experiment.selection import select

    entries = [_entry()] if used else [_entry(ablation="other")]
    monkeypatch.setattr(reg, "load_registry", lambda: tuple(reg.parse(entries)))
    results = tmp_path / "results"
    write_runs(results, mini, "cpu", _value)
    sel = select(ablation_mod.load("mini"), "cpu", check_data=False)
    md = write_report(sel.ablation.source, sel.profile, results, tmp_path / "out").read_text()
    claims = md.split("## Claims")[1].split("\n## ")[0]
    assert "This ablation tests no claim of `harness/experiment/claims.yaml`" in claims
    assert ("its runs are the evidence of `x2020` on [the reproductions page](reproductions.md)" in claims) == used
    assert "Scale caveat: these results hold at the scale run here" in claims and "these verdicts" not in claims


def test_an_unfinished_grid_counts_the_reference_seeds_not_run_as_not_run(mini, tmp_path):
    """learned, the reference, reached copy's target on seeds 0-3 and has no run of seeds 5-7 yet:
    the note said "it reached the task's target on 4 of 8 seeds", as if 8 had run and 4 missed."""
    import json
    import shutil

    decl = yaml.safe_load(mini.read_text())
    decl["tasks"]["copy"]["target"] = {"metric": "acc", "min": 0.9}
    mini.write_text(yaml.safe_dump(decl, sort_keys=False))
    results = tmp_path / "results"
    write_runs(results, mini, "cpu", _value, extra=lambda v, s: {"target_reached": float(v != "learned" or s < 4)})
    for record in results.glob("*/cpu/*/record.json"):
        rec = json.loads(record.read_text())
        if rec["variant_label"] == "learned" and rec["seed"] >= 5:
            shutil.rmtree(record.parent)
    res = _evaluate(results, variant="rope", reference="learned", expect="better", reference_min=0.99)
    (o,) = res.outcomes
    assert o.note.endswith("; it reached the task's target on 4 of the 5 seeds run (8 planned)"), o.note
    plain = _evaluate(results, variant="rope", reference="learned", expect="better").outcomes[0]
    assert plain.text == "inconclusive (baseline not learned 4/8, 3 not run)"
