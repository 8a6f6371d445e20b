"""The report's Tuning section over a fake store (nothing trains): the claims' verdicts on the
untuned and on the tuned runs side by side, the index's "changes with tuning" mark, and ``ablate
report --from`` giving the same section from the data file and the studies kept beside it, with
neither the store nor the Optuna storage there."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import optuna
import pytest

from harness.experiment import ablation as ablation_mod
from harness.experiment import claims as claims_mod
from harness.report.tuning import ClaimChange
from harness.store import archive
from harness.tune.storage import default_storage
from harness.tune.studies import study_name
from helpers.cli import assert_refused, invoke, untimed
from helpers.data_files import repack
from helpers.fake_store import write_decl, write_runs
from helpers.mini_claims import MINI_CLAIMS

pytestmark = pytest.mark.usefixtures("cli_isolated")

CLAIMS = MINI_CLAIMS
LR = {"train.lr": 0.005}
NO_EFFECT = "no effect of that size (every comparison that decided lies inside ±0.05)"
STUDIES = "restored/mini.cpu.tuning.json"  # the studies' summary in a data file


def _untuned(variant: str, seed: int) -> float:
    """learned 0.3 below the baseline on every seed; rope 0.2 above it."""
    return 0.5 + 0.01 * seed + {"sinusoidal": 0.0, "learned": -0.3, "rope": 0.2}[variant]


def _tuned(variant: str, seed: int) -> float:
    """Tuned, learned catches up (within 0.002 of the baseline on every seed); rope stays 0.2 above."""
    wobble = 0.002 if seed % 2 else -0.001
    return 0.5 + 0.01 * seed + {"sinusoidal": 0.0, "learned": wobble, "rope": 0.2}[variant]


def _studies(results: Path) -> None:
    """A study per variant of mini / cpu, three complete trials each (acc@x2 is maximised)."""
    dist = optuna.distributions.FloatDistribution(3e-4, 1e-2, log=True)
    for variant in ("sinusoidal", "learned", "rope"):
        study = optuna.create_study(
            study_name=study_name("mini", "cpu", "copy", variant),
            storage=default_storage(results),
            direction="maximize",
        )
        for i, lr in enumerate((3e-3, 5e-3, 8e-3)):
            trial = optuna.trial.create_trial(
                params={"train.lr": lr}, distributions={"train.lr": dist}, value=0.4 + 0.1 * i
            )
            study.add_trial(trial)


@pytest.fixture
def tuned_store(tmp_path, monkeypatch) -> Path:
    """mini (registered) with 7 untuned and 7 tuned seeds of its cpu profile and its studies;
    ``other`` (registered) with untuned runs only."""
    folder = tmp_path / "ablations"
    mini = write_decl(folder, claims=tuple(CLAIMS), cpu={"seeds": list(range(7))})
    other = write_decl(folder, name="other", claims=("mini-learned-worse",), cpu={"seeds": list(range(7))})
    monkeypatch.setattr(ablation_mod, "ABLATIONS_DIR", folder)
    monkeypatch.setattr(claims_mod, "load_claims", lambda: CLAIMS)
    results = tmp_path / "results"
    write_runs(results, mini, "cpu", _untuned)
    write_runs(results, mini, "cpu", _tuned, tuned=LR)
    write_runs(results, other, "cpu", _untuned)
    _studies(results)
    return results


def _claims_rows(report: str) -> dict[str, list[str]]:
    """The rows of the Tuning section's claims table, by claim id."""
    section = report.split("### Claims: untuned vs tuned")[1].split("\n### ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {r.split("`")[1]: [c.strip() for c in r.strip("|").split("|")][1:] for r in rows}


def test_the_tuning_section_sets_the_claims_verdicts_side_by_side(tuned_store, tmp_path):
    out = tmp_path / "reports"
    made = invoke("report", "mini", "--results-dir", str(tuned_store), "--out", str(out))
    assert made.exit_code == 0, made.output
    report = (out / "mini.md").read_text()
    rows = _claims_rows(report)
    assert rows == {
        "mini-learned-worse": [
            "supported",
            NO_EFFECT,
            "**yes**",
        ],
        "mini-rope-better": ["supported", "supported", "no"],
    }
    # the untuned column is the report's own Claims section; the tuned one what a report of the
    # same values as untuned runs says (the same rules, another path through the code)
    assert {k: v[0] for k, v in rows.items()} == dict(re.findall(r"^### `([\w-]+)`: (.+)$", report, re.M))
    plain = tmp_path / "plain"
    write_runs(plain, ablation_mod.ABLATIONS_DIR / "mini.yaml", "cpu", _tuned)
    assert invoke("report", "mini", "--results-dir", str(plain), "--out", str(tmp_path / "p")).exit_code == 0
    alone = (tmp_path / "p" / "mini.md").read_text()
    assert {k: v[1] for k, v in rows.items()} == dict(re.findall(r"^### `([\w-]+)`: (.+)$", alone, re.M))
    assert "## Tuning" not in alone  # no study, no tuned run: no section
    assert "| copy | learned | 3 | 0 | 0 (0) | `acc@x2` = 0.6 | `train.lr` 0.008 | `train.lr` 1.00 |" in report


def test_a_change_is_one_of_kind_not_of_the_numbers_in_brackets():
    needs = ClaimChange(
        "c", "underpowered at this scale (needs 9 seeds)", "underpowered at this scale (needs 12 seeds)"
    )
    assert not needs.changed
    assert ClaimChange("c", "supported", "partly supported").changed
    assert ClaimChange("c", "supported", "inconclusive").changed


def test_the_index_marks_a_claim_whose_verdict_changes_with_tuning(tuned_store, tmp_path):
    out = tmp_path / "reports"
    assert invoke("report", "--all", "--results-dir", str(tuned_store), "--out", str(out)).exit_code == 0
    index = (out / "README.md").read_text()
    mini = next(line for line in index.splitlines() if line.startswith("| [mini]"))
    assert (
        "`mini-learned-worse`: supported; tuned: no effect of that size (every comparison that decided lies "
        "inside ±0.05) (**changes with tuning**)<br>"
        "`mini-rope-better`: supported; tuned: supported |"
    ) in mini
    other = next(line for line in index.splitlines() if line.startswith("| [other]"))
    assert "| `mini-learned-worse`: supported |" in other and "tuned" not in other  # no tuned runs
    assert "**changes with tuning** marks a verdict of another kind than the untuned one" in index
    # the index says what the report's Tuning section says
    rows = _claims_rows((out / "mini.md").read_text())
    assert rows["mini-learned-worse"][:2] == ["supported", NO_EFFECT]


def test_report_from_its_data_file_gives_the_same_tuning_section(tuned_store, tmp_path):
    first = tmp_path / "reports"
    assert invoke("report", "mini", "--results-dir", str(tuned_store), "--out", str(first)).exit_code == 0
    original = (first / "mini.md").read_text()
    assert "## Tuning" in original and "### Claims: untuned vs tuned" in original
    data = first / "data" / "mini.tar.gz"
    held = archive.read(data, "data")
    assert STUDIES in held.members
    assert sum(r.profile == "cpu+tuned" for r in held.records.values()) == 3 * 7  # 21 tuned runs
    from_store = invoke("compare", "mini", "--tuned", "--results-dir", str(tuned_store))
    # neither the store nor the storage is there any more: everything comes from the file
    shutil.move(tuned_store, tmp_path / "gone")
    second = tmp_path / "again"
    made = invoke("report", "mini", "--from", str(data), "--out", str(second))
    assert made.exit_code == 0, made.output
    assert untimed((second / "mini.md").read_text()) == untimed(original)
    figures = re.findall(r"\]\((figures/mini\.cpu-tune-[^)]+\.png)\)", original)
    assert len(figures) == 6  # history and importance per study, copied, not drawn again
    for fig in figures:
        assert (second / fig).read_bytes() == (first / fig).read_bytes()
    assert not (second / "data").exists()
    from_file = invoke("compare", "mini", "--tuned", "--from", str(data))
    assert from_file.exit_code == from_store.exit_code == 0 and from_file.stdout == from_store.stdout
    # in place (the figures already there), and with a figure lost: the same text, and a warning
    assert invoke("report", "mini", "--from", str(data), "--out", str(first)).exit_code == 0
    assert untimed((first / "mini.md").read_text()) == untimed(original)
    (first / figures[0]).unlink()
    third = tmp_path / "third"
    made = invoke("report", "mini", "--from", str(data), "--out", str(third))
    assert made.exit_code == 0 and "not found; the Tuning section links it all the same" in made.output
    assert untimed((third / "mini.md").read_text()) == untimed(original)


def test_a_store_restored_from_the_data_file_gives_the_same_tuning_section(tuned_store, tmp_path):
    """``ablate restore`` on a clone: no store, no Optuna storage. The report (and ``report --all``)
    made from the restored store has the Tuning section of the committed one, its studies' summary
    and figures restored beside the runs; the index marks the same change with tuning."""
    first = tmp_path / "reports"
    assert invoke("report", "--all", "--results-dir", str(tuned_store), "--out", str(first)).exit_code == 0
    original, index = (first / "mini.md").read_text(), (first / "README.md").read_text()
    assert "## Tuning" in original and "**changes with tuning**" in index
    shutil.move(tuned_store, tmp_path / "gone")
    store = tmp_path / "restored"
    done = invoke(
        "restore",
        str(first / "data" / "mini.tar.gz"),
        str(first / "data" / "other.tar.gz"),
        "--results-dir",
        str(store),
    )
    assert done.exit_code == 0, done.output
    assert (
        "42 runs written, 21 of them tuned runs" in done.stdout and "the summary of its Optuna studies" in done.stdout
    )
    second = tmp_path / "again"
    assert invoke("report", "--all", "--results-dir", str(store), "--out", str(second)).exit_code == 0

    def same(text: str, results: Path) -> str:
        return untimed(text).replace(f" --results-dir {results}", "").replace(f"`{results}`", "`STORE`")

    assert same((second / "mini.md").read_text(), store) == same(original, tuned_store)
    assert same((second / "README.md").read_text(), store) == same(index, tuned_store)
    for fig in re.findall(r"\]\((figures/mini\.cpu-tune-[^)]+\.png)\)", original):
        assert (second / fig).read_bytes() == (first / fig).read_bytes()
    again, before = (archive.read(f / "data" / "mini.tar.gz", "data").members for f in (second, first))
    assert again[STUDIES] == before[STUDIES]


@pytest.mark.parametrize(
    "change,words",
    [
        (lambda text: text[:40], ["studies' summary", "unreadable", "regenerate"]),
        (
            lambda text: text.replace('"profile": "cpu"', '"profile": "pilot"'),
            ["studies' summary", "is of mini / pilot, not of mini / cpu"],
        ),
        (
            lambda text: text.replace('"complete": 3', '"complete": "three"', 1),
            ["studies' summary", "unreadable", "complete: Input should be a valid integer"],
        ),
        # a figure's path is copied by --from and restore: one that leaves figures/ wrote files anywhere
        (lambda text: text.replace('"path": "figures/', '"path": "../', 1), ["studies' summary", "unreadable"]),
        (  # a study of a task the ablation lacks: the section's lookup of its metric raised KeyError
            lambda text: text.replace('"task": "copy"', '"task": "nope"', 1),
            ["study 'mini/cpu/copy/", "is of task 'nope'", "which the ablation does not have"],
        ),
    ],
)
def test_a_damaged_studies_file_is_refused(tuned_store, tmp_path, change, words):
    out = tmp_path / "reports"
    assert invoke("report", "mini", "--results-dir", str(tuned_store), "--out", str(out)).exit_code == 0
    damaged = repack(
        out / "data" / "mini.tar.gz",
        tmp_path / "damaged.tar.gz",
        lambda m: m.update({STUDIES: change(m[STUDIES].decode()).encode()}),
    )
    assert_refused(invoke("report", "mini", "--from", str(damaged), "--out", str(tmp_path / "n")), *words)
    assert not (tmp_path / "n").exists()


def test_compare_from_a_data_file_without_tuned_runs_refuses_tuned(tmp_path, monkeypatch):
    folder = tmp_path / "ablations"
    mini = write_decl(folder, cpu={"seeds": list(range(3))})
    results = tmp_path / "results"
    write_runs(results, mini, "cpu", _untuned)
    write_runs(results, mini, "cpu", _tuned, tuned=LR)  # tuned runs, but no study: no Tuning section
    out = tmp_path / "reports"
    assert invoke("report", str(mini), "--results-dir", str(results), "--out", str(out)).exit_code == 0
    assert "## Tuning" not in (out / "mini.md").read_text()
    assert STUDIES not in archive.read(out / "data" / "mini.tar.gz", "data").members
    refused = invoke("compare", str(mini), "--tuned", "--from", str(out / "data" / "mini.tar.gz"))
    assert_refused(refused, "holds no tuned runs", "drop --tuned")


def test_the_reproduce_block_asks_for_the_trials_tune_counts():
    """`--trials` counts complete, pruned and failed trials; diverged ones are among the failed, so
    a study of 5 complete, 2 pruned and 3 failed (2 of them diverged) took 10 trials, not 12."""
    from types import SimpleNamespace

    from harness.report.markdown import _commands
    from harness.report.tuning import StudySummary, TuningData, TuningInputs

    study = StudySummary(task="copy", variant="rope", name="s", complete=5, pruned=2, failed=3, diverged=2)
    other = StudySummary(task="copy", variant="alibi", name="t", complete=4, pruned=1)
    assert study.finished == 10
    data = TuningData(ablation="mini", profile="confirm", storage="sqlite:///x", studies=[study, other])
    abl = SimpleNamespace(name="mini", default_profile="cpu")
    lines = _commands(abl, "confirm", [], TuningInputs(data, None))
    assert lines == [
        "pip install -e .",
        "ablate run mini --profile confirm",
        "ablate tune mini --profile confirm --trials 10",
        "ablate run mini --profile confirm --tuned",
        "ablate report mini --profile confirm",
    ]
    assert _commands(abl, "confirm", [], TuningInputs(None, None))[1:] == [
        "ablate run mini --profile confirm",
        "ablate report mini --profile confirm",
    ]


def test_a_store_of_tuned_runs_only_says_what_it_holds(tmp_path, monkeypatch):
    """`ablate tune` and `run --tuned` without the untuned grid: the header read `from 0 runs`, the
    scale caveat `(; 7 seeds ...)`, and the claims table an untuned `inconclusive` that 'changed'
    with tuning. The header now counts the tuned runs, the untuned column reads `no runs`."""
    folder = tmp_path / "ablations"
    mini = write_decl(folder, claims=tuple(CLAIMS), cpu={"seeds": list(range(7))})
    monkeypatch.setattr(ablation_mod, "ABLATIONS_DIR", folder)
    monkeypatch.setattr(claims_mod, "load_claims", lambda: CLAIMS)
    results = tmp_path / "results"
    write_runs(results, mini, "cpu", _tuned, tuned=LR)
    _studies(results)
    made = invoke("report", "mini", "--results-dir", str(results), "--out", str(tmp_path / "reports"))
    assert made.exit_code == 0, made.output
    report = (tmp_path / "reports" / "mini.md").read_text()
    assert f"from 0 runs and 21 tuned runs (`cpu+tuned`) in `{results}`" in report
    assert "Scale caveat: these verdicts hold at the scale run here (7 seeds planned, 0 of 21 runs so far)" in report
    assert _claims_rows(report) == {
        "mini-learned-worse": [
            "no runs",
            NO_EFFECT,
            "no",
        ],
        "mini-rope-better": ["no runs", "supported", "no"],
    }
