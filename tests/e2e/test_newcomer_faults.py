"""What a newcomer's cold tries of sessions 5 and 6 broke (bad input reaching runs, a rerun that hid
failed runs, Ctrl-C that let workers go on, an empty path read as the current folder), each as the
input that showed it, with the behaviour expected."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from harness.cli import output
from harness.config import parse_overrides
from harness.errors import AblateError
from harness.execution.launch import check_options
from harness.experiment.ablation import available
from harness.experiment.ablation import load as load_ablation
from harness.experiment.declaration import load_yaml
from harness.experiment.grid import plan
from harness.run_options import RunOptions
from helpers.cli import assert_nothing_written, assert_refused, invoke, user_file
from helpers.corpus import CORPUS_DIR, needs_corpus
from helpers.tiny_grid import write_tiny

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.usefixtures("cli_isolated")
@pytest.mark.parametrize(
    "args, words",
    [
        (["--devices", "abc"], ["--devices abc --strategy auto:"]),
        (["--strategy", "bogus"], ["--devices 1 --strategy bogus:", "bogus"]),
    ],
)
def test_lightning_options_lightning_refuses(tmp_path, args, words):
    results = tmp_path / "results"
    assert_refused(invoke("run", str(user_file(tmp_path)), *args, "--results-dir", str(results)), *words)
    assert_nothing_written(results)


@pytest.mark.usefixtures("cli_isolated")
def test_wandb_online_without_credentials(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc
    monkeypatch.delenv("NETRC", raising=False)
    results, decl = tmp_path / "results", str(user_file(tmp_path))
    err = assert_refused(
        invoke("run", decl, "--wandb", "online", "--results-dir", str(results)),
        "--wandb online needs W&B credentials",
    )
    assert "ablate sync" in err
    assert not list(results.rglob("record.json"))
    out = tmp_path / "reports"
    reported = invoke("report", decl, "--wandb", "online", "--results-dir", str(results), "--out", str(out))
    assert_refused(reported, "--wandb online needs W&B credentials")  # as run: before the report, not after
    assert not out.exists()


@pytest.mark.usefixtures("cli_isolated")
def test_wandb_online_with_a_netrc_login_is_accepted(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("NETRC", raising=False)
    (tmp_path / ".netrc").write_text("machine api.wandb.ai\n  login user\n  password 0123456789abcdef\n")
    (tmp_path / ".netrc").chmod(0o600)
    output.check_wandb("online")  # no error: `wandb login` wrote this


@pytest.mark.usefixtures("cli_isolated")
def test_a_yaml_file_that_is_not_utf8(tmp_path):
    bad = tmp_path / "binary.yaml"
    bad.write_bytes(b"\xff\xfe\x00bin")
    assert_refused(invoke("show", str(bad)), "binary.yaml is not UTF-8 text (byte 0)")


@pytest.mark.usefixtures("cli_isolated")
def test_a_folder_or_a_file_that_is_not_yaml(tmp_path):
    (tmp_path / "y").mkdir()
    assert_refused(invoke("show", str(tmp_path / "y")), "is a folder; pass an ablation's YAML file")
    (tmp_path / "plainfile").write_text("name: x\n")
    assert_refused(invoke("show", str(tmp_path / "plainfile")), "plainfile is not a .yaml file")


@pytest.mark.usefixtures("cli_isolated")
def test_a_registered_name_wins_over_a_folder_of_that_name(cli_isolated):
    (cli_isolated / "mqar_pairs_8").mkdir()  # a registered ablation on a synthetic task: no data file
    assert invoke("show", "mqar_pairs_8").exit_code == 0


@pytest.mark.usefixtures("cli_isolated")
def test_a_key_given_twice_in_a_declaration(tmp_path):
    path = user_file(tmp_path)
    text = path.read_text().replace("model.d_model: 32", "model.d_model: 32\n  model.d_model: 64")
    path.write_text(text)
    assert_refused(invoke("show", str(path)), "key 'model.d_model' is given twice", "(line ")


@pytest.mark.usefixtures("cli_isolated")
def test_an_override_given_twice(tmp_path):
    assert_refused(
        invoke("show", str(user_file(tmp_path)), "train.steps=5", "train.steps=7"),
        "override 'train.steps' is given twice (5 and 7)",
    )


def test_parsers_keep_what_was_accepted():
    assert parse_overrides(["train.steps=5", "model.d_model=64"]) == {"train.steps": 5, "model.d_model": 64}
    assert load_yaml("a: 1\nb: {c: 2}\n") == {"a": 1, "b": {"c": 2}}
    with pytest.raises(Exception, match="given twice"):
        load_yaml("a: 1\nb: {c: 2, c: 3}\n")


def test_default_devices_need_no_lightning_check(monkeypatch):
    """The common case (one device, strategy auto) builds no Trainer before the runs."""
    import harness.execution.launch as launch_mod

    def boom(*a, **k):
        raise AssertionError("checked")

    monkeypatch.setattr(launch_mod, "check_devices", boom)
    check_options(RunOptions(), Path("/tmp/ablate-unused-results"), 1, 1)
    with pytest.raises(AssertionError):
        check_options(RunOptions(devices="abc"), Path("/tmp/ablate-unused-results"), 1, 1)


def test_a_rerun_after_failed_runs_says_so_and_exits_1(tmp_path, monkeypatch):
    """The first run of a grid fails every run; the same command again must not print a clean
    exit 0 with 'no finished runs': it lists them, prints the --retry hint and exits 1."""
    from harness.cli import run as run_cmd
    from harness.training import loop

    def broken_train(*args, **kwargs):
        raise RuntimeError("boom in training")

    monkeypatch.setattr(loop, "train", broken_train)
    decl = write_tiny(tmp_path, steps=10, seeds=(0,))
    results = tmp_path / "results"
    assert run_cmd.run(str(decl), None, [], results, workers=1) == 1
    lines: list[str] = []
    monkeypatch.setattr(output.console, "print", lambda *a, **k: lines.append(" ".join(map(str, a))))
    assert run_cmd.run(str(decl), None, [], results, workers=1) == 1
    text = "\n".join(lines)
    assert "0 to run" in text and "boom in training" in text
    assert "worker(s)" not in text and "W&B" not in text  # nothing starts: no pool or W&B run described
    assert "2 run(s) did not finish" in text and "--retry failed` runs them again" in text
    assert "a failure the config causes (an overflow, a shape error: see the traceback) fails again" in text


def _tree(results: Path) -> dict[str, float]:
    return {str(p): p.stat().st_mtime for p in results.rglob("*") if p.is_file()}


@pytest.mark.skipif(sys.platform != "linux", reason="process groups and SIGINT as a terminal sends it")
@pytest.mark.parametrize("workers", ["2", "1"])
def test_ctrl_c_stops_the_workers_at_once(tmp_path, workers):
    """Ctrl-C (SIGINT to the terminal's process group) on a 2-worker grid, or on one run in the
    process itself (where Lightning turns it into exit 1): ``ablate`` says so and exits 130, and
    nothing goes on training or starts a queued run: nothing in the store changes after."""
    decl = write_tiny(tmp_path, steps=20000, val_every=2000, seeds=(0, 1, 2), positions=("sinusoidal", "learned"))
    results = tmp_path / "results"
    env = {**os.environ, "PYTHONPATH": str(REPO), "WANDB_MODE": "disabled"}
    cmd = [sys.executable, "-m", "harness.cli", "run", str(decl), "--workers", workers, "--wandb", "off"]
    proc = subprocess.Popen(
        [*cmd, "--results-dir", str(results)],
        env=env,
        start_new_session=True,
        # a shell without job control starts background commands with SIGINT ignored, and the
        # child would inherit that (as under CI's runner): give it the default a terminal gives
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and len(list(results.glob("tiny/cpu/*/progress.json"))) < int(workers):
        assert proc.poll() is None, proc.stdout.read().decode()
        time.sleep(0.2)
    assert list(results.glob("tiny/cpu/*/progress.json")), "no run started in 180 s"
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted: finished runs are in the store" in out.decode(), out.decode()
    time.sleep(2)  # a worker left alive would write a progress.json every 2 s
    before = _tree(results)
    time.sleep(4)
    assert _tree(results) == before


DECL = "DECL"  # replaced by the path of a user file


@pytest.mark.usefixtures("cli_isolated")
@pytest.mark.parametrize(
    "args, words",
    [
        (["run", DECL, "--results-dir", ""], "--results-dir is empty (it would mean the current folder)"),
        (["run", DECL, "--results-dir", "  "], "--results-dir is empty (only blanks: '  ')"),
        (["status", DECL, "--results-dir", ""], "--results-dir is empty"),
        (["compare", DECL, "--results-dir", ""], "--results-dir is empty"),
        (["report", DECL, "--results-dir", ""], "--results-dir is empty"),
        (["plan", DECL, "--results-dir", ""], "--results-dir is empty"),
        (["tune", DECL, "--results-dir", ""], "--results-dir is empty"),
        (["reproduce", "--dry-run", "--results-dir", ""], "--results-dir is empty"),
        (["sync", "--results-dir", ""], "--results-dir is empty"),
        (["compare", DECL, "--from", ""], "--from is empty"),
        (["report", DECL, "--from", ""], "--from is empty"),
        (["report", DECL, "--out", ""], "--out is empty"),
        (["report", "--all", "--out", ""], "--out is empty"),
        (["bench", "attention", "--out", ""], "--out is empty"),
        (["run", DECL, "--storage", ""], "--storage is empty"),
        (["tune", DECL, "--storage", ""], "--storage is empty"),
        (["report", DECL, "--storage", ""], "--storage is empty"),
        (["list", "--plugin", ""], "--plugin '': not a module name"),
        (["show", ""], "the ablation name '' is empty"),
        (["run", " "], "the ablation name ' ' is empty"),
    ],
)
def test_an_empty_path_is_refused_not_read_as_the_current_folder(tmp_path, args, words):
    """``--results-dir ""`` (an unset shell variable) used to make the current folder the run
    store (``ablate sync --results-dir ""`` scanned it, exit 0); every path a command takes is
    refused when empty, before anything is read or written."""
    decl = str(user_file(tmp_path))
    assert_refused(invoke(*[decl if a == DECL else a for a in args]), words)
    assert_nothing_written(tmp_path / "results")


@pytest.mark.usefixtures("cli_isolated")
@pytest.mark.parametrize(
    "overrides, words",
    [
        (
            ["train.warmup_steps=2000"],
            ["train.warmup_steps=2000 is greater than train.steps=1000", "never reach train.lr", "at most 1000"],
        ),
        (
            ["train.steps=50"],  # the default warm-up (100) and validation interval (100) of a quick try
            ["train.warmup_steps=100 is greater than train.steps=50"],
        ),
        (
            ["train.steps=50", "train.warmup_steps=5"],
            ["train.val_every=100 is greater than train.steps=50", "only once, at the last step", "at most 50"],
        ),
    ],
)
def test_a_warmup_or_validation_interval_beyond_the_step_budget(tmp_path, overrides, words):
    """A warm-up longer than ``train.steps`` never reaches the learning rate; a validation interval
    longer than it validates only at the last step (no curve, a convergence target checked once):
    refused by every command that plans the grid, before anything runs."""
    decl = str(user_file(tmp_path))
    for command in (["show"], ["run", "--results-dir", str(tmp_path / "results")], ["tune"]):
        assert_refused(invoke(command[0], decl, *overrides, *command[1:]), *words)
    assert_nothing_written(tmp_path / "results")


@pytest.mark.usefixtures("cli_isolated")
def test_a_schedule_that_fills_the_budget_is_accepted(tmp_path):
    result = invoke("show", str(user_file(tmp_path)), "train.steps=50", "train.warmup_steps=50", "train.val_every=50")
    assert result.exit_code == 0, result.output


@pytest.mark.usefixtures("cli_isolated")
def test_a_tuning_range_beyond_the_step_budget(tmp_path):
    """A warm-up range the declaration gives is refused when it exceeds ``train.steps``; the default
    range (0..300) is capped at ``train.steps`` for each study (a 30-step grid searches 0..30)."""
    from harness.experiment.ablation import load
    from harness.experiment.search_space import DEFAULT_SPACE
    from harness.tune.studies import plan_studies

    path = user_file(tmp_path, **{"train.steps": 30, "train.val_every": 10, "train.warmup_steps": 5})
    _, plans = plan_studies(load(str(path)), None)
    assert DEFAULT_SPACE["train.warmup_steps"].high == 300
    assert [p.space["train.warmup_steps"].high for p in plans] == [30, 30]
    assert all(p.space["train.lr"] == DEFAULT_SPACE["train.lr"] for p in plans)

    decl = yaml.safe_load(path.read_text())
    decl["tune"] = {"train.warmup_steps": {"type": "int", "low": 0, "high": 40}}
    path.write_text(yaml.safe_dump(decl))
    assert_refused(
        invoke("tune", str(path), "--results-dir", str(tmp_path / "results")),
        "tune: train.warmup_steps=40 (int in [0, 40]) is not a valid value",
        "train.warmup_steps=40 is greater than train.steps=30",
    )
    assert_nothing_written(tmp_path / "results")


@pytest.mark.parametrize("name", sorted(available()))
def test_every_registered_profile_plans(name):
    """Every profile of every registered ablation passes the checks made before a run (no data read)."""
    abl = load_ablation(name)
    for profile in abl.profiles:
        assert plan(abl, profile, check_data=False)[1]


@pytest.mark.usefixtures("cli_isolated")
@pytest.mark.parametrize(
    "axes, baseline, label",
    [
        ({"attention.kernel": ["sdpa"]}, {"attention.kernel": "sdpa"}, "'sdpa'"),
        (
            {"attention.kernel": ["sdpa"], "model.position": ["rope"]},
            {"attention.kernel": "sdpa", "model.position": "rope"},
            "'kernel=sdpa,position=rope'",
        ),
    ],
)
def test_a_grid_of_one_point_is_refused(tmp_path, axes, baseline, label):
    """Axes that give one variant left nothing to compare; the grid was trained and its table held
    the baseline alone. Refused when the declaration loads, by every command."""
    path = user_file(tmp_path)
    decl = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**decl, "axes": axes, "baseline": baseline}))
    results = str(tmp_path / "results")
    for args in (["show"], ["run", "--results-dir", results], ["report", "--results-dir", results], ["tune"]):
        assert_refused(
            invoke(args[0], str(path), *args[1:]),
            f"the grid has one point, the baseline {label}, so nothing is compared",
            "needs at least 2 variants: the baseline and one to compare",
        )
    assert_nothing_written(tmp_path / "results")


def test_the_aa_check_keeps_its_identical_arms():
    """An A/A check's arms differ only in train.seed_salt: several points, all compared."""
    abl = load_ablation("aa_check")
    assert abl.identical_arms and len(abl.variants()) == 4


@pytest.mark.parametrize(
    "args",
    [["list"], ["show", "mqar_pairs_8"], ["run", "--help"], ["status"]],
)
def test_a_reader_that_leaves_ends_the_command_quietly(tmp_path, args):
    """``ablate list | head -1``: the reader closes the pipe before the command writes. The command
    ends as ``git log | head -1`` does in a shell, exit status 141 (128 + SIGPIPE), with nothing on
    stderr (it used to exit 1, click's and rich's choice)."""
    if args == ["status"]:
        args = ["status", "mqar_pairs_8", "--results-dir", str(tmp_path / "results")]
    env = {**os.environ, "PYTHONPATH": str(REPO), "ABLATE_DISABLE_PLUGIN_AUTOLOAD": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # before the interpreter has even started: its first write finds no reader
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert err == ""  # and 141, not 0: the command did write (a command that prints nothing exits 0)


@pytest.mark.usefixtures("cli_isolated")
def test_a_file_of_ones_own_may_not_take_a_registered_name(tmp_path):
    """An edited copy of ablations/pe_extrapolation.yaml kept as ``name: pe_extrapolation`` wrote its
    runs into RESULTS/pe_extrapolation beside the registered grid's, and each report counted the
    other's as runs made with other overrides. Refused unless the file is the registered one (or a
    byte-for-byte copy of it: the same declaration)."""
    registered = available()["mqar_pairs_8"]  # on a synthetic task: no data file
    own = tmp_path / "mine" / "mqar_pairs_8.yaml"
    own.parent.mkdir()
    own.write_bytes(registered.read_bytes())
    assert invoke("show", str(own)).exit_code == 0
    edited = registered.read_text().replace("seeds: [0, 1]", "seeds: [0, 1, 2]", 1)
    assert edited != registered.read_text()
    own.write_text(edited)
    results = str(tmp_path / "results")
    for args in (["show"], ["run", "--results-dir", results], ["status", "--results-dir", results], ["tune"]):
        assert_refused(
            invoke(args[0], str(own), *args[1:]),
            f"ablation file {own} declares name 'mqar_pairs_8', the name of the registered ablation {registered}",
            "rename yours (name: my_mqar_pairs_8, in my_mqar_pairs_8.yaml)",
        )
    assert_nothing_written(tmp_path / "results")
    assert invoke("show", str(registered)).exit_code == 0 and invoke("show", "mqar_pairs_8").exit_code == 0


def test_a_wandb_login_counts_for_auto_online_and_sync(tmp_path, monkeypatch):
    """``wandb login`` (a .netrc entry, no WANDB_API_KEY): ``--wandb auto`` logs online, ``--wandb
    online`` is accepted, and ``ablate sync`` uploads (it said "uploading needs WANDB_API_KEY");
    without it, offline, refused, refused. One helper decides: harness/credentials.py."""
    from harness.cli.options import wandb_mode
    from harness.training import wandb_upload as wandb_sync

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("NETRC", raising=False)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    store = tmp_path / "store"
    waiting = store / "tiny" / "cpu" / "r1" / "wandb" / "offline-run-20250101_000000-r1"
    waiting.mkdir(parents=True)
    (waiting / "run-r1.wandb").write_bytes(b":W&B\xe1\xbe\x00" + bytes(64))  # W&B's header, then records
    uploads = []
    monkeypatch.setattr(
        wandb_sync.subprocess, "run", lambda cmd, **kw: uploads.append(cmd) or SimpleNamespace(returncode=0)
    )

    assert wandb_mode("auto") == "offline"
    with pytest.raises(AblateError, match="needs W&B credentials"):
        output.check_wandb("online")
    with pytest.raises(AblateError, match="uploading needs W&B credentials, WANDB_API_KEY or `wandb login`"):
        wandb_sync.sync(store, echo=lambda line: None)
    assert uploads == []

    (tmp_path / ".netrc").write_text("machine api.wandb.ai\n  login user\n  password 0123456789abcdef\n")
    assert wandb_mode("auto") == "online"
    output.check_wandb("online")
    assert wandb_sync.sync(store, echo=lambda line: None) == 0
    assert len(uploads) == 1 and "sync" in uploads[0] and str(waiting) in uploads[0]


def _edited(tmp_path: Path, **changes) -> Path:
    """The user file of :func:`helpers.cli.user_file` with the top-level keys ``changes`` replaced."""
    path = user_file(tmp_path)
    path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), **changes}))
    return path


