"""The files and folders every layer shares: where the data sets live (``$ABLATE_DATA_DIR``)."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path | None:
    """``$ABLATE_DATA_DIR`` (where tinyshakespeare.txt is looked up first), ``~`` expanded; None when unset or empty."""
    return Path(env).expanduser() if (env := os.environ.get("ABLATE_DATA_DIR")) else None
