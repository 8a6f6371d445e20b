"""A profile's ``sequential:`` block (docs/sequential.md): a bad one is refused before any run, with
one line, by every command that reads the declaration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers.cli import assert_nothing_written, assert_refused, invoke, user_file

pytestmark = pytest.mark.usefixtures("cli_isolated")


def with_profile(tmp_path: Path, **profile: Any) -> Path:
    """The CLI's mini declaration (2 arms, one task) with a ``confirm`` profile of 8 seeds and ``profile``'s keys."""
    path = user_file(tmp_path)
    data = yaml.safe_load(path.read_text())
    data["profiles"]["confirm"] = {"seeds": list(range(8)), **profile}
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    "profile, words",
    [
        ({"sequential": {"looks": [6, 6, 8]}}, ["looks must increase, got [6, 6, 8]", "increasing order"]),
        ({"sequential": {"looks": [8, 6]}}, ["looks must increase"]),
        ({"sequential": {"looks": [1, 8]}}, ["looks start at 1 seeds; a paired t-test needs at least 2"]),
        (
            {"sequential": {"looks": [6, 12]}},
            ["the last look is at 12 seeds but the profile lists 8", "list at least 12"],
        ),
        (
            {"sequential": {"looks": [6, 8], "spending": "obrien-fleming"}},
            ["unknown spending function", "obrien_fleming"],
        ),
        ({"sequential": {"looks": [6, 8], "alpha": 1.5}}, ["alpha must lie in (0, 1), got 1.5"]),
        ({"sequential": {"looks": [6, 8], "alpha": 0}}, ["alpha must lie in (0, 1), got 0"]),
        ({"sequential": {"looks": [6, 8]}, "confirmatory": False}, ["on a pilot profile (confirmatory: false)"]),
        ({"sequential": {"looks": [6, 8], "beta": 0.2}}, ["sequential.beta: unknown key"]),
    ],
)
@pytest.mark.parametrize("command", ["run", "show", "status"])
def test_a_bad_sequential_block_is_refused_before_any_run(tmp_path, profile, words, command):
    path = with_profile(tmp_path, **profile)
    results = tmp_path / "results"
    result = invoke(
        command, str(path), "--profile", "confirm", *(["--results-dir", str(results)] if command != "show" else [])
    )
    assert_refused(result, *words)
    assert_nothing_written(results)


def test_a_first_look_the_sign_flip_check_cannot_pass_is_refused(tmp_path):
    """At 5 seeds the exact sign-flip p is at least 2 / 2**5 = 0.0625: nothing could be decided there."""
    path = with_profile(tmp_path, sequential={"looks": [5, 8]})
    results = tmp_path / "results"
    for command in ("run", "status"):
        err = assert_refused(invoke(command, str(path), "--profile", "confirm", "--results-dir", str(results)))
        assert "sequential looks start at 5 seeds" in err and "start the looks at 6 seeds or more" in err
    assert_nothing_written(results)


def test_tuned_runs_of_a_sequential_profile_need_a_study_as_a_fixed_profiles_do(tmp_path):
    """A tuned grid has no looks (every seed, decided as a fixed design): --tuned is refused only for
    want of a study, as for a fixed profile."""
    path = with_profile(tmp_path, sequential={"looks": [6, 8]})
    results = tmp_path / "results"
    err = assert_refused(invoke("run", str(path), "--profile", "confirm", "--tuned", "--results-dir", str(results)))
    assert "no tuning studies" in err and "group-sequential" not in err
    assert_nothing_written(results)
