"""A profile's ``only_tasks`` / ``only_variants`` (a confirmatory profile tests a claim on one task
and a few grid points), and ``train.seed_salt`` (the arms of the A/A check)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from harness.config import build_config, config_hash
from harness.errors import AblateError
from harness.experiment.ablation import load
from harness.experiment.grid import plan
from harness.tasks import build_task
from harness.training.lit import _TrainStream
from helpers.mini_decl import decl, write


def refused(tmp_path: Path, **profile: Any) -> str:
    with pytest.raises(AblateError) as info:
        load(write(tmp_path, decl(**profile)))
    return str(info.value)


def test_plan_runs_only_the_profiles_tasks_and_grid_points(tmp_path):
    abl = load(
        write(
            tmp_path,
            decl(
                only_tasks=["reverse"], only_variants=["position=sinusoidal,kernel=sdpa", "position=nope,kernel=math"]
            ),
        )
    )
    _, specs = plan(abl, "sub")
    assert {s.task for s in specs} == {"reverse"}
    assert [s.variant_label for s in specs[:2]] == ["position=sinusoidal,kernel=sdpa", "position=nope,kernel=math"]
    assert len(specs) == 2 * 3
    _, full = plan(abl, "cpu")  # other profiles keep the whole grid
    assert len(full) == 2 * 6 * 2
    # a subset run is the same run (same id) as the full grid's run of that point
    ids = {(s.task, s.variant_label, s.seed): s.run_id for s in full}
    assert all(ids[(s.task, s.variant_label, s.seed)] == s.run_id for s in specs if s.seed < 2)


def test_for_profile_is_a_view_and_leaves_the_declaration_whole(tmp_path):
    abl = load(
        write(
            tmp_path,
            decl(only_tasks=["copy"], only_variants=["position=sinusoidal,kernel=sdpa", "position=rope,kernel=sdpa"]),
        )
    )
    view = abl.for_profile("sub")
    assert list(view.tasks) == ["copy"] and len(view.variants()) == 2
    assert view.for_profile("sub").variants() == view.variants()
    assert list(abl.tasks) == ["copy", "reverse"] and len(abl.variants()) == 6


@pytest.mark.parametrize(
    "profile, words",
    [
        ({"only_tasks": ["cpy"]}, "only_tasks names tasks not in the ablation: ['cpy']"),
        (
            {"only_variants": ["position=sinusoidal,kernel=sdpa", "position=rop,kernel=sdpa"]},
            "only_variants names ['position=rop,kernel=sdpa'], not points of the grid",
        ),
        ({"only_variants": ["position=rope,kernel=sdpa"]}, "only_variants must hold the baseline"),
        ({"only_variants": ["position=sinusoidal,kernel=sdpa"] * 2}, "only_variants repeats"),
    ],
)
def test_bad_subsets_are_refused_with_one_line(tmp_path, profile, words):
    msg = refused(tmp_path, **profile)
    assert words in msg and "\n" not in msg


@pytest.mark.parametrize(
    "profile, words",
    [
        (
            {"only_tasks": ["revers"]},
            "only_tasks names tasks not in the ablation: ['revers'] (did you mean 'reverse'?)",
        ),
        ({"only_tasks": ["copy", "copy"]}, "only_tasks repeats ['copy']"),
        ({"only_variants": ["position=sinusoidal,kernel=sdpa"]}, "holds only the baseline"),
        (
            {"only_variants": ["position=sinusoidal,kernel=sdpa", "position=rop,kernel=sdpa"]},
            "not points of the grid (did you mean 'position=rope,kernel=sdpa'",
        ),
    ],
)
def test_subset_typos_repeats_and_a_lone_baseline_are_refused(tmp_path, profile, words):
    msg = refused(tmp_path, **profile)
    assert words in msg and "\n" not in msg and "  " not in msg


@pytest.mark.parametrize(
    "profile, words",
    [
        (
            {
                "only_variants": ["position=sinusoidal,kernel=sdpa", "position=rope,kernel=sdpa"],
                "exploratory_variants": ["position=nope,kernel=sdpa"],
            },
            "exploratory_variants names ['position=nope,kernel=sdpa'], not grid points the profile runs",
        ),
        (
            {"exploratory_variants": ["position=rop,kernel=sdpa"]},
            "not grid points the profile runs (did you mean 'position=rope,kernel=sdpa'",
        ),
        ({"exploratory_variants": ["position=sinusoidal,kernel=sdpa"]}, "exploratory_variants holds the baseline"),
    ],
)
def test_exploratory_variants_outside_the_profile_or_the_baseline_are_refused(tmp_path, profile, words):
    msg = refused(tmp_path, **profile)
    assert words in msg and "\n" not in msg


ROPE, NOPE = "position=rope,kernel=sdpa", "position=nope,kernel=sdpa"


@pytest.mark.parametrize(
    "profile, words",
    [
        (
            {"only_variants": ["position=sinusoidal,kernel=sdpa", ROPE, NOPE], "exploratory_variants": [NOPE, ROPE]},
            "profile 'sub': the profile declares every variant it runs exploratory, so it has no primary comparison; "
            "drop one from exploratory_variants or mark the profile confirmatory: false",
        ),
        ({"exploratory_variants": [ROPE, ROPE]}, f"profile 'sub': exploratory_variants repeats ['{ROPE}']"),
    ],
)
def test_exploratory_variants_that_leave_no_primary_comparison_or_repeat_are_refused(tmp_path, profile, words):
    """A confirmatory profile whose every variant but the baseline is exploratory has no primary
    family: plan, run and status each misreported it (0 primary comparisons, a design that waits)."""
    msg = refused(tmp_path, **profile)
    assert words in msg and "\n" not in msg


def test_a_pilot_may_declare_every_variant_it_runs_exploratory(tmp_path):
    subset = ["position=sinusoidal,kernel=sdpa", ROPE]
    abl = load(write(tmp_path, decl(confirmatory=False, only_variants=subset, exploratory_variants=[ROPE])))
    assert abl.for_profile("sub").exploratory_variants == (ROPE,)


def test_an_empty_profile_name_is_not_the_default(tmp_path):
    abl = load(write(tmp_path, decl()))
    with pytest.raises(AblateError, match="has no profile ''"):
        abl.profile("")
    with pytest.raises(AblateError, match="has no profile ''"):
        plan(abl, "")
    assert abl.profile(None)[0] == "cpu"


def test_every_registered_confirm_profile_is_confirmatory_with_8_paired_seeds():
    from harness.experiment.ablation import available

    for name in available():
        abl = load(name)
        prof = abl.profiles.get("confirm") or abl.profiles[abl.default_profile]
        assert prof.confirmatory and len(prof.seeds) >= 8, name


# --- train.seed_salt ---------------------------------------------------------------------------


def test_seed_salt_zero_keeps_the_seeds_streams_and_the_run_id():
    plain = build_config({}, "test")
    salted0 = build_config({"train": {"seed_salt": 0}}, "test")
    assert config_hash(plain) == config_hash(salted0)
    assert config_hash(build_config({"train": {"seed_salt": 1}}, "test")) != config_hash(plain)


def test_seed_salt_draws_other_training_batches_for_the_same_seed():
    task = build_task("copy", {"n_symbols": 8})
    batches = {salt: next(iter(_TrainStream(task, 4, 8, 1, seed=3, salt=salt)))[0] for salt in (0, 1, 2)}
    assert torch.equal(next(iter(_TrainStream(task, 4, 8, 1, seed=3)))[0], batches[0])  # salt 0 = no salt
    assert not torch.equal(batches[0], batches[1]) and not torch.equal(batches[1], batches[2])


@pytest.mark.parametrize("key", ["confirmatory", "apply_gate"])
@pytest.mark.parametrize("text", ["no", "false", "0"])
def test_a_profile_switch_written_as_a_string_is_refused(tmp_path: Path, key: str, text: str) -> None:
    # YAML's unquoted no/false is a boolean; a quoted "no" is a string, which pydantic's lax mode
    # read as False: a confirm profile silently became a pilot
    with pytest.raises(AblateError, match=f"profiles.sub.{key}: Input should be a valid boolean"):
        load(write(tmp_path, decl(**{key: text})))
    assert load(write(tmp_path, decl(**{key: False}))).profiles["sub"].model_dump()[key] is False
