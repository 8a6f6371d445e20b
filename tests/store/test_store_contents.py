"""What the store holds: damaged or foreign files are reported with their path and never crash
``status``, ``compare`` or ``report``; no secret ever reaches the store, a report or the output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import inspect as inspect_cmd
from harness.cli import report as report_cmd
from harness.cli import run as run_cmd
from harness.cli.app import app
from harness.errors import TRAINED
from harness.training import loop as training
from helpers.tiny_grid import write_tiny

KEY = "fake-wandb-key-0123456789abcdef0123456789"
PASSWORD = "hunter2-correct-horse"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    """A tiny grid run with a (fake) W&B key and a database password in the environment, W&B
    offline, one variant failing with both in its exception message."""
    root = tmp_path_factory.mktemp("store")
    path = write_tiny(root / "decl", steps=20, val_every=10, seeds=(0, 1))
    mp = pytest.MonkeyPatch()
    mp.setenv("WANDB_API_KEY", KEY)
    mp.setenv("ABLATE_DB_PASSWORD", PASSWORD)
    original = training.TransformerLM.forward

    def leaky(self, idx, *args, **kwargs):
        if self.cfg.position == "learned":
            raise ConnectionError(f"postgresql://bob:{PASSWORD}@db:5432/optuna refused key {KEY}")
        return original(self, idx, *args, **kwargs)

    mp.setattr(training.TransformerLM, "forward", leaky)
    try:
        code = run_cmd.run(str(path), None, [], root / "results", workers=1, wandb="offline")
    finally:
        mp.undo()
    assert code == 1
    return path, root / "results"


def test_no_secret_reaches_the_store_a_report_or_the_output(store, tmp_path, capfd, monkeypatch):
    path, results = store
    monkeypatch.setenv("WANDB_API_KEY", KEY)
    report_cmd.report(str(path), None, results, tmp_path / "reports", wandb="off")  # the key set: auto would log
    inspect_cmd.status(str(path), None, results)
    files = [p for folder in (results, tmp_path / "reports") for p in folder.rglob("*") if p.is_file()]
    assert any(p.name == "traceback.txt" for p in files) and any("wandb" in p.parts for p in files)
    for p in files:
        data = p.read_bytes()
        assert KEY.encode() not in data and PASSWORD.encode() not in data, p
    out = capfd.readouterr()
    assert KEY not in out.out + out.err and PASSWORD not in out.out + out.err
    failed = [json.loads(p.read_text()) for p in results.rglob("record.json")]
    assert any("postgresql://bob:***@db:5432/optuna" in (r["reason"] or "") for r in failed)


def _damage(results: Path) -> list[str]:
    """Damage a copy of the store in every way the catalogue lists; returns paths to report."""
    runs = sorted(p for p in (results / "tiny" / "cpu").iterdir() if p.is_dir())
    ok = [r for r in runs if json.loads((r / "record.json").read_text())["status"] in TRAINED]
    truncated = runs[0] / "record.json"
    truncated.write_bytes(truncated.read_bytes()[:60])
    (ok[-1] / "history.csv").write_bytes(b"\x00\xff garbage")
    stray = results / "tiny" / "cpu" / "notes.txt"
    stray.write_text("a stray file")
    foreign = results / "tiny" / "cpu" / "0000deadbeef"
    foreign.mkdir()
    (foreign / "record.json").write_text(json.dumps({"status": "ok", "hello": "world"}))
    moved = results / "tiny" / "cpu" / "0000feedface"
    shutil.copytree(ok[0], moved)
    return [str(truncated), str(stray), str(foreign / "record.json"), str(moved / "record.json")]


def test_damaged_and_foreign_files_are_reported_and_never_crash_a_command(store, tmp_path):
    path, clean = store
    results = tmp_path / "results"
    shutil.copytree(clean, results)
    paths = _damage(results)
    runner = CliRunner()
    status = runner.invoke(app, ["status", str(path), "--results-dir", str(results)])
    assert status.exit_code == 0 and status.exception is None, status.output
    for p in paths:
        assert p in status.stdout.replace("\n", ""), p
    assert "unreadable record" in status.stdout and "does not match its folder" in status.stdout
    for fmt in ("table", "json"):
        compare = runner.invoke(app, ["compare", str(path), "--results-dir", str(results), "--format", fmt])
        assert compare.exit_code == 0 and compare.exception is None, compare.output
    report = runner.invoke(app, ["report", str(path), "--results-dir", str(results), "--out", str(tmp_path / "r")])
    assert report.exit_code == 0 and report.exception is None, report.output
    text = (tmp_path / "r" / "tiny.md").read_text()
    assert text.count("unreadable store entry") >= 4 and "history.csv" in text


def test_a_file_where_a_folder_belongs_is_reported(store, tmp_path):
    path, _ = store
    results = tmp_path / "results"
    (results / "tiny").mkdir(parents=True)
    (results / "tiny" / "cpu").write_text("not a folder")
    runner = CliRunner()
    status = runner.invoke(app, ["status", str(path), "--results-dir", str(results)])
    assert status.exit_code == 0 and "not a folder" in status.stdout, status.output
    for cmd in (["compare"], ["report", "--out", str(tmp_path / "r")]):
        out = runner.invoke(app, [*cmd, str(path), "--results-dir", str(results)])
        assert out.exit_code == 0 and out.exception is None, out.output
