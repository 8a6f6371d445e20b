"""benchmarks/run_all.py: the one benchmark command. Its table from known figures (each goal met or
missed), and a quick real run of one section with the machine state; no speed goal is tested here
(speed goals live in the benchmarks)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import run_all  # noqa: E402

from helpers.corpus import needs_corpus  # noqa: E402


def _overhead(task: str, ratio: float) -> dict:
    return {
        "task": task,
        "size": "d_model 64",
        "steps": 1000,
        "pairs": 5,
        "ratio": ratio,
        "ratio_range": (ratio - 0.01, ratio + 0.02),
        "ratio_cpu": ratio,
        "per_step_ms": 0.1,
        "per_step_cpu_ms": 0.1,
        "goal": 1.03,
        "display": {"fraction": 0.0002, "write_s": 1e-4, "poll_s": 3e-4},
    }


def _workers(grid: str, whole: float, phase: float) -> dict:
    return {
        "grid": grid,
        "steps": 40,
        "whole_1": 10.0,
        "whole_default": 10.0 / whole,
        "default_workers": "1 worker(s) x 1 thread(s): 8 runs of ~0.4 s each",
        "whole_speedup": whole,
        "phase_1": 4.0,
        "phase_n": 4.0 / phase,
        "phase_workers": 2,
        "phase_speedup": phase,
        "goal_whole": 1.0 if grid == "small" else 1.6,
        "goal_phase": 1.8 if grid == "small" else 1.6,
    }


def test_each_figure_is_set_against_its_goal() -> None:
    figures = {
        "overhead": [_overhead("copy", 1.02), _overhead("tinyshakespeare", 1.06)],
        "workers": [_workers("small", 1.0, 1.7), _workers("long", 1.65, 1.8)],
        "cli": {"python": 0.02, "commands": {"--help": {"median": 0.1, "heavy": "[]", "goal": 1.0}}},
        "smoke": {"ablations": {"a": {}, "b": {}}, "runs": 40, "total": 99.0, "failed": ["b"]},
    }
    found = run_all.rows(figures)
    # overhead copy, tinyshakespeare, display; small grid whole, phase; long grid whole, phase; --help; smoke
    assert [r.met for r in found] == [True, False, True, True, False, True, True, True, False]
    text = run_all.table(found)
    assert text.splitlines()[0] == "| figure | measured | goal | |"
    assert "| 1.020, median of 5 pairs (min 1.010, max 1.040; +0.10 ms per step" in text
    assert "| <= 1.03 | met |" in text and "| MISSED |" in text
    assert "default: 1 worker(s) x 1 thread(s): 8 runs of ~0.4 s each" in text


@needs_corpus  # the cli section times `ablate run pe_extrapolation --profile cpu`
def test_a_quick_section_reports_figures_goals_and_the_load_average() -> None:
    out = subprocess.run(
        [sys.executable, str(BENCHMARKS / "run_all.py"), "--quick", "--only", "cli", "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    got = json.loads(out)
    assert len(got["machine"]["load_start"]) == len(got["machine"]["load_end"]) == 3
    assert got["machine"]["quick"] is True and got["machine"]["cores"] >= 1
    figures = [row["figure"] for row in got["table"]]
    assert figures == [
        "`ablate --help` (median)",
        "`ablate list` (median)",
        "`ablate run pe_extrapolation --profile cpu (nothing left to run)` (median)",
        "`ablate status pe_extrapolation --profile cpu` (median)",
    ]
    assert [row["goal"] for row in got["table"]] == ["< 1 s", "< 1 s", "< 3 s", "< 3 s"]
    assert all(isinstance(row["met"], bool) for row in got["table"])
    assert got["figures"]["cli"]["commands"]["list"]["heavy"] == "[]"  # torch, Lightning, W&B not imported


def test_an_unknown_section_is_refused() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / "run_all.py"), "--only", "overheads"], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "unknown section(s) overheads" in proc.stderr
