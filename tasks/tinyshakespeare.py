"""Tiny Shakespeare (docs/tasks.md), a :class:`~harness.tasks.corpus.CorpusTask`.

The vocabulary is the file's 65 distinct characters, sorted; the first 90 % trains; of the last 10 %, the first
half is ``val``, the second ``test``.
"""

from __future__ import annotations

import functools
import hashlib
import http.client
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from harness import files
from harness.files import write_atomic
from harness.tasks import TASKS
from harness.tasks.base import DataUnavailableError
from harness.tasks.corpus import CorpusTask, cache_dir, split_bounds

if TYPE_CHECKING:
    from torch import Tensor

FILENAME = "tinyshakespeare.txt"
URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
SIZE = 1_115_394
SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
VOCAB = "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"  # sorted(set(text)) of that file
DOWNLOAD_TIMEOUT_S = 20.0

_ENCODED: dict[Path, Tensor] = {}  # per process: verified file -> (SIZE,) uint8 token ids


class DataChecksumError(DataUnavailableError):
    """A data file exists but its sha256 is not the expected one."""


def find(data_dir: Path | None = None) -> Path | None:
    """The verified copy of the corpus on this machine, without downloading; None when there is none.

    Looked for in ``data_dir`` (else ``$ABLATE_DATA_DIR``), else in the cache (:func:`cache_dir`).

    Raises:
        DataChecksumError: For a copy whose sha256 is wrong.
    """
    for folder in (files.data_dir(data_dir), cache_dir()):
        if folder is not None and (path := Path(folder) / FILENAME).is_file():
            _verify(path.read_bytes(), path)
            return path
    return None


def locate(data_dir: Path | None = None) -> Path:
    """A verified copy of the corpus: :func:`find`'s, else downloaded into the cache.

    Raises:
        DataChecksumError: For a copy whose sha256 is wrong.
        DataUnavailableError: When there is none.
    """
    if (found := find(data_dir)) is not None:
        return found
    data_dir = files.data_dir(data_dir)
    cached = cache_dir() / FILENAME
    try:
        with urllib.request.urlopen(URL, timeout=DOWNLOAD_TIMEOUT_S) as response:
            payload = response.read()
    except (OSError, http.client.HTTPException) as err:  # URLError, timeouts, resets
        raise DataUnavailableError(_unavailable_message(data_dir, cached, repr(err))) from err
    _verify(payload, URL)
    try:
        write_atomic(cached, payload)
    except OSError as err:
        raise DataUnavailableError(
            _unavailable_message(data_dir, cached, f"downloaded but could not save: {err!r}")
        ) from err
    return cached


def load_encoded(data_dir: Path | None = None) -> Tensor:
    """The corpus as (SIZE,) uint8 ids into :data:`VOCAB`, loaded and checked once per process."""
    path = locate(data_dir).resolve()
    if path not in _ENCODED:
        import torch

        raw = np.frombuffer(path.read_bytes(), dtype=np.uint8)
        ids = np.searchsorted(np.frombuffer(VOCAB.encode(), np.uint8), raw)  # verified: every byte is in VOCAB
        _ENCODED[path] = torch.from_numpy(ids.astype(np.uint8))
    return _ENCODED[path]


@TASKS.register("tinyshakespeare", aliases=("shakespeare_char",))
class TinyShakespeare(CorpusTask):
    """Character-level LM on Tiny Shakespeare; 65 tokens; every position scored.

    The file is read on the first :meth:`sample` (or :meth:`check_available`), so ``vocab_size`` is known without
    it; ``max_seq_len`` is 1,003,853 (train) or 55,769 (val, test).
    """

    name = "tinyshakespeare"
    version = "1"
    bounds = split_bounds(SIZE)

    @property
    def vocab_size(self) -> int:
        """65: the file's distinct characters (:data:`VOCAB`)."""
        return len(VOCAB)

    def check_available(self) -> None:
        """Find the verified file, else download it into the cache (:func:`locate`), before any run starts.

        Raises:
            DataChecksumError: For a copy whose sha256 is wrong.
            DataUnavailableError: When there is none; its message says how to provide it.
        """
        locate(self.data_dir)

    @functools.cached_property
    def ids(self) -> Tensor:
        """The corpus's (SIZE,) token ids (:func:`load_encoded`), read on first use."""
        return load_encoded(self.data_dir)


def _verify(payload: bytes, source: Path | str) -> None:
    digest = hashlib.sha256(payload).hexdigest()
    if digest == SHA256:
        return
    if isinstance(source, Path):
        fix = (
            f"The file is corrupt, truncated or a different text: delete it and put a fresh copy of {URL} "
            "in its place (or delete it and let ablate download it)."
        )
    else:
        fix = (
            f"The server sent something else (a proxy or error page?): download {URL} by hand to "
            f"{cache_dir() / FILENAME} or $ABLATE_DATA_DIR/{FILENAME}."
        )
    raise DataChecksumError(
        f"tinyshakespeare: {source} has sha256 {digest} ({len(payload):,} bytes), expected {SHA256} "
        f"({SIZE:,} bytes). {fix}"
    )


def _unavailable_message(data_dir: Path | None, cached: Path, reason: str) -> str:
    where = "$ABLATE_DATA_DIR/tinyshakespeare.txt (ABLATE_DATA_DIR is not set)"
    if data_dir is not None:
        where = f"{Path(data_dir) / FILENAME} (data_dir / $ABLATE_DATA_DIR)"
        if Path(data_dir).is_file():  # the file itself named: the variable names the folder that holds it
            where += (
                f"; {data_dir} is a file: set ABLATE_DATA_DIR to the folder that holds it ({Path(data_dir).parent})"
            )
    return (
        f"tinyshakespeare: {FILENAME} could not be found or downloaded (download from {URL} failed: "
        f"{reason}). Put the file ({SIZE:,} bytes, sha256 {SHA256}) at {where} or at {cached}, e.g. on a "
        f"machine with network access: curl -fLo {cached} {URL}"
    )
