"""``text``: language modelling on a user's own corpus (:mod:`harness.tasks.corpus`), character or
byte-level BPE tokens (:mod:`harness.tasks.vocab`); its params, split, version and cache are
described in docs/tasks.md. Each split is tokenised on its own, so no token spans two splits;
:attr:`Text.token_bytes` gives bits per byte (``bpb``), which compares character and BPE runs.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import Field, model_validator

from harness.tasks import TASKS
from harness.tasks.base import DataUnavailableError, TaskParams
from harness.tasks.corpus import Corpus, read_dataset, read_path
from harness.tasks.tinyshakespeare import CorpusTask, cache_dir, write_atomically
from harness.tasks.vocab import BPEVocab, CharVocab

if TYPE_CHECKING:
    from torch import Tensor

log = logging.getLogger(__name__)

CODE_VERSION = "1"  # bumped whenever the rows drawn for a given corpus, vocabulary and seed change

# per process: (corpus sha256, vocabulary params, split) -> (vocab, token ids, token bounds)
_LOADED: dict[tuple[Any, ...], tuple[CharVocab | BPEVocab, np.ndarray, dict[str, tuple[int, int]]]] = {}


class TextParams(TaskParams):
    path: str | None = Field(None, description="a UTF-8 text file or a folder of them")
    glob: str = Field("**/*.txt", description="files of a folder `path` to read, in path order")
    dataset: str | None = Field(None, description="a Hugging Face dataset name (extra ablate[datasets])")
    dataset_config: str | None = Field(None, description="the dataset's configuration name")
    data_files: str | list[str] | dict[str, str | list[str]] | None = Field(
        None, description="data_files for datasets.load_dataset: a path or glob, a list, or a dict of splits"
    )
    dataset_split: str = Field("train", description="the dataset split read as the corpus")
    text_column: str = Field("text", description="the dataset column of text; rows are joined by newlines")
    tokenizer: Literal["char", "bpe"] = "char"
    vocab_size: int = Field(1024, ge=256, le=1 << 20, description="bpe: ids, 256 bytes + merges")
    val_fraction: float = Field(0.05, gt=0, lt=1)
    test_fraction: float = Field(0.05, gt=0, lt=1)

    @model_validator(mode="after")
    def _consistent(self) -> TextParams:
        if (self.path is None) == (self.dataset is None):
            raise ValueError("give exactly one of path (a local file or folder) and dataset (a Hugging Face name)")
        if self.path is not None:
            if given := [k for k in ("dataset_config", "data_files") if getattr(self, k) is not None]:
                raise ValueError(f"{', '.join(given)} apply to a dataset, not to path")
        elif "glob" in self.model_fields_set:
            raise ValueError("glob applies to a folder path, not to dataset")
        if self.tokenizer == "char" and "vocab_size" in self.model_fields_set:
            raise ValueError("vocab_size applies to tokenizer: bpe (a char vocabulary is the corpus's characters)")
        if self.val_fraction + self.test_fraction >= 1:
            raise ValueError(
                f"val_fraction + test_fraction must be below 1 (the rest trains), got {self.val_fraction} + {self.test_fraction}"
            )
        return self


def split_bounds(n_chars: int, val_fraction: float, test_fraction: float) -> dict[str, tuple[int, int]]:
    """``[start, stop)`` character offsets of each split: train, then val, then test."""
    n_test, n_val = round(n_chars * test_fraction), round(n_chars * val_fraction)
    train_end = n_chars - n_val - n_test
    return {"train": (0, train_end), "val": (train_end, train_end + n_val), "test": (train_end + n_val, n_chars)}


@TASKS.register("text")
class Text(CorpusTask):
    """LM on your own corpus, char or byte-level BPE. Built eagerly (the corpus read and checked,
    the vocabulary built), so that ``vocab_size``, :meth:`max_seq_len` and the instance's
    ``version`` (code, corpus and vocabulary digests) are known to planning. :attr:`tokens` (N,)
    int32 holds the train, val and test ids, concatenated.

    Raises ``ValueError`` for bad params, :class:`DataUnavailableError` for a corpus that cannot
    be read, is empty or binary, or has a split of fewer than 2 tokens.
    """

    name = "text"
    version = CODE_VERSION
    Params = TextParams
    example_params = {"path": "tinyshakespeare.txt"}  # in $ABLATE_DATA_DIR (ablate check task=text)

    def __init__(self, params: Mapping[str, Any] | None = None, data_dir: Path | None = None) -> None:
        super().__init__(params, data_dir)
        p = self.params
        if p.path is not None:
            corpus = read_path(p.path, p.glob, self.data_dir)
        else:
            corpus = read_dataset(p.dataset, p.dataset_config, p.data_files, p.dataset_split, p.text_column)
        self.vocab, self.tokens, self.bounds = _tokenise(corpus, p)
        self.corpus_sha256, self.corpus_source = corpus.sha256, corpus.source
        self.version = f"{CODE_VERSION}+corpus.{corpus.sha256[:12]}.{self.vocab.kind}.{self.vocab.digest[:12]}"

    @property
    def vocab_size(self) -> int:
        return self.vocab.size

    @property
    def token_bytes(self) -> Tensor:
        import torch

        return torch.from_numpy(self.vocab.token_bytes)

    def _load(self) -> Tensor:
        import torch

        return torch.from_numpy(self.tokens)


def _tokenise(corpus: Corpus, p: TextParams) -> tuple[CharVocab | BPEVocab, np.ndarray, dict[str, tuple[int, int]]]:
    """The vocabulary, every split's tokens concatenated (int32) and their ``[start, stop)``
    token offsets; from this process's memo, the cache, or built (and cached)."""
    chars = split_bounds(len(corpus.text), p.val_fraction, p.test_fraction)
    key = (corpus.sha256, p.tokenizer, p.vocab_size if p.tokenizer == "bpe" else None, chars["val"])
    if key not in _LOADED:
        for split, (a, b) in chars.items():
            _check_size(corpus, p, split, b - a, "characters")
        texts = {s: corpus.text[a:b] for s, (a, b) in chars.items()}
        if p.tokenizer == "char":
            vocab: CharVocab | BPEVocab = CharVocab.of(corpus.text)
            ids = {s: vocab.encode(t) for s, t in texts.items()}
        else:
            vocab, ids = _bpe(corpus, p, texts)
        for split in chars:
            _check_size(corpus, p, split, len(ids[split]), "tokens")
        stops = np.cumsum([len(ids[s]) for s in chars]).tolist()
        bounds = {s: (stop - len(ids[s]), stop) for s, stop in zip(chars, stops)}
        _LOADED[key] = (vocab, np.concatenate([ids[s] for s in chars]), bounds)
    return _LOADED[key]


