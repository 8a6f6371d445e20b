"""``ablate tune`` in one process on a tiny ablation: bad input, resume, pruning, ``--tuned``, report.

Every trial trains d_model 16, 1 layer, 20 steps (about a second); the objective is ``loss@x2`` on
the validation split, so the pruner watches ``val/loss``.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import optuna
import pytest
from rich.console import Console
from typer.testing import CliRunner

from harness.cli import output
from harness.cli import report as report_cmd
from harness.cli import run as run_cmd
from harness.cli.app import app
from harness.errors import TRAINED, AblateError
from harness.experiment.ablation import load
from harness.experiment.search_space import DEFAULT_SPACE, ParamSpec, resolve_space
from harness.experiment.selection import select
from harness.redact import mask_url
from harness.tune.storage import default_storage
from harness.tune.studies import TUNING_SEED, counts, monitor_for, plan_studies, study_name
from harness.tuned import tuned_profile
from helpers.corpus import needs_corpus
from helpers.tune import TINY, states, write_tiny

ROPE = "tiny_tune/smoke/copy/rope"


@pytest.fixture(autouse=True)
def _wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output, "console", Console(highlight=False, width=250))


def _tune(path: Path, results: Path, trials: int, *extra: str, variants: list[str] | None = None) -> int:
    return run_cmd.tune(str(path), None, list(extra), trials=trials, variant=variants, results=results)


# --- declarations and bad input (nothing trains) ---------------------------------------------


def test_default_space_is_shared_and_overridable(tmp_path: Path) -> None:
    abl = load("pe_extrapolation")
    space = resolve_space(abl, "cpu")
    assert set(space) == set(DEFAULT_SPACE)
    assert resolve_space(abl, "smoke")["train.warmup_steps"] == ParamSpec(type="int", low=0, high=20)
    tiny = resolve_space(load(str(write_tiny(tmp_path))), "smoke")
    assert list(tiny) == ["train.lr"] and tiny["train.lr"].log


@pytest.mark.parametrize(
    "tune, words",
    [
        ({"train.lrr": {"type": "float", "low": 1e-3, "high": 1e-2}}, ["unknown config key 'train.lrr'", "train.lr"]),
        ({"train.lr": {"type": "float", "low": 1e-2, "high": 1e-3}}, ["low 0.01 > high 0.001"]),
        ({"train.lr": {"type": "float", "low": 0.0, "high": 1e-2, "log": True}}, ["log range needs low > 0"]),
        ({"train.batch_size": {"type": "categorical", "choices": []}}, ["non-empty `choices`"]),
        ({"train.steps": {"type": "int", "low": 1.5, "high": 3}}, ["integer bounds"]),
        ({"model.position": {"type": "categorical", "choices": ["rope"]}}, ["axis", "cannot be tuned"]),
        ({"model.dropout": {"type": "float", "low": 0.0, "high": 1.5}}, ["model.dropout=1.5", "less than 1"]),
    ],
)
def test_bad_space_exits_2_before_anything_runs(tmp_path: Path, tune: dict, words: list[str]) -> None:
    path = write_tiny(tmp_path, tune=tune)
    results = tmp_path / "results"
    out = CliRunner().invoke(app, ["tune", str(path), "--trials", "2", "--results-dir", str(results)])
    assert out.exit_code == 2, out.output
    assert out.stderr.startswith("error: ") and "Traceback" not in out.output
    for w in words:
        assert w in out.stderr, (w, out.stderr)
    assert not results.exists()


@pytest.mark.parametrize(
    "spec, words",
    [
        ({"type": "float", "low": float("nan"), "high": 1e-2}, ["tune.train.lr: not a finite number: low nan"]),
        ({"type": "float", "low": 1e-3, "high": float("inf")}, ["tune.train.lr: not a finite number: high inf"]),
        ({"type": "categorical", "choices": [1e-3, float("nan")]}, ["not a finite number: choice nan"]),
    ],
)
def test_a_bound_or_choice_that_is_not_finite_is_refused_at_load(tmp_path: Path, spec: dict, words: list[str]) -> None:
    """``ablate show`` printed ``float in ;`` or ``[0.001, inf]`` for it; only ``ablate tune`` refused it."""
    out = CliRunner().invoke(app, ["show", str(write_tiny(tmp_path, tune={"train.lr": spec}))])
    assert out.exit_code == 2, out.output
    assert out.stderr.startswith("error: invalid declaration") and len(out.stderr.strip().splitlines()) == 1
    for w in words:
        assert w in out.stderr, (w, out.stderr)


@pytest.mark.parametrize(
    "args, words",
    [
        (["--variant", "position=ropee"], ["'ropee' is not a value of model.position", "rope"]),
        (["--variant", "norm=pre"], ["'norm' is not an axis"]),
        (
            ["--variant", "d_model"],
            ["--variant 'd_model' is not of the form axis=value (e.g. position=", "axes: model.position"],
        ),
        (["--task", "cpy"], ["did you mean 'copy'"]),
        (
            ["--storage", "postgresql+psycopg2://bob:s3cret@127.0.0.1:1/db"],
            ["postgresql+psycopg2://bob:***@127.0.0.1:1/db"],
        ),
        (["--storage", "nonsense"], ["not a database URL"]),
    ],
)
def test_bad_tune_arguments_exit_2(tmp_path: Path, args: list[str], words: list[str]) -> None:
    out = CliRunner().invoke(app, ["tune", str(write_tiny(tmp_path)), *args, "--results-dir", str(tmp_path / "r")])
    assert out.exit_code == 2, out.output
    assert "s3cret" not in out.output
    for w in words:
        assert w in out.stderr, (w, out.stderr)


@pytest.mark.parametrize(
    "args, words",
    [
        (
            ["--variant", "position=alibi"],
            ["--variant 'position=alibi': tiny_tune / sub does not run that variant; its variants: sinusoidal, rope"],
        ),
        (
            ["--variant", "position=rope", "--variant", "position=sinusoidal"],
            ["--variant 'position=rope' --variant 'position=sinusoidal': tiny_tune / sub runs no variant with them"],
        ),
        (["--task", "reverse"], ["--task 'reverse' is not a task of tiny_tune / sub; its tasks: copy"]),
    ],
)
def test_a_task_or_variant_the_profile_does_not_run_exits_2(tmp_path: Path, args: list[str], words: list[str]) -> None:
    """A value of the ablation the profile leaves out: it tuned 0 studies and exited 0 (a variant), or said the
    task was not one of the ablation's (a task)."""
    tasks = {**TINY["tasks"], "reverse": {**TINY["tasks"]["copy"]}}
    sub = {"seeds": [0, 1], "confirmatory": False, "only_tasks": ["copy"], "only_variants": ["sinusoidal", "rope"]}
    path = write_tiny(
        tmp_path,
        axes={"model.position": ["sinusoidal", "rope", "alibi"]},
        tasks=tasks,
        profiles={**TINY["profiles"], "sub": sub},
    )
    results = tmp_path / "r"
    out = CliRunner().invoke(app, ["tune", str(path), "--profile", "sub", *args, "--results-dir", str(results)])
    assert out.exit_code == 2, out.output
    assert len(out.stderr.strip().splitlines()) == 1
    for w in words:
        assert w in out.stderr, (w, out.stderr)
    assert not results.exists()


