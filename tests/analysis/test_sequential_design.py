"""A design is declared before its data: each run's record holds its profile's design fingerprint, and a
report of runs made under another design (seeds, primary metric, sesoi or sequential block changed since)
says so; ``ablate status`` too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.experiment import design
from harness.experiment.ablation import load
from helpers.cli import invoke
from helpers.fake_store import write_decl, write_runs

PROFILES = {"cpu": {"seeds": list(range(12)), "sequential": {"looks": [8, 12], "spending": "obrien_fleming"}}}
WARNING = "**Warning: the design of profile 'cpu'"


def _report(decl: Path, results: Path, out: Path) -> str:
    made = invoke("report", str(decl), "--results-dir", str(results), "--out", str(out), "--wandb", "off")
    assert made.exit_code == 0, made.output
    return next(out.glob("*.md")).read_text()


@pytest.fixture
def store(tmp_path) -> tuple[Path, Path]:
    decl = write_decl(tmp_path / "decl", **PROFILES)
    results = tmp_path / "results"
    write_runs(results, decl, "cpu", lambda v, s: 0.5 + 0.01 * s + (0.02 if v == "rope" else 0.0))
    return decl, results


def test_every_record_holds_its_profiles_design(store):
    decl, results = store
    held = {json.loads(p.read_text()).get("design") for p in results.rglob("record.json")}
    assert held == {design.fingerprint(load(str(decl)), "cpu")}


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["tasks"]["copy"]["primary"].update(sesoi=0.1),
        lambda d: d["tasks"]["copy"]["primary"].update(metric="acc@x1"),
        lambda d: d["profiles"]["cpu"]["sequential"].update(spending="pocock"),
        lambda d: d["profiles"]["cpu"].update(seeds=list(range(16))),
    ],
)
def test_a_design_changed_after_its_runs_is_reported(store, tmp_path, change):
    decl, results = store
    before = _report(decl, results, tmp_path / "before")
    assert WARNING not in before and "fingerprint" not in before
    spec = yaml.safe_load(decl.read_text())
    change(spec)
    decl.write_text(yaml.safe_dump(spec, sort_keys=False))
    after = _report(decl, results, tmp_path / "after")
    warning = next(line for line in after.splitlines() if "changed after" in line)
    assert (
        warning.startswith("**Warning: the design of profile 'cpu'") and "do not hold the stated error rate" in warning
    )
    status = invoke("status", str(decl), "--results-dir", str(results))
    assert "changed after 36 of its 36 runs" in " ".join(status.output.split())


def test_runs_from_before_fingerprints_are_named_as_such(store, tmp_path):
    decl, results = store
    paths = sorted(results.rglob("record.json"))
    for path in paths[: len(paths) // 2]:  # half of them older than fingerprints, beside the others
        rec = json.loads(path.read_text())
        rec.pop("design")
        path.write_text(json.dumps(rec))
    text = _report(decl, results, tmp_path / "old")
    assert f"{len(paths) // 2} of the {len(paths)} runs of profile 'cpu' were made before records held" in text
    for path in paths[len(paths) // 2 :]:  # all of them: a store older than fingerprints reads as before
        rec = json.loads(path.read_text())
        rec.pop("design")
        path.write_text(json.dumps(rec))
    assert "fingerprint" not in _report(decl, results, tmp_path / "older")


def test_tuned_comparisons_of_a_sequential_profile_are_decided_with_every_seed_in(tmp_path):
    """A tuned grid runs every seed, no looks: its comparisons are a fixed design's, never "open"."""
    from harness.analysis import verdicts as vd
    from harness.analysis.comparisons import analyse
    from harness.experiment.selection import select
    from harness.tuned import tuned_profile

    decl = write_decl(tmp_path / "decl", **PROFILES)
    results = tmp_path / "results"
    write_runs(
        results,
        decl,
        "cpu",
        lambda v, s: 0.5 + 0.01 * s + (0.3 if v == "rope" else 0.0) + 0.001 * (s % 3),
        tuned={"train.lr": 0.001},
    )
    result = analyse(select(load(str(decl)), "cpu", check_data=False), results, store_profile=tuned_profile("cpu"))
    verdicts = [v for t in result.tables if t.family.startswith("primary") for v in t.frame["verdict"].iloc[1:]]
    assert verdicts and result.sequential.fixed and result.sequential.reached == 1  # one look at every seed
    assert not any("open" in str(v) for v in verdicts)
    assert vd.BETTER in verdicts  # rope: +0.3 on every seed


def test_the_next_look_runs_the_exploratory_variants_too(tmp_path):
    """An exploratory variant is outside the family but in the grid (a claim may compare against it): each look
    runs its seeds with the open comparisons' arms, so its runs are there when the report reads them."""
    from harness.analysis import looks
    from harness.experiment.selection import select

    profiles = {"cpu": {**PROFILES["cpu"], "exploratory_variants": ["rope"]}}
    sel = select(load(str(write_decl(tmp_path / "decl", **profiles))), "cpu", check_data=False)
    st = looks.state(sel, [])
    runs = {(s.variant_label, s.seed) for s in looks.next_specs(sel, st)}
    assert runs == {(v, seed) for v in ("sinusoidal", "learned", "rope") for seed in range(8)}


def test_status_counts_the_runs_a_decided_design_will_not_make_as_not_needed(tmp_path):
    """Both comparisons decided at look 1 (8 of 12 seeds): the other 4 seeds of each arm are not pending."""
    decl = write_decl(tmp_path / "decl", **PROFILES)
    results = tmp_path / "results"
    write_runs(results, decl, "cpu", lambda v, s: None if s >= 8 else 0.5 + 0.001 * (s % 3) + (v != "sinusoidal") * 0.3)
    out = invoke("status", str(decl), "--results-dir", str(results))
    assert out.exit_code == 0, out.output
    assert "not needed" in out.output and "finished" in out.output
    rows = [line for line in out.output.splitlines() if line.startswith("│ copy")]
    cells = [[c.strip() for c in row.split("│") if c.strip()] for row in rows]
    assert len(cells) == 3 and all(c[-1] == "4" and c[-2] == "0" for c in cells), out.output
