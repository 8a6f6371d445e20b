"""A store shared by a group: files the store writes get the mode the umask asks for (not
``mkstemp``'s 0600), and a record this user may not read is told from a damaged one: never moved
aside, never trained again."""

from __future__ import annotations

import errno
import json
import os
import pathlib
from pathlib import Path

import pytest

from harness.execution.attempt import Unstored, execute
from harness.experiment.ablation import load
from harness.experiment.grid import plan
from harness.files import write_atomic
from harness.store.runs import RECORD, scan, write_json_atomic
from helpers.fake_store import write_decl, write_runs


@pytest.mark.parametrize("mask", [0o002, 0o022, 0o077])
def test_files_written_atomically_honour_the_umask(tmp_path: Path, mask: int) -> None:
    old = os.umask(mask)
    try:
        write_atomic(tmp_path / "a" / "data.bin", b"x")
        write_json_atomic(tmp_path / "a" / RECORD, {"k": 1})
    finally:
        os.umask(old)
    for name in ("data.bin", RECORD):
        assert (tmp_path / "a" / name).stat().st_mode & 0o777 == 0o666 & ~mask, name
    assert (tmp_path / "a").stat().st_mode & 0o777 == 0o777 & ~mask


def _deny(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """Reading ``path`` raises PermissionError, as another user's 0600 file does (tests may run as root)."""
    real = pathlib.Path.read_text

    def read_text(self, *args, **kwargs):
        if self == path:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "read_text", read_text)


def test_a_record_this_user_cannot_read_is_neither_moved_nor_trained_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decl = write_decl(tmp_path / "decl", cpu={"seeds": [0]})
    results = tmp_path / "results"
    write_runs(results, decl, "cpu", lambda variant, seed: 0.5)
    abl = load(str(decl))
    spec = plan(abl, "cpu", check_data=False)[1][0]
    folder = results / "mini" / "cpu" / spec.run_id
    before = (folder / RECORD).read_bytes()
    _deny(monkeypatch, folder / RECORD)
    found = scan(results, "mini", "cpu")
    assert [p for p in found.problems if "cannot be read (Permission denied)" in p and "chmod -R g+rX" in p]
    got = execute(spec, results, abl=abl)
    assert isinstance(got, Unstored) and got.status == "crashed" and "cannot be read" in got.reason, got
    monkeypatch.undo()
    assert (folder / RECORD).read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == [RECORD], "moved aside or trained again"
    assert json.loads(before)["status"] == "ok"