@pytest.mark.usefixtures("cli_isolated")
@pytest.mark.parametrize(
    "changes, words",
    [
        (
            {"profiles": {"../../escaped": {"seeds": [0]}}, "default_profile": "../../escaped"},
            ["profile name '../../escaped' is not allowed", "it becomes a folder of the store"],
        ),
        ({"profiles": {"..": {"seeds": [0]}}, "default_profile": ".."}, ["profile name '..' is not allowed"]),
        (
            {"profiles": {"cpu": {"seeds": [0]}, "cpu+tuned": {"seeds": [1]}}},
            ["profile name 'cpu+tuned' is not allowed: '+' is reserved", "stores a profile P's tuned runs as P+tuned"],
        ),
    ],
)
def test_a_name_that_is_not_a_folder_name_is_refused(tmp_path, changes, words):
    """A profile named ``../../escaped`` wrote its run folders to RESULTS/../../escaped, one named
    ``..`` into the results root, one named ``cpu+tuned`` into the store of ``cpu``'s tuned runs.
    Ablation, profile and task names are refused unless letters, digits, '_', '.', '-' (no leading dot)."""
    path = _edited(tmp_path, **changes)
    results = tmp_path / "results" / "a" / "b"
    for args in (["show"], ["run", "--results-dir", str(results)], ["tune"]):
        assert_refused(invoke(args[0], str(path), *args[1:]), *words, "use ASCII letters and digits, '_', '.' and '-'")
    assert_nothing_written(tmp_path / "results")
    assert not (tmp_path / "escaped").exists()


