"""An Optuna database whose tables another Optuna version set up is refused in one line naming the fix."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import optuna
import pytest
from typer.testing import CliRunner

from harness.cli.app import app
from harness.errors import AblateError
from harness.tune.storage import default_storage, open_storage
from helpers.tune import write_tiny


def _set_schema(url: str, version: str) -> None:
    optuna.create_study(storage=url, study_name="other")
    with sqlite3.connect(url.removeprefix("sqlite:///")) as db:
        db.execute("UPDATE alembic_version SET version_num = ?", (version,))
        db.execute("UPDATE version_info SET library_version = ?", ("9.9.9" if version == "zzz" else "2.0.0",))


@pytest.mark.parametrize(("version", "fix"), [("v2.4.0.a", "optuna storage upgrade --storage"), ("zzz", "pip install")])
def test_another_optunas_database_names_the_fix(tmp_path: Path, version: str, fix: str) -> None:
    url = default_storage(tmp_path)
    _set_schema(url, version)
    with pytest.raises(AblateError, match="was set up by Optuna") as err:
        open_storage(url)
    assert fix in str(err.value) and "\n" not in str(err.value)


def test_tune_on_another_optunas_database_exits_2(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    _set_schema(default_storage(results), "v2.4.0.a")
    out = CliRunner().invoke(app, ["tune", str(write_tiny(tmp_path)), "--results-dir", str(results), "--trials", "1"])
    assert out.exit_code == 2, out.output
    assert "was set up by Optuna 2.0.0" in out.stderr and "Traceback" not in out.output
