"""tinyshakespeare: loading, splits, checksums, the download path and the offline error."""

from __future__ import annotations

import hashlib
import io
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import torch

from harness import files
from harness.cli import output
from harness.tasks import DataChecksumError, DataUnavailableError, build_task, corpus
from harness.tasks import tinyshakespeare as ts


@pytest.fixture
def text(shakespeare_dir: Path) -> str:
    return (shakespeare_dir / "tinyshakespeare.txt").read_text(encoding="ascii")


def test_loads_from_data_dir_env(monkeypatch: pytest.MonkeyPatch, shakespeare_dir: Path) -> None:
    monkeypatch.setenv("ABLATE_DATA_DIR", str(shakespeare_dir))
    task = build_task("tinyshakespeare")
    task.check_available()
    assert ts.locate() == shakespeare_dir / "tinyshakespeare.txt"
    inputs, targets = task.sample(4, 64, np.random.default_rng(0), "train")
    assert inputs.shape == (4, 64)


def test_vocab_is_the_sorted_character_set(text: str) -> None:
    assert "".join(sorted(set(text))) == ts.VOCAB
    assert build_task("tinyshakespeare").vocab_size == 65
    assert len(text) == ts.SIZE


def test_split_sizes() -> None:
    bounds = ts.TinyShakespeare.bounds
    assert bounds == {"train": (0, 1_003_854), "val": (1_003_854, 1_059_624), "test": (1_059_624, 1_115_394)}
    assert bounds["val"][1] - bounds["val"][0] == bounds["test"][1] - bounds["test"][0] == 55_770


@pytest.mark.parametrize("split", ["train", "val", "test"])
def test_windows_come_from_their_split(split: str, text: str, shakespeare_dir: Path) -> None:
    task = build_task("tinyshakespeare", data_dir=shakespeare_dir)
    inputs, targets = task.sample(16, 48, np.random.default_rng(3), split)
    assert torch.equal(inputs[:, 1:], targets[:, :-1])
    start, stop = ts.TinyShakespeare.bounds[split]
    split_text = text[start:stop]
    for row_in, row_tg in zip(inputs.tolist(), targets.tolist()):
        window = "".join(ts.VOCAB[i] for i in row_in + row_tg[-1:])
        assert window in split_text


def test_encoded_once_per_process(shakespeare_dir: Path) -> None:
    assert ts.load_encoded(shakespeare_dir) is ts.load_encoded(shakespeare_dir)
    data = ts.load_encoded(shakespeare_dir)
    assert data.dtype == torch.uint8 and data.shape == (ts.SIZE,)


def test_seq_len_longer_than_split_raises(shakespeare_dir: Path) -> None:
    task = build_task("tinyshakespeare", data_dir=shakespeare_dir)
    with pytest.raises(ValueError, match="at most seq_len 55769 from its 'val' split"):
        task.sample(1, 60_000, np.random.default_rng(0), "val")


def test_longest_length_is_each_split_less_one(shakespeare_dir: Path) -> None:
    """A row is a window of T + 1 characters: the split's size less one, independent of the file."""
    task = build_task("tinyshakespeare")  # no data needed to know it
    sizes = {"train": 1_003_854, "val": 55_770, "test": 55_770}  # 90 %, then halves of 1,115,394
    assert {s: task.max_seq_len(s) for s in sizes} == {s: n - 1 for s, n in sizes.items()}
    task = build_task("tinyshakespeare", data_dir=shakespeare_dir)
    inputs, targets = task.sample(2, 55_769, np.random.default_rng(0), "test")
    assert inputs.shape == (2, 55_769)
    text = (shakespeare_dir / "tinyshakespeare.txt").read_text()
    assert "".join(ts.VOCAB[i] for i in inputs[0].tolist()) + ts.VOCAB[targets[0, -1]] == text[-55_770:]
    with pytest.raises(ValueError, match="at most seq_len 55769"):
        task.sample(1, 55_770, np.random.default_rng(0), "test")


def _bad_file(directory: Path) -> bytes:
    directory.mkdir(parents=True, exist_ok=True)
    payload = b"First Citizen:\nnot the whole play\n"
    (directory / "tinyshakespeare.txt").write_bytes(payload)
    return payload


def test_checksum_mismatch_in_data_dir(tmp_path: Path) -> None:
    payload = _bad_file(tmp_path / "data")
    task = build_task("tinyshakespeare", data_dir=tmp_path / "data")
    with pytest.raises(DataChecksumError) as info:
        task.check_available()
    message = str(info.value)
    assert str(tmp_path / "data" / "tinyshakespeare.txt") in message
    assert ts.SHA256 in message and hashlib.sha256(payload).hexdigest() in message
    assert "delete it" in message and ts.URL in message
    assert isinstance(info.value, DataUnavailableError)


