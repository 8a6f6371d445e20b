"""Where the W&B credentials of this process come from.

They are found as W&B finds them (``wandb.sdk.lib.wbauth``) without importing it.
"""

from __future__ import annotations

import netrc
import os
from pathlib import Path
from urllib.parse import urlsplit

DEFAULT_BASE_URL = "https://api.wandb.ai"  # the host when WANDB_BASE_URL is not set


def netrc_path() -> Path:
    """The ``.netrc`` file W&B reads: ``$NETRC``, else ``~/.netrc``, else ``~/_netrc`` if only it exists."""
    if env := os.environ.get("NETRC"):
        return Path(env).expanduser()
    unix = Path("~/.netrc").expanduser()
    windows = Path("~/_netrc").expanduser()
    return windows if not unix.exists() and windows.exists() else unix


def wandb_credentials() -> str | None:
    """Where W&B would find an API key: ``"WANDB_API_KEY"``, ``"<netrc path> (<host>)"`` or None.

    Never the key; a ``.netrc`` that cannot be read counts as none, as in W&B.
    """
    if os.environ.get("WANDB_API_KEY"):
        return "WANDB_API_KEY"
    host = urlsplit(os.environ.get("WANDB_BASE_URL") or DEFAULT_BASE_URL).netloc
    path = netrc_path()
    if not host or not path.is_file():
        return None
    try:
        entry = netrc.netrc(path).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        return None
    return f"{path} ({host})" if entry is not None and entry[2] else None


def has_wandb_credentials() -> bool:
    """Whether W&B would find an API key (:func:`wandb_credentials` is not None)."""
    return wandb_credentials() is not None
