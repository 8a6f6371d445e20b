"""A run folder's lifecycle events, read back for the tests of leases, takeovers and resumes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.store.runs import EVENTS


def read_events(folder: Path) -> list[dict[str, Any]]:
    """The parseable lines of a run's ``events.jsonl`` (a torn last line is skipped)."""
    try:
        lines = (folder / EVENTS).read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out
