"""harness/credentials.py: W&B credentials found where W&B itself finds them (its own reader,
``wandb.sdk.lib.wbauth``, is the reference), whatever variable or file holds them."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.credentials import has_wandb_credentials, netrc_path, wandb_credentials

KEY = "0123456789abcdef0123456789abcdef01234567"  # 40 characters, a key W&B's format check accepts


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty home: no key, no .netrc, W&B's default host."""
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("WANDB_API_KEY", "NETRC", "WANDB_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _wandb_finds_a_key() -> bool:
    """The reference: W&B's own lookup (the variable, then its netrc reader for the base URL)."""
    import os

    from wandb.sdk.lib.wbauth.wbnetrc import read_netrc_auth

    base = os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai"
    return bool(os.environ.get("WANDB_API_KEY")) or read_netrc_auth(host=base) is not None


CASES = {
    "nothing": ({}, None, False),
    "the key in the environment": ({"WANDB_API_KEY": KEY}, None, True),
    "wandb login's entry": ({}, f"machine api.wandb.ai\n  login user\n  password {KEY}\n", True),
    "an entry for another host": ({}, f"machine example.org\n  login user\n  password {KEY}\n", False),
    "an entry without a password": ({}, "machine api.wandb.ai\n  login user\n", False),
    "a file that does not parse": ({}, "machine api.wandb.ai login user password\n", False),
    "a local server, its port included": (
        {"WANDB_BASE_URL": "http://localhost:8080"},
        f"machine localhost:8080\n  login user\n  password {KEY}\n",
        True,
    ),
    "a local server, the entry without its port": (
        {"WANDB_BASE_URL": "http://localhost:8080"},
        f"machine localhost\n  login user\n  password {KEY}\n",
        False,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_found_exactly_where_wandb_finds_them(home: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    env, text, expected = CASES[case]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if text is not None:
        (home / ".netrc").write_text(text)
    assert has_wandb_credentials() == _wandb_finds_a_key() == expected, case


def test_netrc_variable_first_then_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert netrc_path() == home / ".netrc" and wandb_credentials() is None
    (home / "_netrc").write_text(f"machine api.wandb.ai\n  password {KEY}\n")
    assert netrc_path() == home / "_netrc"  # only when ~/.netrc does not exist, as W&B
    assert wandb_credentials() == f"{home / '_netrc'} (api.wandb.ai)"
    (home / ".netrc").write_text("machine example.org\n  password x\n")
    assert netrc_path() == home / ".netrc" and wandb_credentials() is None
    other = home / "elsewhere" / "netrc"
    other.parent.mkdir()
    other.write_text(f"machine api.wandb.ai\n  password {KEY}\n")
    monkeypatch.setenv("NETRC", str(other))
    assert wandb_credentials() == f"{other} (api.wandb.ai)" and _wandb_finds_a_key()
    monkeypatch.setenv("WANDB_API_KEY", KEY)
    assert wandb_credentials() == "WANDB_API_KEY"  # the variable first, and the key never returned


def test_an_unreadable_netrc_counts_as_none(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (home / ".netrc").mkdir()  # a folder where the file should be: W&B warns and goes on
    assert wandb_credentials() is None and not _wandb_finds_a_key()
