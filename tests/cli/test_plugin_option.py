"""``--plugin`` on every command that plans or runs, through the real CLI (in-process): a bad plugin
is refused first (exit 2, one line naming it, nothing written); a good one is listed beside the
built-in entries, marked with its package, and usable in a grid."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.cli import assert_nothing_written, assert_refused, invoke, user_file
from helpers.plugins import restored, write_plugin

pytestmark = pytest.mark.usefixtures("cli_isolated")

MY_NOPE = """
@POSITIONAL.register("my_nope")
class MyNoPE(PositionalEncoding):
    '''No positional information.'''
"""
NOT_A_SUBCLASS = """
@POSITIONAL.register("plain")
class Plain:
    pass
"""


@pytest.fixture(autouse=True)
def _restored():
    with restored():
        yield


# every command that plans or runs, with the arguments it needs besides --plugin
COMMANDS = {
    "list": [],
    "show": ["DECL"],
    "run": ["DECL"],
    "status": ["DECL"],
    "compare": ["DECL"],
    "report": ["DECL"],
    "plan": ["DECL"],
    "tune": ["DECL"],
    "reproduce": ["--dry-run"],
    "check": ["position=rope"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_that_plans_or_runs_loads_plugins_first(command: str, tmp_path: Path) -> None:
    decl = str(user_file(tmp_path))
    bad = write_plugin(tmp_path / "bad.py", NOT_A_SUBCLASS)
    args = [decl if a == "DECL" else a for a in COMMANDS[command]]
    store = [] if command in ("list", "show", "check") else ["--results-dir", str(tmp_path / "results")]
    result = invoke(command, *args, "--plugin", str(bad), *store)
    assert_refused(
        result, f"--plugin {bad}: positional encoding 'plain' is the class Plain, not a subclass of PositionalEncoding"
    )
    assert_nothing_written(tmp_path / "results")


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("import not_a_real_dependency\n", ["does not", "No module named 'not_a_real_dependency'"]),
        ("@POSITIONAL.register('alibi')\nclass A(PositionalEncoding):\n    pass\n", ["'alibi' is already registered"]),
        (NOT_A_SUBCLASS, ["derive it from harness.plugin.PositionalEncoding"]),
    ],
)
def test_run_refuses_a_bad_plugin_before_anything_runs(tmp_path: Path, body: str, words: list[str]) -> None:
    bad = write_plugin(tmp_path / "bad.py", body)
    result = invoke("run", str(user_file(tmp_path)), "--plugin", str(bad), "--results-dir", str(tmp_path / "r"))
    assert_refused(result, f"--plugin {bad}: ", *[w for w in words if w != "does not"])
    assert_nothing_written(tmp_path / "r")


def test_a_module_that_does_not_import_names_the_fix(tmp_path: Path) -> None:
    result = invoke("show", str(user_file(tmp_path)), "--plugin", "my_pkg.not_there")
    assert_refused(result, "--plugin my_pkg.not_there: no module named 'my_pkg'; install the package that provides it")


def test_list_marks_plugin_entries_with_their_package(tmp_path: Path) -> None:
    good = write_plugin(tmp_path / "mine.py", MY_NOPE)
    result = invoke("list", "--plugin", str(good))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    family = next(line for line in lines if line.startswith("position (model.position): "))
    assert family.startswith(
        "position (model.position): sinusoidal, learned, learned_clamp, rope, alibi, nope, learned_n01, "
        "my_nope [mine.py (sha256 "
    )
    assert any(
        line.startswith("plugin mine.py (sha256 ") and line.endswith(f"(--plugin {good}): position my_nope")
        for line in lines
    )
    assert not any(line.startswith("kernel (") for line in lines)  # families a plugin adds to, or --components
    result = invoke("list", "--components")
    assert result.exit_code == 0 and "kernel (attention.kernel): math, sdpa, flash, linear" in result.stdout


def test_a_plugin_entry_is_a_value_of_an_axis_or_an_override(tmp_path: Path) -> None:
    good = write_plugin(tmp_path / "mine.py", MY_NOPE)
    decl = user_file(tmp_path)  # axis attention.kernel: sdpa, math
    assert_refused(invoke("show", str(decl), "model.position=my_nope"), "unknown positional encoding 'my_nope'")
    result = invoke("show", str(decl), "model.position=my_nope", "--plugin", str(good))
    assert result.exit_code == 0, result.output
    axis = decl.parent / "axis" / "mini.yaml"
    axis.parent.mkdir()
    text = decl.read_text().replace("attention.kernel", "model.position")
    axis.write_text(text.replace("sdpa", "my_nope").replace("math", "nope"))
    result = invoke("show", str(axis), "--plugin", str(good))
    assert result.exit_code == 0, result.output
    assert "axis model.position: my_nope, nope" in result.stdout


LEARNED_BIAS = """
import torch


@POSITIONAL.register("learned_bias")
class LearnedBias(PositionalEncoding):
    '''One learned scalar per head added to every score: a trained bias, as T5's table.'''

    def __init__(self, cfg):
        super().__init__(cfg)
        self.per_head = torch.nn.Parameter(torch.zeros(cfg.n_heads))

    def attention_bias(self, t, s):
        return self.per_head[:, None, None].expand(-1, t, s).float()
"""


def test_flash_with_a_plugins_learned_bias_is_refused_before_any_run(tmp_path: Path) -> None:
    """CPU flash takes no mask that requires a gradient: refused at planning (exit 2, one line),
    not by every run's training step (exit 1, tracebacks); ``math`` with the same bias plans."""
    good = write_plugin(tmp_path / "mine.py", LEARNED_BIAS)
    decl = user_file(tmp_path, **{"model.position": "learned_bias"})
    text = decl.read_text()
    decl.write_text(text.replace("- math", "- flash"))
    result = invoke("run", str(decl), "--plugin", str(good), "--results-dir", str(tmp_path / "r"))
    assert_refused(
        result,
        "kernel 'flash' is not available on cpu with torch.float32 and a learned attention bias",
        "use attention.kernel=sdpa",
    )
    assert_nothing_written(tmp_path / "r")
    decl.write_text(text)
    shown = invoke("show", str(decl), "--plugin", str(good))
    assert shown.exit_code == 0, shown.output
