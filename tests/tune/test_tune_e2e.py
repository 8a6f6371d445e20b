"""The issue's flow on the real ablation: ``ablate tune pe_extrapolation --profile smoke``, then
``ablate run ... --tuned``, then ``ablate report`` with its Tuning section.

Shrunk by overrides (20 steps, d_model 16, 8 evaluation examples) and 2 trials per study so that
all 10 studies (5 encodings x 2 tasks) and the 20 tuned runs fit in the default test run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from harness.cli import output
from harness.cli import report as report_cmd
from harness.cli import run as run_cmd
from harness.errors import TRAINED
from harness.store.runs import scan

# 20 steps: the smoke profile searches warm-ups up to 20, and a warm-up longer than the budget is refused
SMALL = ["train.steps=20", "train.val_every=10", "model.d_model=16", "eval.n_examples=8", "eval.val_examples=8"]


def test_tune_then_tuned_run_then_report(tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    console = Console(highlight=False, width=250, record=True)
    monkeypatch.setattr(output, "console", console)
    results = tmp_path / "results"
    assert run_cmd.tune("pe_extrapolation", "smoke", SMALL, trials=2, results=results) == 0
    assert (results / "optuna.db").is_file()
    assert run_cmd.run("pe_extrapolation", "smoke", SMALL, results, workers=1, wandb="off", tuned=True) == 0
    # the counts are of the tuned runs' folder, so the line names it (it said `smoke`, whose runs are others)
    assert "pe_extrapolation / smoke+tuned: 20 runs, 0 already in" in console.export_text()
    tuned = scan(results, "pe_extrapolation", "smoke+tuned").records
    assert len(tuned) == 20 and all(r.status in TRAINED and r.tuned_params for r in tuned)
    assert not scan(results, "pe_extrapolation", "smoke").records  # untuned runs are not touched
    path = report_cmd.report("pe_extrapolation", "smoke", results, tmp_path / "reports", overrides=SMALL)
    # the Reproduce block makes the whole report again: the studies and the tuned runs too
    block = path.read_text().split("## Reproduce")[1]
    assert "ablate tune pe_extrapolation --profile smoke" in block and " --trials 2\n" in block, block
    assert block.index("ablate tune") < block.index("--tuned") < block.index("ablate report"), block
    section = path.read_text().split("## Tuning")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if re.match(r"\| (copy|tinyshakespeare) \| \w+ \| \d", line)]
    assert len(rows) == 10, section
    assert (
        "Untuned vs tuned: `copy` · `acc@x4`" in section
        and "Untuned vs tuned: `tinyshakespeare` · `loss@x4`" in section
    )
    for png in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", section):
        assert (path.parent / png).stat().st_size > 1000
    rec = json.loads(next(results.glob("pe_extrapolation/smoke+tuned/*/record.json")).read_text())
    assert rec["config"]["train"]["lr"] == rec["tuned_params"]["train.lr"]
