"""A group-sequential profile end to end (docs/sequential.md), at smoke size: ``ablate run`` makes the
first look's runs, a rerun the second look's, and a third nothing; ``ablate status`` and the report
say where the design stands. tests/fixtures/sequential/seq_smoke.yaml: looks at 6 and 10 seeds."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import inspect as inspect_cmd
from harness.cli import report as report_cmd
from harness.cli import run as run_cmd
from harness.store.runs import scan

DECL = str(Path(__file__).resolve().parents[1] / "fixtures" / "sequential" / "seq_smoke.yaml")


def _seeds(results: Path) -> dict[str, list[int]]:
    found = scan(results, "seq_smoke", "confirm").records
    return {arm: sorted(r.seed for r in found if r.variant_label == arm) for arm in ("sinusoidal", "nope")}


def test_run_makes_one_look_at_a_time_and_stops_at_the_last(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ABLATE_DATA_DIR", str(data_dir))
    results = tmp_path / "results"
    inspect_cmd.show_cmd(DECL)
    assert "sequential: looks at 6, 10 seeds, obrien_fleming spending, alpha 0.05" in capsys.readouterr().out
    assert run_cmd.run(DECL, None, [], results, workers=1, wandb="off") == 0
    assert _seeds(results) == {"sinusoidal": list(range(6)), "nope": list(range(6))}  # look 1: 6 seeds, no more
    out = capsys.readouterr().out
    assert "no look of 2 reached yet; next: look 1 (6 seeds) for 2 arms" in out
    assert "inconclusive (open: next look 2 at 10 seeds)" in out

    inspect_cmd.status(DECL, None, results)
    out = capsys.readouterr().out
    assert "look 1 of 2 reached (6 seeds); next: look 2 (10 seeds) for 2 arms" in out
    assert "copy nope vs sinusoidal: open: waits for look 2 (10 seeds)" in out

    assert run_cmd.run(DECL, None, [], results, workers=1, wandb="off") == 0  # it continues: look 2
    assert _seeds(results) == {"sinusoidal": list(range(10)), "nope": list(range(10))}
    capsys.readouterr()
    inspect_cmd.status(DECL, None, results)
    out = capsys.readouterr().out
    assert "look 2 of 2 reached (10 seeds); finished: 10 seeds used of 10" in out
    assert "copy nope vs sinusoidal: not decided by the last look (10 seeds)" in out

    assert run_cmd.run(DECL, None, [], results, workers=1, wandb="off") == 0  # the design is over: nothing runs
    assert "0 to run" in capsys.readouterr().out and len(scan(results, "seq_smoke", "confirm").records) == 20

    text = report_cmd.report(DECL, None, results, tmp_path / "reports").read_text()
    assert "## Group-sequential design" in text
    assert "Looks at 6, 10 seeds; Lan-DeMets O'Brien-Fleming-like alpha spending" in text
    assert "| copy | nope vs sinusoidal | not decided by the last look (10 seeds) | 2 (10 pairs) |" in text
    assert "biased away from zero" in text
