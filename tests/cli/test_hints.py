"""Every command the CLI suggests works as printed and reads the grid the user was looking at.

Each case gives a command a user file (a YAML path, not a registered name), a non-default
profile, a key=value override and a non-default ``--results-dir``, provokes a hint, runs the hint
exactly as printed (``shlex.split``), and checks that it plans the same runs (run ids hash the
config, so the profile and the overrides) in the same store. Nothing trains: ``run_grid`` and the
tuning loop are replaced by recorders.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from harness.cli import output
from harness.execution import local as executors
from harness.experiment import grid as runner
from harness.store.record import Record
from harness.tune import search as tune_mod
from helpers.cli import invoke
from helpers.fake_store import write_decl

pytestmark = pytest.mark.usefixtures("cli_isolated")

OVERRIDE = "model.d_model=32"


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Records every grid planned (profile, run ids), every grid handed to run_grid and every tuning."""
    out: dict[str, list[Any]] = {"plans": [], "grids": [], "tunes": []}
    real_plan = runner.plan

    def plan(abl, profile, overrides=(), *args, **kwargs):
        prof, specs = real_plan(abl, profile, overrides, *args, **kwargs)
        out["plans"].append((prof, frozenset(s.run_id for s in specs)))
        return prof, specs

    def run_grid(specs, results, abl, **kwargs):
        out["grids"].append((frozenset(s.run_id for s in specs), Path(results)))
        return [
            Record.model_construct(
                status="failed",
                reason="recorded, not run",
                task=s.task,
                variant_label=s.variant_label,
                seed=s.seed,
                run_id=s.run_id,
                profile=s.profile,
            )
            for s in specs
        ]

    def tune(abl, prof_name, plans, results, **kwargs):
        out["tunes"].append(
            (prof_name, frozenset(p.spec.config.model.d_model for p in plans), Path(results), kwargs.get("storage"))
        )
        return []

    monkeypatch.setattr(output, "console", Console(highlight=False, soft_wrap=True, width=250))  # as the CLI's
    monkeypatch.setattr(runner, "plan", plan)
    monkeypatch.setattr(executors, "run_grid", run_grid)
    monkeypatch.setattr(tune_mod, "tune", tune)
    return out


def _hints(text: str) -> list[str]:
    return re.findall(r"`(ablate [^`]+)`", text)


def _run_hint(hint: str):
    args = shlex.split(hint)
    assert args[0] == "ablate"
    return invoke(*args[1:])


def test_no_runs_hint_runs_the_grid_that_was_asked_for(tmp_path: Path, seen: dict) -> None:
    decl, results = write_decl(tmp_path / "decl"), tmp_path / "store"
    out = invoke("compare", str(decl), OVERRIDE, "--profile", "pilot", "--results-dir", str(results))
    assert out.exit_code == 2
    (hint,) = _hints(out.stderr)
    asked, before = seen["plans"][-1], len(seen["plans"])
    assert asked[0] == "pilot"
    _run_hint(hint)
    # the grid the run plans first (its closing lines plan the next profile's to count its runs):
    # the same profile, overrides, so the same run ids
    assert seen["plans"][before] == asked
    assert seen["grids"] == [(asked[1], results)]  # run in the store compare read


def test_no_pilot_runs_hint_runs_the_pilot_grid(tmp_path: Path, seen: dict) -> None:
    decl, results = write_decl(tmp_path / "decl"), tmp_path / "store"
    results.mkdir()
    out = invoke("plan", str(decl), OVERRIDE, "--profile", "cpu", "--results-dir", str(results))
    assert out.exit_code == 2
    (hint,) = _hints(out.stderr)
    _run_hint(hint)
    from harness.experiment.ablation import load

    _, specs = runner.plan(load(str(decl)), "pilot", [OVERRIDE], check_data=False)  # the pilot that plan reads
    assert seen["grids"] == [(frozenset(s.run_id for s in specs), results)]


def test_status_hint_reads_the_store_with_the_problem(tmp_path: Path, seen: dict) -> None:
    decl, results = write_decl(tmp_path / "decl"), tmp_path / "store"
    folder = results / "mini" / "pilot"
    folder.mkdir(parents=True)
    (folder / "stray.txt").write_text("not a run")
    out = invoke("compare", str(decl), OVERRIDE, "--profile", "pilot", "--results-dir", str(results))
    assert out.exit_code == 0, out.output
    (hint,) = _hints(out.stdout)
    asked = seen["plans"][-1]
    status = _run_hint(hint)
    assert status.exit_code == 0, status.output
    assert seen["plans"][-1] == asked
    assert f"store problem {folder / 'stray.txt'}: not a run folder" in status.stdout


def test_retry_hint_reruns_the_failed_runs_of_the_same_grid(tmp_path: Path, seen: dict) -> None:
    decl, results = write_decl(tmp_path / "decl"), tmp_path / "store"
    out = invoke("run", str(decl), OVERRIDE, "--profile", "pilot", "--results-dir", str(results), "--wandb", "off")
    assert out.exit_code == 1, out.output
    hint = _hints(out.stdout)[-1]
    assert hint.endswith("--retry failed")  # the status its runs ended with
    again = _run_hint(hint)
    assert again.exit_code == 1, again.output
    assert seen["grids"][0] == seen["grids"][1] and seen["grids"][0][1] == results


def test_tune_first_hint_tunes_the_same_grid_in_the_same_storage(tmp_path: Path, seen: dict) -> None:
    decl, results = write_decl(tmp_path / "decl"), tmp_path / "store"
    storage = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    out = invoke(
        "run", str(decl), OVERRIDE, "--profile", "pilot", "--results-dir", str(results), "--tuned", "--storage", storage
    )
    assert out.exit_code == 2
    (hint,) = _hints(out.stderr)
    assert _run_hint(hint).exit_code == 0
    assert seen["tunes"] == [("pilot", frozenset({32}), results, storage)]


def test_a_hint_in_the_default_store_names_no_results_dir(tmp_path: Path) -> None:
    """The default --results-dir is left out (it is relative to the working folder, as typed); a
    selection's hint names the ablation as typed, its overrides, folder and (masked) storage."""
    from harness.experiment.ablation import load
    from harness.experiment.selection import select
    from harness.hints import command

    assert command("status", "pe_extrapolation", "smoke") == "ablate status pe_extrapolation --profile smoke"
    decl = write_decl(tmp_path / "my decl")
    sel = select(
        load(str(decl)),
        "cpu",
        ["eval.length_multipliers=[1,2]"],
        check_data=False,
        typed=str(decl),
        results=tmp_path / "r",
        storage="postgresql+psycopg2://bob:pw@db/x",
    )
    assert shlex.split(sel.command("run", "--tuned", storage=True)) == [
        "ablate",
        "run",
        str(decl),
        "eval.length_multipliers=[1,2]",
        "--profile",
        "cpu",
        "--results-dir",
        str(tmp_path / "r"),
        "--tuned",
        "--storage",
        "postgresql+psycopg2://bob:***@db/x",
    ]
    assert sel.command("show", profile="pilot") == shlex.join(
        ["ablate", "show", str(decl), "eval.length_multipliers=[1,2]", "--profile", "pilot"]
    )
    assert select(load(str(decl)), "cpu", check_data=False).command("status") == "ablate status mini --profile cpu"
