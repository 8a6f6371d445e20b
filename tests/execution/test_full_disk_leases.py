"""A full disk (here: the file-size limit, ``EFBIG``, as a quota gives) at lease time leaves no
lease file nor temporary file behind: another host would wait the lease timeout on an empty
``lease.lock``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.execution.locks import take_lease

LEASE_AT_FULL_DISK = """
import os, resource, signal, sys
from pathlib import Path
from harness.execution import locks
if sys.argv[2] == "no-links":  # a file system without hard links: the exclusive-create fallback
    def no_link(src, dst):
        raise OSError(1, "Operation not permitted")
    os.link = no_link
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))  # not one byte more
try:
    locks.take_lease(Path(sys.argv[1]))
except OSError as exc:
    print(exc.strerror)
"""


@pytest.mark.parametrize("links", ["links", "no-links"])
def test_a_full_disk_at_lease_time_leaves_no_lease_files(tmp_path: Path, links: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    out = subprocess.run([sys.executable, "-c", LEASE_AT_FULL_DISK, str(run), links], capture_output=True, text=True)
    assert out.returncode == 0 and "File too large" in out.stdout, out.stdout + out.stderr
    assert sorted(p.name for p in run.iterdir()) == []
    lease = take_lease(run, stale_after=600)  # the disk freed: leased at once, not after the lease timeout
    assert lease is not None
    lease.release()
