"""Numbers in machine-readable outputs: one encoding for every JSON and CSV file the harness writes.

Strict JSON has no NaN or Infinity: an undefined value (NaN, ``None``, ``pandas.NA``) is JSON ``null`` and an empty
CSV cell; an infinite one the string ``"Infinity"`` / ``"-Infinity"`` (as W&B writes it; ``float()``,
``pandas.read_csv`` and JavaScript's ``Number()`` read it back). :func:`text`: for people.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

INF, NEG_INF = "Infinity", "-Infinity"


def json_safe(value: Any) -> Any:
    """``value`` with every float made strict-JSON-able and numpy values made Python ones.

    Dicts, lists and tuples (made lists) are converted recursively; other objects stay as they are.
    """
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
    """``json.dumps`` of :func:`json_safe` ``(payload)``, strict (``allow_nan=False``)."""
    return json.dumps(json_safe(payload), allow_nan=False, **kwargs)


def number(value: Any) -> float:
    """A value written by this module (or a plain JSON number) as a float (None -> NaN).

    Raises:
        ValueError: for any other string.
        TypeError: for a value that is not a number, None or one of those strings.
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
    """``frame.to_csv(index=False)`` with this module's encoding (pandas alone writes ``inf``)."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype.kind in "fO" and any(isinstance(x, float) and math.isinf(x) for x in out[col]):
            out[col] = [(INF if x > 0 else NEG_INF) if isinstance(x, float) and math.isinf(x) else x for x in out[col]]
    return out.to_csv(index=False)


UNDEFINED = "–"


def text(value: Any, spec: str = ".4g") -> str:
    """A number for people: ``format(value, spec)``, but ``–`` where undefined and ``∞`` / ``-∞`` where infinite.

    ``+∞`` with a ``+`` spec. Say why a value is undefined next to it.
    """
    x = math.nan if value is None or type(value).__name__ == "NAType" else float(value)
    if math.isnan(x):
        return UNDEFINED
    if math.isinf(x):
        return ("+∞" if "+" in spec else "∞") if x > 0 else "-∞"
    return format(x, spec)


def count(n: int, noun: str) -> str:
    """``n`` and ``noun``, the noun with an ``s`` unless ``n`` is 1: ``count(3, "run")`` is ``"3 runs"``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def short_question(question: str, limit: int = 100) -> str:
    """The question's first sentence, cut at a word before ``limit`` characters."""
    # a sentence ends at ? ! or . followed by a space, but not after an abbreviation ("et al.", "e.g.")
    first = re.split(r"(?<!\bal\.)(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[?.!])\s", " ".join(question.split()), maxsplit=1)[0]
    return first if len(first) <= limit else first[:limit].rsplit(" ", 1)[0] + " …"
