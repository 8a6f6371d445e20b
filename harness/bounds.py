"""The upper bound of every integer a user sets in a config, a task's parameters or a seed list: 2**31 - 1.

It is far above any size that fits in memory, small enough that the product of two fits torch's 64-bit index.
"""

from __future__ import annotations

from typing import Any

import annotated_types
from pydantic import BaseModel, ValidationInfo, field_validator

INT_MAX = 2**31 - 1  # the largest int32


class IntBounded(BaseModel):
    """Base of the config sections and task parameters: every integer in a field (or its list) is bounded.

    It lies within [-2**31, :data:`INT_MAX`], else a ``ValueError`` naming the range (low: the field's ge/gt).
    """

    @field_validator("*", mode="after")
    @classmethod
    def _int_in_range(cls, value: Any, info: ValidationInfo) -> Any:
        items = value if isinstance(value, list) else [value]
        ints = [v for v in items if isinstance(v, int) and not isinstance(v, bool)]
        if all(-INT_MAX - 1 <= v <= INT_MAX for v in ints):
            return value
        bounds = (
            int(m.ge) if isinstance(m, annotated_types.Ge) else int(m.gt) + 1
            for m in cls.model_fields[info.field_name].metadata
            if isinstance(m, (annotated_types.Ge, annotated_types.Gt))
        )
        low = next(bounds, None)  # the smallest integer the field's Field(ge=..., gt=...) allows
        each = "each item " if isinstance(value, list) else ""
        if low is None and isinstance(value, list):
            raise ValueError(f"out of range: {each}must be an integer of at most {INT_MAX} (2**31 - 1)")
        low = -INT_MAX - 1 if low is None else low
        raise ValueError(f"out of range: {each}must be an integer from {low} to {INT_MAX} (2**31 - 1)")
