"""Numbers a run must not report as measured: metrics at a length whose logits are not finite
(undefined, with why, never the 0 accuracy that argmax of NaN gives), and a training loss far below
the held-out loss where every training batch is a fresh draw (flagged). Each is kept in the record
and shown in the report's failures section."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from harness.cli import output
from harness.cli.inspect import status
from harness.errors import TRAINED
from harness.execution.attempt import execute
from harness.experiment.ablation import load
from harness.experiment.grid import plan
from harness.modules import POSITIONAL, PositionalEncoding
from harness.report.probes import run_notes
from harness.store import archive
from harness.store.record import Record
from harness.tasks import IGNORE_INDEX
from harness.training.scoring import GAP_NATS, fresh_draws, score, summarise, train_gap_flag, undefined_reason

ABLATION = """
name: suspect
question: are these numbers measured?
axes: {{model.position: [sinusoidal, {variant}]}}
baseline: {{model.position: sinusoidal}}
base: {{model.d_model: 32, model.n_heads: 2, model.n_layers: 1, train.steps: {steps}, train.seq_len: 8,
       train.lr: 1.0e-2, train.val_every: {steps}, train.warmup_steps: 2, eval.length_multipliers: [1, 2],
       eval.n_examples: 32, eval.val_examples: 32}}
tasks:
  copy:
    params: {{n_symbols: 6}}
    primary: {{metric: acc@x2, higher_is_better: true, sesoi: 0.05}}
profiles:
  cpu: {{seeds: [0]}}
"""


class NaNFrom12(PositionalEncoding):
    """NaN from position 12 on: finite at L = 8, not at 2 L = 16."""

    def add_to_embeddings(self, x: Tensor) -> Tensor:
        return x.masked_fill(torch.arange(x.size(1))[None, :, None] >= 12, float("nan"))  # (B, T, C)


class PeekInTraining(PositionalEncoding):
    """Position t sees token t + 1 in training mode only."""

    def add_to_embeddings(self, x: Tensor) -> Tensor:
        return x + 4 * F.pad(x[:, 1:], (0, 0, 0, 1)) if self.training else x  # (B, T, C)


def run(tmp_path: Path, variant: str, steps: int) -> Record:
    path = tmp_path / "suspect.yaml"
    path.write_text(ABLATION.format(variant=variant, steps=steps))
    abl = load(str(path))
    _, specs = plan(abl, "cpu")
    spec = next(s for s in specs if s.variant_label == variant)
    torch.set_num_threads(1)
    return execute(spec, tmp_path / "runs", abl=abl)


def test_nan_logits_at_a_scored_position_make_every_metric_of_the_length_undefined() -> None:
    targets = torch.full((2, 6), IGNORE_INDEX)
    targets[:, 3:] = 1
    logits = torch.zeros(2, 6, 4)
    logits[1, 4, 0] = float("nan")
    sums = score(logits, targets)
    metrics = summarise(sums, "synthetic", "@x4")
    assert set(metrics) == {"loss@x4", "acc@x4", "exact@x4"} and all(math.isnan(v) for v in metrics.values())
    assert undefined_reason(sums, 6) == "non-finite logits at 1 of 6 scored positions at T=6 (first at position 4)"
    logits[1, 4, 0], logits[0, 1, 0] = 0.0, float("inf")  # at a position no loss is taken: measured
    sums = score(logits, targets)
    assert undefined_reason(sums, 6) is None and summarise(sums, "synthetic", "")["acc"] == 0.0


def test_a_run_with_nan_beyond_l_records_its_metrics_there_as_undefined(register, tmp_path: Path) -> None:
    register(POSITIONAL, "nan_from_12", NaNFrom12)
    rec = run(tmp_path, "nan_from_12", steps=4)
    assert rec.status in TRAINED
    m = rec.metrics
    assert all(math.isnan(m[k]) for k in ("acc@x2", "exact@x2", "loss@x2")), m  # acc@x2 was 0.0
    assert all(math.isfinite(m[k]) for k in ("acc@x1", "exact@x1", "loss@x1"))
    assert set(rec.undefined_metrics) == {"acc@x2", "exact@x2", "loss@x2"}
    assert "non-finite logits at 256 of 256 scored positions at T=16" in rec.undefined_metrics["acc@x2"]
    (stored,) = (tmp_path / "runs").rglob("record.json")
    assert '"acc@x2": null' in stored.read_text()
    (line,) = [x for x in run_notes([rec]) if x.startswith("- ")]
    assert line.startswith("- `copy` nan_from_12 seed 0: **no value** of `acc@x2`, `exact@x2`, `loss@x2` — non-finite")
    assert "no value of acc@x2, exact@x2, loss@x2 (non-finite logits): " in status_text(tmp_path)
    assert run_notes(read_back(rec, tmp_path)) == run_notes([rec])  # the report made --from its data file


def test_a_run_that_sees_its_answers_in_training_only_is_flagged(register, tmp_path: Path) -> None:
    register(POSITIONAL, "peek_in_training", PeekInTraining)
    rec = run(tmp_path, "peek_in_training", steps=150)
    m = rec.metrics
    assert m["loss@x1"] - m["train_loss_final"] > GAP_NATS, m
    assert (
        set(rec.flags) == {"train_below_held_out"}
        and "nats below the held-out loss" in rec.flags["train_below_held_out"]
    )
    (line,) = [x for x in run_notes([rec]) if x.startswith("- ")]
    assert line.startswith("- `copy` peek_in_training seed 0: **flagged** (train_below_held_out) — training loss")
    assert "flagged (train_below_held_out): " in status_text(tmp_path)
    assert run_notes(read_back(rec, tmp_path)) == run_notes([rec])  # the report made --from its data file


def status_text(tmp_path: Path) -> str:
    """What ``ablate status`` prints for the suspect grid, its whitespace collapsed."""
    with output.console.capture() as seen:
        status(str(tmp_path / "suspect.yaml"), "cpu", tmp_path / "runs")
    return " ".join(seen.get().split())


def read_back(rec: Record, tmp_path: Path) -> list[Record]:
    """The records a report's data file holding ``rec`` gives back."""
    path = archive.write(tmp_path / "suspect.tar.gz", tmp_path / "runs", [rec], rec.ablation, rec.profile, [], {})
    return list(archive.read(path, str(path)).records.values())


def test_an_honest_run_has_no_flag_and_no_note(tmp_path: Path) -> None:
    rec = run(tmp_path, "rope", steps=150)
    assert rec.flags is None and rec.undefined_metrics is None and run_notes([rec]) == []
    assert "flags" not in rec.to_json() and "undefined_metrics" not in rec.to_json()  # the file as before


@pytest.mark.parametrize(
    ("kind", "tokens", "split", "fresh"),
    [("synthetic", 10**9, None, True), ("lm", 1000, 1000, True), ("lm", 1001, 1000, False), ("lm", 10**9, None, True)],
)
def test_fresh_draws(kind: str, tokens: int, split: int | None, fresh: bool) -> None:
    assert fresh_draws(kind, tokens, split) is fresh


def test_the_gap_flag_needs_more_than_gap_nats_on_fresh_draws() -> None:
    assert train_gap_flag(0.87, 4.47, fresh=True) is not None
    assert train_gap_flag(0.162, 0.567, fresh=True) is None  # the largest honest gap in the reports' data
    assert train_gap_flag(0.87, 4.47, fresh=False) is None  # memorising a corpus can do that
    assert train_gap_flag(float("nan"), 4.47, fresh=True) is None
