"""Figures a grid shows about its own cost: the ETA after each finished run, and a variant's
``s/run`` in the report. Both were skewed by the start of a grid: the ETA counted the first
finished run as the only work done while a second worker's run was in flight, and the first run of
a worker, which also pays for imports and Lightning's start-up, pulled up one variant's mean."""

from __future__ import annotations

from harness.execution.local import remaining_time


def test_eta_counts_the_runs_in_flight_on_every_worker() -> None:
    # 16 runs of 100 s on 2 workers: the first two finish together, 1,400 s of work are left.
    assert remaining_time([100.0], 15, 2) == 750.0
    assert remaining_time([100.0, 100.0], 14, 2) == 700.0
    assert remaining_time([100.0] * 3, 13, 1) == 1300.0
    assert remaining_time([40.0, 60.0], 4, 4) == 50.0
    assert remaining_time([100.0], 0, 2) == 0.0
    assert remaining_time([], 5, 2) == 0.0
