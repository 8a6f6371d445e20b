"""Stale leases judged by the file server's clock: a host whose clock is ahead of (or behind) the
store's takes over no live lease of another host, and a dead one still."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from harness.execution.locks import LEASE, holder, take_lease


def _other_hosts_lease(folder: Path, age_s: float) -> None:
    folder.mkdir(parents=True)
    info = {"owner": "bob@elsewhere:1", "host": "elsewhere", "pid": 1, "leased_at": "2026-01-01T00:00:00+00:00"}
    (folder / LEASE).write_text(json.dumps(info | {"token": "t0"}))
    then = time.time() - age_s
    os.utime(folder / LEASE, (then, then))


@pytest.mark.parametrize("skew_s", [900.0, -900.0])
def test_a_skewed_local_clock_takes_over_no_live_lease_and_every_dead_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, skew_s: float
) -> None:
    _other_hosts_lease(tmp_path / "live", age_s=5)  # touched seconds ago by its host
    _other_hosts_lease(tmp_path / "dead", age_s=700)  # no heartbeat for 700 s, by the store's clock
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + skew_s)  # this host's clock, off by 15 minutes
    assert holder(tmp_path / "live", stale_after=600)["stale"] is None
    assert take_lease(tmp_path / "live", stale_after=600) is None
    lease = take_lease(tmp_path / "dead", stale_after=600)
    assert lease is not None and "no heartbeat from bob@elsewhere:1 for 70" in lease.took_over["reason"]
    lease.release()
    assert not [p for p in tmp_path.rglob(".lease.probe.*")]  # the probe files are gone