@pytest.mark.parametrize("command", [["tune"], ["run", "--tuned"]])
@pytest.mark.parametrize("storage", ["", "  "])
def test_an_empty_storage_is_refused_not_read_as_the_default(tmp_path: Path, command: list[str], storage: str) -> None:
    """``--storage ""`` (an unset shell variable) used to tune into RESULTS/optuna.db and exit 0;
    ``ablate report --storage ""`` already refused it."""
    results = tmp_path / "r"
    out = CliRunner().invoke(
        app, [command[0], str(write_tiny(tmp_path)), *command[1:], "--storage", storage, "--results-dir", str(results)]
    )
    assert out.exit_code == 2, out.output
    assert out.stderr.startswith("error: --storage is empty; pass a database URL") and "Traceback" not in out.output
    assert not results.exists()


def test_a_missing_driver_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bare postgresql:// selects SQLAlchemy's default driver; where psycopg2 is installed the fix
    is the URL (postgresql+psycopg2://), not a package; otherwise the package that installs it."""
    import importlib.util

    from harness.tune.storage import missing_driver

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: object() if n == "psycopg2" else real(n, *a))
    msg = missing_driver("postgresql://bob:s3cret@db/x", "psycopg")
    assert msg.endswith("--storage postgresql+psycopg2://bob:***@db/x") and "pip" not in msg and "s3cret" not in msg
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "psycopg2" else real(n, *a))
    assert missing_driver("postgresql://db/x", "psycopg").endswith("pip install 'psycopg[binary]'")
    assert missing_driver("postgresql+psycopg2://db/x", "psycopg2").endswith("pip install psycopg2-binary")
    assert missing_driver("mysql://db/x", "MySQLdb").endswith("pip install mysqlclient")


