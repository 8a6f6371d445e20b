"""W&B, read back offline (no network): every training run and the summary run of a tiny grid
must hold the store's values: group, tags, job type, config, summary metrics, curves, tables."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from harness.analysis.claims import claim_verdict
from harness.analysis.comparisons import analyse
from harness.cli import report as report_cmd
from harness.cli import run as run_cmd
from harness.cli.app import app
from harness.errors import TRAINED
from harness.execution.attempt import execute
from harness.experiment.ablation import load
from harness.experiment.claims import load_claims
from harness.experiment.grid import plan
from harness.experiment.selection import select
from harness.training import loop as training
from harness.training.wandb_upload import EMPTY_LOG_BYTES, REPLAYED, SUMMARY_DIR, offline_runs
from helpers.tiny_grid import records, write_tiny
from helpers.wandb_runs import read_run

CLAIM = "pe-learned-slower"  # evidence: copy steps_to_target, learned vs sinusoidal


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory):
    """The tiny grid (2 variants x 2 seeds) with W&B offline, its report, and its summary run."""
    root = tmp_path_factory.mktemp("wandb")
    path = write_tiny(root / "decl", steps=12, val_every=6)
    decl = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**decl, "claims": [CLAIM]}))
    results = root / "results"
    assert run_cmd.run(str(path), None, [], results, workers=1, wandb="offline") == 0
    abl = load(str(path))
    report_cmd.report(str(path), None, results, root / "reports", wandb="offline")
    (summary,) = offline_runs(results / "tiny" / "cpu" / SUMMARY_DIR)
    return abl, results, root / "reports", summary


def _wandb_folder(results: Path, run_id: str) -> Path:
    (folder,) = offline_runs(results / "tiny" / "cpu" / run_id)
    return folder


@pytest.fixture(scope="module")
def logged(grid) -> dict:
    """Each training run's W&B run, read back from its offline folder, by store run id."""
    results = grid[1]
    return {run_id: read_run(_wandb_folder(results, run_id)) for run_id in records(results)}


def test_training_runs_hold_the_store(grid, logged) -> None:
    _, results, _, _ = grid
    recs = records(results)
    assert len(recs) == 4 and set(logged) == set(recs)
    for run_id, rec in recs.items():
        run = logged[run_id]
        assert run.run_id == rec["wandb_id"] and run.exit_code == 0
        assert (run.group, run.job_type, run.name) == ("tiny/cpu", "copy", f"{rec['variant_label']}-s{rec['seed']}")
        assert {rec["variant_label"], f"seed:{rec['seed']}"} <= set(run.tags)
        assert run.config["config"] == rec["config"]  # the full config, as stored
        assert [run.config[k] for k in ("run_id", "seed", "variant")] == [run_id, rec["seed"], rec["variant"]]
        assert run.summary["status"] == rec["status"] in TRAINED
        for name, value in rec["metrics"].items():
            if value is None or math.isnan(value):
                assert run.summary.get(name) is None, name  # W&B stores NaN as null
            else:
                assert run.summary[name] == value, name


def test_training_curves_match_the_stored_validation_history(grid, logged) -> None:
    _, results, _, _ = grid
    for run_id, run in logged.items():
        with open(results / "tiny" / "cpu" / run_id / "history.csv") as fh:
            stored = list(csv.DictReader(fh))
        logged = [(row["trainer/global_step"], row["val/acc"]) for row in run.history if "val/acc" in row]
        assert [int(r["step"]) for r in stored] == [s + 1 for s, _ in logged]  # Lightning logs step - 1
        assert [v for _, v in logged] == pytest.approx([float(r["acc"]) for r in stored], rel=1e-6)
        assert any("train/loss" in row for row in run.history)


