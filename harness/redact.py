"""Secrets never reach the store, a report or a log line.

Text that comes from elsewhere (an exception message, a traceback, a storage URL) passes through :func:`redact` first.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

_SECRET_NAME = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSW(OR)?D|CREDENTIAL|PRIVATE_KEY)", re.IGNORECASE)
# the password of a URL inside free text: a scheme, a user, neither crossing a blank (mask_url, given one whole URL,
# masks what follows any "://user:" up to its "@")
_URL_PASSWORD = re.compile(r"(?P<head>\b[a-z][a-z0-9+.\-]*://[^:/@\s]+):(?P<password>[^@/\s]+)@", re.IGNORECASE)
MASK = "***"  # what every secret is replaced by


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with every password and credential value in it replaced by ``***``.

    Those are the password of any ``scheme://user:password@host`` URL and the value (6 chars or more) of every
    environment variable named like a credential (``*_TOKEN``, ...).
    """
    text = _URL_PASSWORD.sub(lambda m: f"{m.group('head')}:{MASK}@", text)
    env = os.environ if environ is None else environ
    for value in sorted({v for k, v in env.items() if _SECRET_NAME.search(k) and len(v) >= 6}, key=len, reverse=True):
        text = text.replace(value, MASK)  # the longest first
    return text


def mask_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (also for URLs SQLAlchemy cannot parse)."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - unparsable: mask by pattern
        return re.sub(r"(://[^:/@]*:)[^@/]*@", lambda m: f"{m.group(1)}{MASK}@", url)
