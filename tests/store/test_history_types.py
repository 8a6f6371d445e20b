"""A history.csv holding text or NUL bytes is a damaged history: the report lists it and draws the
other runs' curves, never a traceback (its columns are type-checked when the store reads it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.store.runs import HISTORY
from helpers.cli import invoke
from helpers.fake_store import write_decl, write_runs

GOOD = "step,loss,acc\n5,2.0,0.2\n10,1.5,0.4\n"


@pytest.mark.parametrize("bad", ["step,loss,acc\n5,2.0,0.2\n10,abc,0.4\n", "step,loss,acc\n5,2.0,0.2\n10,\0\0,0.4\n"])
def test_a_history_holding_text_is_reported_not_a_traceback(tmp_path: Path, bad: str) -> None:
    decl = write_decl(tmp_path / "decl", cpu={"seeds": [0, 1]})
    results = tmp_path / "results"
    write_runs(results, decl, "cpu", lambda variant, seed: 0.5 + 0.01 * seed)
    folders = sorted((results / "mini" / "cpu").iterdir())
    for folder in folders:
        (folder / HISTORY).write_text(GOOD)
    (folders[0] / HISTORY).write_text(bad)
    out = tmp_path / "reports"
    result = invoke("report", str(decl), "--results-dir", str(results), "--out", str(out), "--wandb", "off")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    report = (out / "mini.md").read_text()
    assert f"{folders[0] / HISTORY}: unreadable validation history (ValueError: column 'loss' holds text" in report
    assert list((out / "figures").glob("mini-copy-validation-*.png"))  # the other runs' curves are drawn
    from harness.store.runs import parse_history

    with pytest.raises(ValueError, match="column 'loss' holds text"):
        parse_history(folders[0] / HISTORY)