def test_a_bare_postgresql_url_with_psycopg2_installed_says_to_name_it(tmp_path: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("psycopg2") is None or importlib.util.find_spec("psycopg") is not None:
        pytest.skip("needs psycopg2 installed and psycopg (3), SQLAlchemy 2.1's default, not installed")
    import sqlalchemy

    if not sqlalchemy.__version__.startswith("2.1"):
        pytest.skip(f"SQLAlchemy {sqlalchemy.__version__}: postgresql:// may default to psycopg2")
    out = CliRunner().invoke(
        app,
        [
            "tune",
            str(write_tiny(tmp_path)),
            "--storage",
            "postgresql://bob:s3cret@127.0.0.1:1/db",
            "--results-dir",
            str(tmp_path / "r"),
        ],
    )
    assert out.exit_code == 2 and "s3cret" not in out.output
    assert out.stderr.strip().endswith("--storage postgresql+psycopg2://bob:***@127.0.0.1:1/db"), out.stderr


def _foreign(url: str, kind: str) -> None:
    """Store, under the name `ablate tune` uses for rope, a study it did not make."""
    from optuna.distributions import CategoricalDistribution

    if kind == "multi-objective":
        optuna.create_study(storage=url, study_name=ROPE, directions=["minimize", "maximize"])
    elif kind == "other direction":
        optuna.create_study(storage=url, study_name=ROPE, direction="maximize")
    else:  # train.lr drawn as a category: every new trial of a float lr would fail
        study = optuna.create_study(storage=url, study_name=ROPE, direction="minimize")
        study.add_trial(
            optuna.trial.create_trial(
                params={"train.lr": 0.01}, value=1.0, distributions={"train.lr": CategoricalDistribution([0.01])}
            )
        )


@pytest.mark.parametrize(
    "kind, words",
    [
        ("multi-objective", ["has 2 objectives (minimize, maximize)", "ablate tune did not make it"]),
        ("other direction", ["exists and maximizes", "asks to minimize"]),
        ("distributions", ["drew train.lr from one of [0.01] (trial 0)", "searches float in [0.003, 0.01] (log)"]),
    ],
)
def test_a_foreign_study_under_the_tune_name_exits_2(tmp_path: Path, kind: str, words: list[str]) -> None:
    """One line naming the study and a command that removes it; no study is created, no trial runs;
    the printed command, run as printed, clears the way."""
    import shlex
    import subprocess
    import sys

    results = tmp_path / "r"
    results.mkdir()
    url = default_storage(results)
    _foreign(url, kind)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    out = CliRunner().invoke(app, ["tune", str(write_tiny(tmp_path)), "--trials", "1", "--results-dir", str(results)])
    assert out.exit_code == 2, out.output
    err = out.stderr.strip()
    assert err.startswith(f"error: study {ROPE!r}") and "\n" not in err and "Traceback" not in out.output, err
    for w in words:
        assert w in err, (w, err)
    assert optuna.get_all_study_names(url) == [ROPE]  # sinusoidal's study was not created
    hint = err[err.index("(optuna delete-study") :].split(")")[0].lstrip("(")
    optuna_cli = Path(sys.executable).parent / "optuna"
    subprocess.run([str(optuna_cli), *shlex.split(hint)[1:]], check=True, capture_output=True)
    assert optuna.get_all_study_names(url) == []


def test_tuned_run_refuses_a_multi_objective_study(tmp_path: Path) -> None:
    results = tmp_path / "r"
    results.mkdir()
    url = default_storage(results)
    _foreign(url, "multi-objective")
    optuna.create_study(storage=url, study_name="tiny_tune/smoke/copy/sinusoidal")
    out = CliRunner().invoke(app, ["run", str(write_tiny(tmp_path)), "--tuned", "--results-dir", str(results)])
    assert out.exit_code == 2, out.output
    assert "has 2 objectives" in out.stderr and "Traceback" not in out.output


def test_report_leaves_a_multi_objective_study_out(tmp_path: Path) -> None:
    from harness.analysis.comparisons import analyse
    from harness.report.tuning import TuningInputs, collect_studies, tuning_section

    results = tmp_path / "r"
    results.mkdir()
    _foreign(default_storage(results), "multi-objective")
    sel = select(load(str(write_tiny(tmp_path))), "smoke", check_data=False)
    studies = collect_studies(sel, results, None, tmp_path)
    lines = tuning_section(sel, analyse(sel, results), TuningInputs(studies, None), {})
    assert "| copy | rope | | | | **not a study of ablate tune: 2 objectives; left out** | | |" in lines


def test_tuned_without_study_exits_2(tmp_path: Path) -> None:
    path = write_tiny(tmp_path)
    out = CliRunner().invoke(app, ["run", str(path), "--tuned", "--results-dir", str(tmp_path / "r")])
    # the file as given (tiny_tune is no registered name) and the store: the hint works as printed
    assert (
        out.exit_code == 2 and f"`ablate tune {path} --profile smoke --results-dir {tmp_path / 'r'}`" in out.stderr
    ), out.output
    assert not (tmp_path / "r").exists()  # refused before anything is written: not even the folder
    (tmp_path / "f").write_text("a file")
    out = CliRunner().invoke(app, ["run", str(path), "--tuned", "--results-dir", str(tmp_path / "f")])
    assert out.exit_code == 2 and "exists and is not a folder" in out.stderr, out.output


def test_names_and_monitor() -> None:
    assert study_name("pe_extrapolation", "smoke", "copy", "rope") == "pe_extrapolation/smoke/copy/rope"
    assert tuned_profile("smoke") == "smoke+tuned"
    assert TUNING_SEED not in {s for p in load("pe_extrapolation").profiles.values() for s in p.seeds}
    assert monitor_for("acc@x4", True) == "val/acc" and monitor_for("loss@x4", False) == "val/loss"
    assert monitor_for("steps_to_target", False) == "val/loss" and monitor_for("tokens_per_s", True) is None
    assert mask_url("postgresql://u:pw@h/db") == "postgresql://u:***@h/db"


@needs_corpus  # pe_extrapolation's smoke grid plans its language-modelling task too
def test_a_key_fixed_on_the_command_line_is_not_searched(tmp_path: Path) -> None:
    abl = load("pe_extrapolation")
    _, plans = plan_studies(abl, "smoke", ["train.lr=1e-3"], ["copy"], ["position=rope"])
    assert "train.lr" not in plans[0].space and plans[0].spec.config.train.lr == 1e-3
    with pytest.raises(AblateError, match="search space is empty"):
        plan_studies(load(str(write_tiny(tmp_path))), "smoke", ["train.lr=1e-3"])


# --- trials --------------------------------------------------------------------------------------


def test_resume_tops_up_to_the_requested_finished_trials(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, results = write_tiny(tmp_path), tmp_path / "results"
    url = default_storage(results)
    assert _tune(path, results, 2, variants=["position=rope"]) == 0
    assert sum(states(url, ROPE).values()) == 2
    assert _tune(path, results, 3, variants=["position=rope"]) == 0
    found = states(url, ROPE)
    assert sum(found.values()) == 3 and found["COMPLETE"] >= 2 and "RUNNING" not in found
    assert _tune(path, results, 3, variants=["position=rope"]) == 0
    assert "nothing to do" in capsys.readouterr().out
    study = optuna.load_study(study_name=ROPE, storage=url)
    assert study.trials[0].user_attrs.get("declared") and study.trials[0].params == {"train.lr": 3e-3}
    assert study.user_attrs["seed"] == TUNING_SEED and "validation" in study.user_attrs["objective"]
    assert set(study.trials[0].user_attrs["val_metrics"]) >= {"loss@x1", "loss@x2"}
    # reported at every validation pass (global step), not once per epoch
    assert set(study.trials[0].intermediate_values) == {10, 20}


def test_a_trial_running_in_another_worker_counts_toward_the_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two workers on 12 trials made 13: with 10 finished and one trial running in each, the first to
    # finish saw 11 finished and started another. A running trial now counts toward the budget.
    path, results = write_tiny(tmp_path), tmp_path / "results"
    url = default_storage(results)
    assert _tune(path, results, 2, variants=["position=rope"]) == 0
    optuna.load_study(study_name=ROPE, storage=url).ask()  # another worker's trial, in flight
    capsys.readouterr()
    assert _tune(path, results, 3, variants=["position=rope"]) == 0
    assert states(url, ROPE) == {"COMPLETE": 2, "RUNNING": 1} or states(url, ROPE) == {
        "COMPLETE": 1,
        "PRUNED": 1,
        "RUNNING": 1,
    }
    assert "2 finished trials already and 1 running in other workers (asked for 3); nothing to do" in (
        " ".join(capsys.readouterr().out.split())
    )


def test_a_bad_region_is_pruned(tmp_path: Path) -> None:
    results = tmp_path / "results"
    assert _tune(write_tiny(tmp_path), results, 3, variants=["position=rope"]) == 0
    # the same study, now searched in a hopeless region: a learning rate that cannot move the loss
    bad = write_tiny(
        tmp_path, tune={**TINY["tune"], "train.lr": {"type": "float", "low": 1e-9, "high": 1e-8, "log": True}}
    )
    _tune(bad, results, 6, variants=["position=rope"])
    study = optuna.load_study(study_name=ROPE, storage=default_storage(results))
    late = study.trials[3:]
    assert len(late) == 3 and all(t.state.name == "PRUNED" for t in late), [t.state for t in late]
    assert all(max(t.intermediate_values) == 10 for t in late)  # stopped at the first validation pass


def test_diverging_and_failing_trials_are_counted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    # grad_clip 0 and a huge learning rate: the loss overflows, every trial diverges
    path = write_tiny(
        tmp_path,
        base={**TINY["base"], "train.grad_clip": 0.0},
        tune={**TINY["tune"], "train.lr": {"type": "float", "low": 1e12, "high": 1e13, "log": True}},
    )
    code = _tune(path, results, 2, variants=["position=rope"])
    out = capsys.readouterr().out
    assert code == 1 and "no complete trial" in out and "Traceback" not in out
    study = optuna.load_study(study_name=ROPE, storage=default_storage(results))
    assert [t.state.name for t in study.trials] == ["FAIL", "FAIL"]
    assert {t.user_attrs["outcome"] for t in study.trials} == {"diverged"}
    with pytest.raises(AblateError, match="no complete trial"):
        run_cmd.run(str(path), None, [], results, workers=1, wandb="off", tuned=True)


def test_tune_then_tuned_run_then_report(tmp_path: Path) -> None:
    path, results = write_tiny(tmp_path), tmp_path / "results"
    assert _tune(path, results, 3) == 0
    assert run_cmd.run(str(path), None, [], results, workers=1, wandb="off", tuned=True) == 0
    url = default_storage(results)
    records = [json.loads(p.read_text()) for p in results.glob("tiny_tune/smoke+tuned/*/record.json")]
    assert len(records) == 4 and not list(results.glob("tiny_tune/smoke/*"))
    for rec in records:
        best = optuna.load_study(study_name=f"tiny_tune/smoke/copy/{rec['variant_label']}", storage=url).best_params
        assert rec["tuned_params"] == best and rec["profile"] == "smoke+tuned"
        assert rec["config"]["train"]["lr"] == best["train.lr"]
        assert rec["seed"] in (0, 1) and rec["status"] in TRAINED
    md = report_cmd.report(str(path), None, results, tmp_path / "reports").read_text()
    section = md.split("## Tuning")[1]
    row = next(line for line in section.splitlines() if line.startswith("| copy | rope |")).split("|")
    assert int(row[3]) + int(row[4]) == 3 and row[5].strip() == "0 (0)" and "validation" in section
    assert "Untuned vs tuned" in section and "smoke+tuned" in section
    for png in ("tiny_tune.smoke-tune-copy-rope-history.png",):
        assert (tmp_path / "reports" / "figures" / png).stat().st_size > 1000
    # the same section from the data file (its tuned runs and studies' summary), without the store or the storage
    shutil.move(results, tmp_path / "gone")
    again = report_cmd.report(
        str(path), None, results, tmp_path / "again", source=tmp_path / "reports" / "data" / "tiny_tune.tar.gz"
    )
    untimed = re.compile(r" on \d{4}-\d\d-\d\d \d\d:\d\d UTC ")
    assert untimed.sub("", again.read_text()) == untimed.sub("", md)


def test_a_tuned_run_refuses_an_override_of_a_tuned_key(tmp_path: Path) -> None:
    """``ablate run NAME --tuned train.lr=0.5``, where the studies searched ``train.lr``: the study's
    best value replaced the override silently (every run at lr 0.003..0.01, exit 0). Refused before
    any run; an override of a key the studies did not search is kept (``train.steps``)."""
    path, results = write_tiny(tmp_path), tmp_path / "results"
    assert _tune(path, results, 1) == 0
    before = sorted(p.name for p in results.iterdir())
    out = CliRunner().invoke(app, ["run", str(path), "--tuned", "train.lr=0.5", "--results-dir", str(results)])
    assert out.exit_code == 2, out.output
    err = out.stderr.strip()
    assert err.startswith("error: train.lr=0.5 sets a key the studies tuned") and "\n" not in err, err
    assert "tiny_tune/smoke/copy/" in err and "drop train.lr=0.5" in err and out.stdout == ""
    assert sorted(p.name for p in results.iterdir()) == before  # nothing ran: no smoke+tuned folder


def test_tuned_runs_of_other_overrides_are_set_aside_not_refused(tmp_path: Path) -> None:
    """Two ``ablate run --tuned`` grids with different overrides in one store: the second trained its
    runs, then exited 2 with ``the store holds 8 runs of tiny_tune/smoke from more than one config
    ...; pass the key=value overrides``, which failed the same way when passed; ``compare --tuned``
    too. The tuned runs of other overrides are set aside and counted, as untuned ones are."""
    path, results = write_tiny(tmp_path), tmp_path / "results"
    assert _tune(path, results, 1) == 0
    assert run_cmd.run(str(path), None, [], results, workers=1, wandb="off", tuned=True) == 0
    runner = CliRunner()
    again = runner.invoke(app, ["run", str(path), "--tuned", "train.steps=10", "--results-dir", str(results)])
    assert again.exit_code == 0, again.output
    assert len(list(results.glob("tiny_tune/smoke+tuned/*/record.json"))) == 8
    for overrides in ([], ["train.steps=10"]):  # each grid's 4 runs, the other's counted and set aside
        out = runner.invoke(app, ["compare", str(path), *overrides, "--tuned", "--results-dir", str(results)])
        assert out.exit_code == 0, out.output
        assert "| rope                  | 2/2 " in out.stdout and "more than one config" not in out.output
        assert "(4 other runs in" in out.stdout and "smoke+tuned were made with other overrides" in out.stdout


def test_an_interrupted_trial_is_not_a_finished_trial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C in a trial (``train`` raises it again from Lightning's ``SystemExit(1)``: the in-process
    Ctrl-C test of tests/e2e/test_newcomer_faults.py): exit 130 with the tune line
    (trials, storage; not "runs in the store"), the trial stored as FAIL with ``interrupted``, and
    not counted: the next ``--trials 2`` runs 2 finished trials besides it (it used to count it)."""
    from harness.tune import objective as objective_mod

    path, results = write_tiny(tmp_path), tmp_path / "results"
    real = objective_mod.train

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(objective_mod, "train", ctrl_c)
    out = CliRunner().invoke(
        app, ["tune", str(path), "--trials", "2", "--variant", "position=rope", "--results-dir", str(results)]
    )
    assert out.exit_code == 130, out.output
    assert out.stderr.strip() == (
        "interrupted: finished trials are in the storage (the interrupted one is not counted); "
        "run the same command again to continue"
    )
    url = default_storage(results)
    study = optuna.load_study(study_name=ROPE, storage=url)
    assert [(t.state.name, t.user_attrs.get("interrupted")) for t in study.trials] == [("FAIL", True)]
    monkeypatch.setattr(objective_mod, "train", real)
    assert _tune(path, results, 2, variants=["position=rope"]) == 0
    study = optuna.load_study(study_name=ROPE, storage=url)
    assert [t.state.name for t in study.trials].count("FAIL") == 1 and len(study.trials) == 3
    c = counts(study)
    assert (c["complete"] + c["pruned"], c["failed"], c["interrupted"]) == (2, 0, 1)
