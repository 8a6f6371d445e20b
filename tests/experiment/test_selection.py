"""The Selection a command works on: one ablation x profile x overrides, built once."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from harness.errors import AblateError
from harness.experiment.ablation import load
from harness.experiment.grid import plan
from harness.experiment.selection import Selection, select
from helpers.mini_decl import decl, write

SUBSET = ["position=sinusoidal,kernel=sdpa", "position=nope,kernel=math"]


def mini(tmp_path: Path) -> Any:
    """Two tasks, a 3 x 2 grid; profile ``sub`` keeps one task and two grid points, three seeds."""
    return load(write(tmp_path, decl(only_tasks=["reverse"], only_variants=SUBSET)))


def test_selection_holds_the_profiles_subset_and_its_specs(tmp_path):
    abl = mini(tmp_path)
    sel = select(abl, "sub", check_data=False)
    assert sel.profile == "sub" and sel.name == "mini" and sel.overrides == ()
    assert list(sel.ablation.tasks) == ["reverse"]
    assert [sel.ablation.label(v) for v in sel.ablation.variants()] == SUBSET
    assert sel.settings.seeds == [0, 1, 2]
    # seed, then task, then variant: 3 seeds x 1 task x 2 points
    assert [(s.seed, s.task, s.variant_label) for s in sel.specs] == [
        (seed, "reverse", label) for seed in (0, 1, 2) for label in SUBSET
    ]
    assert list(abl.tasks) == ["copy", "reverse"] and len(abl.variants()) == 6  # the declaration stays whole


def test_run_ids_are_the_grids_and_a_subset_of_the_full_grids(tmp_path):
    abl = mini(tmp_path)
    sel = select(abl, "sub", check_data=False)
    assert sel.run_ids == {s.run_id for s in plan(abl, "sub", check_data=False)[1]}
    assert len(sel.run_ids) == 6  # distinct: one per (seed, task, point)
    full = select(abl, "cpu", check_data=False)
    assert len(full.specs) == 2 * 2 * 6
    assert {s.run_id for s in sel.specs if s.seed < 2} <= full.run_ids  # a subset run is the full grid's run


def test_default_profile_and_overrides(tmp_path):
    abl = mini(tmp_path)
    default = select(abl, None, check_data=False)
    assert default.profile == "cpu"
    changed = select(abl, None, ["train.lr=0.002"], check_data=False)
    assert changed.overrides == ("train.lr=0.002",)
    assert all(s.config.train.lr == 0.002 for s in changed.specs)
    assert changed.run_ids.isdisjoint(default.run_ids)  # other configs, other runs
    with pytest.raises(AblateError, match="axis"):
        select(abl, None, ["model.position=rope"], check_data=False)
    with pytest.raises(AblateError, match="no profile"):
        select(abl, "nosuch", check_data=False)


def test_selection_is_frozen(tmp_path):
    sel = select(mini(tmp_path), "sub", check_data=False)
    assert isinstance(sel, Selection) and isinstance(sel.specs, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sel.profile = "cpu"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        sel.specs = ()  # type: ignore[misc]
