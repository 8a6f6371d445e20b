"""Leases on run folders (harness/execution/locks.py): exclusive, stale ones taken over and logged.

No torch here: the race test runs plain Python processes that take leases on the same folders at once.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from harness.execution import locks
from harness.execution.locks import LEASE, stale_reason, take_lease
from helpers.events import read_events


def _write_lease(folder: Path, **fields) -> bytes:
    folder.mkdir(parents=True, exist_ok=True)
    info = {
        "owner": "someone",
        "host": socket.gethostname(),
        "pid": os.getppid(),
        "pid_start": None,
        "leased_at": "2026-01-01T00:00:00+00:00",
        "token": "t0",
        **fields,
    }
    raw = json.dumps(info).encode()
    (folder / LEASE).write_bytes(raw)
    return raw


def test_lease_is_exclusive_while_its_owner_lives(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _write_lease(run)  # held by our parent process: alive, same host
    assert take_lease(run) is None
    assert json.loads((run / LEASE).read_text())["token"] == "t0"


def test_lease_records_owner_and_release_removes_only_its_own(tmp_path: Path) -> None:
    run = tmp_path / "run"
    lease = take_lease(run)
    assert lease is not None
    info = json.loads((run / LEASE).read_text())
    assert {"owner", "host", "pid", "pid_start", "leased_at", "token"} <= set(info)
    assert info["pid"] == os.getpid() and info["host"] == socket.gethostname()
    assert [e["event"] for e in read_events(run)] == ["lease"]
    _write_lease(run, token="other")  # someone replaced it: release must not remove theirs
    lease.release()
    assert json.loads((run / LEASE).read_text())["token"] == "other"


def test_only_a_stale_lease_is_cleared(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    assert locks.clear_stale(run) is None  # no lease
    _write_lease(run)  # our parent's: alive
    assert locks.clear_stale(run) is None and (run / LEASE).exists()
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    _write_lease(run, pid=proc.pid)
    taken = locks.clear_stale(run)
    assert taken is not None and f"process {proc.pid}" in taken["reason"] and not (run / LEASE).exists()
    assert [e["event"] for e in read_events(run)] == ["takeover"]


def test_dead_process_lease_is_taken_over_and_logged(tmp_path: Path, caplog) -> None:
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    _write_lease(run, pid=proc.pid)
    with caplog.at_level("WARNING", logger="ablate.leases"):
        lease = take_lease(run)
    assert lease is not None and f"process {proc.pid}" in lease.took_over["reason"]
    assert "took over" in caplog.text
    events = read_events(run)
    assert [e["event"] for e in events] == ["takeover", "lease"]
    assert events[0]["previous"]["pid"] == proc.pid
    lease.release()


def test_reused_pid_is_not_the_owner(tmp_path: Path) -> None:
    run = tmp_path / "run"
    start = locks.pid_start(os.getppid())
    raw = _write_lease(run, pid_start=(start or 0) + 1)
    if start is None:
        assert stale_reason(raw, 0, 600) is None  # no /proc: cannot tell, the lease holds
    else:
        assert "is gone" in stale_reason(raw, 0, 600)


def test_other_host_lease_holds_until_its_heartbeat_is_older_than_the_timeout(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _write_lease(run, host="elsewhere", pid=1)
    assert take_lease(run, stale_after=600) is None
    old = time.time() - 700
    os.utime(run / LEASE, (old, old))
    lease = take_lease(run, stale_after=600)
    assert lease is not None and "no heartbeat" in lease.took_over["reason"]
    lease.release()


def test_unreadable_lease_is_stale_only_when_old(tmp_path: Path) -> None:
    assert stale_reason(b"{half", age_s=1, stale_after=600) is None
    assert stale_reason(b"{half", age_s=31, stale_after=600) == "unreadable lease file"


def test_heartbeat_touches_the_lease(tmp_path: Path) -> None:
    run = tmp_path / "run"
    lease = take_lease(run, heartbeat=0.05)
    old = time.time() - 100
    os.utime(run / LEASE, (old, old))
    time.sleep(0.3)
    assert time.time() - (run / LEASE).stat().st_mtime < 50
    lease.release()
    assert not (run / LEASE).exists()


RACER = """
import sys, time
from pathlib import Path
from harness.execution.locks import take_lease
root, go = Path(sys.argv[1]), Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)
mine = [f.name for f in sorted(root.iterdir()) if take_lease(f, heartbeat=3600) is not None]
print(",".join(mine), flush=True)
sys.stdin.read()  # stay alive (a live owner) until every racer has finished
"""


def test_processes_racing_for_the_same_runs_never_share_one(tmp_path: Path) -> None:
    root, go = tmp_path / "runs", tmp_path / "go"
    for i in range(40):
        (root / f"run{i:02d}").mkdir(parents=True)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(root), str(go)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    time.sleep(0.5)
    go.touch()
    won = [p.stdout.readline().strip() for p in procs]
    for p in procs:
        p.communicate(timeout=60)
    names = [n for line in won for n in line.split(",") if n]
    assert sorted(names) == sorted(f"run{i:02d}" for i in range(40))  # every run leased exactly once