def test_the_data_dir_variable_is_read_one_way(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The task and the CLI read ``$ABLATE_DATA_DIR`` through one function: ``~`` expanded, empty as unset."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ABLATE_DATA_DIR", "~/data")
    assert files.data_dir(None) == output.data_dir() == tmp_path / "data"
    assert files.data_dir(Path("given")) == Path("given")
    monkeypatch.setenv("ABLATE_DATA_DIR", "")
    assert files.data_dir(None) is None and output.data_dir() is None


def test_checksum_mismatch_in_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ABLATE_DATA_DIR", raising=False)
    monkeypatch.setenv("ABLATE_CACHE_DIR", str(tmp_path / "c"))
    _bad_file(tmp_path / "c")
    with pytest.raises(DataChecksumError, match="sha256"):
        build_task("tinyshakespeare").sample(2, 8, np.random.default_rng(0), "train")


def test_no_file_no_network(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ABLATE_DATA_DIR", raising=False)
    cache = tmp_path / "empty_cache"
    monkeypatch.setenv("ABLATE_CACHE_DIR", str(cache))
    task = build_task("tinyshakespeare")
    for call in (task.check_available, lambda: task.sample(2, 8, np.random.default_rng(0), "train")):
        with pytest.raises(DataUnavailableError) as info:
            call()
        message = str(info.value)
        assert "could not be found or downloaded" in message
        assert ts.URL in message
        assert str(cache / "tinyshakespeare.txt") in message
        assert "ABLATE_DATA_DIR/tinyshakespeare.txt" in message
    assert not cache.exists() or not any(cache.iterdir())


def test_no_file_names_the_given_data_dir(tmp_path: Path) -> None:
    task = build_task("tinyshakespeare", data_dir=tmp_path / "mine")
    with pytest.raises(DataUnavailableError, match="mine"):
        task.check_available()


class _FakeUrlopen:
    """Serves fixed bytes and counts calls, in place of ``urllib.request.urlopen``."""

    def __init__(self, payload: bytes) -> None:
        self.payload, self.calls = payload, []

    def __call__(self, url, timeout=None):
        self.calls.append((url, timeout))
        return io.BytesIO(self.payload)


def test_download_caches_and_is_not_repeated(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, shakespeare_dir: Path
) -> None:
    monkeypatch.delenv("ABLATE_DATA_DIR", raising=False)
    cache = tmp_path / "dl_cache"
    monkeypatch.setenv("ABLATE_CACHE_DIR", str(cache))
    payload = (shakespeare_dir / "tinyshakespeare.txt").read_bytes()
    fake = _FakeUrlopen(payload)
    monkeypatch.setattr(urllib.request, "urlopen", fake)

    build_task("tinyshakespeare").check_available()
    assert fake.calls == [(ts.URL, ts.DOWNLOAD_TIMEOUT_S)]
    assert (cache / "tinyshakespeare.txt").read_bytes() == payload
    assert sorted(p.name for p in cache.iterdir()) == ["tinyshakespeare.txt"], "no temp left"

    inputs, _ = build_task("tinyshakespeare").sample(2, 16, np.random.default_rng(0), "test")
    assert inputs.shape == (2, 16)
    assert len(fake.calls) == 1, "second use reads the cache"


def test_corrupt_download_is_not_cached(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ABLATE_DATA_DIR", raising=False)
    cache = tmp_path / "dl_cache"
    monkeypatch.setenv("ABLATE_CACHE_DIR", str(cache))
    monkeypatch.setattr(urllib.request, "urlopen", _FakeUrlopen(b"<html>rate limited</html>"))
    with pytest.raises(DataChecksumError, match=ts.URL):
        build_task("tinyshakespeare").check_available()
    assert not (cache / "tinyshakespeare.txt").exists()


def test_cache_dir_respects_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ABLATE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert corpus.cache_dir() == tmp_path / "xdg" / "ablate"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert corpus.cache_dir() == Path.home() / ".cache" / "ablate"


def test_a_data_dir_that_names_the_file_itself_says_to_name_its_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """ABLATE_DATA_DIR=/data/tinyshakespeare.txt (a file): the hint names the folder to set, not file/file."""
    monkeypatch.setenv("ABLATE_CACHE_DIR", str(tmp_path / "empty_cache"))
    wrong = tmp_path / "data" / "tinyshakespeare.txt"
    _bad_file(tmp_path / "data")
    with pytest.raises(DataUnavailableError) as info:
        build_task("tinyshakespeare", data_dir=wrong).check_available()
    assert f"{wrong} is a file: set ABLATE_DATA_DIR to the folder that holds it ({wrong.parent})" in str(info.value)
