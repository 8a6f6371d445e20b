"""A user's corpus for the ``text`` task: a local UTF-8 file, a folder's files matching a glob
(concatenated byte for byte in relative-path order, hidden paths skipped) or a Hugging Face
dataset's text column (docs/tasks.md), read, checked and fingerprinted. Every problem is a
:class:`~harness.tasks.base.DataUnavailableError` naming the file and the fix.
"""

from __future__ import annotations

import glob
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.tasks.base import DataUnavailableError
from harness.tasks.tinyshakespeare import cache_dir, data_dir_or_env, write_atomically


@dataclass(frozen=True)
class Corpus:
    """The whole corpus as one string, the hex sha256 of its UTF-8 bytes (what the task version
    fingerprints) and where it was read from (for messages)."""

    text: str
    sha256: str
    source: str


def read_path(path: str, glob: str = "**/*.txt", data_dir: Path | None = None) -> Corpus:
    """A text file, or the files of a folder matching ``glob``, as one :class:`Corpus`; a
    :class:`DataUnavailableError` for no such path or file, a file that is not UTF-8 text, or a
    corpus that is only whitespace."""
    found = resolve(path, data_dir)
    files = _folder_files(found, glob) if found.is_dir() else [found]
    payloads = [f.read_bytes() for f in files]
    text = "".join(_decode(b, f) for b, f in zip(payloads, files))  # a message names the file
    return _corpus(text, b"".join(payloads), str(found))


def resolve(path: str, data_dir: Path | None = None) -> Path:
    """The file or folder ``path`` names: as given when absolute, else in ``data_dir`` (else
    ``$ABLATE_DATA_DIR``), then in the working directory; a :class:`DataUnavailableError` lists
    where it looked."""
    given = Path(path).expanduser()
    data_dir = data_dir_or_env(data_dir)
    tried = [given] if given.is_absolute() else [*([Path(data_dir) / given] if data_dir else []), Path.cwd() / given]
    for candidate in tried:
        if candidate.exists():
            return candidate
    raise DataUnavailableError(
        f"text: corpus path {path!r} not found (looked at {', '.join(str(t) for t in tried)}); give an existing file or folder as the task param path (relative paths are looked up in $ABLATE_DATA_DIR, then the working directory)"
    )


def _folder_files(folder: Path, glob: str) -> list[Path]:
    files = [
        p
        for p in folder.glob(glob)
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    ]
    if not files:
        raise DataUnavailableError(
            f"text: folder {folder} holds no file matching {glob!r}; put the corpus's .txt files in it or set the task param glob (e.g. '**/*.md')"
        )
    return sorted(files, key=lambda p: p.relative_to(folder).as_posix())


def _decode(payload: bytes, where: Path | str) -> str:
    if (nul := payload.find(b"\x00")) >= 0:
        raise DataUnavailableError(
            f"text: {where} is not a text file (a NUL byte at offset {nul:,}: binary data?); give a UTF-8 text file"
        )
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataUnavailableError(
            f"text: {where} is not UTF-8 text (byte 0x{payload[err.start]:02x} at offset {err.start:,}: binary data or another encoding?); convert it, e.g. iconv -f LATIN1 -t UTF-8"
        ) from None


def _corpus(text: str, payload: bytes, source: str) -> Corpus:
    if not text.strip():
        what = "empty (0 bytes)" if not payload else f"only whitespace ({len(payload):,} bytes)"
        raise DataUnavailableError(f"text: corpus {source} is {what}; give a file or folder that holds text")
    return Corpus(text, hashlib.sha256(payload).hexdigest(), source)


DataFiles = str | Sequence[str] | Mapping[str, str | Sequence[str]]  # of datasets.load_dataset


