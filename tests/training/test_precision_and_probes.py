"""Precision that actually ran, the kernel backend, and probe metrics, through one tiny run each."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from harness.errors import TRAINED
from harness.execution.attempt import execute
from harness.experiment import metrics
from harness.experiment.ablation import load
from harness.experiment.grid import plan
from harness.training import precision as prec

TINY = """
name: tiny
question: tiny?
axes: {{attention.mask_fill: [-inf, "-1e4", "-1e9"]}}  # quoted: YAML 1.2 reads -1e4 as a number
baseline: {{attention.mask_fill: "-1e4"}}
base: {{model.d_model: 16, model.n_heads: 2, model.n_layers: 2, train.steps: 4, train.seq_len: 8,
       train.val_every: 4, train.warmup_steps: 1, eval.n_examples: 8, eval.val_examples: 8,
       attention.kernel: math, train.precision: {precision}, eval.probes: [grad_norm_init, leakage, masked_attention]}}
tasks:
  padded_copy:
    params: {{n_symbols: 6}}
    primary: {{metric: acc@x1, higher_is_better: true, sesoi: 0.05}}
profiles:
  cpu: {{seeds: [0]}}
"""


def run_all(tmp_path: Path, precision: str) -> dict[str, dict]:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY.format(precision=precision))
    abl = load(str(path))
    _, specs = plan(abl, "cpu")
    return {s.variant_label: execute(s, tmp_path / "results", abl=abl) for s in specs}


def test_trainer_gets_a_real_float16_plugin_on_cpu():
    kw = prec.trainer_kwargs("16-mixed", "cpu")
    assert "precision" not in kw and kw["plugins"][0].precision == "16-mixed"
    assert kw["plugins"][0].scaler is not None
    assert prec.trainer_kwargs("bf16-mixed", "cpu") == {"precision": "bf16-mixed"}
    assert prec.trainer_kwargs("16-mixed", "cuda") == {"precision": "16-mixed"}
    assert prec.adam_eps("16-true") == 1e-4 and prec.adam_eps("32-true") == 1e-8


def test_observed_precision():
    w32 = torch.zeros(1)
    assert prec.observed(torch.zeros(1, dtype=torch.float16), w32) == "16-mixed"
    assert prec.observed(torch.zeros(1, dtype=torch.bfloat16), w32) == "bf16-mixed"
    assert prec.observed(torch.zeros(1), w32) == "32-true"
    assert prec.observed(torch.zeros(1, dtype=torch.float16), w32.half()) == "16-true"
    with pytest.raises(RuntimeError, match="16-mixed was requested but bf16-mixed ran"):
        prec.check_ran("16-mixed", "bf16-mixed")


def test_fp16_on_cpu_runs_fp16_and_records_outcomes(tmp_path: Path):
    recs = run_all(tmp_path, "16-mixed")
    ok = recs["-1e4"]
    assert ok.status in TRAINED, ok.reason  # trained to its end (4 steps: stalled)
    assert ok.precision == ok.precision_requested == "16-mixed"
    assert ok.kernel_backend == "math"
    m = ok.metrics
    assert m["attn_fully_masked_rows_init"] > 0
    # a finite fill leaks through the fully masked padding rows, never into a real position
    assert m["leak_grad_init"] > 0 and m["leak_grad_real_init"] == m["leak_logits_real_init"] == 0
    assert m["attn_fully_masked_mass_init"] == pytest.approx(1.0, abs=1e-2)  # finite fill: uniform rows
    assert {"grad_norm_init_l0", "grad_norm_init_l1", "leak_logits", "attn_masked_max"} <= set(m)
    # block i's FFN output weight is one of its parameters: its gradient is a part of the block's
    for i in (0, 1):
        assert 0 < m[f"grad_norm_init_ffn_out_l{i}"] < m[f"grad_norm_init_l{i}"]
    ratio = m["grad_norm_init_ffn_out_l1"] / m["grad_norm_init_ffn_out_l0"]
    assert m["grad_norm_init_ffn_out_top_over_bottom"] == pytest.approx(ratio)
    assert m["grad_norm_init_ffn_out_top"] == m["grad_norm_init_ffn_out_l1"]
    assert m["grad_norm_init_top_over_bottom"] == pytest.approx(m["grad_norm_init_l1"] / m["grad_norm_init_l0"])
    assert m["resid_growth_init"] == pytest.approx(1.0, abs=0.05)  # N(0, 0.02) weights: a flat stream
    # 4 steps of changing weights: the norms differ, so their swings are finite and not 0
    assert m["nonfinite_grad_steps"] == 0 and m["grad_norm_mean"] > 0 and 0 < m["grad_norm_cv"] < math.inf
    # the metrics table lists exactly what this run produced (peak_mem_mb: CUDA runs only; chance_loss, the
    # task's chance level, is no metric a primary or gate may name)
    made = metrics.produced("synthetic", (1,), ("grad_norm_init", "leakage", "masked_attention"), 2, padded=True)
    assert set(m) == set(made) - {"peak_mem_mb"} | {"chance_loss"}
    assert m["chance_loss"] == pytest.approx(math.log(6)) and math.isfinite(m["grad_norm_cv_detrended"])
    bad = recs["-1e9"]  # masked_fill(-1e9) on float16 scores: torch's overflow, recorded as the outcome
    assert bad.status == "failed" and "c10::Half without overflow" in bad.reason
    assert bad.metrics["leak_raised_init"] == 1.0
    nan = recs["-inf"]  # fully masked rows: NaN
    assert nan.status == "diverged" and nan.metrics["attn_nonfinite_rows_init"] > 0


def test_lightning_silent_bf16_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(prec, "trainer_kwargs", lambda p, d=None: {"precision": p})  # Lightning's own fallback
    rec = run_all(tmp_path, "16-mixed")["-1e4"]
    assert rec.status == "failed" and "16-mixed was requested but bf16-mixed ran" in rec.reason
