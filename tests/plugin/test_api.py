"""harness/plugin.py is the one public module for plugins: it exports every registry a plugin may
add to with its base class, and the example plugin imports nothing else of ablate."""

from __future__ import annotations

import ast
from pathlib import Path

from torch import nn

import harness.plugin as api
from harness.experiment.plugins import families

ROOT = Path(__file__).resolve().parents[2]


def test_every_family_s_registry_and_base_class_are_public():
    exported = {name: getattr(api, name) for name in api.__all__}
    assert len(exported) == len(api.__all__)
    for family in families():
        assert any(obj is family.registry for obj in exported.values()), family.key
        if family.base is not None and family.base is not nn.Module:
            assert exported[family.base.__name__] is family.base, family.key
    assert {"acc", "exact", "loss", "ppl", "train_loss_final"} <= {m.name for m in api.METRICS}
    assert all(isinstance(m, api.Metric) for m in api.METRICS)


def test_the_example_plugin_imports_only_the_public_api():
    imported = set()
    for path in (ROOT / "examples" / "plugin" / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
    ours = {m for m in imported if m.split(".")[0] == "harness"}
    assert ours == {"harness.plugin"}, ours
