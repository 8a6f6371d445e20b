"""Every file the product writes for a user is written atomically and in UTF-8, whatever the locale;
the console does not crash on a character its encoding lacks (a C or Latin-1 locale)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cli import invoke
from helpers.fake_store import write_decl, write_runs

ROOT = Path(__file__).resolve().parents[2]


def _ablate(*args: str, env: dict[str, str], limit: int | None = None) -> subprocess.CompletedProcess:
    """``ablate ARGS`` in a fresh interpreter; ``limit``: the file-size limit in bytes (a full quota)."""
    pre = ""
    if limit is not None:
        pre = (
            "import resource, signal; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
            f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, resource.RLIM_INFINITY)); "
        )
    code = pre + "import sys; from harness.cli.app import app; sys.argv[0] = 'ablate'; app()"
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, timeout=600)


def _c_locale() -> dict[str, str]:
    """A locale whose encoding is not UTF-8 (ASCII: stricter than Latin-1), no PYTHONIOENCODING."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONIOENCODING", "PYTHONUTF8"))}
    return env | {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0", "PYTHONPATH": str(ROOT)}


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Path]:
    decl = write_decl(tmp_path / "decl", cpu={"seeds": [0, 1, 2, 3]})
    results = tmp_path / "results"
    write_runs(results, decl, "cpu", lambda variant, seed: 0.5 + 0.01 * seed + 0.05 * (variant == "rope"))
    return decl, results


def test_a_non_utf8_locale_crashes_no_command_and_files_are_utf8(store: tuple[Path, Path], tmp_path: Path) -> None:
    decl, results = store
    env = _c_locale()
    for args in (["show", "mask_fill_fp16"], ["list"], ["compare", str(decl), "--results-dir", str(results)]):
        out = _ablate(*args, env=env)
        assert out.returncode == 0, (args, out.stderr.decode(errors="replace")[-2000:])
        assert b"UnicodeEncodeError" not in out.stderr
    reports = tmp_path / "reports"
    out = _ablate("report", str(decl), "--results-dir", str(results), "--out", str(reports), env=env)
    assert out.returncode == 0, out.stderr.decode(errors="replace")[-2000:]
    text = (reports / "mini.md").read_bytes().decode("utf-8")  # UTF-8, not the locale's ASCII
    assert any(ord(c) > 127 for c in text)


def test_a_report_onto_a_full_quota_leaves_the_previous_one_whole(store: tuple[Path, Path], tmp_path: Path) -> None:
    decl, results = store
    reports = tmp_path / "reports"
    args = ("report", str(decl), "--results-dir", str(results), "--out", str(reports), "--wandb", "off")
    assert invoke(*args).exit_code == 0
    before = {p: p.read_bytes() for p in reports.rglob("*") if p.is_file()}
    assert [p for p in before if p.suffix == ".png"] and max(len(b) for b in before.values()) > 4096
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = _ablate(*args, env=env, limit=4096)  # a file over 4 kB cannot be written: the figures fail
    assert out.returncode != 0 and b"Traceback" not in out.stderr, out.stderr.decode()[-2000:]
    after = {p: p.read_bytes() for p in reports.rglob("*") if p.is_file()}
    assert after == before  # every figure, the report and its data file whole, no temporary file left