def test_summary_run_holds_every_table_figure_and_claim(grid) -> None:
    abl, results, reports, folder = grid
    assert folder.parent.parent == results / "tiny" / "cpu" / SUMMARY_DIR
    run = read_run(folder)
    assert (run.group, run.job_type, run.exit_code) == ("tiny/cpu", "summary", 0)
    staged = results / "tiny" / "cpu" / SUMMARY_DIR / "data" / "artifacts" / "staging"
    assert len(list(staged.iterdir())) >= 2  # the tables wait for `wandb sync` with the run, not in ~/.local
    analysis = analyse(select(abl, "cpu", check_data=False), results)
    assert analysis.tables
    for table in analysis.tables:
        logged = json.loads(run.file(f"compare/{table.task}/{table.metric}").read_text())
        columns = list(table.frame.columns)
        assert logged["columns"] == columns and len(logged["data"]) == len(table.frame)
        for row, (_, expect) in zip(logged["data"], table.frame.iterrows()):
            for col, value in zip(columns, row):
                assert (value is None and pd.isna(expect[col])) or value == expect[col], (table.metric, col)
    figures = sorted((reports / "figures").glob("tiny-*.png"))
    assert figures
    for fig in figures:
        assert run.summary[f"figures/{fig.stem}._type"] == "image-file"
        assert run.file(f"figures/{fig.stem}").read_bytes() == fig.read_bytes()
    verdict, _ = claim_verdict(load_claims()[CLAIM], analysis)
    assert run.summary[f"claim/{CLAIM}"] == verdict
    claims = json.loads(run.file("claims").read_text())
    assert [row[:2] for row in claims["data"]] == [[CLAIM, verdict]]


def test_summary_is_replaced_not_added_and_off_logs_nothing(grid, tmp_path: Path) -> None:
    abl, results, _, _ = grid
    store = tmp_path / "results"
    shutil.copytree(results, store, symlinks=True)
    analysis = analyse(select(abl, "cpu", check_data=False), store)
    folder = report_cmd.log_summary(analysis, {}, [], "offline")
    assert offline_runs(store / "tiny" / "cpu" / SUMMARY_DIR) == [folder]
    report_cmd.report(abl.source, None, store, tmp_path / "reports", wandb="off")
    assert offline_runs(store / "tiny" / "cpu" / SUMMARY_DIR) == [folder]
    assert not list(store.rglob("*.wandb.synced"))