def test_every_registered_name_is_a_folder_name():
    """The names the rule refuses are none that a registered ablation, profile or task uses."""
    from harness.experiment.declaration import check_name

    for name in available():
        abl = load_ablation(name)
        for kind, names in (("ablation", [abl.name]), ("profile", abl.profiles), ("task", abl.tasks)):
            assert [n for n in names if check_name(kind, n) != n] == []
    with pytest.raises(ValueError, match="is not allowed"):
        check_name("ablation", ".hidden")


@pytest.mark.usefixtures("cli_isolated")
@pytest.mark.parametrize(
    "values, words",
    [
        ([2, "2"], ["axis 'model.n_heads' gives 2 and '2', both the variant '2'; each value must appear once"]),
        (
            [2, "02"],
            [
                "variants '2' and '02' on task 'copy' are the same config once validated (model.n_heads=2 and '02')",
                "so their runs would have one run id",
            ],
        ),
    ],
)
def test_two_axis_values_that_are_one_variant_are_refused(tmp_path, values, words):
    """``model.n_heads: [4, "4"]`` passed the repeat check (4 != "4" in YAML) though both are one
    variant: the run ids appeared twice and both trained into one folder. Repeats are found on the
    labels (at load) and on the validated configs (when the grid is planned)."""
    path = _edited(tmp_path, axes={"model.n_heads": values}, baseline={"model.n_heads": 2})
    results = str(tmp_path / "results")
    for args in (["show"], ["run", "--results-dir", results], ["tune"]):
        assert_refused(invoke(args[0], str(path), *args[1:]), *words)
    assert_nothing_written(tmp_path / "results")


