"""Leases: one process at a time owns a run folder, so no run is executed twice.

Built on the standard library, with the run's event log (:func:`harness.store.runs.append_event`)
and the default timeout (:class:`harness.run_options.RunOptions`); docs/execution.md, "The store
never loses a run". A lease is a lock that lapses unless its heartbeat renews it:
``<run folder>/lease.lock``, a JSON file naming its owner, created atomically and exclusively
(:func:`_create`) and touched every :data:`LEASE_HEARTBEAT_S` seconds; a stale one (:func:`stale_reason`)
is taken over, serialised by a second lock file, checked against the exact bytes judged stale and
logged to the run's ``events.jsonl``. A ``claim.lock``, the file's name in older versions, is no lease
(:func:`~harness.execution.attempt.prepare` removes it with the rest of an interrupted attempt).
"""

from __future__ import annotations

import contextlib
import getpass
import json
import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.run_options import RunOptions
from harness.store.runs import append_event

LEASE = "lease.lock"
TAKEOVER = "lease.lock.takeover"
LEASE_HEARTBEAT_S = 30.0  # seconds between the touches of a held lease (a tuning trial has its own: TRIAL_HEARTBEAT_S)
LEASE_STALE_S = RunOptions.lease_timeout  # seconds without a heartbeat before a lease is stale (--lease-timeout)
TAKEOVER_STALE_S = 60.0  # a takeover lock left by a process killed mid-takeover
log = logging.getLogger("ablate.leases")


