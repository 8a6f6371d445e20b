"""Names a file system can hold: an ablation whose name (with its profile and task names) makes a
file name over 255 bytes is refused at load, before any run, with how much to shorten it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from helpers.cli import assert_refused, invoke


def _decl(tmp_path: Path, name: str, profile: str = "cpu") -> Path:
    decl = {
        "name": name,
        "question": "Does the kernel matter?",
        "axes": {"attention.kernel": ["sdpa", "math"]},
        "baseline": {"attention.kernel": "sdpa"},
        "base": {"model.d_model": 32, "model.n_heads": 2, "train.seq_len": 8},
        "tasks": {"copy": {"params": {"n_symbols": 8}, "primary": {"metric": "acc@x1", "sesoi": 0.05}}},
        "profiles": {profile: {"seeds": [0]}},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(decl))
    return path


@pytest.mark.usefixtures("cli_isolated")
@pytest.mark.parametrize(("name", "profile"), [("n" * 240, "cpu"), ("n" * 150, "p" * 100)])
def test_a_name_that_makes_a_file_name_over_255_bytes_is_refused(tmp_path: Path, name: str, profile: str) -> None:
    path = _decl(tmp_path, name, profile)
    results = tmp_path / "results"
    err = assert_refused(invoke("run", str(path), "--results-dir", str(results)), "over the 255 a file system holds")
    assert "shorten the ablation name (or its longest profile or task name) by at least" in err
    assert not results.exists()


@pytest.mark.usefixtures("cli_isolated")
def test_a_long_name_that_fits_loads(tmp_path: Path) -> None:
    out = invoke("show", str(_decl(tmp_path, "n" * 180)))
    assert out.exit_code == 0, out.output