_COPY = {"params": {"n_symbols": 8}, "config": {"train.seq_len": 8}, "primary": {"metric": "acc@x1", "sesoi": 0.05}}


@pytest.mark.usefixtures("cli_isolated")
@pytest.mark.parametrize(
    "role, bound, words",
    [
        (
            "target",
            {"metric": "acc"},
            "acc: give exactly one bound, min (the value must be >= min) or max (<= max); none",
        ),
        ("gate", {"metric": "acc@x1"}, "gate: acc@x1: give exactly one bound"),
        (
            "target",
            {"metric": "acc", "min": 0.5, "max": 0.9},
            "give exactly one bound, min (the value must be >= min) or max (<= max); both are given",
        ),
        (
            "target",
            {"metric": "acc", "min": 2},
            "tasks.copy.target: acc min: 2 cannot be reached: the best value of acc is 1",
        ),
        (
            "gate",
            {"metric": "exact@x1", "min": 1.5},
            "exact@x1 min: 1.5 cannot be reached: the best value of exact is 1",
        ),
        (
            "target",
            {"metric": "loss", "max": 0},
            "loss max: 0 is at or below 0, the lowest value of loss (nats per scored token), so no run reaches it",
        ),
        (
            "gate",
            {"metric": "acc@x1", "min": 0},
            "acc@x1 min: 0 is at or below 0, the lowest value of acc (fraction of scored tokens right), so "
            "every run meets it",
        ),
        (
            "target",
            {"metric": "acc", "max": 0.9},
            "acc is higher-is-better, so its bound is a min; max: 0.9 would be met by a run that did not learn",
        ),
        ("gate", {"metric": "loss@x1", "min": 2.5}, "loss@x1 is lower-is-better, so its bound is a max"),
        # a NaN bound was read back from a record as none (a run never finished); inf: every run meets it
        ("target", {"metric": "acc", "min": float("nan")}, "tasks.copy.target.min: Input should be a finite number"),
        ("gate", {"metric": "loss@x1", "max": float("inf")}, "tasks.copy.gate.max: Input should be a finite number"),
    ],
)
def test_a_convergence_target_or_gate_without_one_reachable_bound(tmp_path, role, bound, words):
    """``target: {metric: acc}`` (no bound) was met by every run at its first validation: each run
    "converged" at step 1 and the not-learned gate let every run through. A target or gate needs
    exactly one bound, on the side the metric is better, that a run can reach and not every run meets."""
    path = _edited(tmp_path, tasks={"copy": {**_COPY, role: bound}})
    results = str(tmp_path / "results")
    for args in (["show"], ["run", "--results-dir", results], ["tune"]):
        assert_refused(invoke(args[0], str(path), *args[1:]), "invalid declaration for ablation mini.yaml", words)
    assert_nothing_written(tmp_path / "results")


