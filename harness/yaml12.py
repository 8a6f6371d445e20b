"""The one reading of YAML in the harness: YAML 1.2 (ruamel.yaml's safe loader, pure Python).

It reads a file as editors and the shipped JSON Schema read it, so what the editor accepts ``ablate`` accepts:
``1e-4`` is a float, ``yes``/``no``/``on``/``off`` are strings, and a key given twice is refused (YAML 1.1 readers
read ``1e-4`` as a string and ``yes`` as true, and keep the last key).
"""

from __future__ import annotations

import re
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.constructor import DuplicateKeyError
from ruamel.yaml.error import MarkedYAMLError, YAMLError

__all__ = ["YAMLError", "load_yaml"]


def load_yaml(text: str) -> Any:
    """The plain data (dicts, lists, str, int, float, bool, None) of the YAML 1.2 ``text``.

    Raises:
        YAMLError: ``text`` is not valid YAML, holds a tag that would construct an object, or gives a
            key twice in one mapping (a ``MarkedYAMLError`` whose ``problem`` says which key).
    """
    try:
        return YAML(typ="safe", pure=True).load(text)
    except DuplicateKeyError as exc:
        key = m[1] if (m := re.search(r'found duplicate key "(.*?)" with value', str(exc.problem))) else "?"
        raise MarkedYAMLError(
            problem=f"key {key!r} is given twice in one mapping; keep one", problem_mark=exc.problem_mark
        ) from None
