"""The upper bound of every integer a user sets in a config, a task's parameters or a seed list.

Python integers are unbounded, torch's are not: ``train.steps=99999999999999999999`` passed
pydantic and then failed every run in the DataLoader (``OverflowError: cannot fit 'int' into an
index-sized integer``). Every integer key is therefore at most :data:`INT_MAX` = 2**31 - 1, the
largest 32-bit signed integer: far above any step count, width or length that fits in memory,
and small enough that the products the code forms from two of them (``steps x batch_size``,
``multiplier x seq_len``) stay inside torch's 64-bit index. Checked by pydantic validators, so the
error names the key and comes before any run starts.
"""

from __future__ import annotations

from typing import Any

import annotated_types

INT_MAX = 2**31 - 1
"""The largest value of any integer key (the largest int32)."""


def lower_bound(metadata: list[Any]) -> int | None:
    """The smallest integer a field's ``Field(gt=..., ge=...)`` constraints allow, None if unbounded."""
    for m in metadata:
        if isinstance(m, annotated_types.Ge):
            return int(m.ge)
        if isinstance(m, annotated_types.Gt):
            return int(m.gt) + 1
    return None


def check_int_range(value: Any, metadata: list[Any]) -> Any:
    """``value`` unchanged if every integer in it (itself, or the items of a list) lies within
    [-2**31, :data:`INT_MAX`]; booleans are not integers here.

    Raises:
        ValueError: naming the valid range (its lower bound read from ``metadata``, the field's
            pydantic constraints, where it has one); pydantic adds the key and the value.
    """
    items = value if isinstance(value, list) else [value]
    ints = [v for v in items if isinstance(v, int) and not isinstance(v, bool)]
    if all(-INT_MAX - 1 <= v <= INT_MAX for v in ints):
        return value
    low = lower_bound(metadata)
    each = "each item " if isinstance(value, list) else ""
    if low is None and isinstance(value, list):
        raise ValueError(f"out of range: {each}must be an integer of at most {INT_MAX} (2**31 - 1)")
    low = -INT_MAX - 1 if low is None else low
    raise ValueError(f"out of range: {each}must be an integer from {low} to {INT_MAX} (2**31 - 1)")