@pytest.mark.usefixtures("cli_isolated")
@pytest.mark.parametrize(
    "role, bound",
    [
        ("target", {"metric": "acc", "min": 1}),
        ("gate", {"metric": "loss@x1", "max": 0.01}),
        ("target", {"metric": "loss", "max": 2.5}),
    ],
)
def test_a_reachable_bound_is_accepted(tmp_path, role, bound):
    assert invoke("show", str(_edited(tmp_path, tasks={"copy": {**_COPY, role: bound}}))).exit_code == 0


@pytest.mark.usefixtures("cli_isolated")
def test_repeated_evaluation_lengths_are_refused_and_their_order_is_one_run(tmp_path):
    """``eval.length_multipliers=[4,1,1]`` evaluated 8 tokens twice, and ``[1,2]`` and ``[2,1]`` (one
    computation) got two run ids. A repeat is refused; the order is made ascending before the run id."""
    path = user_file(tmp_path)
    for args in (["show"], ["run", "--results-dir", str(tmp_path / "results")], ["tune"]):
        assert_refused(
            invoke(args[0], str(path), *args[1:], "eval.length_multipliers=[4,1,1]"),
            "invalid override: eval.length_multipliers: length_multipliers repeats [1]; "
            "each evaluation length must appear once (got [4, 1, 1])",
        )
    assert_nothing_written(tmp_path / "results")
    abl = load_ablation(str(path))
    ids = {
        order: [s.run_id for s in plan(abl, None, [f"eval.length_multipliers={order}"], check_data=False)[1]]
        for order in ("[1,2]", "[2,1]")
    }
    assert ids["[1,2]"] == ids["[2,1]"]
    spec = plan(abl, None, ["eval.length_multipliers=[4,2,1]"], check_data=False)[1][0]
    assert spec.config.eval.length_multipliers == [1, 2, 4] and spec.config.eval_lengths() == [8, 16, 32]


