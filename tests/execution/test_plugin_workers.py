"""A plugin reaches every worker: a grid whose axis names a plugin's entry runs on a local pool of
2 (forkserver) workers, each loading the planning process's plugins first, with the numbers of
in-process execution and the plugin in every record. (The installed example plugin is run on 2
workers and on submitit's local executor in tests/plugin/test_example_plugin.py.)"""

from __future__ import annotations

from pathlib import Path

import torch
import yaml

from harness.cli import run as run_cmd
from harness.errors import TRAINED
from harness.execution.attempt import execute, grid_attempt
from harness.experiment import plugins
from harness.experiment.ablation import load
from harness.experiment.grid import plan
from harness.run_options import RunOptions
from helpers.plugins import restored, write_plugin
from helpers.tiny_grid import numbers, records, write_tiny

# a positional encoding defined only by this file: a fixed ramp added to the embeddings
RAMP = """
import torch


@POSITIONAL.register("ramp")
class Ramp(PositionalEncoding):
    '''Adds p / T to every channel at position p.'''

    def add_to_embeddings(self, x):
        t = x.size(1)
        return x + (torch.arange(t, device=x.device, dtype=x.dtype) / t)[None, :, None]
"""


def test_a_plugin_entry_runs_on_two_pool_workers_as_in_process(tmp_path: Path) -> None:
    with restored():
        plugin_file = write_plugin(tmp_path / "decl" / "ramp.py", RAMP)
        path = write_tiny(tmp_path / "decl", steps=20, seeds=(0,), positions=("ramp", "nope"))
        path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), "plugins": ["ramp.py"]}))
        abl = load(str(path))
        specs = plan(abl, "cpu")[1]
        shared = grid_attempt(tmp_path, "off", None, abl, RunOptions()).keywords
        assert shared["plugins"] == (plugins.PluginRef("file", str(plugin_file)),)
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            reference = {s.run_id: execute(s, tmp_path / "reference", abl=abl) for s in specs}
        finally:
            torch.set_num_threads(before)
        assert run_cmd.run(str(path), None, [], tmp_path / "results", workers=2) == 0
    got = records(tmp_path / "results")
    assert sorted(got) == sorted(reference)
    for run_id, rec in got.items():
        assert rec["status"] in TRAINED and numbers(rec) == numbers(reference[run_id])
        (entry,) = rec["plugins"]
        assert entry["path"] == str(plugin_file) and entry["entries"] == ["position:ramp"]
        assert entry["distribution"] is None and len(entry["sha256"]) == 64
