"""A report's data file is untrusted input: one of a newer format, a bomb, a member that is not what
its place says, a history of text; each refused (or reported) before anything is written."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import tarfile
from pathlib import Path

from harness.store.archive import FORMAT
from helpers.cli import assert_refused, invoke
from helpers.fake_store import bare_record

HISTORY = b"step,loss,acc\n10,2.5,0.1\n20,2.0,0.2\n"


def members(**changes: bytes | None) -> dict[str, bytes]:
    """The members of a data file of one ok run (``a/p/r1``) with its history; ``changes`` by
    member name (``None`` drops one)."""
    manifest = {"format": FORMAT, "ablation": "a", "profile": "p", "store": "results", "problems": []}
    record = bare_record(status="ok", metrics={"acc@x1": 0.5})
    out = {
        "manifest.json": json.dumps(manifest).encode(),
        "a/p/r1/record.json": json.dumps(record).encode(),
        "a/p/r1/history.csv": HISTORY,
    }
    for name, data in changes.items():
        if data is None:
            out.pop(name, None)
        else:
            out[name] = data
    return out


def pack(path: Path, files: dict[str, bytes]) -> Path:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(gzip.compress(buf.getvalue()))
    return path


def test_a_data_file_of_a_newer_format_says_upgrade(tmp_path: Path) -> None:
    manifest = json.loads(members()["manifest.json"]) | {"format": "ablate-runs/2"}
    path = pack(tmp_path / "a.p.tar.gz", members(**{"manifest.json": json.dumps(manifest).encode()}))
    err = assert_refused(invoke("restore", str(path), "--results-dir", str(tmp_path / "s")))
    assert "written by a newer ablate (format 2; this one reads 1): upgrade ablate" in err, err
    assert "not a report's data file" not in err and "git checkout" not in err
    assert not (tmp_path / "s").exists()


def test_the_git_checkout_hint_only_for_a_file_git_tracks(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    damaged = members(**{"manifest.json": None})
    tracked, loose = pack(repo / "a.p.tar.gz", damaged), pack(repo / "b.p.tar.gz", damaged)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", tracked.name], check=True)
    subprocess.run([*git, "commit", "-qm", "data"], check=True)
    store = str(tmp_path / "s")
    assert f"`git checkout -- {tracked}`" in assert_refused(invoke("restore", str(tracked), "--results-dir", store))
    assert "git checkout" not in assert_refused(invoke("restore", str(loose), "--results-dir", store))