def test_the_run_ids_of_registered_profiles_stay_as_they_were():
    """Ordering the multipliers changes no stored run id: every registered declaration gives them
    ascending and distinct at every layer, and the ids of the pe_extrapolation profiles (multipliers
    [1, 2, 4] and [1, 2, 4, 8]) are those computed before the change (main 6968206). A change to
    ablations/pe_extrapolation.yaml that changes its runs changes these digests on purpose."""
    import hashlib

    for name in available():
        abl = load_ablation(name)
        layers = [abl.base, *(e.config for e in abl.tasks.values())]
        layers += [layer for p in abl.profiles.values() for layer in (p.overrides, *p.tasks.values())]
        for layer in layers:
            mults = layer.get("eval.length_multipliers")
            assert mults is None or mults == sorted(set(mults)), (name, mults)
    abl = load_ablation("pe_extrapolation")
    digests = {
        profile: hashlib.sha256(
            " ".join(s.run_id for s in plan(abl, profile, check_data=False)[1]).encode()
        ).hexdigest()[:16]
        for profile in ("cpu", "gpu", "smoke")
    }
    assert digests == {"cpu": "166d75e964c34078", "gpu": "cb3a42b8bf19cc06", "smoke": "5f63bd8df1a790f7"}


@pytest.mark.usefixtures("cli_isolated")
@pytest.mark.parametrize(
    "claims, words",
    [
        (
            ["pe-learned-extrpolation"],
            [
                "claims: 'pe-learned-extrpolation' is not a claim of harness/experiment/claims.yaml "
                "(did you mean 'pe-learned-extrapolation'",
                "claims: qkv-shared, ",
            ],
        ),
        (["scale-dk", "scale-dk"], ["claims: ['scale-dk'] appear more than once"]),
    ],
)
def test_an_unknown_claim_id_is_refused(tmp_path, claims, words):
    """A misspelt claim id was accepted and reported as "not tested by this ablation yet (not in
    claims.yaml)"."""
    path = _edited(tmp_path, claims=claims)
    results = str(tmp_path / "results")
    for args in (["show"], ["run", "--results-dir", results], ["report", "--results-dir", results]):
        assert_refused(invoke(args[0], str(path), *args[1:]), "invalid declaration for ablation mini.yaml", *words)
    assert_nothing_written(tmp_path / "results")
    (tmp_path / "ok").mkdir()
    assert invoke("show", str(_edited(tmp_path / "ok", claims=["scale-dk"]))).exit_code == 0


