"""text: a user's corpus with a character or byte-level BPE vocabulary: splits, determinism, the
version, the cache, bytes per token and every refusal of a bad corpus.

BPE tests train on the first 100,000 characters of Tiny Shakespeare with 300 or 512 ids (under a
second); the whole file is trained once, in tests/e2e/test_text_smoke.py.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from harness.tasks import DataUnavailableError, build_task, corpus
from harness.tasks import text as text_mod
from harness.tasks import tinyshakespeare as ts
from harness.tasks.vocab import BPEVocab, CharVocab
from helpers import decode

UNICODE = "naïve café, Ελληνικά — 日本語 🙂\nthe end of a line\n" * 40


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget what this process loaded: the next build reads the cache or trains."""
    monkeypatch.setattr(text_mod, "_LOADED", {})


@pytest.fixture
def head(shakespeare_head: Path) -> Path:
    return shakespeare_head


def _split_tokens(task, split: str) -> np.ndarray:
    """The split's token ids, in corpus order."""
    return task.tokens[slice(*task.bounds[split])]


def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


# --- the character vocabulary against the built-in task --------------------------------------------


def test_char_vocabulary_reproduces_tinyshakespeare(shakespeare_dir: Path) -> None:
    """Default fractions are tinyshakespeare's 90/5/5 split: same vocabulary, same rows."""
    task = build_task("text", {"path": "tinyshakespeare.txt"}, data_dir=shakespeare_dir)
    reference = build_task("tinyshakespeare", data_dir=shakespeare_dir)
    assert task.vocab.chars == ts.VOCAB and task.vocab_size == 65
    assert task.bounds == ts.TinyShakespeare.bounds
    for split in ("train", "val", "test"):
        assert task.max_seq_len(split) == reference.max_seq_len(split)
        a = task.sample(8, 64, np.random.default_rng(5), split)
        b = reference.sample(8, 64, np.random.default_rng(5), split)
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert torch.equal(task.token_bytes, torch.ones(65, dtype=torch.long))  # ASCII


# --- splits ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("params", [{"tokenizer": "char"}, {"tokenizer": "bpe", "vocab_size": 300}])
def test_splits_are_contiguous_disjoint_and_cover_the_corpus(head: Path, params: dict) -> None:
    task = build_task("text", {"path": str(head), "val_fraction": 0.1, "test_fraction": 0.05, **params})
    text = head.read_text()
    chars = corpus.split_bounds(len(text), 0.1, 0.05)
    assert chars == {"train": (0, 85_000), "val": (85_000, 95_000), "test": (95_000, 100_000)}
    (a0, a1), (b0, b1), (c0, c1) = (task.bounds[s] for s in ("train", "val", "test"))
    assert a0 == 0 and a1 == b0 and b1 == c0 and c1 == len(task.tokens)  # token ranges tile, no overlap
    for split, (start, stop) in chars.items():  # each split's tokens decode to exactly its text
        assert decode(task.vocab, _split_tokens(task, split).tolist()) == text[start:stop]


@pytest.mark.parametrize("split", ["train", "val", "test"])
def test_rows_are_windows_of_their_split(head: Path, split: str) -> None:
    task = build_task("text", {"path": str(head), "tokenizer": "bpe", "vocab_size": 300})
    tokens = _split_tokens(task, split)
    inputs, targets = task.sample(16, 40, np.random.default_rng(2), split)
    assert torch.equal(inputs[:, 1:], targets[:, :-1])
    windows = np.lib.stride_tricks.sliding_window_view(tokens, 41)  # every window of the split
    for row in torch.cat([inputs, targets[:, -1:]], 1).numpy():
        assert (windows == row).all(1).any()
    longest = task.max_seq_len(split)  # the whole split is one row at its longest
    whole, _ = task.sample(1, longest, np.random.default_rng(0), split)
    assert np.array_equal(whole[0].numpy(), tokens[:-1])


def test_bpe_is_trained_on_the_training_split_only(head: Path, tmp_path: Path, fresh: None) -> None:
    """Another held-out tail leaves the tokenizer as it was; the version still changes (corpus)."""
    text = head.read_text()
    other = _write(tmp_path, "other.txt", text[:95_000] + text[95_000:].upper())
    a = build_task("text", {"path": str(head), "tokenizer": "bpe", "vocab_size": 300})
    b = build_task("text", {"path": str(other), "tokenizer": "bpe", "vocab_size": 300})
    assert a.vocab.digest == b.vocab.digest == BPEVocab.train(text[:90_000], 300).digest
    assert a.vocab.digest != BPEVocab.train(text[:95_000], 300).digest  # the test would tell
    assert a.version != b.version


