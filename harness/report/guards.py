"""The controls (positive and negative) that guard a report's claims, kept beside the report's data file
(``reports/data/NAME[.PROFILE].guards.json``), so that ``ablate report NAME --from FILE`` withholds
the same verdicts without the runs of the controls (other grids, not in the file).

A claim listed under ``guards`` by an entry of ``harness/experiment/reproductions.yaml`` or by an
ablation's ``control:`` has its verdict withheld while that control does not pass
(:mod:`harness.analysis.guards`, :func:`harness.analysis.claims.claim_verdict`). The file maps each
of the report's claims that has guards to ``[{"id", "outcome", "kind", "profile"}]`` and
holds no timestamp: the same outcomes give the same bytes. Written by :func:`write_guards`, read
back by :func:`read_guards`.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from harness.analysis.claims import POSITIVE, Guard
from harness.analysis.guards import Guards
from harness.report.tuning_data import read_sidecar

__all__ = ["UNKNOWN", "Guards", "guards_path", "read_guards", "write_guards"]

UNKNOWN = "unknown: no controls' file beside the data file"
"""The outcome of each control declared to guard a claim when ``--from`` finds no controls' file
beside the data file (copied without it, or renamed): its verdict is withheld, not given."""


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    outcome: str
    kind: str = POSITIVE
    profile: str | None = None


class _File(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    ablation: str
    profile: str
    guards: dict[str, list[_Entry]]


def guards_path(data_file: Path) -> Path:
    """``data/NAME.PROFILE.guards.json`` beside the data file ``data/NAME.PROFILE.tar.gz``."""
    stem = Path(data_file).name.removesuffix(".tar.gz")
    return Path(data_file).with_name(f"{stem}.guards.json")


def write_guards(guards: Guards, data_file: Path, ablation: str, profile: str) -> Path | None:
    """Write ``guards`` beside ``data_file``; with none, remove a file left from an earlier report.
    Returns the path written, or None."""
    path = guards_path(data_file)
    if not guards:
        path.unlink(missing_ok=True)
        return None
    body = {
        "ablation": ablation,
        "profile": profile,
        "guards": {
            cid: [{"id": g.id, "outcome": g.outcome, "kind": g.kind, "profile": g.profile} for g in gs]
            for cid, gs in sorted(guards.items())
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n")
    return path


def read_guards(data_file: Path, ablation: str, profile: str) -> Guards | None:
    """The guards kept beside ``data_file``; None when there is no such file (no claim of the report
    had a control, or the file was not copied with the data file: the caller tells them apart).

    Raises:
        AblateError: a file that is not JSON of this format, or of another ablation or profile.
    """
    fix = "regenerate both with `ablate report NAME` from the store"
    data = read_sidecar(guards_path(data_file), _File, data_file, "controls' file", ablation, profile, fix)
    if data is None:
        return None
    return {
        cid: tuple(Guard(e.id, e.outcome, e.kind, e.profile) for e in entries) for cid, entries in data.guards.items()
    }
