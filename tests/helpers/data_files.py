"""Data files (reports/data/NAME[.PROFILE].tar.gz) edited as a hand edit would: members changed,
packed again."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path

from harness.errors import TRAINED


def repack(src: Path, dst: Path, edit: Callable[[dict[str, bytes]], None]) -> Path:
    """A copy of the data file ``src`` whose members ``edit`` changed, as a hand edit would."""
    with tarfile.open(src) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar}
    edit(members)
    return pack(dst, members)


def pack(path: Path, members: dict[str, bytes]) -> Path:
    """Write ``members`` (name to bytes) as a gzipped tar at ``path``, as ``ablate report`` packs a
    data file; returns ``path``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(gzip.compress(buf.getvalue()))
    return path


def edit_record(members: dict[str, bytes], change: Callable[[dict], None], ok: bool = True) -> str:
    """Apply ``change`` to the record of the first run that trained to its end (ok, or stalled: a
    smoke run learns nothing); returns its member folder."""
    for name in sorted(members):
        if name.endswith("/record.json") and (not ok or json.loads(members[name])["status"] in TRAINED):
            rec = json.loads(members[name])
            change(rec)
            members[name] = json.dumps(rec).encode()
            return name.rpartition("/")[0]
    raise AssertionError("no record")