def read_dataset(
    name: str,
    config: str | None = None,
    data_files: DataFiles | None = None,
    split: str = "train",
    column: str = "text",
) -> Corpus:
    """A Hugging Face dataset's text column as one :class:`Corpus`, its rows joined by ``"\\n"``,
    cached under ``$ABLATE_CACHE_DIR/text/hf/`` keyed by the arguments and by the content of every
    local file the dataset can read (:func:`local_files`); a cached copy is read without
    importing ``datasets``.

    Raises:
        DataUnavailableError: ``datasets`` is missing; the dataset, its column or its text is not
            there (no network, no such name, config, split or column; a row that is not text).
    """
    key = {"name": name, "config": config, "data_files": data_files, "split": split, "column": column}
    local = local_files(name, data_files)
    key["local_files"] = [[str(f), content_sha256(f)] for f in local]
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    cached = cache_dir() / "text" / "hf" / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)[-60:]}-{digest}.txt"
    source = f"dataset {name!r} (split {split!r}, column {column!r})"
    if cached.is_file():
        payload = cached.read_bytes()
        return _corpus(_decode(payload, cached), payload, f"{source}, cached at {cached}")
    text = _load_dataset(name, config, data_files, split, column, source, rebuild=bool(local))
    payload = text.encode("utf-8")
    corpus = _corpus(text, payload, source)
    write_atomically(cached, payload)
    return corpus


def local_files(name: str, data_files: DataFiles | None) -> list[Path]:
    """The local files ``datasets.load_dataset(name, data_files=data_files)`` can read, or more,
    sorted: every pattern of ``data_files`` (of every split) resolved with :func:`glob.glob`, as
    ``datasets.data_files.resolve_pattern`` does, relative to the folder ``name`` when it is one,
    else to the working directory (every file below a folder ``name`` without ``data_files``).
    Remote patterns are left out; files ``datasets`` would skip are kept (another cache key only).
    """
    folder = Path(name).expanduser()
    base = folder if folder.is_dir() else Path.cwd()
    if data_files is None:
        patterns = ["**/*"] if folder.is_dir() else []
    elif isinstance(data_files, str):
        patterns = [data_files]
    elif isinstance(data_files, Mapping):
        patterns = [p for v in data_files.values() for p in ([v] if isinstance(v, str) else v)]
    else:
        patterns = list(data_files)
    found = {
        Path(match)
        for pattern in patterns
        if "://" not in pattern
        for match in glob.glob(str(base / Path(pattern).expanduser()), recursive=True)
    }
    return sorted(p for p in found if p.is_file())


def content_sha256(path: Path) -> str:
    """sha256 of a file's bytes, read every time (a rewrite that keeps the size and the
    modification time is still another corpus)."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _load_dataset(
    name: str,
    config: str | None,
    data_files: DataFiles | None,
    split: str,
    column: str,
    source: str,
    rebuild: bool = False,
) -> str:
    """The text column's rows joined by newlines. ``rebuild``: read local files afresh, not from
    ``datasets``' own cache (keyed by paths and modification times)."""
    try:
        import datasets
    except ImportError:
        raise DataUnavailableError(
            f"text: {source} needs the datasets package: pip install 'ablate[datasets]' (or give a local file as the task param path)"
        ) from None
    datasets.disable_progress_bars()
    try:
        rows = datasets.load_dataset(
            name,
            config,
            data_files=data_files,
            split=split,
            cache_dir=str(cache_dir() / "huggingface"),
            download_mode="force_redownload" if rebuild else None,
        )
    except Exception as err:  # noqa: BLE001 hub, network, builder and split errors have no common base
        raise DataUnavailableError(
            f"text: {source} could not be loaded ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); check the name, config and split, and the network for a hub dataset (loaded once, it is cached under {cache_dir()} and read offline)"
        ) from None
    if column not in rows.column_names:
        raise DataUnavailableError(
            f"text: {source} has no column {column!r}; set the task param text_column to one of: {', '.join(rows.column_names)}"
        )
    values = rows[column]
    bad = next((i for i, v in enumerate(values) if not isinstance(v, str)), None)
    if bad is not None:
        raise DataUnavailableError(
            f"text: {source}: row {bad} of column {column!r} is {type(values[bad]).__name__}, not text; set the task param text_column to a column of strings"
        )
    return "\n".join(values)
