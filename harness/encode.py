"""Numbers in machine-readable outputs: one encoding for every JSON and CSV file the harness writes.

Strict JSON (RFC 8259) has no NaN or Infinity; Python's ``json`` writes them as bare ``NaN`` and
``Infinity`` by default, which strict parsers and dashboards reject, and pandas' ``to_json``
writes both as ``null``, which loses an infinite statistic. The encoding here keeps the two apart:

- undefined (NaN, ``None``, ``pandas.NA``): JSON ``null``; an empty CSV cell;
- infinite: the strings ``"Infinity"`` and ``"-Infinity"`` in JSON and in CSV. These are the
  strings W&B itself writes for an infinite summary value, and ``float()``, ``pandas.read_csv``
  and JavaScript's ``Number()`` all read them back as +/-inf.

Writers: ``ablate compare/plan --format json|csv`` (:func:`dumps`, :func:`to_csv`), the W&B
summary tables (:func:`json_safe` per cell), ``record.json`` and the bench files
(:func:`harness.store.runs.write_json_atomic`), the run's ``events.jsonl``. Readers turn a value back
into a float with :func:`number`. Numbers for people go through :func:`text` (``–`` for an
undefined value, ``∞`` for an infinite one).
"""

from __future__ import annotations

import json
import math
from typing import Any

INF, NEG_INF = "Infinity", "-Infinity"


def json_safe(value: Any) -> Any:
    """``value`` with every float made strict-JSON-able: NaN / None / ``pandas.NA`` -> None,
    +/-inf -> ``"Infinity"`` / ``"-Infinity"``; numpy scalars and arrays become Python values;
    dicts, lists and tuples are converted recursively (tuples become lists). Other objects are
    returned as they are."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if value is None or type(value).__name__ in ("NAType", "NaTType"):  # pandas.NA, pandas.NaT
        return None
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):  # numpy scalar or array
        return json_safe(value.tolist())
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return INF if value > 0 else NEG_INF
    return value


def dumps(payload: Any, **kwargs: Any) -> str:
    """``json.dumps`` of :func:`json_safe` ``(payload)`` with ``allow_nan=False``: the text
    always parses with a strict parser. ``kwargs`` go to ``json.dumps`` (``indent``, ``default``...)."""
    return json.dumps(json_safe(payload), allow_nan=False, **kwargs)


def number(value: Any) -> float:
    """A value written by this module (or a plain JSON number) as a float: None -> NaN,
    ``"Infinity"`` / ``"-Infinity"`` -> +/-inf.

    Raises:
        ValueError: any other string.
        TypeError: a value that is not a number, None or one of those strings.
    """
    if value is None:
        return math.nan
    if isinstance(value, str):
        if value in (INF, NEG_INF):
            return float(value)
        raise ValueError(f"not a number: {value!r}")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"not a number: {value!r}")
    return float(value)


def to_csv(frame: Any) -> str:
    """``frame.to_csv(index=False)`` with this module's encoding: undefined cells empty, infinite
    ones ``Infinity`` / ``-Infinity`` (pandas alone writes ``inf``)."""

    def cell(x: Any) -> Any:
        return (
            INF if isinstance(x, float) and x == math.inf else NEG_INF if isinstance(x, float) and x == -math.inf else x
        )

    out = frame.copy()
    for col in out.columns:
        if out[col].dtype.kind in "fO" and any(isinstance(x, float) and math.isinf(x) for x in out[col]):
            out[col] = [cell(x) for x in out[col]]
    return out.to_csv(index=False)


UNDEFINED = "–"


def text(value: Any, spec: str = ".4g") -> str:
    """A number for people (reports, terminal lines): ``format(value, spec)``, but ``–`` where it
    is undefined (None, NaN, ``pandas.NA``) and ``∞`` / ``-∞`` (``+∞`` with a ``+`` spec) where it
    is infinite, never ``nan`` or ``inf``. Say why a value is undefined next to it (e.g. "one pair")."""
    if value is None or type(value).__name__ == "NAType":
        return UNDEFINED
    x = float(value)
    if math.isnan(x):
        return UNDEFINED
    if math.isinf(x):
        return ("+∞" if "+" in spec else "∞") if x > 0 else "-∞"
    return format(x, spec)


def count(n: int, noun: str) -> str:
    """``1 layer``, ``2 layers``, ``0 seeds``: a count and its noun, plural unless the count is 1."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
