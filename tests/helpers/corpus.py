"""Where the tests find Tiny Shakespeare: where ablate does (``$ABLATE_DATA_DIR``, then the cache,
``$ABLATE_CACHE_DIR`` or ``$XDG_CACHE_HOME/ablate`` or ``~/.cache/ablate``), looked up once, at the
start of the session, by the product's own :func:`harness.tasks.tinyshakespeare.find`, never downloaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.tasks import tinyshakespeare

HOW_TO_GET = (
    "Tiny Shakespeare not found in $ABLATE_DATA_DIR or the cache; `ablate run pe_extrapolation --profile smoke` "
    "downloads it to the cache"
)
"""The one line a test that needs the corpus skips with when it is not on this machine."""


def _find() -> tuple[Path | None, str]:
    try:
        path = tinyshakespeare.find()
    except tinyshakespeare.DataChecksumError as err:  # a damaged copy: skipped, and the line says which
        return None, f"{HOW_TO_GET} ({err})"
    return (path.parent if path is not None else None), HOW_TO_GET


CORPUS_DIR, SKIP_REASON = _find()
"""The folder holding the verified ``tinyshakespeare.txt`` (None: no copy on this machine), and why not."""

needs_corpus = pytest.mark.skipif(CORPUS_DIR is None, reason=SKIP_REASON)
"""Marks a test (or, as ``pytestmark``, a module) that needs the corpus."""


def corpus_dir() -> Path:
    """:data:`CORPUS_DIR`; skips the calling test when there is none."""
    if CORPUS_DIR is None:
        pytest.skip(SKIP_REASON)
    return CORPUS_DIR