@pytest.mark.usefixtures("cli_isolated")
@pytest.mark.parametrize("question", ["", "   ", "\n"])
def test_an_empty_question_is_refused(tmp_path, question):
    """``question: ""`` was accepted: the report opened with an empty question."""
    path = _edited(tmp_path, question=question)
    results = str(tmp_path / "results")
    for args in (["show"], ["run", "--results-dir", results], ["report", "--results-dir", results]):
        assert_refused(
            invoke(args[0], str(path), *args[1:]),
            "invalid declaration for ablation mini.yaml: question is empty; state what the ablation asks",
        )
    assert_nothing_written(tmp_path / "results")


# --- a newcomer's first declaration: the fix named at the place of the key ------------------------


def _with(tmp_path: Path, edit) -> Path:
    """The tiny declaration with ``edit`` (a function of its mapping) applied."""
    path = user_file(tmp_path)
    decl = yaml.safe_load(path.read_text())
    edit(decl)
    path.write_text(yaml.safe_dump(decl))
    return path


@pytest.mark.usefixtures("cli_isolated")
@pytest.mark.parametrize(
    "edit, words, not_words",
    [
        (  # a key valid elsewhere says where it belongs, and never suggests itself
            lambda d: d.update(overrides={"train.steps": 50}),
            ["overrides: not a key at the top level; it belongs under a profile", "profiles: {cpu: {overrides: {"],
            ["did you mean"],
        ),
        (
            lambda d: d.update(seeds=[0, 1]),
            ["seeds: not a key at the top level; it belongs under a profile", "profiles: {cpu: {seeds: [0, 1, 2]}}"],
            ["did you mean", "sesoi"],
        ),
        (
            lambda d: d["profiles"].update(confirm={"seeds": [0], "steps": 50}),
            [
                "profiles.confirm.steps: not a profile key; train.steps is a config key: set it as "
                "overrides: {train.steps:"
            ],
            ["did you mean", "sesoi"],
        ),
        (
            lambda d: d["profiles"]["cpu"].update(sesoi=0.1),
            ["profiles.cpu.sesoi: not a key under a profile", "sesoi belongs under a task's primary:"],
            ["did you mean"],
        ),
        (  # suggestions only from the keys valid at that place
            lambda d: d["tasks"]["copy"].update(primray=d["tasks"]["copy"].pop("primary")),
            ["tasks.copy.primray: unknown key (did you mean 'primary'?)"],
            ["profiles", "seeds"],
        ),
        (  # a value of the wrong form: an example of the right one, no class name
            lambda d: d["profiles"]["cpu"].update(seeds=8),
            ["profiles.cpu.seeds:", "(got 8)", "list every seed, e.g. for 8 seeds: seeds: [0, 1, 2, 3, 4, 5, 6, 7]"],
            [],
        ),
        (
            lambda d: d["tasks"]["copy"].update(primary="acc@x1"),
            ["tasks.copy.primary:", "primary: {metric: acc@x1, higher_is_better: true, sesoi: 0.05}"],
            ["MetricSpec", "instance of"],
        ),
        (
            lambda d: d.update(tasks=["copy"]),
            [
                "tasks:",
                "(got ['copy'])",
                "tasks: {copy: {primary: {metric: acc@x1, higher_is_better: true, sesoi: 0.05}}}",
            ],
            ["TaskEntry", "instance of"],
        ),
        (  # a value the code refuses in its own words: the choices, the closest first
            lambda d: d["profiles"]["cpu"].update(
                seeds=[0, 1, 2, 3], sequential={"looks": [2, 4], "spending": "obrien-fleming"}
            ),
            ["unknown spending function 'obrien-fleming' (did you mean 'obrien_fleming'?)", "obrien_fleming, pocock"],
            [],
        ),
    ],
)
def test_a_declaration_mistake_names_its_fix(tmp_path, edit, words, not_words):
    """The newcomer's declaration mistakes (docs/bad-inputs.md, Declarations): refused before any
    run with the fix at the place of the key."""
    err = assert_refused(invoke("show", str(_with(tmp_path, edit))), *words)
    for word in not_words:
        assert word not in err, (word, err)