def _bpe(corpus: Corpus, p: TextParams, texts: dict[str, str]) -> tuple[BPEVocab, dict[str, np.ndarray]]:
    """The BPE tokenizer trained on ``texts["train"]`` and every split's ids, through the cache."""
    import tokenizers

    folder = cache_dir() / "text" / corpus.sha256[:16]
    stem = f"bpe{p.vocab_size}-train{len(texts['train'])}-tokenizers{tokenizers.__version__}"
    vocab = BPEVocab.cached(texts["train"], p.vocab_size, folder / f"{stem}.json")
    sizes = "-".join(str(len(texts[s])) for s in ("train", "val", "test"))
    path = folder / f"tokens-{vocab.digest[:16]}-{sizes}.npz"
    if path.is_file():
        try:
            with np.load(path) as stored:
                return vocab, {s: stored[s] for s in texts}
        except Exception as err:  # noqa: BLE001 a damaged file: BadZipFile, OSError, ValueError, KeyError
            log.warning("re-encoding the corpus: %s is unreadable (%s)", path, err)
    ids = {s: vocab.encode(t) for s, t in texts.items()}
    try:
        buffer = io.BytesIO()
        np.savez(buffer, **ids)
        write_atomically(path, buffer.getvalue())
    except OSError as err:
        log.warning("the encoded corpus is not cached: %s cannot be written (%s)", path, err)
    return vocab, ids


def _check_size(corpus: Corpus, p: TextParams, split: str, n: int, unit: str) -> None:
    """A split must hold a window of 2 tokens (one input, its target)."""
    if n < 2:
        fraction = {"val": p.val_fraction, "test": p.test_fraction}.get(split)
        share = f"{fraction:g} of " if fraction is not None else "the rest of "
        raise DataUnavailableError(
            f"text: corpus {corpus.source} is too small: its {split} split ({share}{len(corpus.text):,} characters) holds {n} {unit}, and a split needs at least 2 tokens; give a larger corpus or raise val_fraction / test_fraction"
        )
