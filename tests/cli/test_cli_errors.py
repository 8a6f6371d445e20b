"""The real ``ablate`` CLI on bad input: one clear message on stderr, exit code 2, nothing written.

Driven in-process through ``typer.testing.CliRunner`` (``harness.cli.app``) and, for the real exit
status of the installed script, through a subprocess. No test trains anything: every bad input
must be refused by the plan, before the first run starts.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cli import assert_nothing_written, assert_refused, invoke, user_file
from helpers.corpus import corpus_dir

pytestmark = pytest.mark.usefixtures("cli_isolated")

ABLATE = Path(sys.executable).parent / "ablate"


# --- help and read-only commands ----------------------------------------------------------------


def test_help_lists_the_commands():
    result = invoke("--help")
    assert result.exit_code == 0
    for cmd in ("list", "show", "run", "status", "compare", "report"):
        assert cmd in result.stdout


def test_version_and_short_help():
    from harness import __version__

    result = invoke("--version")
    assert result.exit_code == 0 and result.stdout == f"ablate {__version__}\n"
    assert invoke("-h").stdout == invoke("--help").stdout and "Usage" in invoke("run", "-h").stdout


def test_no_arguments_shows_help():
    result = invoke()
    assert result.exit_code in (0, 2)  # click's no_args_is_help exits 2 from click 8.2 on
    assert "Usage" in result.output


def test_list_shows_the_ablation_and_the_four_tasks():
    result = invoke("list")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "pe_extrapolation" in out and "7 variants x 2 tasks" in out
    for task in ("copy", "reverse", "associative_recall", "tinyshakespeare"):
        assert f"task {task} " in out
    flat = " ".join(out.split())  # the console wraps long lines
    described = re.findall(
        r"task \w+ \(v\d+, \w+\) — (.*?)(?= task \w+ \(v| plugin \S+ \S+ \(| \w+ \(\w+\.\w+\):|$)", flat
    )
    assert len(described) >= 4
    for text in described:
        assert text.endswith((".", "…")), text  # a first paragraph whole, or cut with a mark
    assert_nothing_written(Path("results"))


def test_show_prints_the_smoke_grid_and_writes_nothing(results):
    from harness.experiment.ablation import load
    from harness.experiment.grid import plan

    data_dir = corpus_dir()
    result = invoke("show", "pe_extrapolation", "--profile", "smoke")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "20 runs (smoke profile, seeds [0, 1])" in out
    assert "profile smoke (selected)" in out
    assert "baseline: sinusoidal" in out
    assert "axis model.position: sinusoidal, learned, rope, alibi, nope, learned_clamp" in out
    for spec in plan(load("pe_extrapolation"), "smoke", [], data_dir)[1]:
        assert spec.run_id in out
    assert result.stderr == ""
    assert_nothing_written(results)


@pytest.mark.parametrize("command", [["compare"], ["compare", "--metric", "acc@x9"], ["report"]])
def test_reading_a_store_that_does_not_exist_is_refused(results, command):
    # a typo'd --results-dir must not read as "no runs yet" or write an empty report
    result = invoke(command[0], "pe_extrapolation", *command[1:], "--results-dir", str(results))
    assert result.exit_code == 2, result.output
    assert "no runs of pe_extrapolation / cpu" in result.stderr and "does not exist" in result.stderr
    assert_nothing_written(results)


@pytest.mark.parametrize(
    "command,hint",
    [
        (["report"], "--profile smoke"),
        (["compare"], "--profile smoke"),
        (["plan", "--profile", "confirm", "--pilot", "cpu"], "--pilot smoke"),
    ],
)
def test_a_store_with_runs_of_another_profile_names_it(tmp_path, command, hint):
    """After `ablate run NAME --profile smoke`, `ablate report NAME` (default profile cpu) names the
    profile the store does hold; an empty profile folder and a tuned one are not named."""
    results = tmp_path / "results"
    (results / "pe_extrapolation" / "smoke" / "0123456789ab").mkdir(parents=True)
    (results / "pe_extrapolation" / "gpu").mkdir()
    (results / "pe_extrapolation" / "smoke+tuned" / "0123456789ab").mkdir(parents=True)
    assert_refused(
        invoke(command[0], "pe_extrapolation", *command[1:], "--results-dir", str(results)),
        "no runs of pe_extrapolation / cpu",
        f"; the store holds runs of pe_extrapolation in profile(s) smoke: pass {hint}",
    )


@pytest.mark.parametrize("command", [["compare"], ["report", "--wandb", "off"]])
def test_no_runs_names_the_data_file_of_the_committed_report(cli_isolated, results, command):
    """A fresh clone has no store: the report's own "Other metrics: `ablate compare NAME --profile
    confirm --metric NAME`" line was refused with only `run ... --profile confirm first` (about 20
    minutes of training), though the runs it reads are in reports/data/. The message names the file,
    and the option it gives works as printed; with overrides (another grid) it is not named."""
    repo = Path(__file__).resolve().parents[2]
    (cli_isolated / "reports" / "data").mkdir(parents=True)
    name = "head_split_control.confirm.tar.gz"
    (cli_isolated / "reports" / "data" / name).write_bytes((repo / "reports" / "data" / name).read_bytes())
    args = [command[0], "head_split_control", "--profile", "confirm", *command[1:], "--results-dir", str(results)]
    err = assert_refused(invoke(*args), "no runs of head_split_control / confirm")
    assert err.endswith(f"; or pass --from reports/data/{name} to read the runs the committed report was made from")
    again = invoke(*args, "--from", f"reports/data/{name}", *(["--out", "out"] if command[0] == "report" else []))
    assert again.exit_code == 0, again.output
    other = assert_refused(invoke(*args, "eval.n_examples=64"), "no runs of head_split_control / confirm")
    assert "--from" not in other


def test_compare_on_a_store_folder_without_runs_says_so(results):
    folder = results / "pe_extrapolation" / "cpu"
    folder.mkdir(parents=True)
    result = invoke("compare", "pe_extrapolation", "--results-dir", str(results))
    assert result.exit_code == 0, result.output
    assert "no finished runs of pe_extrapolation / cpu" in result.stdout


# --- bad input: exit 2, one message, nothing written ---------------------------------------------


@pytest.mark.parametrize(
    "overrides, words",
    [
        (["model.n_heads=3"], ["model.d_model=64", "model.n_heads=3", "not divisible"]),
        (["model.positon=rope"], ["unknown config key 'model.positon'", "did you mean 'model.position'"]),
        (["train.steps=-5"], ["invalid override: train.steps", "greater than 0", "-5"]),  # every variant's
        (["train.steps=abc"], ["train.steps", "valid integer", "'abc'"]),
        (["train.steps=true"], ["train.steps", "not a boolean"]),
        (["train.steps=99999999999999999999"], ["train.steps", "from 1 to 2147483647", "99999999999999999999"]),
        (["train.precision=fp16"], ["train.precision", "'fp16'"]),
        (
            ["model.max_len=40"],
            ["model.position=learned", "can represent 40 positions", "evaluates at 64 tokens", "model.max_len"],
        ),
        (["model.position=rope"], ["model.position is an axis of pe_extrapolation", "only_variants"]),
        (["noequals"], ["'noequals' is not of the form key=value"]),
        (["=5"], ["is not of the form key=value"]),
        (["model=5"], ["config key 'model' is a section", "dotted (e.g. model.d_model)"]),
        (["eval.length_multipliers=1,2"], ["invalid override", "valid list", "write a list in brackets: [1,2]"]),
        (["eval.probes=[leakage,grad_norn]"], ["invalid override: eval.probes.1"]),  # an item of the override
        (
            ["eval.length_multipliers=[1,2]"],  # acc@x4, the primary, needs 4: the fix is an override too
            ["primary metric 'acc@x4' is not produced", "e.g. eval.length_multipliers=[1,2,4]"],
        ),
    ],
)
def test_run_refuses_bad_overrides(results, overrides, words):
    result = invoke(
        "run", "pe_extrapolation", *overrides, "--profile", "cpu", "--results-dir", str(results), "--wandb", "off"
    )
    assert_refused(result, *words)
    assert_nothing_written(results)


def test_run_unknown_ablation_suggests_the_closest(results):
    result = invoke("run", "pe_extrapolatoin", "--results-dir", str(results))
    assert_refused(result, "unknown ablation 'pe_extrapolatoin'", "did you mean 'pe_extrapolation'")
    assert_nothing_written(results)


def test_run_unknown_profile_lists_the_profiles(results):
    result = invoke("run", "pe_extrapolation", "--profile", "laptop", "--results-dir", str(results))
    assert_refused(result, "no profile 'laptop'", "profiles: smoke, cpu, confirm, init, long, gpu, reproduce")
    assert_nothing_written(results)


@pytest.mark.parametrize("cmd", ["show", "compare", "status", "report"])
def test_other_commands_refuse_an_unknown_ablation(results, cmd):
    extra = [] if cmd == "show" else ["--results-dir", str(results)]
    result = invoke(cmd, "pe_extrapolatoin", *extra)
    assert_refused(result, "unknown ablation 'pe_extrapolatoin'", "did you mean 'pe_extrapolation'")
    assert_nothing_written(results)


@pytest.mark.parametrize("cmd", ["status", "show"])
def test_an_integer_too_large_for_torch_is_refused_by_every_command(results, cmd):
    # it passed validation and every run failed in the DataLoader with an OverflowError
    extra = [] if cmd == "show" else ["--results-dir", str(results)]
    result = invoke(cmd, "pe_extrapolation", "--profile", "smoke", *extra, "train.steps=99999999999999999999")
    assert_refused(result, "train.steps", "from 1 to 2147483647 (2**31 - 1)")
    assert_nothing_written(results)


def test_show_refuses_bad_overrides_too():
    assert_refused(invoke("show", "pe_extrapolation", "model.n_heads=3"), "model.n_heads=3")
    assert_nothing_written(Path("results"))


def test_unknown_component_name_in_a_user_file_suggests_the_closest(tmp_path, results):
    path = user_file(tmp_path, **{"model.position": "rop"})
    result = invoke("run", str(path), "--results-dir", str(results), "--wandb", "off")
    assert_refused(result, "unknown positional encoding 'rop'", "did you mean 'rope'")
    assert_nothing_written(results)


def test_unknown_config_key_in_a_user_file_names_the_file(tmp_path, results):
    path = user_file(tmp_path, **{"model.positon": "rope"})
    result = invoke("run", str(path), "--results-dir", str(results), "--wandb", "off")
    assert_refused(result, "mini.yaml", "base: unknown config key 'model.positon'", "did you mean 'model.position'")
    assert_nothing_written(results)


def test_malformed_user_file(tmp_path, results):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\naxes: [unclosed\n")
    assert_refused(invoke("run", str(path), "--results-dir", str(results)), "bad.yaml", "not valid YAML")
    assert_nothing_written(results)


def test_missing_data_file_and_no_network_says_where_to_put_it(tmp_path, results, monkeypatch):
    empty, cache = tmp_path / "empty", tmp_path / "cache"
    empty.mkdir()
    cache.mkdir()
    monkeypatch.setenv("ABLATE_DATA_DIR", str(empty))
    monkeypatch.setenv("ABLATE_CACHE_DIR", str(cache))
    result = invoke("run", "pe_extrapolation", "--profile", "smoke", "--results-dir", str(results), "--wandb", "off")
    assert_refused(
        result,
        "tinyshakespeare.txt could not be found or downloaded",
        "network disabled",
        str(empty / "tinyshakespeare.txt"),
        str(cache / "tinyshakespeare.txt"),
        "curl",
    )
    assert_nothing_written(results)
    assert list(cache.iterdir()) == []


def test_results_dir_that_is_a_file_is_refused(tmp_path):
    # the grid is valid; the store is not: refused before any run, the file left alone
    store = tmp_path / "store"
    store.write_text("not a folder")
    result = invoke("run", str(user_file(tmp_path)), "--results-dir", str(store), "--wandb", "off")
    assert_refused(result, "exists and is not a folder")
    assert store.read_text() == "not a folder"


# --- the installed script: the real exit status --------------------------------------------------


def _ablate(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    if not ABLATE.exists():
        pytest.skip(f"no ablate script next to {sys.executable}")
    return subprocess.run([str(ABLATE), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_script_exit_code_for_an_unknown_ablation(tmp_path, results):
    proc = _ablate("run", "pe_extrapolatoin", "--results-dir", str(results), cwd=Path.cwd())
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip() == (
        "error: unknown ablation 'pe_extrapolatoin' (did you mean 'pe_extrapolation'?); run `ablate list` to see them"
    )
    assert_nothing_written(results)


def test_script_exit_code_for_heads_not_dividing_d_model(tmp_path, results):
    # a --results-dir that cannot be created: should the check regress, the run still cannot start
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    proc = _ablate(
        "run",
        "pe_extrapolation",
        "model.n_heads=3",
        "--results-dir",
        str(blocker / "results"),
        "--wandb",
        "off",
        cwd=Path.cwd(),
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    err = proc.stderr.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err
    assert "model.d_model=64" in err and "model.n_heads=3" in err
    assert_nothing_written(results)


@pytest.mark.parametrize(
    "command,module,fn,words",
    [
        (["run"], "run", "run", ["finished runs are in the store"]),
        (["report"], "output", "check_wandb", ["the report may be incomplete", "no run in the store changed"]),
        (["compare"], "output", "selection", []),  # report and compare are commands: what they call first
    ],
)
def test_ctrl_c_says_what_the_command_kept(tmp_path, monkeypatch, command, module, fn, words):
    """Ctrl-C: exit 130 and one line that fits the command (report and compare used to say
    "finished runs are in the store"; tune's line is tested in tests/tune/test_tune.py)."""
    import importlib

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(importlib.import_module(f"harness.cli.{module}"), fn, ctrl_c)
    out = invoke(*command, str(user_file(tmp_path)), "--results-dir", str(tmp_path / "r"))
    assert out.exit_code == 130, out.output
    err = out.stderr.strip()
    assert err.startswith("interrupted") and "\n" not in err, err
    for w in words:
        assert w in err, (w, err)
    if command != ["run"]:
        assert "finished runs" not in err


@pytest.mark.parametrize("command", ["run", "reproduce"])
def test_workers_help_says_how_the_default_is_chosen(command):
    """It said "default: CPU cores"; the default is one per GPU slot, else cores / --threads, or 1
    for a grid too short to pay for a pool (harness.execution.gpus.default_cpu_workers)."""
    result = invoke(command, "--help")
    assert result.exit_code == 0
    text = " ".join(result.stdout.replace("│", " ").split())
    assert "default: CPU cores" not in text
    for words in ("one per GPU slot", "cores / --threads", "too short to pay for a process pool"):
        assert words in text, (words, text)
