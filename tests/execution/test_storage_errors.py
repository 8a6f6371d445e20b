"""A storage error (a full disk, a quota, the file-size limit, a permission) is not the run's fault:
the run is ``crashed`` (not stored), its checkpoint kept, and the next ``ablate run`` resumes it."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from lightning.fabric.plugins.io import torch_io

from harness.errors import TRAINED, RunFailed
from harness.execution.attempt import Unstored, execute
from harness.experiment.ablation import load
from harness.experiment.grid import plan
from harness.run_options import RunOptions
from helpers.tiny_grid import write_tiny


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EACCES])
def test_a_storage_error_is_found_through_the_wrappers(code: int) -> None:
    from harness.errors import storage_error

    try:
        try:
            raise OSError(code, "storage")
        except OSError as exc:
            raise RuntimeError("lightning re-raised it") from exc
    except RuntimeError as wrapped:
        assert storage_error(RunFailed(wrapped)).errno == code
    assert storage_error(OSError(errno.ENOENT, "no such file")) is None and storage_error(ValueError()) is None


def test_a_checkpoint_write_hitting_the_file_size_limit_crashes_the_run_and_it_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    abl = load(str(write_tiny(tmp_path, steps=12, val_every=4, seeds=(0,))))
    spec = plan(abl, "cpu")[1][0]
    saves, real = [], torch_io._atomic_save

    def save(checkpoint, path):
        saves.append(path)
        if len(saves) > 1:  # the first checkpoint written, the second over the limit
            raise OSError(errno.EFBIG, "File too large", str(path))
        real(checkpoint, path)

    monkeypatch.setattr(torch_io, "_atomic_save", save)
    options = RunOptions(checkpoint_every=0)
    first = execute(spec, tmp_path / "results", abl=abl, options=options)
    folder = tmp_path / "results" / "tiny" / "cpu" / spec.run_id
    assert isinstance(first, Unstored) and first.status == "crashed", first
    assert "storage error: File too large" in first.reason
    assert not (folder / "record.json").exists() and (folder / "checkpoints" / "last.ckpt").is_file()
    monkeypatch.undo()
    again = execute(spec, tmp_path / "results", abl=abl, options=options)
    assert again.status in TRAINED and again.resumed_from_step == 4, again  # a tiny run may stall
