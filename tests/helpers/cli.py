"""The real ``ablate`` CLI driven in-process (``typer.testing.CliRunner``), and what a refusal of
bad input must look like: exit 2, one ``error:`` line on stderr, nothing on stdout, nothing written.
The isolation every such test runs in is the ``cli_isolated`` fixture of tests/conftest.py."""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml
from typer.testing import CliRunner

from harness.cli.app import app


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def assert_refused(result, *words: str) -> str:
    """Exit 2, one ``error:`` line on stderr containing ``words``, nothing on stdout, no traceback."""
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 2, (result.exit_code, result.output)
    err = result.stderr.strip()
    assert err.startswith("error: "), err
    assert "\n" not in err, err
    assert "Traceback" not in result.output
    assert result.stdout == ""
    for w in words:
        assert w in err, (w, err)
    return err


def assert_nothing_written(results: Path) -> None:
    assert not results.exists()
    assert list(Path.cwd().iterdir()) == []  # no ./results, ./reports, ./wandb
    cache = Path(os.environ["ABLATE_CACHE_DIR"])
    assert not cache.exists() or list(cache.iterdir()) == []


def user_file(tmp_path: Path, **base) -> Path:
    d = {
        "name": "mini",
        "question": "Does the kernel matter?",
        "axes": {"attention.kernel": ["sdpa", "math"]},
        "baseline": {"attention.kernel": "sdpa"},
        "base": {"model.d_model": 32, "model.n_heads": 2, **base},
        "tasks": {
            "copy": {
                "params": {"n_symbols": 8},
                "config": {"train.seq_len": 8},
                "primary": {"metric": "acc@x1", "higher_is_better": True, "sesoi": 0.05},
            }
        },
        "profiles": {"cpu": {"seeds": [0]}},
    }
    path = tmp_path / "decl" / "mini.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(d))
    return path


def untimed(report: str) -> str:
    """A report without its generation time: what must be the same, byte for byte, when the same
    report is made again (from the store, or from its data file with ``--from``)."""
    return re.sub(r" on \d{4}-\d\d-\d\d \d\d:\d\d UTC ", " on <time> ", report)
