"""Reading a user's YAML files (ablation declarations; the claims and reproductions registries):
PyYAML's safe loader with a key given twice refused, and every failure to read one line that
names the file, the place and the fix (:class:`~harness.errors.AblateError`)."""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml

from harness.errors import AblateError


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses a key given twice in one mapping (PyYAML keeps the last one)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if isinstance(key, Hashable) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is given twice in one mapping; keep one", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` that refuses duplicate keys (:class:`UniqueKeyLoader`)."""
    return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506  a SafeLoader subclass


def read_yaml(path: Path, what: str) -> Any:
    """The parsed YAML of the file ``path`` (``what``: ``ablation file``, for errors); AblateError when
    it cannot be read, is not UTF-8 text or not valid YAML (with the line and column)."""
    try:
        return load_yaml(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AblateError(f"cannot read {what} {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise AblateError(f"{what} {path} is not UTF-8 text (byte {exc.start}); save it as UTF-8 YAML") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).replace("\n", " ")
        raise AblateError(f"{what} {path} is not valid YAML{where}: {problem}") from None
