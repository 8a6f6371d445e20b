"""Two ``ablate tune`` workers on one study in a real PostgreSQL server, none of the trials lost.

The fixture starts a throwaway server from Debian's postgresql binaries (initdb + pg_ctl, trust
auth on 127.0.0.1, a free port, a temporary folder) and removes it afterwards; without the
binaries the test is skipped with the reason. `.ci/run` installs the package where it is missing.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.tune import check_none_lost, run_workers, write_tiny


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(os.path.realpath(initdb)).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A throwaway PostgreSQL server; as root it runs as the ``postgres`` user (PostgreSQL refuses
    to run as root). The URL carries a password, which trust auth ignores, to check masking."""
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip(
            "PostgreSQL server binaries not found (/usr/lib/postgresql/*/bin/initdb); "
            "apt-get install postgresql to run this test"
        )
    pytest.importorskip("psycopg2", reason="psycopg2-binary is not installed (pip install -e '.[test]')")
    as_user: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="ablate-pg-"))
    if os.geteuid() == 0:
        if shutil.which("runuser") is None or subprocess.run(["id", "postgres"], capture_output=True).returncode:
            pytest.skip("running as root without a `postgres` user to run the server as")
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(root, "postgres")
    data, port = root / "data", _free_port()
    subprocess.run(
        [*as_user, str(bindir / "initdb"), "-D", str(data), "-U", "ablate", "--auth=trust", "-E", "UTF8", "--no-sync"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    opts = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50"
    subprocess.run(
        [*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "log"), "-w", "start"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    try:
        yield f"postgresql+psycopg2://ablate:t0psecret@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.postgres
def test_two_workers_on_one_postgres_study(tmp_path: Path, postgres_url: str) -> None:
    path = write_tiny(tmp_path)
    logs = run_workers(
        2,
        [
            "tune",
            str(path),
            "--variant",
            "position=rope",
            "--trials",
            "6",
            "--storage",
            postgres_url,
            "--results-dir",
            str(tmp_path / "results"),
        ],
        tmp_path,
    )
    check_none_lost(postgres_url, logs, 6, 2)
    assert "t0psecret" not in "".join(logs) and "ablate:***@127.0.0.1" in logs[0]
    assert not (tmp_path / "results").exists()  # nothing local: the study lives in PostgreSQL
