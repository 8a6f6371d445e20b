"""The metrics table (harness/experiment/metrics.py) and its readers: declarations, claims and the
positive controls name only metrics it knows and state no other direction; the pre-run checks
accept what a task produces with the probes it asks for and nothing else.

That the table lists what training really produces is checked against a real run in
tests/training/test_precision_and_probes.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import AblateError
from harness.experiment import metrics
from harness.experiment.ablation import available, load
from harness.experiment.claims import load_claims, load_registry, parse, parse_claims
from harness.experiment.grid import plan
from helpers.mini_decl import decl, write


@pytest.mark.parametrize("name", sorted(available()))
def test_every_declared_metric_is_in_the_table(name: str) -> None:
    abl = load(name)  # a higher_is_better that disagrees with the table would be refused here
    for entry in abl.tasks.values():
        assert metrics.lookup(entry.primary.metric) is not None, entry.primary.metric
        if entry.gate:
            assert metrics.lookup(entry.gate.metric) is not None, entry.gate.metric


def test_claims_and_reproductions_name_known_metrics() -> None:
    named = [ev.metric for c in load_claims().values() for ev in c.evidence]
    named += [comp.metric for entry in load_registry() for comp in entry.comparisons]
    assert named and all(metrics.lookup(m) is not None for m in named)


def test_lookup_matches_whole_names_only() -> None:
    assert metrics.lookup("acc@x4").name == "acc"
    assert metrics.lookup("leak_logits_init").name == "leak_logits"
    assert metrics.lookup("leak_logits_real").name == "leak_logits_real"
    assert metrics.lookup("grad_norm_init_l11").name == "grad_norm_init_l<i>"
    for unknown in ("acc", "acc@x", "accuracy@x1", "leak_logits_final", "grad_norm_init_lx", "init_loss"):
        assert metrics.lookup(unknown) is None, unknown
    with pytest.raises(ValueError, match="unknown metric 'init_loss'"):
        metrics.higher_is_better("init_loss")


def test_a_direction_that_disagrees_with_the_table_is_refused(tmp_path: Path) -> None:
    data = decl()
    data["tasks"]["copy"]["primary"]["higher_is_better"] = False
    with pytest.raises(AblateError, match=r"acc@x1 is higher-is-better .*set it to true"):
        load(write(tmp_path, data))
    del data["tasks"]["copy"]["primary"]["higher_is_better"]  # optional: the table decides
    assert load(write(tmp_path, data)).tasks["copy"].primary.higher_is_better is None


EVIDENCE = {"task": "copy", "metric": "steps_to_target", "variant": "rope", "expect": "better"}
CLAIM = {"id": "x", "claim": "X.", "figure": "none", "ablation": "pe_extrapolation", "evidence": [EVIDENCE]}


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"higher_is_better": True}, "steps_to_target is lower-is-better"),
        ({"metric": "steps"}, "unknown metric 'steps'"),
    ],
)
def test_claims_and_reproductions_refuse_an_unknown_metric_or_the_other_direction(change, words) -> None:
    with pytest.raises(AblateError, match=words):
        parse_claims([{**CLAIM, "evidence": [{**EVIDENCE, **change}]}])
    comp = {**EVIDENCE, "ablation": "pe_extrapolation", "profile": "cpu", "reference": "sinusoidal", **change}
    entry = {k: "x" for k in ("id", "paper", "source", "setting", "result", "expected", "differences")}
    with pytest.raises(AblateError, match=words):
        parse([{**entry, "comparisons": [comp]}])


def test_a_probe_metric_needs_its_probe(tmp_path: Path) -> None:
    data = decl()
    data["tasks"] = {"copy": {**data["tasks"]["copy"], "gate": {"metric": "leak_logits", "max": 0.0}}}
    with pytest.raises(AblateError, match=r"gate metric 'leak_logits' is not produced .*it produces: loss@x1"):
        plan(load(write(tmp_path, data)), "cpu", check_data=False)
    data["base"]["eval.probes"] = ["leakage"]
    assert plan(load(write(tmp_path, data)), "cpu", check_data=False)[1]


def test_produced_follows_task_kind_lengths_probes_and_layers() -> None:
    lm = metrics.produced("lm", (1, 2), (), 2, False)
    assert {"loss@x1", "loss@x2", "ppl@x2", "steps_to_target", "train_tokens_per_s"} <= set(lm)
    assert not {"acc@x1", "loss@x4", "grad_norm_init_l0", "finished"} & set(lm)
    probed = metrics.produced("synthetic", (1,), ("grad_norm_init", "leakage"), 3, True)
    assert {"acc@x1", "grad_norm_init_l2", "leak_logits_init", "leak_grad_real"} <= set(probed)
    assert "grad_norm_init_l3" not in probed and "attn_masked_max" not in probed
    assert "leak_grad_real" not in metrics.produced("synthetic", (1,), ("leakage",), 1, False)
    assert metrics.validation_metrics("lm") == ["loss", "ppl"]
    assert metrics.validation_metrics("lm", byte_level=True) == ["loss", "ppl", "bpb"]  # the text task
    assert "bpb@x2" in metrics.produced("lm", (1, 2), (), 1, False, byte_level=True) and "bpb@x2" not in lm
    assert metrics.validation_name("exact@x4") == "exact" and metrics.validation_name("grad_norm_cv") is None
    assert metrics.beyond_training("acc@x2") and not metrics.beyond_training("acc@x1")
    assert not metrics.beyond_training("steps_to_target") and metrics.length_of("loss@x16") == ("loss", 16)
