"""The ``text`` task through the real commands: a bad corpus refused before any run (exit 2), and
the text task with BPE running pe_extrapolation's smoke profile on Tiny
Shakespeare, from the documented example declaration (examples/text/pe_extrapolation_text.yaml)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.cli import run as run_cmd
from harness.errors import TRAINED
from harness.experiment.ablation import load
from harness.store.runs import scan
from harness.tasks import build_task
from harness.tasks import text as text_mod
from helpers.cli import assert_nothing_written, assert_refused, invoke

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "text" / "pe_extrapolation_text.yaml"
SMALL = ["train.steps=10", "train.val_every=5", "model.d_model=16", "eval.n_examples=8", "eval.val_examples=8"]
"""The smoke profile shrunk as tests/tune/test_tune_e2e.py shrinks it, to keep the suite fast (the
whole profile, run by hand: 10 runs in 106 s on 2 workers at load 10)."""


def _declaration(tmp_path: Path, params: dict, **base) -> Path:
    decl = {
        "name": "mine",
        "question": "Does the encoding matter on my corpus?",
        "axes": {"model.position": ["sinusoidal", "rope"]},
        "baseline": {"model.position": "sinusoidal"},
        "base": {"model.d_model": 16, "model.n_heads": 2, "train.seq_len": 16, **base},
        "tasks": {
            "text": {"params": params, "primary": {"metric": "bpb@x2", "higher_is_better": False, "sesoi": 0.05}}
        },
        "profiles": {"cpu": {"seeds": [0]}},
    }
    path = tmp_path / "decl" / "mine.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(decl))
    return path


@pytest.mark.parametrize(
    "content, words",
    [
        (None, ["corpus path", "not found", "give an existing file or folder"]),
        (b"", ["is empty (0 bytes)"]),
        (b"\x7fELF\x02\x01\x01\x00\x00", ["is not a text file (a NUL byte at offset 7"]),
        (b"too short", ["is too small: its val split", "holds 0 characters"]),
    ],
)
@pytest.mark.parametrize("command", ["run", "status"])
def test_a_bad_corpus_exits_2_before_any_run(tmp_path, cli_isolated, content, words, command) -> None:
    """``status`` too: run ids hold the corpus's digest, so read-only commands read it."""
    corpus = tmp_path / "corpus.txt"
    if content is not None:
        corpus.write_bytes(content)
    decl = _declaration(tmp_path, {"path": str(corpus)})
    result = invoke(command, str(decl), "--results-dir", str(tmp_path / "results"))
    assert_refused(result, str(corpus), *words)
    assert_nothing_written(tmp_path / "results")


def test_a_corpus_too_small_for_the_evaluation_lengths(tmp_path, cli_isolated) -> None:
    """2,000 characters: a test split of 100, so 4 x 32 tokens cannot be evaluated."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("abcdefghij\n" * 181 + "abcdefghi")
    decl = _declaration(tmp_path, {"path": str(corpus)}, **{"eval.length_multipliers": [1, 4], "train.seq_len": 32})
    result = invoke("run", str(decl), "--results-dir", str(tmp_path / "results"))
    assert_refused(
        result,
        "evaluation length 128 tokens (4 x train.seq_len=32) is longer than task 'text' provides from its test "
        "split (99 tokens); keep eval.length_multipliers at most 3",
    )
    assert_nothing_written(tmp_path / "results")


def test_a_corpus_beside_the_ablation_file_is_found_from_any_folder(tmp_path, monkeypatch) -> None:
    """A relative corpus path is taken from the ablation file's folder, as its ``plugins:`` are: the
    grid plans and its one run trains from another working directory."""
    decl = _declaration(tmp_path, {"path": "corpus.txt"}, **{"eval.length_multipliers": [1, 2]})
    (decl.parent / "corpus.txt").write_text("to be, or not to be: that is the question.\n" * 200)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    results = tmp_path / "results"
    small = ["train.steps=4", "train.warmup_steps=1", "train.val_every=2", "eval.n_examples=4", "eval.val_examples=4"]
    assert run_cmd.run("../decl/mine.yaml", "cpu", small, results, workers=1, wandb="off") == 0
    records = scan(results, "mine", "cpu").records
    assert len(records) == 2 and all(r.status in TRAINED for r in records)


def test_bad_text_params_exit_2(tmp_path, cli_isolated) -> None:
    decl = _declaration(tmp_path, {"path": "tinyshakespeare.txt", "tokenizer": "wordpiece"})
    result = invoke("run", str(decl), "--results-dir", str(tmp_path / "results"))
    assert_refused(result, "task 'text': invalid params", "tokenizer", "'char' or 'bpe'")
    assert_nothing_written(tmp_path / "results")


def test_the_example_runs_pe_extrapolation_smoke_with_bpe(tmp_path: Path, data_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("ABLATE_DATA_DIR", str(data_dir))
    monkeypatch.setenv("ABLATE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(text_mod, "_LOADED", {})  # train the tokenizer here, into this cache
    abl, ref = load(str(EXAMPLE)), load("pe_extrapolation")
    # pe_extrapolation's grid with its language-modelling task replaced, nothing else
    # (its smoke profile's variants: learned_clamp is a treatment only its confirm profile runs)
    positions = {"model.position": ref.profiles["smoke"].only_variants}
    assert (abl.axes, abl.baseline, abl.base) == (positions, ref.baseline, ref.base)
    assert abl.tasks["text"].config == ref.tasks["tinyshakespeare"].config
    smoke, ref_smoke = abl.profiles["smoke"], ref.profiles["smoke"]
    assert (smoke.seeds, smoke.overrides) == (ref_smoke.seeds, ref_smoke.overrides)
    assert smoke.tasks["text"] == ref_smoke.tasks["tinyshakespeare"]
    assert abl.tasks["text"].params["tokenizer"] == "bpe"

    results = tmp_path / "results"
    assert run_cmd.run(str(EXAMPLE), "smoke", SMALL, results, workers=1, wandb="off") == 0
    found = scan(results, "pe_extrapolation_text", "smoke")
    assert len(found.records) == 10 and all(r.status in TRAINED for r in found.records)
    task = build_task("text", abl.tasks["text"].params)
    assert task.vocab_size == 512
    for rec in found.records:
        assert rec.task_version == task.version
        for mult in (1, 2, 4):
            assert 0 < rec.metrics[f"bpb@x{mult}"] < 8  # below a uniform distribution over bytes
