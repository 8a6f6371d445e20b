"""The bad-input catalogue (docs/bad-inputs.md): the rows not already covered elsewhere, and a
check that every row of the catalogue names a test that exists.

Each bad input: one ``error:`` line that names the problem and the fix, exit code 2, nothing
written, nothing in the store changed; no run starts (``executors.run_grid`` is replaced by a
function that fails the test: the cli_isolated fixture and tests/helpers/cli.py).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
from pathlib import Path

import pytest
import yaml

from harness.cli import compare as compare_cmd
from harness.cli import inspect as inspect_cmd
from harness.cli import report as report_cmd
from harness.errors import AblateError
from harness.execution import gpus
from harness.execution import local as executors_cluster
from helpers.cli import assert_nothing_written, assert_refused, invoke, user_file

pytestmark = pytest.mark.usefixtures("cli_isolated")

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "docs" / "bad-inputs.md"


def _tiny(tmp_path: Path, **changes) -> Path:
    path = user_file(tmp_path)
    decl = yaml.safe_load(path.read_text())
    decl.update(changes)
    path.write_text(yaml.safe_dump(decl))
    return path


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# --- options of `ablate run` ---------------------------------------------------------------------

# without the slurm extra the engine itself is missing; with it, SLURM (sbatch) is missing here
SLURM_MISSING = (
    ["sbatch not found", "--submitit-cluster local"]
    if importlib.util.find_spec("submitit")
    else ["needs the submitit package", "ablate[slurm]"]
)


@pytest.mark.parametrize(
    "args, words",
    [
        (
            ["--retry", "failed,divergd"],
            [
                "--retry: 'divergd' is not a status that can be retried",
                "did you mean 'diverged'",
                "diverged, failed, timeout",
            ],
        ),
        (["--run-timeout", "0"], ["--run-timeout must be a positive number of seconds"]),
        (["--checkpoint-every", "-5"], ["--checkpoint-every must be 0", "or a positive number of seconds, got -5"]),
        (["--run-timeout", "nan"], ["--run-timeout must be a finite number of seconds, got nan", "leave the option"]),
        (["--run-timeout", "inf"], ["--run-timeout must be a finite number of seconds, got inf"]),
        (["--checkpoint-every", "nan"], ["--checkpoint-every must be a finite number of seconds, got nan"]),
        (["--checkpoint-every", "inf"], ["--checkpoint-every must be a finite number of seconds, got inf"]),
        (["--lease-timeout", "nan"], ["--lease-timeout must be a finite number of seconds, got nan"]),
        (["--lease-timeout", "-inf"], ["--lease-timeout must be a finite number of seconds, got -inf"]),
        (["--address", "auto"], ["--address is the Ray cluster to connect to; add --executor ray"]),
        (["--executor", "ray", "--address", "http//head"], ["not a Ray address", "ray://HOST:10001"]),
        (["--slurm-partition", "gpu"], ["--slurm-partition applies only to --executor slurm; add --executor slurm"]),
        (["--executor", "slurm"], SLURM_MISSING),
        (["--results-dir", "s3://bucket/ablate"], ["--results-dir s3://... is a URL", "shared filesystem"]),
    ],
)
def test_run_refuses_bad_execution_options(tmp_path, args, words):
    extra = [] if "--results-dir" in args else ["--results-dir", str(tmp_path / "results")]
    assert_refused(invoke("run", str(user_file(tmp_path)), *args, *extra), *words)
    assert_nothing_written(tmp_path / "results")


@pytest.mark.parametrize("engine", ["ray", "slurm"])
def test_missing_cluster_engine_says_which_extra_to_install(tmp_path, monkeypatch, engine):
    real = executors_cluster.importlib.util.find_spec
    monkeypatch.setattr(
        executors_cluster.importlib.util, "find_spec", lambda name: None if name in ("ray", "submitit") else real(name)
    )
    result = invoke("run", str(user_file(tmp_path)), "--executor", engine, "--results-dir", str(tmp_path / "results"))
    assert_refused(result, f"--executor {engine} needs the", f"pip install 'ablate[{engine}]'")
    assert_nothing_written(tmp_path / "results")


@pytest.mark.parametrize(
    "visible, count, args, words",
    [
        ("", 0, ["--gpus-per-run", "1"], ["--gpus-per-run 1 needs 1 GPU(s), none visible", "--gpus-per-run 0"]),
        ("0,1", 2, ["--workers", "3"], ["--workers 3 but only 2 GPU slot(s)", "--workers 2 or fewer"]),
        ("0", 1, ["--gpus-per-run", "2"], ["--gpus-per-run 2 needs 2 GPU(s), 1 visible (0)"]),
        # Grid Engine's NoDevFiles, and "0" where torch sees no GPU: every run trained on the CPU, exit 0
        ("NoDevFiles", None, ["--gpus-per-run", "1"], ["none visible (CUDA_VISIBLE_DEVICES='NoDevFiles'"]),
        ("0", None, ["--gpus-per-run", "1"], ["none visible (CUDA_VISIBLE_DEVICES='0', torch.cuda counts none)"]),
    ],
)
def test_gpu_requests_that_cannot_be_met(tmp_path, monkeypatch, visible, count, args, words):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    if count is not None:  # the GPUs torch would count on a GPU machine; None: this machine's (none)
        monkeypatch.setattr(gpus, "_cuda_count", lambda: count)
    assert_refused(invoke("run", str(user_file(tmp_path)), *args, "--results-dir", str(tmp_path / "results")), *words)
    assert_nothing_written(tmp_path / "results")


@pytest.mark.parametrize(
    "args, option",
    [
        (["--workers", "0"], "--workers"),
        (["--threads", "0"], "--threads"),
        (["--executor", "k8s"], "--executor"),
        (["--workers", str(2**31)], "--workers"),  # beyond every integer bound (harness.bounds.INT_MAX)
        (["--threads", "99999999999999999999"], "--threads"),
    ],
)
def test_option_values_the_parser_refuses(tmp_path, args, option):
    result = invoke("run", str(user_file(tmp_path)), *args, "--results-dir", str(tmp_path / "results"))
    assert result.exit_code == 2 and f"Invalid value for '{option}'" in result.output, result.output
    assert_nothing_written(tmp_path / "results")


def test_more_threads_than_cores_are_refused_before_any_run(tmp_path, monkeypatch):
    # --threads 100000 on 2 cores crashed every run with "can't start new thread", then a traceback
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    decl = str(user_file(tmp_path))
    words = ["--threads 3: more than the 2 cores here", "use --threads 2 or fewer"]
    assert_refused(invoke("run", decl, "--threads", "3", "--results-dir", str(tmp_path / "results")), *words)
    assert_refused(invoke("tune", decl, "--threads", "3", "--results-dir", str(tmp_path / "results")), *words)
    assert_refused(invoke("check", "position=rope", "--threads", "3"), *words)
    assert_refused(invoke("bench", "attention", "--threads", "3", "--out", str(tmp_path / "results")), *words)
    assert_nothing_written(tmp_path / "results")


@pytest.mark.parametrize(
    "engine,package",
    [(["--executor", "ray"], "ray"), (["--executor", "slurm", "--submitit-cluster", "local"], "submitit")],
)
def test_more_threads_than_cores_on_an_engine_started_here_are_refused(tmp_path, monkeypatch, engine, package):
    # a Ray cluster started here (no --address) and submitit's local cluster run on this machine's
    # cores: --threads 3 on 2 cores started a local Ray cluster of 3 CPUs
    pytest.importorskip(package)
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    results = tmp_path / "results"
    assert_refused(
        invoke("run", str(user_file(tmp_path)), "--threads", "3", *engine, "--results-dir", str(results)),
        "--threads 3: more than the 2 cores here",
    )
    assert_nothing_written(results)


def test_threads_are_bounded_where_the_engine_takes_cores_here():
    from harness.execution.local import on_this_machine
    from harness.run_options import RunOptions as O

    assert on_this_machine(O()) and on_this_machine(O(executor="ray"))
    assert on_this_machine(O(executor="slurm", cluster="local")) and on_this_machine(
        O(executor="slurm", cluster="debug")
    )
    assert not on_this_machine(O(executor="ray", address="10.0.0.1:6379")) and not on_this_machine(O(executor="slurm"))


# --- ablation files and task parameters ----------------------------------------------------------


def test_axis_value_the_registry_does_not_know(tmp_path):
    path = _tiny(tmp_path, axes={"model.position": ["sinusoidal", "rop"]}, baseline={"model.position": "sinusoidal"})
    assert_refused(
        invoke("run", str(path), "--results-dir", str(tmp_path / "results")),
        "variant 'rop'",
        "unknown positional encoding 'rop'",
        "did you mean 'rope'",
    )
    assert_nothing_written(tmp_path / "results")


def test_unknown_initialisation_is_refused_with_the_closest(tmp_path):
    result = invoke("run", str(user_file(tmp_path)), "model.init=xavir", "--results-dir", str(tmp_path / "results"))
    assert_refused(result, "unknown initialisation 'xavir'", "did you mean 'xavier'")
    assert_nothing_written(tmp_path / "results")


def test_yaml_tags_that_would_run_code_are_refused(tmp_path):
    path = tmp_path / "evil.yaml"
    marker = tmp_path / "pwned"
    path.write_text(f"name: !!python/object/apply:os.system ['touch {marker}']\n")
    assert_refused(invoke("run", str(path), "--results-dir", str(tmp_path / "results")), "evil.yaml", "not valid YAML")
    assert not marker.exists()
    assert_nothing_written(tmp_path / "results")


def test_training_length_below_the_task_minimum(tmp_path):
    result = invoke("run", str(user_file(tmp_path)), "train.seq_len=1", "--results-dir", str(tmp_path / "results"))
    assert_refused(result, "task 'copy' needs seq_len >= 2, got 1")
    assert_nothing_written(tmp_path / "results")


def test_padded_copy_too_short_for_a_problem_in_every_split(tmp_path):
    """padded_copy's splits are disjoint sets of problems: with one symbol, each length holds one
    string, and only from L = 18 does every split hold one."""
    decl = user_file(tmp_path)
    decl.write_text(decl.read_text().replace("copy:", "padded_copy:").replace("n_symbols: 8", "n_symbols: 1"))
    result = invoke("run", str(decl), "train.seq_len=16", "--results-dir", str(tmp_path / "results"))
    assert_refused(result, "task 'padded_copy' needs seq_len >= 18, got 16")
    assert_nothing_written(tmp_path / "results")


def _on_a_corpus(tmp_path: Path) -> Path:
    """The tiny declaration on the ``text`` task over a corpus of 20,000 characters (no data
    file needed): char splits of 18,000, 1,000 and 1,000, so rows of at most 17,999 tokens from
    train and 999 from val and test."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(("To be, or not to be, that is the question.\n" * 500)[:20_000])
    path = user_file(tmp_path)
    decl = yaml.safe_load(path.read_text())
    decl["tasks"] = {"text": {**decl["tasks"]["copy"], "params": {"path": str(corpus)}}}
    decl["tasks"]["text"]["primary"]["metric"] = "loss@x1"
    decl["tasks"]["text"]["primary"]["higher_is_better"] = False
    decl["tasks"]["text"]["config"] = {"train.seq_len": 16}
    path.write_text(yaml.safe_dump(decl))
    return path