@pytest.mark.usefixtures("cli_isolated")
def test_seeds_copied_with_an_ellipsis_say_to_list_every_seed(tmp_path):
    """``seeds: [0, 1, 2, ..., 31]``: YAML reads ``...`` as a string; the message says to list every seed."""
    path = user_file(tmp_path)
    path.write_text(path.read_text().replace("seeds:\n    - 0", "seeds: [0, 1, 2, ..., 31]"))
    assert "[0, 1, 2, ..., 31]" in path.read_text()
    assert_refused(
        invoke("show", str(path)),
        "profiles.cpu.seeds.3:",
        "(got '...')",
        "YAML has no range: list every seed, e.g. seeds: [0, 1, 2, 3, 4, 5, 6, 7]",
    )


@pytest.mark.usefixtures("cli_isolated")
def test_a_text_corpus_is_found_in_the_cache(tmp_path, monkeypatch):
    """The ``text`` task looks for a relative path where ``tinyshakespeare`` keeps its download, the
    cache, after ``$ABLATE_DATA_DIR`` and the working directory; not found, it names all three."""
    monkeypatch.delenv("ABLATE_DATA_DIR", raising=False)
    path = _with(tmp_path, lambda d: d.update(tasks={"text": {**d["tasks"]["copy"], "params": {"path": "mine.txt"}}}))
    text = yaml.safe_load(path.read_text())
    text["tasks"]["text"]["primary"] = {"metric": "loss@x1", "higher_is_better": False, "sesoi": 0.05}
    path.write_text(yaml.safe_dump(text))
    cache = tmp_path / "cache"  # cli_isolated's private cache
    assert_refused(invoke("show", str(path)), "corpus path 'mine.txt' not found", str(cache / "mine.txt"))
    cache.mkdir(exist_ok=True)
    (cache / "mine.txt").write_text("To be, or not to be, that is the question.\n" * 200)
    result = invoke("show", str(path))
    assert result.exit_code == 0, result.output


@needs_corpus
@pytest.mark.usefixtures("cli_isolated")
def test_the_text_example_plans_from_outside_the_repository(tmp_path, monkeypatch):
    """docs/tasks.md's example, named by its path from a folder outside the repository, with the
    corpus only in the cache (where `ablate run pe_extrapolation` downloads it)."""
    (tmp_path / "cache").mkdir(exist_ok=True)
    shutil.copy(CORPUS_DIR / "tinyshakespeare.txt", tmp_path / "cache")
    monkeypatch.delenv("ABLATE_DATA_DIR", raising=False)
    assert not Path.cwd().resolve().is_relative_to(REPO)
    result = invoke("show", str(REPO / "examples" / "text" / "pe_extrapolation_text.yaml"), "--profile", "smoke")
    assert result.exit_code == 0, result.output
    assert "10 runs (smoke profile" in result.stdout
