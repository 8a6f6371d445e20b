"""The JSON Schema of ablation files (harness/experiment/schema.py): the shipped file is what
``ablate schema`` prints, every registered and example declaration passes it and points an editor
at it on its first line (a comment: no run id or declaration changes), and it refuses bad files,
dotted config keys included."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.config import valid_paths
from harness.experiment import ablation
from harness.experiment import schema as schema_mod
from harness.experiment.plugins import families
from harness.experiment.selection import select

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parents[2]
DECLARATIONS = sorted((ROOT / "ablations").glob("*.yaml")) + sorted((ROOT / "examples").rglob("*.yaml"))
HEADER = "# yaml-language-server: $schema="


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(schema_mod.SHIPPED.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _errors(validator, data) -> list[str]:
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(data)]


def test_the_shipped_schema_is_what_ablate_schema_prints():
    env = {**os.environ, "ABLATE_DISABLE_PLUGIN_AUTOLOAD": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "harness.cli", "schema"], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == schema_mod.SHIPPED.read_text(), (
        "harness/experiment/ablation.schema.json is stale: "
        "ABLATE_DISABLE_PLUGIN_AUTOLOAD=1 ablate schema > harness/experiment/ablation.schema.json"
    )


def test_every_config_key_and_registered_name_is_in_the_schema():
    """Independently of how the schema is built: each dotted key a config accepts is a property of
    the config mapping, and each component key lists exactly the registry's names and aliases."""
    defs = json.loads(schema_mod.SHIPPED.read_text())["$defs"]
    assert set(defs["Config"]["properties"]) == set(valid_paths())
    for fam in families():
        reg = fam.registry
        expected = {*reg.names(), *(a for n in reg.names() for a in reg.aliases(n))}
        if fam.config_key is None:
            assert set(defs["Ablation"]["properties"]["tasks"]["properties"]) == expected
        else:
            assert set(defs[fam.config_key]["enum"]) == expected, fam.key


@pytest.mark.parametrize("path", DECLARATIONS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_declaration_passes_and_points_at_the_shipped_schema(path, validator):
    first = path.read_text().splitlines()[0]
    assert first.startswith(HEADER), f"{path}: the first line must be {HEADER}<relative path>"
    assert (path.parent / first.removeprefix(HEADER)).resolve() == schema_mod.SHIPPED.resolve()
    assert _errors(validator, yaml.safe_load(path.read_text())) == []


@pytest.mark.parametrize("path", DECLARATIONS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_schema_line_changes_no_declaration(path):
    """The line is a YAML comment: the file without it parses to the same declaration."""
    text = path.read_text()
    assert yaml.safe_load(text) == yaml.safe_load(text.split("\n", 1)[1])


def test_the_schema_line_changes_no_run_id():
    """pe_extrapolation's runs, every profile, from the file and from its parse without the line."""
    loaded = ablation.load("pe_extrapolation")
    text = loaded.source and Path(loaded.source).read_text()
    bare = ablation.Ablation.model_validate(yaml.safe_load(text.split("\n", 1)[1]))
    for profile in loaded.profiles:
        ids = [select(a, profile, check_data=False).specs for a in (loaded, bare)]
        assert [s.run_id for s in ids[0]] == [s.run_id for s in ids[1]] != []


def _pe() -> dict:
    return yaml.safe_load((ROOT / "ablations" / "pe_extrapolation.yaml").read_text())


def _set(where: tuple, value):
    def change(data: dict) -> None:
        node = data
        for part in where[:-1]:
            node = node[part]
        node[where[-1]] = value

    return change


BAD = {
    "misspelt top-level key": (lambda d: d.update(axis=d.pop("axes")), "'axis' was unexpected"),
    "misspelt dotted key in base": (_set(("base", "model.d_modle"), 64), "'model.d_modle' was unexpected"),
    "misspelt dotted key in overrides": (
        _set(("profiles", "smoke", "overrides", "train.step"), 5),
        "'train.step' was unexpected",
    ),
    "unknown dotted key as an axis": (_set(("axes", "model.positon"), ["rope"]), "'model.positon' was unexpected"),
    "wrong type: seeds as text": (_set(("profiles", "smoke", "seeds"), "0,1"), "is not of type 'array'"),
    "wrong type: a word for an integer": (_set(("base", "model.d_model"), "wide"), "is not of type 'integer'"),
    "a boolean for an integer": (_set(("base", "train.steps"), True), "is not of type 'integer'"),
    "out of range": (_set(("profiles", "smoke", "overrides", "train.steps"), 0), "less than or equal to the minimum"),
    "unknown positional encoding on an axis": (
        _set(("axes", "model.position"), ["sinusoidal", "rotary"]),
        "'rotary' is not one of",
    ),
    "unknown kernel in a task config": (_set(("tasks", "copy", "config", "attention.kernel"), "flsh"), "'flsh'"),
    "unknown task": (lambda d: d["tasks"].update(copyy=d["tasks"].pop("copy")), "'copyy' was unexpected"),
    "unknown task parameter": (_set(("tasks", "copy", "params", "n_symbol"), 3), "'n_symbol' was unexpected"),
    "unknown metric name": (_set(("tasks", "copy", "primary", "metric"), "accuracy@x4"), "does not match"),
    "misspelt claim id": (_set(("claims",), ["pe-learned-extrapolaton"]), "is not one of"),
    "a name the store cannot hold": (_set(("name",), "../pe"), "does not match"),
    "a tuned key that is no config key": (
        _set(("tune",), {"train.lrate": {"type": "categorical", "choices": [1]}}),
        "train.lrate",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_the_schema_refuses_a_bad_declaration(case, validator):
    data = _pe()
    change, expected = BAD[case]
    change(data)
    errors = _errors(validator, data)
    assert any(expected in e for e in errors), errors


def test_a_file_with_plugins_may_name_unknown_components_but_not_unknown_keys(validator):
    """Names a plugin registers cannot be known to the shipped schema: with ``plugins:``, a name is
    any string; keys and types are still checked."""
    data = _pe()
    data["plugins"] = ["my_plugin"]
    data["axes"]["model.position"] = ["sinusoidal", "t5_bias"]
    assert _errors(validator, data) == []
    bad = copy.deepcopy(data)
    bad["base"]["model.d_modle"] = 64
    assert any("'model.d_modle' was unexpected" in e for e in _errors(validator, bad))


def test_the_spending_function_is_one_of_the_two(validator):
    """An editor flags a misspelt ``sequential.spending`` as ``ablate`` does (a closed set: an enum)."""
    for spending, valid in (("obrien_fleming", True), ("pocock", True), ("obrien-fleming", False)):
        data = _pe()
        data["profiles"]["confirm"]["sequential"] = {"looks": [4, 8], "spending": spending}
        assert (not _errors(validator, data)) is valid, (spending, _errors(validator, data))
