"""``ablate report --all``: a report per profile with runs, and an index whose verdicts are the
reports' own, over a small fake store of registered ablations."""

from __future__ import annotations

import json
import re
import shutil

import pytest
import yaml

from harness.analysis import comparisons
from harness.experiment import ablation as ablation_mod
from harness.experiment import claims as claims_mod
from harness.report import index as index_mod
from helpers.cli import assert_nothing_written, assert_refused, invoke
from helpers.fake_store import write_decl, write_runs
from helpers.mini_claims import MINI_CLAIMS

pytestmark = pytest.mark.usefixtures("cli_isolated")

CLAIMS = MINI_CLAIMS
SHIFT = {"sinusoidal": 0.0, "learned": -0.3, "rope": 0.0}


def _value(variant: str, seed: int) -> float:
    return 0.5 + 0.01 * seed + SHIFT[variant] + (0.01 if variant == "rope" and seed % 2 else 0.0)


@pytest.fixture
def registered(tmp_path, monkeypatch):
    """Two registered ablations (mini with runs in pilot and cpu, none in gpu; other without any
    run) and the claims mini tests."""
    folder = tmp_path / "ablations"
    mini = write_decl(
        folder,
        claims=("mini-learned-worse", "mini-rope-better"),
        pilot={"seeds": [0, 1, 2], "confirmatory": False},
        cpu={"seeds": list(range(7))},
        gpu={"seeds": list(range(10))},
    )
    write_decl(folder, name="other")
    monkeypatch.setattr(ablation_mod, "ABLATIONS_DIR", folder)
    monkeypatch.setattr(claims_mod, "load_claims", lambda: CLAIMS)
    results = tmp_path / "results"
    write_runs(results, mini, "cpu", _value, finished_at="2025-01-01T00:00:00+00:00", wall=lambda v, s: 120.0)
    write_runs(results, mini, "pilot", _value, finished_at="2025-02-01T00:00:00+00:00")  # newer, but a pilot
    return results


def _row(index: str, name: str) -> list[str]:
    line = next(x for x in index.splitlines() if x.startswith(f"| [{name}]") or x.startswith(f"| {name} "))
    return [c.strip() for c in line.strip("|").split(" | ")]


def test_report_all_writes_each_profile_with_runs_and_an_index(registered, tmp_path):
    out = tmp_path / "reports"
    result = invoke("report", "--all", "--results-dir", str(registered), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.glob("*.md")) == [
        "README.md",
        "mini.md",
        "mini.pilot.md",  # no gpu, no other
        "reproductions.md",
    ]  # the positive controls, always
    index = (out / "README.md").read_text()
    name, question, profiles, latest, claims, control, seeds, minutes = _row(index, "mini")
    assert minutes == "42"  # 21 cpu runs of 2 minutes, 9 pilot runs of 1 s
    # supported and no effect of that size: both rule on their claim
    assert "`mini-rope-better`: no effect of that size" in claims
    assert (
        "Compute: 42 run-minutes (the wall time of every reported run, summed); 2 of 2 claims ruled on in the reports "
        "that test them" in index
    )
    assert ": 21 run-minutes per claim ruled on." in index
    assert name == "[mini](mini.md)" and question == "Do learned positions fall behind at 2L?"
    assert profiles == "[pilot](mini.pilot.md), [cpu](mini.md)"
    # 7 seeds: the fewest at which the exact sign-flip test a verdict needs can reject in a family of 2
    assert latest == "cpu" and seeds == "7/7"  # confirmatory wins over the newer pilot
    report = (out / "mini.md").read_text()
    in_report = dict(re.findall(r"^### `([\w-]+)`: (.+)$", report, re.M))
    in_index = dict(re.findall(r"`([\w-]+)`: ([^<]+?)(?:<br>|$)", claims))
    assert in_index == in_report and set(in_index) == set(CLAIMS)
    assert in_index["mini-learned-worse"] == "supported"
    other = _row(index, "other")
    assert other[2] == "no runs" and other[3] == "–" and other[6] == "–" == other[7]
    assert control == "–" == other[5]  # neither is declared a negative control


