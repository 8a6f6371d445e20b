"""Claims on run folders (harness/execution/locks.py): exclusive, stale ones taken over and logged.

No torch here: the race test runs plain Python processes that claim the same folders at once.
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
from harness.execution.locks import CLAIM, stale_reason, try_claim
from helpers.events import read_events


def _write_claim(folder: Path, **fields) -> bytes:
    folder.mkdir(parents=True, exist_ok=True)
    info = {
        "owner": "someone",
        "host": socket.gethostname(),
        "pid": os.getppid(),
        "pid_start": None,
        "claimed_at": "2026-01-01T00:00:00+00:00",
        "token": "t0",
        **fields,
    }
    raw = json.dumps(info).encode()
    (folder / CLAIM).write_bytes(raw)
    return raw


def test_claim_is_exclusive_while_its_owner_lives(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _write_claim(run)  # held by our parent process: alive, same host
    assert try_claim(run) is None
    assert json.loads((run / CLAIM).read_text())["token"] == "t0"


def test_claim_records_owner_and_release_removes_only_its_own(tmp_path: Path) -> None:
    run = tmp_path / "run"
    claim = try_claim(run)
    assert claim is not None
    info = json.loads((run / CLAIM).read_text())
    assert {"owner", "host", "pid", "pid_start", "claimed_at", "token"} <= set(info)
    assert info["pid"] == os.getpid() and info["host"] == socket.gethostname()
    assert [e["event"] for e in read_events(run)] == ["claim"]
    _write_claim(run, token="other")  # someone replaced it: release must not remove theirs
    claim.release()
    assert json.loads((run / CLAIM).read_text())["token"] == "other"


def test_only_a_stale_claim_is_cleared(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    assert locks.clear_stale(run) is None  # no claim
    _write_claim(run)  # our parent's: alive
    assert locks.clear_stale(run) is None and (run / CLAIM).exists()
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    _write_claim(run, pid=proc.pid)
    taken = locks.clear_stale(run)
    assert taken is not None and f"process {proc.pid}" in taken["reason"] and not (run / CLAIM).exists()
    assert [e["event"] for e in read_events(run)] == ["takeover"]


def test_dead_process_claim_is_taken_over_and_logged(tmp_path: Path, caplog) -> None:
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    _write_claim(run, pid=proc.pid)
    with caplog.at_level("WARNING", logger="ablate.claims"):
        claim = try_claim(run)
    assert claim is not None and f"process {proc.pid}" in claim.took_over["reason"]
    assert "took over" in caplog.text
    events = read_events(run)
    assert [e["event"] for e in events] == ["takeover", "claim"]
    assert events[0]["previous"]["pid"] == proc.pid
    claim.release()


def test_reused_pid_is_not_the_owner(tmp_path: Path) -> None:
    run = tmp_path / "run"
    start = locks.pid_start(os.getppid())
    raw = _write_claim(run, pid_start=(start or 0) + 1)
    if start is None:
        assert stale_reason(raw, 0, 600) is None  # no /proc: cannot tell, the claim holds
    else:
        assert "is gone" in stale_reason(raw, 0, 600)


def test_other_host_claim_holds_until_its_heartbeat_is_older_than_the_timeout(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _write_claim(run, host="elsewhere", pid=1)
    assert try_claim(run, stale_after=600) is None
    old = time.time() - 700
    os.utime(run / CLAIM, (old, old))
    claim = try_claim(run, stale_after=600)
    assert claim is not None and "no heartbeat" in claim.took_over["reason"]
    claim.release()


def test_unreadable_claim_is_stale_only_when_old(tmp_path: Path) -> None:
    assert stale_reason(b"{half", age_s=1, stale_after=600) is None
    assert stale_reason(b"{half", age_s=31, stale_after=600) == "unreadable claim file"


def test_heartbeat_touches_the_claim(tmp_path: Path) -> None:
    run = tmp_path / "run"
    claim = try_claim(run, heartbeat=0.05)
    old = time.time() - 100
    os.utime(run / CLAIM, (old, old))
    time.sleep(0.3)
    assert time.time() - (run / CLAIM).stat().st_mtime < 50
    claim.release()
    assert not (run / CLAIM).exists()


RACER = """
import sys, time
from pathlib import Path
from harness.execution.locks import try_claim
root, go = Path(sys.argv[1]), Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)
mine = [f.name for f in sorted(root.iterdir()) if try_claim(f, heartbeat=3600) is not None]
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
    assert sorted(names) == sorted(f"run{i:02d}" for i in range(40))  # every run claimed exactly once
