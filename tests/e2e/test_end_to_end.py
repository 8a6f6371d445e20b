"""The main job end to end at the smoke profile: run, resume, compare, report.

The report's numbers must equal the store's (computed independently here from record.json).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from harness.cli import compare as compare_cmd
from harness.cli import inspect as inspect_cmd
from harness.cli import report as report_cmd
from harness.cli import run as run_cmd
from harness.errors import TRAINED
from harness.experiment.ablation import load
from harness.experiment.grid import plan
from harness.experiment.selection import select
from harness.store.runs import scan
from helpers import unfinished

ABL = "pe_extrapolation"


@pytest.fixture(scope="module")
def smoke_store(tmp_path_factory: pytest.TempPathFactory, data_dir: Path):
    mp = pytest.MonkeyPatch()
    mp.setenv("ABLATE_DATA_DIR", str(data_dir))
    results = tmp_path_factory.mktemp("results")
    code = run_cmd.run(ABL, "smoke", [], results, workers=1, wandb="off")
    assert code == 0
    yield results
    mp.undo()


def test_every_run_finished_once(smoke_store: Path) -> None:
    abl = load(ABL)
    _, specs = plan(abl, "smoke")
    found = scan(smoke_store, ABL, "smoke")
    assert len(specs) == 20
    assert sorted(r.run_id for r in found.records) == sorted(s.run_id for s in specs)
    assert all(r.status in TRAINED for r in found.records)  # smoke runs: stalled
    assert not found.problems and not unfinished(smoke_store, ABL, "smoke")
    rec = found.records[0]
    for key in ("config", "metrics", "versions", "commit", "wall_time_s", "n_params", "task_version", "seed"):
        assert key in rec.model_fields_set
    assert {"acc@x1", "acc@x2", "acc@x4", "steps_to_target"} <= set(
        next(r for r in found.records if r.task == "copy").metrics
    )
    assert {"loss@x1", "ppl@x4"} <= set(next(r for r in found.records if r.task == "tinyshakespeare").metrics)


def test_second_run_starts_nothing(smoke_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = sorted(smoke_store.glob(f"{ABL}/smoke/*/record.json"))
    before = {p: p.stat().st_mtime_ns for p in records}
    assert run_cmd.run(ABL, "smoke", [], smoke_store, workers=1, wandb="off") == 0
    out = capsys.readouterr().out
    assert "20 already in" in out and "0 to run" in out
    assert {p: p.stat().st_mtime_ns for p in records} == before


def _store_means(results: Path, task: str, metric: str) -> dict[str, float]:
    values: dict[str, list[float]] = {}
    for path in results.glob(f"{ABL}/smoke/*/record.json"):
        rec = json.loads(path.read_text())
        if rec["task"] == task:
            values.setdefault(rec["variant_label"], []).append(rec["metrics"][metric])
    return {v: float(np.mean(x)) for v, x in values.items()}


def test_report_numbers_equal_store(smoke_store: Path, tmp_path: Path) -> None:
    path = report_cmd.report(ABL, "smoke", smoke_store, tmp_path)
    text = path.read_text()
    assert path.name == "pe_extrapolation.smoke.md"
    for heading in ("## Question", "## Claims", "## Setup", "## Results", "## Reproduce"):
        assert heading in text
    assert "ablate run pe_extrapolation --profile smoke" in text
    for png in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text):
        assert (path.parent / png).is_file() and (path.parent / png).stat().st_size > 1000
    checked = 0
    for task, metric in (("copy", "acc@x4"), ("tinyshakespeare", "loss@x4"), ("copy", "acc@x1")):
        block = text.split(f"**{task} · {metric} ")[1].split("\n\n")[1]
        means = _store_means(smoke_store, task, metric)
        for line in block.splitlines()[2:]:
            cells = [c.strip() for c in line.strip("|").split("|")]
            variant = cells[0].removesuffix(" (baseline)")
            shown = float(cells[3].split(" ± ")[0])
            assert shown == pytest.approx(means[variant], rel=1e-3, abs=1e-6), (task, metric, variant)
            checked += 1
    assert checked == 15


def test_compare_formats(smoke_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    compare_cmd.compare(ABL, "smoke", smoke_store, metric="acc@x2", fmt="json")
    rows = json.loads(capsys.readouterr().out)
    assert [r["variant"] for r in rows][0] == "sinusoidal"
    assert {r["metric"] for r in rows} == {"acc@x2"}
    means = _store_means(smoke_store, "copy", "acc@x2")
    for r in rows:
        assert r["mean"] == pytest.approx(means[r["variant"]])
    # smoke is a pilot profile: no verdicts, only descriptives
    assert {r["verdict"] for r in rows[1:]} == {"pilot"}
    compare_cmd.compare(ABL, "smoke", smoke_store, fmt="csv")
    assert capsys.readouterr().out.startswith("variant,")


def test_status_counts(smoke_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (smoke_store / ABL / "smoke" / "stray.txt").write_text("not a run")
    inspect_cmd.status(ABL, "smoke", smoke_store)
    out = capsys.readouterr().out
    assert "stray.txt" in out and "store problem" in out
    assert out.count("sinusoidal") >= 2 and "no runs of" not in out
    (smoke_store / ABL / "smoke" / "stray.txt").unlink()
    # the profile the store lacks: every run pending, and where the runs are said
    inspect_cmd.status(ABL, "cpu", smoke_store)
    out = " ".join(capsys.readouterr().out.split())
    assert f"no runs of {ABL} / cpu" in out and "the store holds runs of" in out and "--profile smoke" in out


def test_runs_of_other_overrides_are_set_aside_not_mixed(
    smoke_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    from harness.analysis.comparisons import analyse

    store = tmp_path / "mixed"
    shutil.copytree(smoke_store, store)
    src = next((store / ABL / "smoke").iterdir())
    rec = json.loads((src / "record.json").read_text())
    rec["run_id"] = "0" * 12  # the same (task, variant, seed) made with another config
    (store / ABL / "smoke" / rec["run_id"]).mkdir()
    (store / ABL / "smoke" / rec["run_id"] / "record.json").write_text(json.dumps(rec))
    sel = select(load(ABL), "smoke", check_data=False)
    result = analyse(sel, store)  # only the selection's run ids are compared
    assert result.foreign == 1 and len(result.scan.records) == 20
    tuned = store / ABL / "smoke+tuned"  # a tuned run is compared when its id is the grid's run at its parameters
    shutil.copytree(store / ABL / "smoke", tuned)
    for path in tuned.glob("*/record.json"):
        path.write_text(json.dumps({**json.loads(path.read_text()), "profile": "smoke+tuned"}))
    result = analyse(sel, store, store_profile="smoke+tuned")  # untuned copies: no study's parameters
    assert result.foreign == 21 and not result.scan.records and not result.tables
    compare_cmd.compare(ABL, "smoke", store, fmt="json")
    captured = capsys.readouterr()
    assert "1 other runs" in captured.err and "other overrides" in captured.err  # the note: stderr
    assert isinstance(json.loads(captured.out), list)  # stdout: the JSON alone, so that it parses


def test_a_metric_the_task_does_not_produce_is_refused(tmp_path: Path) -> None:
    from harness.errors import AblateError

    text = (Path(__file__).resolve().parents[2] / "ablations" / "head_split_control.yaml").read_text()
    path = tmp_path / "my_head_split_control.yaml"  # a registered name is refused for a file of one's own
    text = text.replace("name: head_split_control", "name: my_head_split_control", 1)
    path.write_text(text.replace("metric: acc@x1", "metric: accuracy@x1", 1))
    with pytest.raises(AblateError, match=r"'accuracy@x1' is not produced.*did you mean 'acc@x1'"):
        plan(load(str(path)), "smoke")
    # a length the grid does not evaluate: the message says which multiplier to add, not a near name
    path.write_text(text.replace("metric: acc@x1", "metric: acc@x8", 1))
    with pytest.raises(AblateError, match=r"'acc@x8' is not produced.*adding 8 to eval\.length_multipliers"):
        plan(load(str(path)), "smoke")
