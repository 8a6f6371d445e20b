"""Controls before verdicts: a claim's verdict that rules (supported, contradicted, ...) is withheld
while a control that guards it has not passed at this scale: a published result (an entry of
reproductions.yaml listing it under ``guards``) or a known bug (an ablation whose ``control:`` lists
it). The report says what the tests alone gave; the report, the index and the report regenerated
from its data file say the same."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from harness.analysis import claim_verdicts as cv
from harness.analysis import controls as controls_mod
from harness.analysis.claims import ControlOutcome, ControlResult, claim_verdict
from harness.analysis.comparisons import analyse
from harness.errors import AblateError
from harness.experiment import ablation as ablation_mod
from harness.experiment import claims as claims_mod
from harness.experiment import claims as registry
from harness.experiment.ablation import load
from harness.experiment.selection import select
from helpers.cli import assert_refused, invoke, untimed
from helpers.fake_store import write_decl, write_runs
from helpers.mini_claims import MINI_CLAIMS

pytestmark = pytest.mark.usefixtures("cli_isolated")

SHIFT = {"sinusoidal": 0.0, "learned": -0.3, "rope": 0.2}


def _value(variant: str, seed: int) -> float:
    return 0.4 + 0.01 * seed + SHIFT[variant] + (0.01 if seed % 2 else 0.0)


def _entry(rid: str, expect: str, guards: list[str]) -> registry.PositiveControl:
    """An entry on mini / cpu: learned against sinusoidal on copy acc@x2 (learned is worse there)."""
    return registry.PositiveControl.model_validate(
        {
            "id": rid,
            "paper": "A paper",
            "source": "Table 1",
            "setting": "big",
            "result": "learned is worse",
            "expected": "learned worse",
            "differences": "small",
            "comparisons": [
                {
                    "ablation": "mini",
                    "profile": "cpu",
                    "task": "copy",
                    "metric": "acc@x2",
                    "variant": "learned",
                    "reference": "sinusoidal",
                    "expect": expect,
                }
            ],
            "guards": guards,
        }
    )


@pytest.fixture
def store(tmp_path, monkeypatch):
    """mini with 8 seeds of cpu runs (learned worse, rope better); a reproduction that passes guards
    mini-rope-better, one that fails guards mini-learned-worse."""
    folder = tmp_path / "ablations"
    mini = write_decl(folder, claims=("mini-learned-worse", "mini-rope-better"), cpu={"seeds": list(range(8))})
    monkeypatch.setattr(ablation_mod, "ABLATIONS_DIR", folder)
    monkeypatch.setattr(claims_mod, "load_claims", lambda: MINI_CLAIMS)
    entries = (
        _entry("fake-pass", "worse", ["mini-rope-better"]),
        _entry("fake-fail", "better", ["mini-learned-worse"]),
    )
    monkeypatch.setattr(registry, "load_registry", lambda: entries)
    results = tmp_path / "results"
    write_runs(results, mini, "cpu", _value)
    return mini, results


def _claims(report: str) -> dict[str, str]:
    return dict(re.findall(r"^### `([\w-]+)`: (.+)$", report, re.M))


def test_a_guard_that_did_not_pass_withholds_a_ruling_and_says_what_the_tests_gave(store):
    mini, results = store
    result = analyse(select(load(str(mini)), "cpu", check_data=False), results)
    claim = MINI_CLAIMS["mini-learned-worse"]
    assert claim_verdict(claim, result)[0] == "supported"
    passed = ControlResult("a", ControlOutcome.PASS)
    assert claim_verdict(claim, result, (passed,))[0] == "supported"
    for outcome in ("fail", "not run", "inconclusive (baseline not learned 2/8)"):
        said, why = ControlOutcome.parse(outcome)
        verdict, lines = claim_verdict(claim, result, (passed, ControlResult("b", said, why=why)))
        assert verdict == f"withheld (positive control b: {outcome})", verdict
        assert cv.claim_kind(verdict) is cv.ClaimKind.WITHHELD
        assert lines[-1].startswith("The tests alone: **supported**.")
        assert ("`ablate reproduce b`" in lines[-1]) == (outcome == "not run"), lines[-1]
    verdict, _ = claim_verdict(
        claim, result, (ControlResult("a", ControlOutcome.FAIL), ControlResult("b", ControlOutcome.NOT_RUN))
    )
    assert verdict == "withheld (positive control a: fail, positive control b: not run)"


def test_a_verdict_that_does_not_rule_is_not_withheld(store, tmp_path):
    mini, results = store
    pilot = write_decl(
        tmp_path / "p", "pilotmini", claims=("mini-learned-worse",), cpu={"seeds": [0, 1, 2], "confirmatory": False}
    )
    write_runs(tmp_path / "pr", pilot, "cpu", _value)
    result = analyse(select(load(str(pilot)), "cpu", check_data=False), tmp_path / "pr")
    verdict, lines = claim_verdict(
        MINI_CLAIMS["mini-learned-worse"], result, (ControlResult("b", ControlOutcome.FAIL),)
    )
    assert cv.claim_kind(verdict) is cv.ClaimKind.PILOT and not lines[-1].startswith("The tests alone")


def test_every_evidence_line_of_a_pilot_reads_pilot(store, tmp_path):
    # one pair: the comparison's verdict is not "pilot" (too few pairs), and its line read
    # **inconclusive** under a claim that reads pilot
    pilot = write_decl(
        tmp_path / "p", "pilotmini", claims=("mini-learned-worse",), cpu={"seeds": [0, 1, 2], "confirmatory": False}
    )
    write_runs(tmp_path / "pr", pilot, "cpu", lambda v, s: None if v == "learned" and s > 0 else _value(v, s))
    result = analyse(select(load(str(pilot)), "cpu", check_data=False), tmp_path / "pr")
    verdict, lines = claim_verdict(MINI_CLAIMS["mini-learned-worse"], result)
    assert cv.claim_kind(verdict) is cv.ClaimKind.PILOT
    evidence = [line for line in lines if "claim expects" in line]
    assert evidence and all(line.endswith("**pilot**") for line in evidence), evidence
    assert any("n = 1 seed" in line for line in evidence), evidence


def test_report_index_and_data_file_withhold_the_same_verdicts(store, tmp_path):
    _, results = store
    out = tmp_path / "reports"
    result = invoke("report", "--all", "--results-dir", str(results), "--out", str(out))
    assert result.exit_code == 0, result.output
    report = (out / "mini.md").read_text()
    claims = _claims(report)
    assert claims == {
        "mini-learned-worse": "withheld (positive control fake-fail: fail)",
        "mini-rope-better": "supported",
    }
    assert "The tests alone: **supported**." in report
    index = (out / "README.md").read_text()
    assert "`mini-learned-worse`: withheld (positive control fake-fail: fail)" in index
    page = (out / "reproductions.md").read_text()
    assert "| `mini-learned-worse` | **fail** |" in page and "| `mini-rope-better` | **pass** |" in page
    sidecar = out / "data" / "mini.guards.json"
    assert sidecar.is_file()
    # the data file regenerates the report without the reproductions' runs (not in the file)
    again = tmp_path / "again"
    result = invoke("report", "mini", "--from", str(out / "data" / "mini.tar.gz"), "--out", str(again))
    assert result.exit_code == 0, result.output
    assert untimed((again / "mini.md").read_text()) == untimed(report)
    # one report from the store evaluates the same guards
    alone = tmp_path / "alone"
    assert invoke("report", "mini", "--results-dir", str(results), "--out", str(alone)).exit_code == 0
    assert _claims((alone / "mini.md").read_text()) == claims


def test_a_guards_file_of_another_report_is_refused(store, tmp_path):
    _, results = store
    out = tmp_path / "reports"
    assert invoke("report", "mini", "--results-dir", str(results), "--out", str(out)).exit_code == 0
    sidecar = out / "data" / "mini.guards.json"
    sidecar.write_text(sidecar.read_text().replace('"profile": "cpu"', '"profile": "gpu"'))
    result = invoke("report", "mini", "--from", str(out / "data" / "mini.tar.gz"), "--out", str(tmp_path / "b"))
    assert result.exit_code == 2 and "its controls' file" in result.output, result.output


def test_a_guards_file_with_an_unknown_outcome_names_the_field(store, tmp_path):
    _, results = store
    out = tmp_path / "reports"
    assert invoke("report", "mini", "--results-dir", str(results), "--out", str(out)).exit_code == 0
    sidecar = out / "data" / "mini.guards.json"
    kept = json.loads(sidecar.read_text())
    claim = sorted(kept["guards"])[0]
    kept["guards"][claim][0]["outcome"] = "maybe (who knows)"
    sidecar.write_text(json.dumps(kept))
    result = invoke("report", "mini", "--from", str(out / "data" / "mini.tar.gz"), "--out", str(tmp_path / "b"))
    assert_refused(result, f"(guards.{claim}.0.outcome: 'maybe' is not a valid ControlOutcome)")


def test_an_entry_guarding_an_unknown_or_repeated_claim_is_refused(monkeypatch):
    monkeypatch.setattr(claims_mod, "load_claims", lambda: MINI_CLAIMS)
    with pytest.raises(AblateError, match=r"guards\.0: 'mini-learned-wors' is not a claim .*mini-learned-worse"):
        controls_mod.check(_entry("x", "worse", ["mini-learned-wors"]))
    with pytest.raises(AblateError, match="appears more than once"):
        controls_mod.check(_entry("x", "worse", ["mini-rope-better", "mini-rope-better"]))


def test_every_registered_guard_names_a_claim_of_claims_yaml():
    for entry in controls_mod.load_checked():
        assert set(entry.guards) <= set(claims_mod.load_claims()), entry.id


def _bug(folder, variant: str, profile: str = "cpu", guards: tuple[str, ...] = ("mini-rope-better",)):
    """A negative control ``bug`` (the mini grid) whose bug is ``variant``, guarding ``guards``."""
    path = write_decl(folder, "bug", cpu={"seeds": list(range(8))}, pilot={"seeds": [0, 1], "confirmatory": False})
    decl = yaml.safe_load(path.read_text())
    decl["control"] = {
        "kind": "negative",
        "variant": variant,
        "expect": "worse",
        "profile": profile,
        "guards": list(guards),
    }
    path.write_text(yaml.safe_dump(decl, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("variant", "drop", "outcome"),
    [
        ("learned", False, "caught"),  # learned is worse: caught, the claim keeps its verdict
        ("rope", False, "not caught"),  # rope is better: the bug was not seen
        ("learned", True, "incomplete (23/24 runs)"),  # caught so far, but the grid has not finished
    ],
)
def test_a_negative_control_not_caught_withholds_the_claims_it_guards(store, tmp_path, variant, drop, outcome):
    _, results = store
    bug = _bug(tmp_path / "ablations", variant)
    write_runs(results, bug, "cpu", _value)
    if drop:
        next(p for p in sorted((results / "bug" / "cpu").iterdir())).joinpath("record.json").unlink()
    out = tmp_path / "reports"
    assert invoke("report", "--all", "--results-dir", str(results), "--out", str(out)).exit_code == 0
    claims = _claims((out / "mini.md").read_text())
    if outcome == "caught":
        assert claims["mini-rope-better"] == "supported"
    else:
        assert claims["mini-rope-better"] == f"withheld (negative control bug: {outcome})", claims
    assert claims["mini-learned-worse"] == "withheld (positive control fake-fail: fail)"  # not guarded by bug


def test_a_negative_control_guarding_an_unknown_claim_or_from_a_pilot_is_refused(store, tmp_path):
    with pytest.raises(AblateError, match=r"control\.guards\.0: 'mini-rope-bettr' is not a claim .*mini-rope-better"):
        load(str(_bug(tmp_path / "a", "learned", guards=("mini-rope-bettr",))))
    with pytest.raises(AblateError, match="control.profile 'pilot' is not a confirmatory profile"):
        load(str(_bug(tmp_path / "b", "learned", profile="pilot")))


def test_a_positive_control_passes_only_on_its_finished_grid(store, tmp_path):
    mini, results = store
    next(p for p in sorted((results / "mini" / "cpu").iterdir())).joinpath("record.json").unlink()
    out = tmp_path / "reports"
    assert invoke("report", "--all", "--results-dir", str(results), "--out", str(out)).exit_code == 0
    claims = _claims((out / "mini.md").read_text())
    # the fixed design's one look waits for the missing run too: no ruling to withhold yet
    assert claims["mini-rope-better"] == "inconclusive", claims
    page = (out / "reproductions.md").read_text()
    assert "| **incomplete (23/24 runs)** |" in page and "**pass** |" not in page.split("## ")[0]
    assert "Not decided until its grids finish (1 run missing)" in page
    assert "incomplete (k/n runs): its grids have not all finished" in page  # the word is defined


def test_a_control_may_not_guard_its_own_claim_and_names_the_confirmatory_profiles(store, tmp_path):
    with pytest.raises(AblateError, match="'mini-rope-better' is a claim of this ablation"):
        path = _bug(tmp_path / "a", "learned")
        decl = yaml.safe_load(path.read_text())
        decl["claims"] = ["mini-rope-better"]
        path.write_text(yaml.safe_dump(decl, sort_keys=False))
        load(str(path))
    with pytest.raises(AblateError, match=r"'pilot' is not a confirmatory profile .*confirmatory profiles: \['cpu'\]"):
        load(str(_bug(tmp_path / "b", "learned", profile="pilot")))


def test_a_data_file_without_its_controls_file_withholds_every_guarded_verdict(store, tmp_path):
    _, results = store
    out = tmp_path / "reports"
    assert invoke("report", "mini", "--results-dir", str(results), "--out", str(out)).exit_code == 0
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "mini.tar.gz").write_bytes((out / "data" / "mini.tar.gz").read_bytes())  # copied without mini.guards.json
    result = invoke("report", "mini", "--from", str(lone / "mini.tar.gz"), "--out", str(tmp_path / "b"))
    assert result.exit_code == 0, result.output
    claims = _claims((tmp_path / "b" / "mini.md").read_text())
    unknown = "unknown: no controls' file beside the data file"
    assert claims == {
        "mini-learned-worse": f"withheld (positive control fake-fail: {unknown})",
        "mini-rope-better": f"withheld (positive control fake-pass: {unknown})",
    }


def test_an_out_folder_the_system_will_not_create_is_one_line(store, tmp_path):
    _, results = store
    result = invoke("report", "mini", "--results-dir", str(results), "--out", "/proc/ablate-reports")
    assert result.exit_code == 2 and "cannot write the report under --out /proc/ablate-reports" in result.output, (
        result.output
    )
