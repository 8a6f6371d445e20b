"""Dotted ``key=value`` overrides (the command line's, a profile's, a task's): parsed as YAML
values and set on a nested config mapping, every key checked against :class:`RunConfig`'s."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from harness.config import check_path
from harness.errors import AblateError


def parse_override(text: str) -> tuple[str, Any]:
    """One ``key=value`` argument, its value read as YAML (``128`` -> int); AblateError without a key."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise AblateError(f"override {text!r} is not of the form key=value (e.g. model.d_model=128)")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return key.strip(), value


def parse_overrides(overrides: Iterable[str]) -> dict[str, Any]:
    """:func:`parse_override` of each ``key=value``, as one mapping; AblateError for a key given twice."""
    out: dict[str, Any] = {}
    for text in overrides:
        key, value = parse_override(text)
        if key in out:
            raise AblateError(f"override {key!r} is given twice ({out[key]!r} and {value!r}); give it once")
        out[key] = value
    return out


def apply_overrides(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of nested dict ``base`` with dotted ``overrides`` set (keys checked)."""
    out = copy.deepcopy(dict(base))
    for path, value in overrides.items():
        check_path(path)
        node = out
        *parents, leaf = path.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out
