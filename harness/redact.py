"""Secrets never reach the store, a report or a log line.

What the harness writes itself (records, tracebacks, console lines) holds no environment and
no credentials by construction; text that comes from elsewhere (an exception message, a
traceback, a storage URL) passes through :func:`redact` first. It removes the password of any
``scheme://user:password@host`` URL and the value of every environment variable whose name
looks like a credential (``WANDB_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``, ...).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

_SECRET_NAME = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSW(OR)?D|CREDENTIAL|PRIVATE_KEY)", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-z][a-z0-9+.\-]*://[^:/@\s]+):(?P<password>[^@/\s]+)@", re.IGNORECASE)
MASK = "***"


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values (6 characters or more) of environment variables named like credentials, longest first."""
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if _SECRET_NAME.search(k) and len(v) >= 6}
    return sorted(values, key=len, reverse=True)


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with URL passwords and credential values replaced by ``***``.

    Example:
        >>> redact("postgresql://bob:hunter22@db/optuna", environ={})
        'postgresql://bob:***@db/optuna'
    """
    text = _URL_PASSWORD.sub(lambda m: f"{m.group('head')}:{MASK}@", text)
    for value in secret_values(environ):
        text = text.replace(value, MASK)
    return text


def mask_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (also for URLs SQLAlchemy cannot parse)."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - unparsable: mask by pattern
        return re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", url)
