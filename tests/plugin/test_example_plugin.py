"""The installed example plugin (examples/plugin) end to end, through the real CLI: ``ablate list``
finds it by its entry point and marks its entries; ``ablate check`` passes its component and its
task; a smoke grid of its ablation file
(examples/plugin/t5_lag.yaml: its position encoding x its task) runs on 2 local workers and on
submitit's local executor with the same numbers, every record naming the plugin's distribution
and version, and the report's setup says which plugin made the runs.

Skipped where the plugin is not installed; .ci/run installs it (``pip install -e examples/plugin``).
"""

from __future__ import annotations

import importlib.metadata as md
import json
from pathlib import Path

import pytest

from harness.errors import TRAINED
from harness.experiment import plugins
from helpers.cli import invoke
from helpers.plugins import restored
from helpers.tiny_grid import numbers, records

try:
    VERSION = md.version("ablate-example-plugin")
except md.PackageNotFoundError:
    pytest.skip("the example plugin is not installed: pip install -e examples/plugin", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
DECL = ROOT / "examples" / "plugin" / "t5_lag.yaml"
MARK = f"[ablate-example-plugin {VERSION}]"


@pytest.fixture(autouse=True)
def _installed_plugins_load(monkeypatch):
    monkeypatch.delenv(plugins.AUTOLOAD_OFF)  # as outside the test suite: entry points are discovered
    with restored():
        yield


def test_list_finds_the_plugin_by_its_entry_point():
    result = invoke("list")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"task lag_copy {MARK} (v1, synthetic)" in out
    assert (
        f"position (model.position): sinusoidal, learned, learned_clamp, rope, alibi, nope, learned_n01, t5_bias {MARK}"
        in out
    )
    (plugin,) = plugins.loaded()
    assert plugin.ref == plugins.PluginRef("entry point", "example", distribution="ablate-example-plugin")
    assert (plugin.distribution, plugin.version, plugin.module) == (
        "ablate-example-plugin",
        VERSION,
        "ablate_example_plugin.plugin",
    )


def test_ablate_check_passes_the_plugin_s_component_and_task():
    result = invoke("check", "position=t5_bias", "task=lag_copy", "--format", "json")
    assert result.exit_code == 0, result.output
    checks = {c["target"]: c for c in json.loads(result.stdout)["checks"]}
    assert set(checks) == {"model.position=t5_bias", "task=lag_copy"}
    for check in checks.values():
        assert check["ok"] and {r["status"] for r in check["contracts"]} == {"pass"}, check


def test_smoke_grid_on_two_workers_and_on_submitit_local(tmp_path: Path):
    pytest.importorskip("submitit")
    pool, jobs = tmp_path / "pool", tmp_path / "jobs"
    result = invoke(
        "run", str(DECL), "--profile", "smoke", "--workers", "2", "--results-dir", str(pool), "--wandb", "off"
    )
    assert result.exit_code == 0, result.output
    result = invoke(
        "run",
        str(DECL),
        "--profile",
        "smoke",
        "--executor",
        "slurm",
        "--submitit-cluster",
        "local",
        "--slurm-time",
        "10",
        "--results-dir",
        str(jobs),
        "--wandb",
        "off",
    )
    assert result.exit_code == 0, result.output
    by_pool, by_jobs = records(pool, "t5_lag", "smoke"), records(jobs, "t5_lag", "smoke")
    assert len(by_pool) == 4 and sorted(by_pool) == sorted(by_jobs)
    assert {r["variant_label"] for r in by_pool.values()} == {"t5_bias", "alibi"}
    for run_id, rec in by_pool.items():
        assert rec["status"] == by_jobs[run_id]["status"] in TRAINED
        assert numbers(rec) == numbers(by_jobs[run_id])
        for r in (rec, by_jobs[run_id]):
            assert r["plugins"] == [
                {
                    "distribution": "ablate-example-plugin",
                    "version": VERSION,
                    "module": "ablate_example_plugin.plugin",
                    "entries": ["position:t5_bias", "task:lag_copy"],
                }
            ]
    out = tmp_path / "reports"
    result = invoke(
        "report", str(DECL), "--profile", "smoke", "--results-dir", str(pool), "--out", str(out), "--wandb", "off"
    )
    assert result.exit_code == 0, result.output
    report = (out / "t5_lag.smoke.md").read_text()
    assert f"- Plugins: ablate-example-plugin {VERSION} (position:t5_bias, task:lag_copy).\n" in report