def test_a_seed_counts_once_all_its_runs_finished(registered, tmp_path):
    # a seed with one run missing was counted as done: 7/7 beside an unfinished grid; a diverged run counts
    store = tmp_path / "partial"
    shutil.copytree(registered, store)
    folders = sorted(f for f in (store / "mini" / "cpu").iterdir() if (f / "record.json").is_file())
    shutil.rmtree(folders[0])
    rec = json.loads((folders[1] / "record.json").read_text())  # a diverged run is a result, in the store
    rec.update(status="diverged", reason="loss is nan at step 7", metrics={})
    (folders[1] / "record.json").write_text(json.dumps(rec))
    out = tmp_path / "reports"
    assert invoke("report", "--all", "--results-dir", str(store), "--out", str(out)).exit_code == 0
    seeds = _row((out / "README.md").read_text(), "mini")[6]
    planned = len(folders)
    assert seeds == f"6/7 ({planned - 1}/{planned} runs)", seeds


def test_report_all_analyses_each_profile_once(registered, tmp_path, monkeypatch):
    """The index's verdicts come from the analysis the profile's report made, not a second read."""
    calls: list[tuple[str, str]] = []
    real = comparisons.analyse

    def counted(sel, *args, **kwargs):
        calls.append((sel.name, sel.profile))
        return real(sel, *args, **kwargs)

    monkeypatch.setattr(comparisons, "analyse", counted)
    out = tmp_path / "reports"
    assert invoke("report", "--all", "--results-dir", str(registered), "--out", str(out)).exit_code == 0
    assert sorted(calls) == [("mini", "cpu"), ("mini", "pilot")]


def test_the_index_follows_the_store(registered, tmp_path):
    out = tmp_path / "reports"
    assert invoke("report", "--all", "--results-dir", str(registered), "--out", str(out)).exit_code == 0
    for folder in (registered / "mini" / "cpu").iterdir():  # only the pilot is left
        for f in folder.iterdir():
            f.unlink()
        folder.rmdir()
    assert invoke("report", "--all", "--results-dir", str(registered), "--out", str(out)).exit_code == 0
    name, _, profiles, latest, claims, _, seeds, _ = _row((out / "README.md").read_text(), "mini")
    assert (name, latest, seeds) == ("[mini](mini.pilot.md)", "pilot", "3/3")
    # the cpu report written before its runs were removed stays linked, marked as not regenerated
    assert profiles == (
        "[pilot](mini.pilot.md); [cpu](mini.md): an earlier report whose runs are not in this store (not regenerated)"
    )
    assert "pilot (no verdict from a non-confirmatory profile)" in claims


@pytest.mark.parametrize(
    "args, words",
    [
        (["pe_extrapolation", "--all"], ["--all reports every registered ablation; drop 'pe_extrapolation'"]),
        (["--all", "--profile", "cpu"], ["--all reports every profile with runs; drop --profile"]),
        ([], ["name the ablation to report", "or pass --all"]),
    ],
)
def test_report_refuses_name_and_all_together_or_neither(tmp_path, args, words):
    assert_refused(invoke("report", *args, "--results-dir", str(tmp_path / "results")), *words)
    assert_nothing_written(tmp_path / "results")


@pytest.mark.parametrize("which", [["--all"], ["mini"]])
@pytest.mark.parametrize(
    "bad, words",
    [
        (["--out", "{file}/reports"], ["cannot create --out", "is a file, not a folder"]),
        (["--storage", "nonsense"], ["nonsense is not a database URL"]),
        (["--storage", "sqlite:x"], ["sqlite:x is not a database URL"]),
        (["--storage", ""], ["--storage is empty"]),
    ],
)
def test_report_refuses_an_out_it_cannot_create_or_a_bad_storage_before_writing(
    registered, tmp_path, which, bad, words
):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    before = sorted(p for p in registered.rglob("*"))
    args = [a.format(file=blocker) for a in bad]
    wandb = [] if which == ["--all"] else ["--wandb", "off"]  # --all writes no summary runs (and refuses --wandb)
    assert_refused(invoke("report", *which, "--results-dir", str(registered), *wandb, *args), *words)
    assert blocker.read_text() == "not a folder"
    assert not (tmp_path / "cwd" / "reports").exists() and sorted(p for p in registered.rglob("*")) == before


def test_report_all_refuses_an_explicit_wandb_mode(tmp_path):
    assert_refused(
        invoke("report", "--all", "--wandb", "offline", "--results-dir", str(tmp_path / "results")),
        "--all writes no W&B summary runs",
    )
    assert_nothing_written(tmp_path / "results")


