"""The floating-point dtypes the harness names, as the names of their ``torch`` attributes (no torch imported here).

Two tables: the short names the contracts and ``ablate bench attention --dtype`` take (:data:`DTYPE_NAMES`), and the
compute dtype of each ``train.precision`` (:data:`PRECISION_DTYPES`, whose keys are the precisions a config accepts).
"""

from __future__ import annotations

DTYPE_NAMES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
"""Short name -> the ``torch`` attribute it names (``torch.bfloat16``), in the order the contracts and the bench list
them."""

PRECISION_DTYPES = {"32-true": "float32", "bf16-mixed": "bfloat16", "16-mixed": "float16", "16-true": "float16"}
"""Each ``train.precision`` (Lightning's name) -> the ``torch`` attribute of the dtype of q, k, v, the scores and the
matrix products under it (``16-mixed`` is float16 on every device: :mod:`harness.training.precision`)."""
