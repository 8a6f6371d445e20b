"""Stale claims judged by the file server's clock: a host whose clock is ahead of (or behind) the
store's takes over no live claim of another host, and a dead one still."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from harness.execution.locks import CLAIM, holder, try_claim


def _other_hosts_claim(folder: Path, age_s: float) -> None:
    folder.mkdir(parents=True)
    info = {"owner": "bob@elsewhere:1", "host": "elsewhere", "pid": 1, "claimed_at": "2026-01-01T00:00:00+00:00"}
    (folder / CLAIM).write_text(json.dumps(info | {"token": "t0"}))
    then = time.time() - age_s
    os.utime(folder / CLAIM, (then, then))


@pytest.mark.parametrize("skew_s", [900.0, -900.0])
def test_a_skewed_local_clock_takes_over_no_live_claim_and_every_dead_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, skew_s: float
) -> None:
    _other_hosts_claim(tmp_path / "live", age_s=5)  # touched seconds ago by its host
    _other_hosts_claim(tmp_path / "dead", age_s=700)  # no heartbeat for 700 s, by the store's clock
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + skew_s)  # this host's clock, off by 15 minutes
    assert holder(tmp_path / "live", stale_after=600)["stale"] is None
    assert try_claim(tmp_path / "live", stale_after=600) is None
    claim = try_claim(tmp_path / "dead", stale_after=600)
    assert claim is not None and "no heartbeat from bob@elsewhere:1 for 70" in claim.took_over["reason"]
    claim.release()
    assert not [p for p in tmp_path.rglob(".claim.probe.*")]  # the probe files are gone