def pid_start(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (Linux ``/proc``), None elsewhere."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def owner() -> dict[str, Any]:
    """Who takes the lease: user, host, pid, the pid's start time and the time it was taken."""
    pid = os.getpid()
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return {
        "owner": f"{user}@{socket.gethostname()}:{pid}",
        "host": socket.gethostname(),
        "pid": pid,
        "pid_start": pid_start(pid),
        "leased_at": datetime.now(timezone.utc).isoformat(),
        "token": uuid.uuid4().hex,
    }


def pid_alive(pid: int, start: int | None = None) -> bool:
    """Whether ``pid`` runs on this host and, when ``start`` is known, is the same process."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    now = pid_start(pid)
    return start is None or now is None or now == start


def stale_reason(raw: bytes, age_s: float, stale_after: float) -> str | None:
    """Why a lease (its bytes and heartbeat age) may be taken over, or None if it holds."""
    try:
        info = json.loads(raw)
        host, pid = info["host"], int(info["pid"])
    except (ValueError, KeyError, TypeError):
        return "unreadable lease file" if age_s > 30 else None
    if host == socket.gethostname() and pid == os.getpid():
        return "left by this process"
    if host == socket.gethostname() and not pid_alive(pid, info.get("pid_start")):
        return f"process {pid} on {host} is gone"
    if age_s > stale_after:
        return f"no heartbeat from {info.get('owner', pid)} for {age_s:.0f} s (lease timeout {stale_after:.0f} s)"
    return None


def _write_new(path: Path, payload: bytes) -> None:
    """Create ``path`` (FileExistsError if it is there) holding ``payload``.

    A write that fails (a full disk, a quota) removes the file it made, so no empty lease file is
    left behind.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as file:  # a buffered file writes the whole payload, and closes the descriptor
            file.write(payload)
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def _create(path: Path, payload: bytes) -> bool:
    """Atomically create ``path`` holding ``payload``; False if it already exists.

    OSError (a full disk) leaves neither ``path`` nor the temporary file.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
    try:
        _write_new(tmp, payload)
        try:
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
        except OSError:  # no hard links on this filesystem: exclusive create, then write
            try:
                _write_new(path, payload)
            except FileExistsError:
                return False
            return True
    finally:
        tmp.unlink(missing_ok=True)


def server_now(folder: Path) -> float:
    """The time now by the clock of the file system holding ``folder``.

    That is the mtime of a probe file made and removed there. On a shared store the hosts' clocks
    may differ by minutes; the file server's is the one every lease's heartbeat is stamped with. The
    local clock where no file can be made (a read-only store).
    """
    probe = folder / f".lease.probe.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        return time.time()
    try:
        return os.fstat(fd).st_mtime
    finally:
        os.close(fd)
        probe.unlink(missing_ok=True)


def _read(path: Path) -> tuple[bytes, float] | None:
    """A lease file's bytes and its heartbeat's age in seconds (by the file server's clock)."""
    try:
        raw = path.read_bytes()
        return raw, server_now(path.parent) - path.stat().st_mtime
    except OSError:
        return None


@dataclass
class Lease(contextlib.AbstractContextManager):
    """A held lease, its file touched every ``heartbeat`` seconds.

    :meth:`release` it (or use it as a context manager).
    """

    folder: Path
    info: dict[str, Any]
    took_over: dict[str, Any] | None = None
    heartbeat: float = LEASE_HEARTBEAT_S
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)

    def __post_init__(self) -> None:
        def beat() -> None:
            while not self._stop.wait(self.heartbeat):
                try:
                    os.utime(self.folder / LEASE)
                except OSError:
                    return

        threading.Thread(target=beat, name="ablate-lease-heartbeat", daemon=True).start()

    def release(self) -> None:
        """Stop the heartbeat and remove the lease file if it is still this lease."""
        self._stop.set()
        held = _read(self.folder / LEASE)
        if held is not None and self.info["token"].encode() in held[0]:
            (self.folder / LEASE).unlink(missing_ok=True)

    def __exit__(self, *exc: object) -> None:
        self.release()


def _take_over(folder: Path, raw: bytes, reason: str) -> dict[str, Any] | None:
    """Remove a stale lease if it is still exactly ``raw``; returns what was taken over."""
    mutex = folder / TAKEOVER
    if not _create(mutex, json.dumps(owner()).encode()):
        held = _read(mutex)
        if held is None or held[1] < TAKEOVER_STALE_S:
            return None  # someone else is taking it over right now
        mutex.unlink(missing_ok=True)  # a takeover killed half-way
        if not _create(mutex, json.dumps(owner()).encode()):
            return None
    try:
        now = _read(folder / LEASE)
        if now is None or now[0] != raw:
            return None
        (folder / LEASE).unlink()
    finally:
        mutex.unlink(missing_ok=True)
    try:
        previous = json.loads(raw)
    except ValueError:
        previous = {"raw": raw[:200].decode(errors="replace")}
    taken = {"previous": previous, "reason": reason}
    log.warning("took over the lease on %s: %s", folder, reason)
    append_event(folder, "takeover", **taken)
    return taken


def take_lease(folder: Path, stale_after: float = LEASE_STALE_S, heartbeat: float = LEASE_HEARTBEAT_S) -> Lease | None:
    """Take the lease on a run folder (created if needed), touched every ``heartbeat`` seconds while held.

    Returns None while another live process holds it (a lease without a heartbeat for
    ``stale_after`` seconds is stale). The lease's ``took_over`` says whose stale lease it replaced.
    """
    folder.mkdir(parents=True, exist_ok=True)
    taken = None
    for _ in range(3):
        info = owner()
        if _create(folder / LEASE, json.dumps(info, indent=1).encode()):
            append_event(folder, "lease", owner=info["owner"], token=info["token"])
            return Lease(folder, info, taken, heartbeat)
        held = _read(folder / LEASE)
        if held is None:
            continue  # released in between: try again
        if (reason := stale_reason(*held, stale_after)) is None:
            return None
        taken = _take_over(folder, held[0], reason) or taken
    return None


def clear_stale(folder: Path, stale_after: float = LEASE_STALE_S) -> dict[str, Any] | None:
    """Remove the lease on ``folder`` if it is stale, as a takeover; returns what was taken over, or None.

    A process killed between a run's record and its release leaves one.
    """
    held = _read(folder / LEASE)
    reason = stale_reason(*held, stale_after) if held is not None else None
    return _take_over(folder, held[0], reason) if held is not None and reason is not None else None


def holder(folder: Path, stale_after: float = LEASE_STALE_S) -> dict[str, Any] | None:
    """The lease currently on a run folder, parsed; None when there is none.

    It comes with its ``heartbeat_age_s`` and why it is ``stale`` (None: it holds).
    """
    held = _read(folder / LEASE)
    if held is None:
        return None
    try:
        info = json.loads(held[0])
    except ValueError:
        info = {"owner": "unreadable lease file"}
    return {**info, "heartbeat_age_s": held[1], "stale": stale_reason(*held, stale_after)}
