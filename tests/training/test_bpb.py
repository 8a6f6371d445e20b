"""Bits per byte (``bpb``): the training layer's sums against a float64 computation by hand, whose
byte count comes from decoding the scored targets back to text (not from ``token_bytes``), and a
whole run's ``bpb@xK`` against its ``loss@xK`` and the bytes of its own evaluation set."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from harness.errors import TRAINED
from harness.execution.attempt import execute
from harness.experiment.ablation import load
from harness.experiment.grid import plan
from harness.seeding import numpy_rng
from harness.tasks import IGNORE_INDEX, build_task
from harness.training.scoring import score, summarise
from helpers import decode

UNICODE = "naïve café, Ελληνικά — 日本語 🙂\nthe end of a line\n" * 40


@pytest.fixture
def corpora(tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, dict]:
    """A non-ASCII corpus (characters of 1 to 4 bytes) with a char vocabulary; Tiny Shakespeare's
    first 100,000 characters (ASCII) with a BPE; the tokenizer cached in a private folder."""
    monkeypatch.setenv("ABLATE_CACHE_DIR", str(tmp_path / "cache"))
    unicode = tmp_path / "unicode.txt"
    unicode.write_text(UNICODE, encoding="utf-8")
    head = tmp_path / "head.txt"
    head.write_bytes((data_dir / "tinyshakespeare.txt").read_bytes()[:100_000])
    return {
        "char": {"path": str(unicode)},
        "bpe": {"path": str(head), "tokenizer": "bpe", "vocab_size": 300},
    }


@pytest.mark.parametrize("vocab", ["char", "bpe"])
def test_bpb_of_the_scored_positions_by_hand(corpora: dict[str, dict], vocab: str) -> None:
    task = build_task("text", corpora[vocab])
    _, targets = task.sample(4, 32, np.random.default_rng(0), "train")  # (4, 32)
    targets[0, :5] = IGNORE_INDEX  # positions without a loss carry no bytes either
    logits = torch.randn(4, 32, task.vocab_size, generator=torch.Generator().manual_seed(1))  # (4, 32, V)
    sums = score(logits, targets, task.token_bytes)
    metrics = summarise(sums, "lm", "@x1")

    scored = targets != IGNORE_INDEX
    nll = -torch.log_softmax(logits.double(), -1).gather(-1, targets.clamp(min=0)[..., None])[..., 0]  # (4, 32)
    nats = nll[scored].sum().item()
    n_bytes = sum(len(decode(task.vocab, row[keep].tolist()).encode("utf-8")) for row, keep in zip(targets, scored))
    assert sums["bytes"] == n_bytes and sums["tokens"] == scored.sum().item()
    assert metrics["bpb@x1"] == pytest.approx(nats / (n_bytes * math.log(2)), rel=1e-6)
    assert metrics["bpb@x1"] == pytest.approx(metrics["loss@x1"] * sums["tokens"] / (n_bytes * math.log(2)), rel=1e-12)
    if vocab == "char":  # multi-byte characters: bits per byte < bits per character
        assert n_bytes > sums["tokens"]


def test_no_bytes_no_bpb() -> None:
    """Synthetic tasks have no ``token_bytes``: their metrics are as before."""
    logits, targets = torch.zeros(2, 4, 8), torch.tensor([[1, 2, IGNORE_INDEX, 3], [4, 5, 6, 7]])
    sums = score(logits, targets)
    assert "bytes" not in sums and "bpb" not in summarise(sums, "synthetic", "")
    assert set(summarise(sums, "lm", "")) == {"loss", "ppl"}


TINY = """
name: tiny_text
question: tiny?
axes: {model.position: [sinusoidal, rope]}
baseline: {model.position: sinusoidal}
base: {model.d_model: 16, model.n_heads: 2, model.n_layers: 1, train.steps: 12, train.seq_len: 16,
       train.val_every: 6, train.warmup_steps: 2, eval.length_multipliers: [1, 2], eval.n_examples: 16,
       eval.val_examples: 16}
tasks:
  text:
    params: {params}
    primary: {metric: bpb@x2, higher_is_better: false, sesoi: 0.05}
    target: {metric: bpb, max: 100.0}
profiles:
  cpu: {seeds: [3]}
"""


def test_a_run_reports_bpb_of_its_own_evaluation_set(corpora: dict[str, dict], tmp_path: Path) -> None:
    path = tmp_path / "tiny_text.yaml"
    path.write_text(TINY.replace("{params}", str(corpora["bpe"]).replace("'", '"')))
    abl = load(str(path))
    spec = plan(abl, "cpu")[1][0]
    torch.set_num_threads(1)
    record = execute(spec, tmp_path / "results", abl=abl)
    assert record.status in TRAINED, record  # trained to its end (a run this short stalls)
    metrics, task = record.metrics, build_task("text", corpora["bpe"])
    assert record.task_version == task.version
    for mult in (1, 2):  # the evaluation set, drawn again as the training layer draws it
        _, targets = task.sample(16, 16 * mult, numpy_rng(spec.seed, "test", mult), "test")
        n_bytes = len(decode(task.vocab, targets.flatten().tolist()).encode("utf-8"))
        expected = metrics[f"loss@x{mult}"] * targets.numel() / (n_bytes * math.log(2))
        assert metrics[f"bpb@x{mult}"] == pytest.approx(expected, rel=1e-6)
    history = (tmp_path / "results" / "tiny_text" / "cpu" / spec.run_id / "history.csv").read_text()
    assert "bpb" in history.splitlines()[0]  # the validation curve has it too (target: bpb)


@pytest.mark.parametrize("task", ["tinyshakespeare", "copy"])
def test_a_declaration_may_name_bpb_only_for_a_task_that_states_its_bytes(tmp_path, data_dir, corpora, task) -> None:
    """``text`` states them (its run plans above); ``tinyshakespeare`` and synthetic tasks do not."""
    from harness.errors import AblateError

    path = tmp_path / "tiny_text.yaml"
    params = {"tinyshakespeare": "{}", "copy": "{n_symbols: 6}"}[task]
    path.write_text(TINY.replace("text:\n    params: {params}", f"{task}:\n    params: {params}"))
    with pytest.raises(AblateError, match=r"primary metric 'bpb@x2' is not produced by this task"):
        plan(load(str(path)), "cpu", [], data_dir)
