"""A grid whose baseline has no value yet (its runs pending, or all failed) while other variants
finished: each variant's own numbers are shown, the baseline row reads n = 0, and no variant is
compared (``too few pairs``). The tables used to read ``n 0/3`` and ``– ± –`` for variants whose
three runs were in the store, with no baseline row to say why."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.analysis import verdicts as vd
from harness.analysis.comparisons import analyse
from harness.experiment.ablation import load
from harness.experiment.selection import select
from helpers.fake_store import write_decl, write_runs


def test_variants_keep_their_numbers_when_the_baseline_has_none(tmp_path: Path) -> None:
    decl = write_decl(tmp_path / "decl")
    values = {"learned": [0.2, 0.3, 0.4], "rope": [0.5, 0.6, 0.7]}
    write_runs(tmp_path / "results", decl, "pilot", lambda v, s: None if v == "sinusoidal" else values[v][s])
    result = analyse(select(load(str(decl)), "pilot", check_data=False), tmp_path / "results")
    frame = result.table("copy", "acc@x2").frame.set_index("variant")
    assert list(frame.index) == ["sinusoidal", "learned", "rope"]
    assert frame.loc["sinusoidal", "n"] == 0 and frame.loc["sinusoidal", "verdict"] == vd.BASELINE
    for variant, vals in values.items():
        assert frame.loc[variant, "n"] == 3, frame
        assert np.isclose(frame.loc[variant, "mean"], np.mean(vals))
        assert np.isclose(frame.loc[variant, "sd"], np.std(vals, ddof=1))
        assert frame.loc[variant, "n_pairs"] == 0 and frame.loc[variant, "verdict"] == vd.TOO_FEW
        assert np.isnan(frame.loc[variant, "p"]) and np.isnan(frame.loc[variant, "delta"])
