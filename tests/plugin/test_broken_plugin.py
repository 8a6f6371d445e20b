"""A plugin component that peeks at the next token (tests/fixtures/plugins/peek_next.py): the
causal-leakage probe sees it, and ``ablate check`` fails it on causality, naming the offending
position."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from harness.experiment import plugins
from harness.modules import TransformerConfig, TransformerLM
from harness.modules.probes import causal_leakage
from helpers.cli import invoke
from helpers.plugins import restored

PEEK = Path(__file__).resolve().parents[1] / "fixtures" / "plugins" / "peek_next.py"


@pytest.fixture(autouse=True)
def _restored():
    with restored():
        yield


def test_the_fixture_leaks_the_next_token_and_nothing_else_does():
    plugins.load_specs([str(PEEK)], named_by="--plugin")
    idx = torch.randint(0, 11, (2, 16), generator=torch.Generator().manual_seed(0))
    leaks = {}
    for position in ("peek_next", "nope"):
        torch.manual_seed(0)
        model = TransformerLM(TransformerConfig(vocab_size=11, d_model=16, n_heads=2, position=position)).eval()
        leaks[position] = causal_leakage(model, idx, t=7)["leak_logits"]
    assert leaks["nope"] == 0.0 and leaks["peek_next"] > 1e-3, leaks


def test_ablate_check_fails_the_peeking_component_on_causality():
    result = invoke("check", "position=peek_next", "--plugin", str(PEEK), "--format", "json")
    assert result.exit_code == 1, result.output
    (report,) = json.loads(result.stdout)["checks"]
    assert report["target"] == "model.position=peek_next" and report["ok"] is False
    failed = {r["contract"]: r["detail"] for r in report["contracts"] if r["status"] == "fail"}
    assert "causality" in failed, failed
    assert failed["causality"].startswith("first offending position 0: its output changes when the tokens from")