@pytest.mark.parametrize("command", ["show", "run", "tune", "status"])
@pytest.mark.parametrize(
    "override, words",
    [
        # L = 16: 4000 x 16 = 64,000 tokens; the test split holds 1,000 characters
        (
            "eval.length_multipliers=[1,2,4,4000]",
            [
                "on task 'text'",
                "evaluation length 64000 tokens",
                "(4000 x train.seq_len=16)",
                "test split (999 tokens)",
                "eval.length_multipliers at most 62",
            ],
        ),
        (
            "train.seq_len=5000",
            ["train.seq_len=5000", "at most 999 tokens from its val split", "lower train.seq_len to at most 999"],
        ),
    ],
)
def test_lengths_beyond_what_a_task_holds(tmp_path, command, override, words):
    """Every length of every task of the grid is checked against the task's longest before any run."""
    out = ["--results-dir", str(tmp_path / "results")] if command != "show" else []
    result = invoke(command, str(_on_a_corpus(tmp_path)), override, *out)
    assert_refused(result, *words)
    assert_nothing_written(tmp_path / "results")


def test_synthetic_tasks_have_no_longest_length(tmp_path):
    """copy generates rows at any length: 4000 x L plans (and learned positions grow to cover it)."""
    from harness.experiment.ablation import load
    from harness.experiment.grid import plan

    _, specs = plan(load(str(user_file(tmp_path))), None, ["eval.length_multipliers=[1,4000]"], check_data=False)
    assert {s.config.eval_lengths()[-1] for s in specs} == {32_000}


