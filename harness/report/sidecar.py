"""A JSON file of one report's ablation and profile (its controls' file beside its data file,
``data/NAME.PROFILE.guards.json``; a studies' summary restored into a store), read back: validated
against its pydantic model and checked to be of that ablation and profile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from harness.errors import AblateError

M = TypeVar("M", bound=BaseModel)


def read_sidecar(
    path: Path, model: type[M], data_file: Path, what: str, ablation: str, profile: str, fix: str
) -> M | None:
    """``path`` validated as ``model`` (which has ``ablation`` and ``profile`` fields); None when
    there is no such file.

    Args:
        what: the file's name in messages (``studies' file``, ``controls' file``).
        fix: what to do when it is unreadable, appended to the message.

    Raises:
        AblateError: a file that is not JSON of this model, or of another ablation or profile.
    """
    if not path.is_file():
        return None
    try:
        data = model.model_validate(json.loads(path.read_text()))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValidationError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise AblateError(f"{data_file}: its {what} {path} is unreadable ({first}); {fix}") from None
    found = (getattr(data, "ablation"), getattr(data, "profile"))  # noqa: B009 - fields of the model
    if found != (ablation, profile):
        raise AblateError(
            f"{data_file}: its {what} {path} is of {found[0]} / {found[1]}, not of {ablation} / {profile}; "
            "regenerate it with `ablate report NAME`"
        )
    return data
