"""The files and folders every layer shares: where the data sets live (``$ABLATE_DATA_DIR``), how a file is written.

A file is written whole or not at all (:func:`write_atomic`): readers never see half of one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def data_dir(given: Path | None = None) -> Path | None:
    """``given``, else ``$ABLATE_DATA_DIR`` (where tinyshakespeare.txt is looked up first), ``~`` expanded.

    None when neither is given nor set (an empty variable is unset).
    """
    if given is not None:
        return given
    return Path(env).expanduser() if (env := os.environ.get("ABLATE_DATA_DIR")) else None


def umask() -> int:
    """This process's umask (``/proc/self/status`` on Linux; elsewhere set and put back)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: Path, data: bytes, *, parents: bool = True, durable: bool = True) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and ``os.replace``.

    The file gets the mode a plain ``open`` gives (``0o666`` less the umask: a store shared by a group under umask 002
    stays group-readable; ``mkstemp`` alone makes it 0600).

    Args:
        path: the file to write (or replace).
        data: its bytes.
        parents: create the missing folders above ``path``; else a missing folder raises ``FileNotFoundError``.
        durable: ``fsync`` the bytes before the rename (not for a file rewritten every few seconds).
    """
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