def test_report_all_takes_wandb_off(registered, tmp_path):
    """``--wandb off`` asks for what --all does (no summary runs): not refused."""
    out = tmp_path / "reports"
    result = invoke("report", "--all", "--wandb", "off", "--results-dir", str(registered), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert (out / "README.md").is_file() and not list(registered.rglob(".wandb-summary"))


def test_report_all_refuses_a_store_without_runs(tmp_path):
    results = tmp_path / "results"
    assert_refused(
        invoke("report", "--all", "--results-dir", str(results)),
        "no runs of any registered ablation in",
        f"run `ablate run NAME --results-dir {results}` first",
    )
    results.mkdir()
    assert_refused(invoke("report", "--all", "--results-dir", str(results)), "no runs of any registered ablation")
    assert list(results.iterdir()) == [] and list(tmp_path.joinpath("cwd").iterdir()) == []


def test_report_all_without_a_store_names_restore_where_reports_have_data_files(tmp_path):
    """A clone of the repository: no store, but the committed reports' data files. The refusal
    names the command that rebuilds the store from them, as it can be pasted."""
    out = tmp_path / "reports"
    (out / "data").mkdir(parents=True)
    (out / "data" / "tiny.tar.gz").write_bytes(b"")
    results = tmp_path / "results"
    assert_refused(
        invoke("report", "--all", "--results-dir", str(results), "--out", str(out)),
        "no runs of any registered ablation in",
        f"or `ablate restore {out / 'data'} --results-dir {results}` to rebuild it from the data files",
    )


def test_the_index_shows_a_claim_untestable_where_the_baseline_did_not_learn(tmp_path, monkeypatch):
    """The cpu baseline reached the task's convergence target on none of its
    7 seeds, so every claim on it is ``untestable at this scale``, in the report and in the index."""
    folder = tmp_path / "ablations"
    mini = write_decl(folder, claims=tuple(CLAIMS), cpu={"seeds": list(range(7))})
    decl = yaml.safe_load(mini.read_text())
    decl["tasks"]["copy"]["target"] = {"metric": "acc", "min": 0.9}
    mini.write_text(yaml.safe_dump(decl, sort_keys=False))
    monkeypatch.setattr(ablation_mod, "ABLATIONS_DIR", folder)
    monkeypatch.setattr(claims_mod, "load_claims", lambda: CLAIMS)
    results, out = tmp_path / "results", tmp_path / "reports"
    write_runs(results, mini, "cpu", _value, extra=lambda v, s: {"target_reached": float(v != "sinusoidal")})
    assert invoke("report", "--all", "--results-dir", str(results), "--out", str(out)).exit_code == 0
    claims = _row((out / "README.md").read_text(), "mini")[4]
    assert dict(re.findall(r"`([\w-]+)`: ([^<]+?)(?:<br>|$)", claims)) == {
        cid: "untestable at this scale" for cid in CLAIMS
    }
    assert "not learned (0/7 seeds reached target)" in (out / "mini.md").read_text()


def _control_store(tmp_path, monkeypatch, lift: dict[str, float], profile: dict) -> tuple:
    """mini declared a negative control (rope carries the bug, expected worse) with runs of ``cpu``
    whose rope - sinusoidal difference on seed s is ``lift[task] + 0.002 * s`` (a spread, so a test)."""
    folder = tmp_path / "ablations"
    mini = write_decl(folder, cpu=profile)
    decl = yaml.safe_load(mini.read_text())
    decl["control"] = {"kind": "negative", "variant": "rope", "expect": "worse"}
    mini.write_text(yaml.safe_dump(decl, sort_keys=False))
    monkeypatch.setattr(ablation_mod, "ABLATIONS_DIR", folder)
    monkeypatch.setattr(claims_mod, "load_claims", lambda: CLAIMS)
    results, out = tmp_path / "results", tmp_path / "reports"

    def value(variant: str, seed: int) -> float:
        return 0.5 + 0.01 * seed + ({"rope": lift["copy"] + 0.002 * seed}.get(variant, 0.0))

    write_runs(results, mini, "cpu", value)
    assert invoke("report", "--all", "--results-dir", str(results), "--out", str(out)).exit_code == 0
    return _row((out / "README.md").read_text(), "mini"), (out / "mini.md").read_text()


def test_a_negative_control_judged_worse_is_caught(tmp_path, monkeypatch):
    row, report = _control_store(tmp_path, monkeypatch, {"copy": -0.1}, {"seeds": list(range(8))})
    control = row[5]
    # 8 seeds all worse: t-test p tiny, exact sign-flip p 2 / 2**8, Holm over 2 comparisons
    match = re.fullmatch(r"`copy` rope: \*\*caught\*\* \(`acc@x2` worse, adjusted p ([0-9.e-]+)\)", control)
    assert match, control
    assert float(match.group(1)) < 0.05
    assert f"Negative control (rope is a known bug, expected worse): {control}." in report  # the report agrees
    assert re.search(r"^\| rope .*\| worse ", report, re.M)  # and its table


def test_a_negative_control_not_judged_worse_is_not_caught(tmp_path, monkeypatch):
    """The bug's variant better (as the head split on a character LM at L = 64): not caught."""
    row, _ = _control_store(tmp_path, monkeypatch, {"copy": 0.1}, {"seeds": list(range(8))})
    assert re.fullmatch(r"`copy` rope: \*\*not caught\*\* \(`acc@x2` better, adjusted p [0-9.e-]+\)", row[5]), row[5]


def test_a_negative_control_in_a_pilot_is_not_caught(tmp_path, monkeypatch):
    row, _ = _control_store(tmp_path, monkeypatch, {"copy": -0.1}, {"seeds": list(range(8)), "confirmatory": False})
    assert row[5].startswith("`copy` rope: **not caught** (`acc@x2` pilot"), row[5]


def test_the_latest_is_the_confirmatory_profile_that_tests_the_claims(tmp_path, monkeypatch):
    """A newer confirmatory profile whose grid holds none of the claims' comparisons (a positive
    control's, here sinusoidal vs learned only, while the claims name rope) does not take the claims'
    verdicts from the profile that tests them (``pe_extrapolation``'s reproduce vs confirm)."""
    folder = tmp_path / "ablations"
    mini = write_decl(
        folder,
        claims=("mini-rope-better",),
        cpu={"seeds": list(range(7))},
        control={"seeds": list(range(7)), "only_variants": ["sinusoidal", "learned"]},
    )
    monkeypatch.setattr(ablation_mod, "ABLATIONS_DIR", folder)
    monkeypatch.setattr(claims_mod, "load_claims", lambda: CLAIMS)
    results, out = tmp_path / "results", tmp_path / "reports"
    write_runs(results, mini, "cpu", _value, finished_at="2025-01-01T00:00:00+00:00", wall=lambda v, s: 120.0)
    write_runs(results, mini, "control", _value, finished_at="2025-02-01T00:00:00+00:00")  # newer
    assert invoke("report", "--all", "--results-dir", str(results), "--out", str(out)).exit_code == 0
    _, _, profiles, latest, claims, _, _, _ = _row((out / "README.md").read_text(), "mini")
    assert latest == "cpu" and "control" in profiles
    assert "not tested in this profile" not in claims and "`mini-rope-better`:" in claims


def test_a_design_finished_before_its_last_look_reads_as_finished_not_as_runs_missing() -> None:
    """A group-sequential profile whose comparisons were all decided at look 2 of 4 planned 32 seeds
    and ran 16: the scale caveat and the index's seeds cell say the design finished there, not that
    runs are still to come; before it finishes, and on a fixed profile, they read as before."""
    from types import SimpleNamespace

    from harness.analysis import looks
    from harness.analysis import sequential as sq
    from harness.analysis.comparisons import Analysis, SeedsDone

    design = sq.Design((8, 16, 24, 32), "obrien_fleming", 0.05, True)
    done = SeedsDone(seeds=8, declared=32, runs=56, planned=160)

    def result(needed: frozenset) -> SimpleNamespace:
        st = looks.State(design, [], reached=2, needed=needed, seeds_used=16)
        ns = SimpleNamespace(sequential=st, seeds_done=lambda: done)
        ns.stopped_early = lambda d: Analysis.stopped_early(ns, d)
        return ns

    finished = result(frozenset())
    assert Analysis.seeds_text(finished) == (
        "16 of at most 32 seeds (the group-sequential design finished at look 2 of 4)"
    )
    assert index_mod.seeds_cell(finished) == "16/32 (design finished at look 2 of 4)"
    running = result(frozenset({("copy", "nope")}))
    assert Analysis.seeds_text(running) == "32 seeds planned, 56 of 160 runs so far"
    assert index_mod.seeds_cell(running) == "8/32 (56/160 runs)"
    fixed = SimpleNamespace(sequential=None, seeds_done=lambda: done)
    fixed.stopped_early = lambda d: Analysis.stopped_early(fixed, d)
    assert index_mod.seeds_cell(fixed) == "8/32 (56/160 runs)"