# --- determinism, version, cache ---------------------------------------------------------------------


def test_determinism_across_builds(head: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    params = {"path": str(head), "tokenizer": "bpe", "vocab_size": 300}
    builds = []
    for i in range(2):  # nothing shared: no memo, another cache
        monkeypatch.setattr(text_mod, "_LOADED", {})
        monkeypatch.setenv("ABLATE_CACHE_DIR", str(tmp_path / f"cache{i}"))
        builds.append(build_task("text", params))
    a, b = builds
    assert a.vocab.definition == b.vocab.definition and a.version == b.version
    assert np.array_equal(a.tokens, b.tokens)
    x, y = (t.sample(8, 32, np.random.default_rng(9), "val") for t in builds)
    assert torch.equal(x[0], y[0]) and torch.equal(x[1], y[1])


def test_version_names_code_corpus_and_vocabulary(head: Path) -> None:
    char = build_task("text", {"path": str(head)})
    bpe = build_task("text", {"path": str(head), "tokenizer": "bpe", "vocab_size": 300})
    bigger = build_task("text", {"path": str(head), "tokenizer": "bpe", "vocab_size": 512})
    corpus = hashlib.sha256(head.read_bytes()).hexdigest()[:12]
    assert char.version == f"1+corpus.{corpus}.char.{hashlib.sha256(char.vocab.chars.encode()).hexdigest()[:12]}"
    assert bpe.version == f"1+corpus.{corpus}.bpe.{hashlib.sha256(bpe.vocab.definition.encode()).hexdigest()[:12]}"
    assert len({char.version, bpe.version, bigger.version}) == 3
    assert type(char).version == "1"  # the class holds the code version (ablate list)
    assert bigger.vocab_size == 512 and bpe.vocab_size == 300


def test_bpe_cache_layout_and_reuse(head: Path, fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import tokenizers

    task = build_task("text", {"path": str(head), "tokenizer": "bpe", "vocab_size": 300})
    folder = corpus.cache_dir() / "text" / task.corpus_sha256[:16]
    tokenizer = folder / f"bpe300-train90000-tokenizers{tokenizers.__version__}.json"
    tokens = folder / f"tokens-{task.vocab.digest[:16]}-90000-5000-5000.npz"
    assert sorted(folder.iterdir()) == sorted([tokenizer, tokens])
    assert tokenizer.read_text() == task.vocab.definition
    monkeypatch.setattr(text_mod, "_LOADED", {})

    def no_training(*args, **kwargs):
        raise AssertionError("trained again despite the cache")

    monkeypatch.setattr(BPEVocab, "train", no_training)
    monkeypatch.setattr(BPEVocab, "encode", no_training)
    again = build_task("text", {"path": str(head), "tokenizer": "bpe", "vocab_size": 300})
    assert again.version == task.version and np.array_equal(again.tokens, task.tokens)


def test_a_damaged_cache_is_rebuilt(head: Path, fresh: None, monkeypatch, caplog) -> None:
    task = build_task("text", {"path": str(head), "tokenizer": "bpe", "vocab_size": 300})
    folder = corpus.cache_dir() / "text" / task.corpus_sha256[:16]
    for f in folder.iterdir():
        f.write_bytes(f.read_bytes()[:100])  # truncated
    monkeypatch.setattr(text_mod, "_LOADED", {})
    with caplog.at_level(logging.WARNING):
        again = build_task("text", {"path": str(head), "tokenizer": "bpe", "vocab_size": 300})
    assert again.version == task.version and np.array_equal(again.tokens, task.tokens)
    assert "retraining" in caplog.text and "re-encoding" in caplog.text


def test_bpe_on_text_without_whitespace_is_bounded_and_said(capsys: pytest.CaptureFixture) -> None:
    # 200,000 characters of ACGT took 11 s of CPU (one word: quadratic), 400,000 49 s, in silence
    dna = "".join(np.random.default_rng(0).choice(list("ACGT"), 200_000))
    start = time.process_time()  # CPU of every thread (tokenizers runs several): not the machine's load
    vocab = BPEVocab.train(dna, 512)
    assert time.process_time() - start < 3.0  # about 0.2 s now
    assert capsys.readouterr().err == (
        "training a byte-level BPE of 512 tokens on 200,000 characters "
        "(runs without whitespace cut every 256 characters) ...\n"
    )
    pieces = vocab._tokenizer.pre_tokenizer.pre_tokenize_str(dna[:5000])
    assert max(len(p) for p, _ in pieces) == 256  # vocab.MAX_WORD
    assert vocab.size == 512 and decode(vocab, vocab.encode(dna[:5000]).tolist()) == dna[:5000]


def test_bpe_on_text_with_whitespace_is_the_plain_byte_level_tokenizer(head: Path, capsys) -> None:
    """No run of MAX_WORD characters without whitespace: the tokenizer JSON (its digest, the task
    version, run ids) is the one the plain byte-level recipe gives."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from tokenizers import decoders as tok_decoders

    text = head.read_text()[:20_000]
    plain = Tokenizer(models.BPE())
    plain.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    plain.decoder = tok_decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(vocab_size=300, initial_alphabet=alphabet, special_tokens=[], show_progress=False)
    plain.train_from_iterator([text], trainer=trainer)
    assert BPEVocab.train(text, 300).definition == plain.to_str()
    assert capsys.readouterr().err == "training a byte-level BPE of 300 tokens on 20,000 characters ...\n"


def test_a_folder_is_its_text_files_in_path_order(tmp_path: Path) -> None:
    _write(tmp_path, "corpus/b/2.txt", "second file\n" * 30)
    _write(tmp_path, "corpus/a.txt", "first file\n" * 30)
    _write(tmp_path, "corpus/.hidden/x.txt", "hidden\n" * 30)
    _write(tmp_path, "corpus/notes.md", "markdown\n" * 30)
    task = build_task("text", {"path": str(tmp_path / "corpus")})
    whole = "".join(decode(task.vocab, _split_tokens(task, s).tolist()) for s in ("train", "val", "test"))
    assert whole == "first file\n" * 30 + "second file\n" * 30
    md = build_task("text", {"path": str(tmp_path / "corpus"), "glob": "*.md"})
    assert md.max_seq_len("train") + 1 + md.max_seq_len("val") + 1 + md.max_seq_len("test") + 1 == 9 * 30


def test_a_relative_path_is_looked_up_in_the_data_dir_then_the_working_directory(tmp_path, monkeypatch) -> None:
    _write(tmp_path, "data/c.txt", "in the data dir\n" * 20)
    _write(tmp_path, "cwd/c.txt", "in the working directory\n" * 20)
    _write(tmp_path, "cwd/only_here.txt", "only here\n" * 20)
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setenv("ABLATE_DATA_DIR", str(tmp_path / "data"))
    assert build_task("text", {"path": "c.txt"}).corpus_source == str(tmp_path / "data" / "c.txt")
    assert build_task("text", {"path": "only_here.txt"}).corpus_source == str(tmp_path / "cwd" / "only_here.txt")


def test_a_relative_path_is_looked_up_beside_the_ablation_file_first(tmp_path, monkeypatch) -> None:
    _write(tmp_path, "decl/c.txt", "beside the ablation file\n" * 20)
    _write(tmp_path, "data/c.txt", "in the data dir\n" * 20)
    _write(tmp_path, "data/only_here.txt", "only in the data dir\n" * 20)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ABLATE_DATA_DIR", str(tmp_path / "data"))
    near = tmp_path / "decl"
    assert build_task("text", {"path": "c.txt"}, near=near).corpus_source == str(near / "c.txt")
    assert build_task("text", {"path": "only_here.txt"}, near=near).corpus_source == str(
        tmp_path / "data" / "only_here.txt"
    )
    with pytest.raises(DataUnavailableError, match="the ablation file's folder") as info:
        build_task("text", {"path": "nope.txt"}, near=near)
    assert str(near / "nope.txt") in str(info.value)


def test_the_contract_suite_passes_with_bpe(head: Path) -> None:
    """``ablate check task=text`` runs on ``example_params`` (char); the same suite on a BPE."""
    from harness.contracts.tasks import CONTRACTS, check_task

    report = check_task("text", params={"path": str(head), "tokenizer": "bpe", "vocab_size": 300})
    assert {r.contract: r.status for r in report.results} == dict.fromkeys(CONTRACTS, "pass"), report.results
    assert report.version == build_task("text", {"path": str(head), "tokenizer": "bpe", "vocab_size": 300}).version


# --- bytes per token -----------------------------------------------------------------------------------


@pytest.mark.parametrize("params", [{"tokenizer": "char"}, {"tokenizer": "bpe", "vocab_size": 300}])
def test_token_bytes_add_up_to_the_utf8_length(tmp_path: Path, params: dict) -> None:
    path = _write(tmp_path, "unicode.txt", UNICODE)
    task = build_task("text", {"path": str(path), **params})
    assert task.token_bytes.shape == (task.vocab_size,) and task.token_bytes.dtype == torch.long
    assert int(task.token_bytes[torch.from_numpy(task.tokens).long()].sum()) == len(UNICODE.encode("utf-8"))
    assert decode(task.vocab, task.tokens.tolist()) == UNICODE


def test_char_vocab_refuses_an_unknown_character() -> None:
    with pytest.raises(ValueError, match="'z' at offset 2"):
        CharVocab("abc").encode("abz")


# --- bad params and bad corpora ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params, words",
    [
        ({}, "exactly one of path"),
        ({"path": "a.txt", "dataset": "text"}, "exactly one of path"),
        ({"path": "a.txt", "vocab_size": 512}, "vocab_size applies to tokenizer: bpe"),
        ({"path": "a.txt", "tokenizer": "bpe", "vocab_size": 100}, "greater than or equal to 256"),
        ({"path": "a.txt", "tokenizer": "wordpiece"}, "'char' or 'bpe'"),
        ({"path": "a.txt", "val_fraction": 0.6, "test_fraction": 0.4}, "must be below 1"),
        ({"path": "a.txt", "data_files": "x.txt"}, "data_files apply to a dataset"),
        ({"dataset": "text", "glob": "*.md"}, "glob applies to a folder path"),
    ],
)
def test_bad_params_name_the_field(params: dict, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        build_task("text", params)


@pytest.mark.parametrize(
    "content, words",
    [
        (b"", "is empty (0 bytes)"),
        (b" \n\t\n", "only whitespace (4 bytes)"),
        (b"text\x00\x01\x02 more", "not a text file (a NUL byte at offset 4"),
        ("caf\u00e9 latin-1\n".encode("latin-1") * 5, "not UTF-8 text (byte 0xe9 at offset 3"),
        (b"tiny text", "too small: its val split"),
    ],
)
def test_a_bad_corpus_is_refused_with_its_path(tmp_path: Path, content: bytes, words: str) -> None:
    path = _write(tmp_path, "corpus.txt", content)
    with pytest.raises(DataUnavailableError, match=re.escape(words)) as info:
        build_task("text", {"path": str(path)})
    assert str(path) in str(info.value)


def test_a_missing_path_says_where_it_looked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ABLATE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataUnavailableError, match="not found") as info:
        build_task("text", {"path": "nope.txt"})
    assert str(tmp_path / "data" / "nope.txt") in str(info.value) and str(tmp_path / "nope.txt") in str(info.value)


def test_a_folder_without_text_or_with_a_binary_file(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataUnavailableError, match=r"holds no file matching '\*\*/\*\.txt'"):
        build_task("text", {"path": str(tmp_path / "empty")})
    _write(tmp_path, "mixed/a.txt", "fine text\n" * 30)
    bad = _write(tmp_path, "mixed/b.txt", b"\x89PNG\r\n\x1a\n\x00\x00")
    with pytest.raises(DataUnavailableError, match="not a text file") as info:
        build_task("text", {"path": str(tmp_path / "mixed")})
    assert str(bad) in str(info.value)


def test_a_bpe_split_of_one_token_is_too_small(tmp_path: Path) -> None:
    """The val split holds 2 characters but, merged, 1 token: refused in tokens."""
    path = _write(tmp_path, "c.txt", "cd\n" * 20 + "cd" + "ef")
    params = {"path": str(path), "tokenizer": "bpe", "vocab_size": 300, "val_fraction": 2 / 64, "test_fraction": 2 / 64}
    with pytest.raises(DataUnavailableError, match="its val split .* holds 1 tokens"):
        build_task("text", params)


# --- a Hugging Face dataset ----------------------------------------------------------------------------


@pytest.fixture
def hf_offline(monkeypatch: pytest.MonkeyPatch):
    """``datasets`` (skips without it) with the hub switched off: only local files load."""
    datasets = pytest.importorskip("datasets")
    import huggingface_hub.constants

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    return datasets


def test_a_dataset_through_datasets_own_loader(hf_offline, head: Path, fresh: None, monkeypatch) -> None:
    """``load_dataset("text", data_files=...)``: its rows (the file's lines) joined by newlines are
    the file (which ends mid-line), so the corpus, the tokenizer and the version are the path's."""
    params = {"dataset": "text", "data_files": str(head), "tokenizer": "bpe", "vocab_size": 300}
    via_hf = build_task("text", params)
    local = build_task("text", {"path": str(head), "tokenizer": "bpe", "vocab_size": 300})
    assert via_hf.version == local.version and np.array_equal(via_hf.tokens, local.tokens)
    (cached,) = (corpus.cache_dir() / "text" / "hf").iterdir()
    assert cached.name.startswith("text-") and cached.read_bytes() == head.read_bytes()
    assert (corpus.cache_dir() / "huggingface").is_dir()  # datasets' own cache, under ours
    monkeypatch.setattr(text_mod, "_LOADED", {})
    monkeypatch.setitem(sys.modules, "datasets", None)  # offline once cached: not even imported
    assert build_task("text", params).version == via_hf.version


def _lines(tag: str) -> str:
    return "".join(f"{tag} line {i}: the quick brown fox\n" for i in range(30))


@pytest.mark.parametrize(
    "dataset, data_files",
    [
        ("text", "corpus/*.txt"),  # a glob
        ("text", ["corpus/a.txt", "corpus/sub/b.txt"]),  # a list
        ("text", {"train": "corpus/**/*.txt"}),  # a dict of splits
        ("corpus", None),  # a folder: datasets reads its files
    ],
)
def test_a_dataset_corpus_follows_its_files_content(
    hf_offline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dataset: str, data_files
) -> None:
    # the cache was keyed by size and mtime of plain-file data_files only: a file added under a glob,
    # or rewritten, kept the cached text and the same run ids, where a fresh cache gave others
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "corpus/a.txt", _lines("a"))
    _write(tmp_path, "corpus/sub/b.txt", _lines("b"))
    params = {"dataset": dataset, **({"data_files": data_files} if data_files is not None else {})}

    def version() -> str:
        monkeypatch.setattr(text_mod, "_LOADED", {})
        return build_task("text", params).version

    first = version()
    a = (tmp_path / "corpus" / "a.txt").stat()
    _write(tmp_path, "corpus/a.txt", _lines("A"))  # same size; mtime put back
    os.utime(tmp_path / "corpus" / "a.txt", ns=(a.st_atime_ns, a.st_mtime_ns))
    rewritten = version()
    assert rewritten != first
    if data_files != ["corpus/a.txt", "corpus/sub/b.txt"]:  # a file the globs (and the folder) match
        _write(tmp_path, "corpus/c.txt", _lines("c"))
        assert version() not in (first, rewritten)
    latest = version()
    shutil.rmtree(corpus.cache_dir())  # a fresh cache: the same corpus, the same version
    assert version() == latest


def test_dataset_errors_name_the_fix(hf_offline, tmp_path: Path, head: Path) -> None:
    with pytest.raises(
        DataUnavailableError, match="has no column 'body'; set the task param text_column to one of: text"
    ):
        build_task("text", {"dataset": "text", "data_files": str(head), "text_column": "body"})
    with pytest.raises(DataUnavailableError, match="could not be loaded .*check the name, config and split"):
        build_task("text", {"dataset": "someone/not_a_dataset_here"})
    with pytest.raises(DataUnavailableError, match="could not be loaded"):
        build_task("text", {"dataset": "text", "data_files": str(head), "dataset_split": "validation"})


def test_a_dataset_without_the_datasets_package(monkeypatch: pytest.MonkeyPatch, head: Path) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(
        DataUnavailableError, match=re.escape("needs the datasets package: pip install 'ablate[datasets]'")
    ):
        build_task("text", {"dataset": "text", "data_files": str(head)})