# --- data files ----------------------------------------------------------------------------------


def test_data_file_with_the_wrong_checksum(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    (data / "tinyshakespeare.txt").write_text("To be, or not to be: not the corpus.\n")
    monkeypatch.setenv("ABLATE_DATA_DIR", str(data))
    result = invoke("run", "pe_extrapolation", "--profile", "smoke", "--results-dir", str(tmp_path / "results"))
    assert_refused(result, str(data / "tinyshakespeare.txt"), "sha256")
    assert_nothing_written(tmp_path / "results")
    assert (data / "tinyshakespeare.txt").read_text().startswith("To be")  # the user's file left alone


# --- the results folder --------------------------------------------------------------------------


def test_results_dir_that_cannot_be_created(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    assert_refused(
        invoke("run", str(user_file(tmp_path)), "--results-dir", str(blocker / "results")),
        "cannot create --results-dir",
        str(blocker / "results"),
    )
    assert blocker.read_text() == ""


def test_results_dir_that_is_not_writable(tmp_path, monkeypatch):
    store = tmp_path / "store"
    store.mkdir()
    real = os.access  # root ignores chmod: deny writing to the store the way a non-root user is denied
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == store and mode & os.W_OK else real(p, mode))
    assert_refused(invoke("run", str(user_file(tmp_path)), "--results-dir", str(store)), "is not writable")
    assert list(store.iterdir()) == []


@pytest.mark.parametrize("cmd", ["status", "compare", "report"])
def test_reading_commands_refuse_a_results_dir_that_is_a_file_or_unreadable(tmp_path, monkeypatch, cmd):
    store = tmp_path / "store"
    store.write_text("not a folder")
    assert_refused(invoke(cmd, "pe_extrapolation", "--results-dir", str(store)), "is not a folder")
    store.unlink()
    store.mkdir()
    real = os.access  # root ignores chmod: deny reading the way a non-root user is denied
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == store else real(p, mode))
    result = invoke(cmd, "pe_extrapolation", "--results-dir", str(store))  # the option parser refuses first
    assert result.exit_code == 2 and "is not readable" in result.output, result.output
    call = {
        "status": lambda: inspect_cmd.status("pe_extrapolation", None, store),
        "compare": lambda: compare_cmd.compare("pe_extrapolation", None, store),
        "report": lambda: report_cmd.report("pe_extrapolation", None, store, Path("reports")),
    }[cmd]
    with pytest.raises(AblateError, match="cannot be read"):  # and the command itself, called directly
        call()
    assert list(Path.cwd().iterdir()) == []  # no report written


def test_bad_input_leaves_an_existing_store_unchanged(tmp_path):
    store = tmp_path / "store"
    run = store / "mini" / "cpu" / "0123456789ab"
    run.mkdir(parents=True)
    (run / "record.json").write_text('{"status": "ok"}')
    (run / "notes.txt").write_text("keep me")
    before = _digest(store)
    path = user_file(tmp_path)
    for args in (["model.n_heads=3"], ["--retry", "bogus"], ["--gpus-per-run", "-1"]):
        assert invoke("run", str(path), *args, "--results-dir", str(store)).exit_code == 2
    assert _digest(store) == before


# --- the catalogue itself ------------------------------------------------------------------------


def test_every_catalogue_row_names_an_existing_test():
    rows = [line for line in CATALOGUE.read_text().splitlines() if re.match(r"^\|\s*\d+\s*\|", line)]
    assert len(rows) >= 25
    for row in rows:
        refs = re.findall(r"`(tests/[\w/]+\.py)::(\w+)", row)
        assert refs, row
        for file, name in refs:
            assert re.search(rf"^def {name}\(", (ROOT / file).read_text(), re.M), (file, name)
