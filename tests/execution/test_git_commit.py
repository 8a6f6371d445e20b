"""The commit a record names: uncommitted edits give ``SHA+dirty.HASH``, one hash per diff."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from harness.execution.attempt import git_commit


def _git(repo: Path, *args: str) -> str:
    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args]
    return subprocess.run(cmd, cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def test_uncommitted_edits_are_named_by_the_hash_of_their_diff(tmp_path: Path) -> None:
    repo = tmp_path / "src"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "model.py").write_text("scale = 1.0\n")
    _git(repo, "add", "model.py")
    _git(repo, "commit", "-qm", "first")
    sha = _git(repo, "rev-parse", "HEAD")
    assert git_commit(repo) == sha
    (repo / "notes.txt").write_text("untracked\n")  # not the code a run imports: still clean
    assert git_commit(repo) == sha
    (repo / "model.py").write_text("scale = 2.0\n")
    first = git_commit(repo)
    diff = subprocess.run(["git", "diff", "HEAD", "--binary"], cwd=repo, capture_output=True, check=True).stdout
    assert first == f"{sha}+dirty.{hashlib.sha256(diff).hexdigest()[:8]}"
    (repo / "model.py").write_text("scale = 3.0\n")
    assert git_commit(repo) not in (first, sha) and git_commit(repo).startswith(f"{sha}+dirty.")
    (repo / "model.py").write_text("scale = 2.0\n")
    assert git_commit(repo) == first  # the same edit, the same name
    _git(repo, "add", "model.py")  # staged counts as uncommitted
    assert git_commit(repo) == first


def test_a_folder_outside_git_has_no_commit(tmp_path: Path) -> None:
    assert git_commit(tmp_path) is None
