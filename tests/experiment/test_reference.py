"""docs/ablation-files.md, the reference of ablation files: it is what ``ablate schema --markdown``
writes, and, counted independently of how it is written, it names every key of a declaration,
every config key, every registered name, task parameter, metric, probe and claim."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.config import EvalSection, valid_paths
from harness.experiment import ablation, metrics, reference
from harness.experiment import claims as claims_file
from harness.experiment.claims import Control
from harness.experiment.declaration import MetricSpec, Profile, TaskEntry
from harness.experiment.plugins import families
from harness.experiment.search_space import ParamSpec
from harness.tasks import TASKS
from harness.threshold import Threshold

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "ablation-files.md"

LEVELS = {
    "": ablation.Ablation,
    "tasks.TASK.": TaskEntry,
    "tasks.TASK.primary.": MetricSpec,
    "tasks.TASK.gate.": Threshold,
    "profiles.PROFILE.": Profile,
    "tune.KEY.": ParamSpec,
    "control.": Control,
}


@pytest.fixture(scope="module")
def page() -> str:
    return PAGE.read_text()


def test_the_page_is_what_ablate_schema_markdown_writes(page):
    env = {**os.environ, "ABLATE_DISABLE_PLUGIN_AUTOLOAD": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "harness.cli", "schema", "--markdown"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == page, "docs/ablation-files.md is stale: ablate schema --markdown > docs/ablation-files.md"


def test_every_declaration_key_has_a_row_and_a_bad_value(page):
    for prefix, model in LEVELS.items():
        for field in model.model_fields:
            if field == "source":  # set by the loader, not a key of the file
                continue
            assert f"| `{prefix}{field}` |" in page, f"{prefix}{field} has no row"
            assert page.count(f"| `{prefix}{field}` |") == 2, f"{prefix}{field}: a row and a bad-value row"


def test_every_config_key_and_registered_name_is_on_the_page(page):
    for key in valid_paths():
        assert f"| `{key}` |" in page, key
    for fam in families():
        for name in fam.registry.names():
            assert f"`{name}`" in page, (fam.key, name)
            for alias in fam.registry.aliases(name):
                assert f"`{alias}`" in page, (fam.key, alias)
    for task in TASKS.names():
        for param in TASKS.get(task).Params.model_fields:
            assert f"| `{task}` | `{param}` |" in page, (task, param)
    for metric in metrics.METRICS:
        assert f"| `{metric.shown}` |" in page, metric.name
    for probe in EvalSection.model_json_schema()["properties"]["probes"]["items"]["enum"]:
        assert f"`{probe}`" in page, probe
    for claim in claims_file.load_claims():
        assert f"| `{claim}` |" in page, claim


def test_the_example_opens_the_page_and_runs(page, tmp_path):
    """The page starts with a complete file of about 15 lines, the one ``ablate show`` accepts."""
    example = page.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert example == reference.EXAMPLE
    assert 12 <= len(example.splitlines()) <= 18
    path = tmp_path / "my_pe.yaml"
    path.write_text(example)
    abl = ablation.load(str(path))
    assert abl.name == "my_pe" and yaml.safe_load(example)["tasks"].keys() == abl.tasks.keys()


def test_a_bad_value_that_is_accepted_cannot_be_written():
    """A row quotes a real refusal: a value the example accepts stops the page from being written."""
    with pytest.raises(ValueError, match="was accepted"):
        reference.refusal(yaml.safe_load(reference.EXAMPLE), ("train.steps=3000",))
