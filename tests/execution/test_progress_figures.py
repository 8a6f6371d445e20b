"""Figures a grid shows about its own cost: the ETA after each finished run, and a variant's
``s/run`` in the report. Both were skewed by the start of a grid: the ETA counted the first
finished run as the only work done while a second worker's run was in flight, and the first run of
a worker, which also pays for imports and Lightning's start-up, pulled up one variant's mean."""

from __future__ import annotations

from pathlib import Path

from harness.analysis.comparisons import analyse
from harness.execution.local import remaining_time
from harness.experiment.ablation import load
from harness.experiment.selection import select
from helpers.fake_store import write_decl, write_runs


def test_eta_counts_the_runs_in_flight_on_every_worker() -> None:
    # 16 runs of 100 s on 2 workers: the first two finish together, 1,400 s of work are left.
    assert remaining_time([100.0], 15, 2) == 750.0
    assert remaining_time([100.0, 100.0], 14, 2) == 700.0
    assert remaining_time([100.0] * 3, 13, 1) == 1300.0
    assert remaining_time([40.0, 60.0], 4, 4) == 50.0
    assert remaining_time([100.0], 0, 2) == 0.0
    assert remaining_time([], 5, 2) == 0.0


def test_s_per_run_is_the_median_so_a_first_run_start_up_does_not_weigh(tmp_path: Path) -> None:
    decl = write_decl(tmp_path / "decl", confirm={"seeds": [0, 1, 2], "confirmatory": False}, cpu={"seeds": [0]})

    def wall(variant: str, seed: int) -> float:
        return 70.0 if (variant == "sinusoidal" and seed == 0) else 10.0 + seed

    write_runs(tmp_path / "results", decl, "confirm", lambda v, s: 0.5 + 0.01 * s, wall=wall)
    result = analyse(select(load(str(decl)), "confirm", check_data=False), tmp_path / "results")
    frame = result.table("copy", "acc@x1").frame
    walls = dict(zip(frame["variant"], frame["wall_time_s"]))
    assert walls["sinusoidal"] == 12.0  # median of 70, 11, 12; the mean would be 31
    assert walls["rope"] == 11.0
