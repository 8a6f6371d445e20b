"""``text``: language modelling on a user's own corpus, in character or byte-level BPE tokens.

The corpus: a UTF-8 file, a folder's files matching a glob, or a Hugging Face dataset's text column. The tokens:
:mod:`harness.tasks.vocab`; params, split, version and cache: docs/tasks.md. Each split is tokenised on its own, so
no token spans two splits. Every problem with the corpus is a :class:`~harness.tasks.base.DataUnavailableError`
naming the file and the fix.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import io
import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import Field, model_validator

from harness import files
from harness.files import write_atomic
from harness.tasks import TASKS
from harness.tasks.base import DataUnavailableError, TaskParams
from harness.tasks.corpus import CorpusTask, cache_dir, split_bounds
from harness.tasks.vocab import BPEVocab, CharVocab

if TYPE_CHECKING:
    from torch import Tensor

log = logging.getLogger(__name__)

CODE_VERSION = "1"  # bumped whenever the rows drawn for a given corpus, vocabulary and seed change

# per process: (corpus sha256, vocabulary params, split) -> (vocab, token ids, token bounds)
_LOADED: dict[tuple[Any, ...], tuple[CharVocab | BPEVocab, np.ndarray, dict[str, tuple[int, int]]]] = {}


@dataclass(frozen=True)
class Corpus:
    """The whole corpus, the hex sha256 of its UTF-8 bytes (in the task version), where it was read."""

    text: str
    sha256: str
    source: str


def read_path(path: str, glob: str = "**/*.txt", data_dir: Path | None = None, near: Path | None = None) -> Corpus:
    """A text file, or the files of a folder matching ``glob``, as one :class:`Corpus`.

    ``path`` is taken as given when absolute, else in ``near`` (the ablation file's folder), then in ``data_dir``
    (else ``$ABLATE_DATA_DIR``), then in the working directory, then in the cache
    (:func:`~harness.tasks.corpus.cache_dir`, where ``tinyshakespeare`` downloads its file).

    Raises:
        DataUnavailableError: For no such path (listing where it looked) or file, a file that is not UTF-8 text, or a
            corpus that is only whitespace.
    """
    given = Path(path).expanduser()
    folders = [f for f in (near, files.data_dir(data_dir), Path.cwd(), cache_dir()) if f is not None]
    tried = [given] if given.is_absolute() else [folder / given for folder in folders]
    found = next((candidate for candidate in tried if candidate.exists()), None)
    if found is None:
        raise DataUnavailableError(
            f"text: corpus path {path!r} not found (looked at {', '.join(str(t) for t in tried)}); give an "
            "existing file or folder as the task param path (relative paths are looked up in the ablation file's "
            f"folder, $ABLATE_DATA_DIR, the working directory, then the cache {cache_dir()})"
        )
    paths = [found]
    if found.is_dir():
        hidden = lambda p: any(part.startswith(".") for part in p.relative_to(found).parts)
        paths = sorted(
            (p for p in found.glob(glob) if p.is_file() and not hidden(p)),
            key=lambda p: p.relative_to(found).as_posix(),
        )
        if not paths:
            raise DataUnavailableError(
                f"text: folder {found} holds no file matching {glob!r}; put the corpus's .txt files in it or "
                "set the task param glob (e.g. '**/*.md')"
            )
    payloads = [f.read_bytes() for f in paths]
    text = "".join(_decode(b, f) for b, f in zip(payloads, paths))  # a message names the file
    return _corpus(text, b"".join(payloads), str(found))


def _decode(payload: bytes, where: Path | str) -> str:
    if (nul := payload.find(b"\x00")) >= 0:
        raise DataUnavailableError(
            f"text: {where} is not a text file (a NUL byte at offset {nul:,}: binary data?); give a UTF-8 text file"
        )
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataUnavailableError(
            f"text: {where} is not UTF-8 text (byte 0x{payload[err.start]:02x} at offset {err.start:,}: "
            "binary data or another encoding?); convert it, e.g. iconv -f LATIN1 -t UTF-8"
        ) from None


def _corpus(text: str, payload: bytes, source: str) -> Corpus:
    if not text.strip():
        what = "empty (0 bytes)" if not payload else f"only whitespace ({len(payload):,} bytes)"
        raise DataUnavailableError(f"text: corpus {source} is {what}; give a file or folder that holds text")
    return Corpus(text, hashlib.sha256(payload).hexdigest(), source)


DataFiles = str | Sequence[str] | Mapping[str, str | Sequence[str]]  # of datasets.load_dataset


def read_dataset(p: TextParams) -> Corpus:
    r"""The text column of the Hugging Face dataset of ``p`` as one :class:`Corpus`, its rows joined by ``"\n"``.

    Cached under ``$ABLATE_CACHE_DIR/text/hf/`` keyed by the arguments and by the content of every local file the
    dataset can read (:func:`local_files`); a cached copy is read without importing ``datasets``.

    Raises:
        DataUnavailableError: When ``datasets`` is missing or the dataset, its column or its text is not there (no
            network, no such name, config, split or column; a row that is not text).
    """
    name, config, data_files, split, column = p.dataset, p.dataset_config, p.data_files, p.dataset_split, p.text_column
    key = {"name": name, "config": config, "data_files": data_files, "split": split, "column": column}
    local = local_files(name, data_files)
    key["local_files"] = [[str(f), content_sha256(f)] for f in local]
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    cached = cache_dir() / "text" / "hf" / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)[-60:]}-{digest}.txt"
    source = f"dataset {name!r} (split {split!r}, column {column!r})"
    if cached.is_file():
        payload = cached.read_bytes()
        return _corpus(_decode(payload, cached), payload, f"{source}, cached at {cached}")
    try:
        import datasets
    except ImportError:
        raise DataUnavailableError(
            f"text: {source} needs the datasets package: pip install 'ablate[datasets]' "
            "(or give a local file as the task param path)"
        ) from None
    datasets.disable_progress_bars()
    mode = "force_redownload" if local else None  # local files afresh: not by their mtime
    hf_cache = str(cache_dir() / "huggingface")
    try:
        rows = datasets.load_dataset(
            name, config, data_files=data_files, split=split, cache_dir=hf_cache, download_mode=mode
        )
    except Exception as err:  # noqa: BLE001 hub, network, builder and split errors have no common base
        raise DataUnavailableError(
            f"text: {source} could not be loaded ({type(err).__name__}: "
            f"{str(err).splitlines()[0] if str(err) else ''}); check the name, config and split, and the network "
            f"for a hub dataset (loaded once, it is cached under {cache_dir()} and read offline)"
        ) from None
    if column not in rows.column_names:
        raise DataUnavailableError(
            f"text: {source} has no column {column!r}; set the task param text_column to one of: "
            f"{', '.join(rows.column_names)}"
        )
    values = rows[column]
    bad = next((i for i, v in enumerate(values) if not isinstance(v, str)), None)
    if bad is not None:
        raise DataUnavailableError(
            f"text: {source}: row {bad} of column {column!r} is {type(values[bad]).__name__}, not text; "
            "set the task param text_column to a column of strings"
        )
    text = "\n".join(values)
    payload = text.encode("utf-8")
    corpus = _corpus(text, payload, source)
    write_atomic(cached, payload)
    return corpus


def local_files(name: str, data_files: DataFiles | None) -> list[Path]:
    """The local files ``datasets.load_dataset(name, data_files=data_files)`` can read, or more, sorted.

    Every pattern of ``data_files`` (of every split) resolved with :func:`glob.glob`, as
    ``datasets.data_files.resolve_pattern`` does, relative to the folder ``name`` when it is one, else to the working
    directory (every file below a folder ``name`` without ``data_files``). Remote patterns are left out; files
    ``datasets`` would skip are kept (another cache key only).
    """
    folder = Path(name).expanduser()
    base = folder if folder.is_dir() else Path.cwd()
    if data_files is None:
        data_files = ["**/*"] if folder.is_dir() else []
    groups = data_files.values() if isinstance(data_files, Mapping) else [data_files]
    patterns = [p for g in groups for p in ([g] if isinstance(g, str) else g)]
    found = {
        Path(match)
        for pattern in patterns
        if "://" not in pattern
        for match in glob.glob(str(base / Path(pattern).expanduser()), recursive=True)
    }
    return sorted(p for p in found if p.is_file())


def content_sha256(path: Path) -> str:
    """sha256 of a file's bytes, read every time.

    A rewrite that keeps the size and the modification time is still another corpus.
    """
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


class TextParams(TaskParams):
    """Parameters of ``text``: the corpus (exactly one of ``path`` and ``dataset``), its tokenizer and its splits."""

    path: str | None = Field(None, description="a UTF-8 text file or a folder of them")
    glob: str = Field("**/*.txt", description="files of a folder `path` to read, in path order")
    dataset: str | None = Field(None, description="a Hugging Face dataset name (extra ablate[datasets])")
    dataset_config: str | None = Field(None, description="the dataset's configuration name")
    data_files: str | list[str] | dict[str, str | list[str]] | None = Field(
        None, description="data_files for datasets.load_dataset: a path or glob, a list, or a dict of splits"
    )
    dataset_split: str = Field("train", description="the dataset split read as the corpus")
    text_column: str = Field("text", description="the dataset column of text; rows are joined by newlines")
    tokenizer: Literal["char", "bpe"] = Field(
        "char", description="char: the corpus's characters; bpe: a byte-level BPE trained on the train split"
    )
    vocab_size: int = Field(1024, ge=256, le=1 << 20, description="bpe: ids, 256 bytes + merges")
    val_fraction: float = Field(0.05, gt=0, lt=1, description="the share of characters, after train, that validates")
    test_fraction: float = Field(0.05, gt=0, lt=1, description="the share of characters, at the end, that tests")

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
                "val_fraction + test_fraction must be below 1 (the rest trains), got "
                f"{self.val_fraction} + {self.test_fraction}"
            )
        return self


@TASKS.register("text")
class Text(CorpusTask):
    """LM on your own corpus, char or byte-level BPE.

    Built eagerly (the corpus read and checked, the vocabulary built), so that ``vocab_size``, :meth:`max_seq_len`
    and the instance's ``version`` (code, corpus and vocabulary digests) are known to planning. :attr:`tokens` (N,)
    int32 holds the train, val and test ids, concatenated.

    Raises:
        ValueError: For bad params.
        DataUnavailableError: For a corpus that cannot be read, is empty or binary, or has a split of fewer than 2
            tokens.
    """

    name = "text"
    version = CODE_VERSION
    Params = TextParams
    example_params = {"path": "tinyshakespeare.txt"}  # in $ABLATE_DATA_DIR (ablate check task=text)

    def __init__(
        self, params: Mapping[str, Any] | None = None, data_dir: Path | None = None, near: Path | None = None
    ) -> None:
        super().__init__(params, data_dir, near)
        p = self.params
        corpus = read_path(p.path, p.glob, self.data_dir, near) if p.path is not None else read_dataset(p)
        self.vocab, self.tokens, self.bounds = _tokenise(corpus, p)
        self.corpus_sha256, self.corpus_source = corpus.sha256, corpus.source
        self.version = f"{CODE_VERSION}+corpus.{corpus.sha256[:12]}.{self.vocab.kind}.{self.vocab.digest[:12]}"

    @property
    def vocab_size(self) -> int:
        """The vocabulary's size: the corpus's distinct characters (char), or the BPE's ids (bpe)."""
        return self.vocab.size

    @property
    def token_bytes(self) -> Tensor:
        """``(V,)`` int64: how many UTF-8 bytes each token id stands for (the vocabulary's ``token_bytes``)."""
        import torch

        return torch.from_numpy(self.vocab.token_bytes)

    @functools.cached_property
    def ids(self) -> Tensor:
        """:attr:`tokens` as a tensor."""
        import torch

        return torch.from_numpy(self.tokens)


def _tokenise(corpus: Corpus, p: TextParams) -> tuple[CharVocab | BPEVocab, np.ndarray, dict[str, tuple[int, int]]]:
    """The vocabulary, every split's tokens concatenated (int32) and their ``[start, stop)`` token offsets.

    From this process's memo, the cache, or built (and cached).
    """
    chars = split_bounds(len(corpus.text), p.val_fraction, p.test_fraction)
    key = (corpus.sha256, p.tokenizer, p.vocab_size if p.tokenizer == "bpe" else None, chars["val"])
    if key not in _LOADED:
        for split, (a, b) in chars.items():
            _check_size(corpus, p, split, b - a, "characters")
        texts = {s: corpus.text[a:b] for s, (a, b) in chars.items()}
        if p.tokenizer == "char":
            vocab: CharVocab | BPEVocab = CharVocab("".join(sorted(set(corpus.text))))
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
        write_atomic(path, buffer.getvalue())
    except OSError as err:
        log.warning("the encoded corpus is not cached: %s cannot be written (%s)", path, err)
    return vocab, ids


def _check_size(corpus: Corpus, p: TextParams, split: str, n: int, unit: str) -> None:
    """A split must hold a window of 2 tokens (one input, its target)."""
    if n < 2:
        fraction = {"val": p.val_fraction, "test": p.test_fraction}.get(split)
        share = f"{fraction:g} of " if fraction is not None else "the rest of "
        raise DataUnavailableError(
            f"text: corpus {corpus.source} is too small: its {split} split ({share}{len(corpus.text):,} characters) "
            f"holds {n} {unit}, and a split needs at least 2 tokens; give a larger corpus or raise val_fraction / "
            "test_fraction"
        )