def test_a_summary_that_fails_to_start_keeps_the_one_waiting(
    grid, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `ablate report --wandb online` with a key W&B refuses: the report stands (a warning),
    # and the offline summary waiting for `ablate sync` must still be there
    import wandb

    abl, results, _, _ = grid
    store = tmp_path / "results"
    shutil.copytree(results, store, symlinks=True)
    waiting = offline_runs(store / "tiny" / "cpu" / SUMMARY_DIR)
    assert len(waiting) == 1
    (log,) = waiting[0].glob("*.wandb")
    logged = log.read_bytes()

    def no_key(*args, **kwargs):
        raise wandb.errors.UsageError("No API key configured. Use `wandb login` to log in.")

    monkeypatch.setattr(wandb, "init", no_key)
    monkeypatch.setenv("WANDB_API_KEY", "0" * 40)  # a key W&B refuses when the run starts
    out = CliRunner().invoke(
        app,
        [
            "report",
            str(abl.source),
            "--results-dir",
            str(store),
            "--out",
            str(tmp_path / "reports"),
            "--wandb",
            "online",
        ],
    )
    assert out.exit_code == 0, out.output
    assert "the W&B summary run was not logged: UsageError" in out.output
    assert offline_runs(store / "tiny" / "cpu" / SUMMARY_DIR) == waiting
    assert log.read_bytes() == logged  # untouched, not replaced by a summary that never started


def test_failed_run_logs_its_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    abl = load(str(write_tiny(tmp_path / "decl", steps=4, val_every=2)))
    _, specs = plan(abl, None)

    def boom(self, batch, batch_idx):
        raise RuntimeError("boom")

    monkeypatch.setattr(training.LitLM, "training_step", boom)
    rec = execute(specs[0], tmp_path / "results", wandb_mode="offline", abl=abl)
    assert rec.status == "failed"
    run = read_run(_wandb_folder(tmp_path / "results", rec.run_id))
    assert run.summary["status"] == "failed" and run.job_type == "copy"


def test_sync_dry_run_lists_the_waiting_runs(grid, tmp_path: Path) -> None:
    _, results, _, _ = grid
    store = tmp_path / "results"
    shutil.copytree(results, store, symlinks=True)
    first = offline_runs(store)[-1]  # a training run (the summary folder sorts first)
    next(first.glob("*.wandb")).with_suffix(".wandb.synced").touch()  # as `wandb sync` marks an upload
    out = CliRunner().invoke(app, ["sync", "--results-dir", str(store), "--dry-run"])
    assert out.exit_code == 0, out.output
    assert "4 offline W&B run(s) would be uploaded" in out.output  # 4 training + 1 summary, 1 synced
    assert str(first.relative_to(store)) not in out.output and SUMMARY_DIR in out.output


def test_sync_skips_empty_folders_and_those_a_resumed_attempt_supersedes(grid, tmp_path: Path) -> None:
    # an attempt killed, then resumed, leaves two folders of one W&B run: the killed one holds W&B's
    # header alone (killed within its first block) or part of the curve, which the resumed one
    # holds whole; neither killed folder is uploaded nor counted, each kind said in one line
    _, results, _, _ = grid
    store = tmp_path / "results"
    shutil.copytree(results, store, symlinks=True)
    runs = [p for p in offline_runs(store) if SUMMARY_DIR not in p.parts]
    killed = []
    for run, kept in zip(runs[:2], (EMPTY_LOG_BYTES, None)):
        date, rest = run.name.removeprefix("offline-run-").split("-", 1)
        earlier = run.with_name(f"offline-run-{int(date[:8]) - 1}{date[8:]}-{rest}")  # an earlier date: sorts first
        shutil.copytree(run, earlier)
        (log,) = earlier.glob("*.wandb")
        log.write_bytes(log.read_bytes()[:kept])  # the header alone, or the whole log
        killed.append(earlier)
    (runs[1] / REPLAYED).write_text("{}")  # the resumed attempt replayed the killed one's curve
    out = CliRunner().invoke(app, ["sync", "--results-dir", str(store), "--dry-run"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0].startswith(f"skipped 1 empty offline W&B folder(s), e.g. {killed[0].relative_to(store)}: ")
    assert lines[1].startswith(
        f"skipped 1 offline W&B folder(s) of killed attempts, e.g. {killed[1].relative_to(store)}"
    )
    assert sorted(lines[2:-1]) == sorted(str(p.relative_to(store)) for p in offline_runs(store) if p not in killed)
    assert lines[-1].startswith("5 offline W&B run(s) would be uploaded")
    # resumed by code that did not replay: the killed attempt's folder holds steps no other does
    (runs[1] / REPLAYED).unlink()
    out = CliRunner().invoke(app, ["sync", "--results-dir", str(store), "--dry-run"])
    assert "of killed attempts" not in out.output and str(killed[1].relative_to(store)) in out.output
    assert out.output.splitlines()[-1].startswith("6 offline W&B run(s) would be uploaded")


def test_sync_without_a_key_says_so_and_exits_2(grid, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _, results, _, _ = grid
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    out = CliRunner().invoke(app, ["sync", "--results-dir", str(results)])
    assert out.exit_code == 2
    (line,) = out.stderr.strip().splitlines()
    assert "WANDB_API_KEY" in line and "5 offline W&B run(s) wait" in line
    empty = tmp_path / "empty"
    empty.mkdir()
    out = CliRunner().invoke(app, ["sync", "--results-dir", str(empty)])
    assert out.exit_code == 0 and "no offline W&B runs wait" in out.output


def test_report_hands_its_controls_to_the_summary_run(grid, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `ablate report --wandb offline` evaluates the controls guarding its claims once: the summary
    # run logs the claims with the report's outcomes, it does not read the store's grids again
    from harness.analysis import controls as controls_mod

    abl, results, _, summary = grid
    store = tmp_path / "results"
    shutil.copytree(results, store, symlinks=True)
    calls: list[str] = []
    real = controls_mod.controls_of

    def counted(claims, results):
        calls.append("controls_of")
        return real(claims, results)

    monkeypatch.setattr(controls_mod, "controls_of", counted)
    decl = results.parent / "decl" / "tiny.yaml"
    report_cmd.report(str(decl), None, store, tmp_path / "reports", wandb="offline")
    assert calls == ["controls_of"]
    (folder,) = offline_runs(store / "tiny" / "cpu" / SUMMARY_DIR)
    assert folder.name != summary.name  # a new summary run, logged with the report's outcomes
    verdict, _ = claim_verdict(load_claims()[CLAIM], analyse(select(abl, "cpu", check_data=False), store))
    assert read_run(folder).summary[f"claim/{CLAIM}"] == verdict
