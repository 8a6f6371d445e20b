"""One YAML reading for the tool, the schema and the editor: YAML 1.2. Every shipped declaration,
read by a YAML 1.2 parser, passes the shipped JSON Schema and is what ``ablate`` reads; ``1e-4``
is a float and ``yes`` a string in ``base``, ``tune:`` bounds, ``only_variants`` and overrides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from harness.config import RunConfig, parse_override
from harness.experiment import ablation
from harness.experiment import schema as schema_mod
from harness.experiment.declaration import read_yaml
from harness.experiment.search_space import resolve_space
from helpers.cli import assert_refused, invoke

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parents[2]
DECLARATIONS = sorted((ROOT / "ablations").glob("*.yaml")) + sorted((ROOT / "examples").rglob("*.yaml"))

TEXT = """\
name: mini
question: Does the kernel matter?
axes: {attention.kernel: [sdpa, math]}
baseline: {attention.kernel: sdpa}
base: {model.d_model: 32, model.n_heads: 2, train.lr: 1e-3, train.seq_len: 8}
tune: {train.lr: {type: float, low: 1e-4, high: 1e-2, log: true}}
tasks:
  copy:
    params: {n_symbols: 8}
    primary: {metric: acc@x1, higher_is_better: true, sesoi: 5e-2}
profiles:
  cpu: {seeds: [0]}
"""


def _yaml12(text: str):
    return YAML(typ="safe", pure=True).load(text)


@pytest.mark.parametrize("path", DECLARATIONS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_declaration_read_as_yaml_1_2_passes_the_schema_and_is_what_ablate_reads(path: Path) -> None:
    validator = jsonschema.Draft202012Validator(json.loads(schema_mod.SHIPPED.read_text()))
    data = _yaml12(path.read_text())
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(data)]
    assert errors == [], errors
    assert read_yaml(path, "ablation file") == data


def test_exponents_are_numbers_everywhere_and_yes_is_a_string(tmp_path: Path) -> None:
    path = tmp_path / "mini.yaml"
    path.write_text(TEXT)
    abl = ablation.load(str(path))
    assert abl.base["train.lr"] == 1e-3 and abl.tasks["copy"].primary.sesoi == 0.05
    spec = resolve_space(abl, "cpu")["train.lr"]
    assert (spec.low, spec.high) == (1e-4, 1e-2)
    assert parse_override("train.lr=1e-4") == ("train.lr", 1e-4)
    assert parse_override("x=yes") == ("x", "yes") and parse_override("x=true") == ("x", True)
    path.write_text(TEXT.replace("cpu: {seeds: [0]}", "cpu: {seeds: [0], only_variants: [yes, no]}"))
    err = assert_refused(invoke("show", str(path)), "'yes'")
    assert "True" not in err, err


def test_a_name_spelled_as_a_number_is_the_name() -> None:
    """``attention.mask_fill=-1e9`` (a number in YAML 1.2) names the mask fill ``-1e9``."""
    for text in ("-1e9", "-1e4"):
        value = parse_override(f"attention.mask_fill={text}")[1]
        assert (
            value == float(text)
            and RunConfig.model_validate({"attention": {"mask_fill": value}}).attention.mask_fill == text
        )
