"""Code versions in run ids, in records, and the warning when one comparison mixes them."""

from __future__ import annotations

import json
from collections import namedtuple
from dataclasses import replace
from pathlib import Path

import pytest

from harness.analysis.comparisons import analyse
from harness.cli import compare as compare_cmd
from harness.cli.report import report as write_report
from harness.config import RunConfig
from harness.experiment import versions
from harness.experiment.ablation import load
from harness.experiment.grid import plan
from harness.experiment.selection import select
from harness.modules import POSITIONAL
from harness.registry import Registry
from harness.store import archive
from helpers.fake_store import write_decl, write_runs

# ids computed by the code before versions existed (commit 673fa0e), for tests/helpers/fake_store.py's
# grid (recomputed with that commit's code when the grid's warm-up and validation interval were
# brought within its 10 steps; its default 100 and 100 are refused now)
ROOT = Path(__file__).resolve().parents[2]
OLD_IDS = {("sinusoidal", 0): "a44bae4e72da", ("learned", 0): "53cb0f48c1b2", ("rope", 0): "7e5bc0b5a706"}


def test_registry_versions_default_to_1_and_are_checked() -> None:
    reg: Registry[int] = Registry("thing")
    reg.register("a")(1)
    reg.register("b", aliases=("bee",), version=3)(2)
    assert reg.version("a") == 1 and reg.version("bee") == 3
    with pytest.raises(ValueError, match="version must be an int >= 1"):
        reg.register("c", version=0)
    assert POSITIONAL.version("rope") == 2  # angles in float64


def test_ids_change_only_for_runs_of_code_whose_version_was_bumped(tmp_path: Path) -> None:
    specs = {(s.variant_label, s.seed): s for s in plan(load(str(write_decl(tmp_path))), "pilot", check_data=False)[1]}
    for key in (("sinusoidal", 0), ("learned", 0)):
        assert specs[key].run_id == OLD_IDS[key]  # every version 1: ids as stored before versions
        assert "code_versions" not in specs[key].payload()
    rope = specs[("rope", 0)]
    assert rope.payload()["code_versions"] == {"position:rope": 2}
    assert rope.run_id != OLD_IDS[("rope", 0)]
    assert rope.code_versions == {
        "model": 1,
        "training": 1,
        "position:rope": 2,
        "kernel:sdpa": 1,
        "qkv:separate": 1,
        "scale:d_head": 1,
        "mask_fill:-inf": 1,
        "head_split:correct": 1,
        "norm:layernorm": 1,
        "norm_position:pre": 1,
        "activation:gelu": 1,
        "init:normal_0.02": 1,
    }


def _stored_ids(data_file: str, profile: str) -> set[str]:
    return {
        r.run_id
        for r in archive.read(ROOT / "reports" / "data" / data_file, data_file).records.values()
        if r.profile == profile
    }


def test_a_new_config_key_at_its_default_keeps_every_stored_run_id() -> None:
    """``model.init`` came after runs were stored: at its default it must not enter the run id
    (``ADDED_KEYS``), so every run of the committed data files keeps its id, also where the key
    became an axis (ln_grad_init: its runs before the axis are its ``normal_0.02`` points); another
    value must change the id."""
    specs = plan(load("norm_placement"), "confirm", check_data=False)[1]
    first_look = {s.run_id for s in specs if s.seed < 8}  # the seeds stored before the key came
    assert first_look == _stored_ids("norm_placement.confirm.tar.gz", "confirm") & first_look
    assert len(first_look) == 40
    grid = plan(load("ln_grad_init"), "probe", check_data=False)[1]
    default = {s.run_id for s in grid if s.config.model.init == "normal_0.02"}
    assert default <= _stored_ids("ln_grad_init.tar.gz", "probe")
    spec = specs[0]
    named = spec.config.model_copy(update={"model": spec.config.model.model_copy(update={"init": "normal_0.02"})})
    assert replace(spec, config=named).run_id == spec.run_id
    xavier = spec.config.model_copy(update={"model": spec.config.model.model_copy(update={"init": "xavier"})})
    assert replace(spec, config=xavier).run_id != spec.run_id


def test_records_without_versions_ran_version_1_of_what_they_used() -> None:
    run = namedtuple("run", "code_versions config")  # a record's config: the keys its file holds
    rope = {"model": {"position": "rope"}, "attention": {"kernel": "sdpa"}}
    old_rope = run(None, RunConfig.model_validate(rope))
    new_rope = run({"model": 1, "position:rope": 2, "kernel:sdpa": 1}, RunConfig())
    old_sin = run(None, RunConfig.model_validate({"model": {"position": "sinusoidal"}}))
    assert versions.record_versions(None, rope) == {"model": 1, "training": 1, "position:rope": 1, "kernel:sdpa": 1}
    assert versions.mixed_versions([old_rope, new_rope, old_sin]) == {"position:rope": [1, 2]}
    assert versions.mixed_versions([old_sin, new_rope]) == {}  # different components, one version each
    assert versions.record_versions(None, {"model": {"position": "gone"}}) is None


def _store_with_one_rope_run_remade(tmp_path: Path) -> tuple[Path, Path]:
    """The mini pilot grid stored as before versions (no ``code_versions``); rope seed 0 then
    remade by the current code (its record says rope version 2)."""
    decl, results = write_decl(tmp_path / "decl"), tmp_path / "results"
    write_runs(results, decl, "pilot", lambda variant, seed: 0.5 + 0.01 * seed)
    for path in (results / "mini" / "pilot").glob("*/record.json"):  # as records made before versions
        path.write_text(json.dumps({k: v for k, v in json.loads(path.read_text()).items() if k != "code_versions"}))
    spec = next(s for s in plan(load(str(decl)), "pilot", check_data=False)[1] if s.variant_label == "rope")
    path = results / "mini" / "pilot" / spec.run_id / "record.json"
    rec = json.loads(path.read_text())
    path.write_text(json.dumps({**rec, "code_versions": spec.code_versions}))
    return decl, results


def test_report_and_compare_warn_when_a_comparison_mixes_code_versions(tmp_path: Path, capsys) -> None:
    decl, results = _store_with_one_rope_run_remade(tmp_path)
    abl = load(str(decl))
    result = analyse(select(abl, "pilot", check_data=False), results)
    assert result.mixed_code == {"copy": {"position:rope": [1, 2]}}
    text = write_report(abl.source, "pilot", results, tmp_path / "out").read_text()
    assert "**Warning: the runs compared on copy were made by different code (position:rope at versions 1, 2)" in text
    capsys.readouterr()  # the report's "wrote" line
    compare_cmd.compare(str(decl), "pilot", results, fmt="json")
    out, err = capsys.readouterr()
    assert "warning: the runs compared on copy were made by different code (position:rope at versions 1, 2)" in err
    json.loads(out)  # the machine format stays parseable


def test_no_warning_when_every_run_used_one_version_of_its_code(tmp_path: Path) -> None:
    decl, results = write_decl(tmp_path / "decl"), tmp_path / "results"
    write_runs(results, decl, "pilot", lambda variant, seed: 0.5 + 0.01 * seed)
    result = analyse(select(load(str(decl)), "pilot", check_data=False), results)
    assert result.mixed_code == {}
    assert "Warning: the runs compared" not in write_report(str(decl), "pilot", results, tmp_path / "o").read_text()
