"""Each task's chance level (``Task.chance``) against a direct computation: the entropy of the
scored targets' marginal distribution, counted from the text for a corpus, from many sampled rows
for a synthetic task."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import entropy

from harness.tasks import IGNORE_INDEX, build_task


def _train_text(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    return text[: len(text) - 2 * round(len(text) * 0.05)]  # the 90 % before the val and test halves


def test_tinyshakespeare_chance_is_the_unigram_entropy_of_its_training_characters(shakespeare_dir: Path) -> None:
    counts = Counter(_train_text(shakespeare_dir / "tinyshakespeare.txt"))
    chance = build_task("tinyshakespeare", data_dir=shakespeare_dir).chance
    assert chance.loss == pytest.approx(entropy(list(counts.values())), rel=1e-9)
    assert chance.loss == pytest.approx(3.3091, abs=1e-4)  # the figure the docs quote
    assert chance.acc is None and "unigram" in chance.basis


def test_the_margin_figures_of_the_docs(shakespeare_dir: Path) -> None:
    """docs/statistics.md, "Outcomes": the training unigram on the validation characters, their own
    entropy, and the standard error of its loss over one validation pass (128 x 64 characters)."""
    text = (shakespeare_dir / "tinyshakespeare.txt").read_text(encoding="utf-8")
    train, n = _train_text(shakespeare_dir / "tinyshakespeare.txt"), round(len(text) * 0.05)
    val = text[len(train) : len(train) + n]
    counts, total = Counter(train), len(train)
    per_char = np.array([-math.log(counts[c] / total) for c in val])
    assert per_char.mean() == pytest.approx(3.333, abs=5e-4)
    assert entropy(list(Counter(val).values())) == pytest.approx(3.322, abs=5e-4)
    assert per_char.std() / math.sqrt(128 * 64) == pytest.approx(0.012, abs=5e-4)


def test_text_task_chance_counts_its_own_training_split(shakespeare_head: Path) -> None:
    task = build_task("text", {"path": str(shakespeare_head)})
    counts = Counter(_train_text(shakespeare_head))
    assert task.chance.loss == pytest.approx(entropy(list(counts.values())), rel=1e-9)


@pytest.mark.parametrize(
    ("name", "params", "n"),
    [
        ("copy", {"n_symbols": 16}, 16),
        ("reverse", {"n_symbols": 5}, 5),
        ("prefix_sum", {"n_symbols": 7}, 7),
        ("padded_copy", {"n_symbols": 6}, 6),
        ("associative_recall", {"n_pairs": 4, "n_keys": 16, "n_values": 8}, 8),
    ],
)
def test_synthetic_chance_is_the_entropy_and_majority_of_sampled_answers(name: str, params: dict, n: int) -> None:
    task = build_task(name, params)
    _, targets = task.sample(4096, 16, np.random.default_rng(0), "train")
    answers = targets[targets != IGNORE_INDEX].numpy()
    counts = np.bincount(answers)[answers.min() :]
    assert len(counts) == n  # every answer token is one of the n the chance level is uniform over
    assert task.chance.loss == pytest.approx(math.log(n))
    assert task.chance.loss == pytest.approx(entropy(counts), abs=0.01)
    assert task.chance.acc == pytest.approx(1 / n)
    assert task.chance.acc == pytest.approx(counts.max() / counts.sum(), abs=0.02)
