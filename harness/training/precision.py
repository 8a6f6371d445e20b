"""What each ``train.precision`` means on each device, and which precision actually ran.

Lightning turns ``16-mixed`` on CPU into bfloat16 with a warning only (docs/benchmarks.md, pilot
measurements). Here ``16-mixed`` is float16 autocast on every device: on CPU Lightning is handed
a ``MixedPrecision`` plugin of float16 autocast and a CPU ``GradScaler``. The precision a run
records is *observed* (the dtypes of the logits and the weights in the first training step), and
a mismatch with the requested one fails the run (:func:`check_ran`). Torch only; Lightning is
imported inside :func:`trainer_kwargs`.
"""

from __future__ import annotations

from typing import Any

import torch

from harness.dtypes import PRECISION_DTYPES

_DTYPES = {precision: getattr(torch, name) for precision, name in PRECISION_DTYPES.items()}
# a compute dtype -> the prefix of its precisions' names ("bf16" of bf16-mixed), float64 besides
_PREFIX = {dtype: precision.split("-")[0] for precision, dtype in _DTYPES.items()} | {torch.float64: "64"}


def run_device() -> str:
    """The accelerator Lightning's ``accelerator="auto"`` picks here (cuda or cpu)."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def compute_dtype(precision: str) -> torch.dtype:
    """The dtype of q, k, v, the scores and the matrix products under ``precision``."""
    return _DTYPES[precision]


def adam_eps(precision: str) -> float:
    """AdamW's eps: torch's 1e-8, or 1e-4 under ``16-true``.

    1e-8 rounds to 0 in float16 and training turns NaN at step 2 (docs/benchmarks.md, pilot
    measurements).
    """
    return 1e-4 if precision == "16-true" else 1e-8


def trainer_kwargs(precision: str, device: str | None = None) -> dict[str, Any]:
    """``L.Trainer`` keyword arguments that run ``precision`` for real on ``device`` (default: here)."""
    if precision == "16-mixed" and (device or run_device()) == "cpu":
        from lightning.pytorch.plugins import MixedPrecision

        return {"plugins": [MixedPrecision("16-mixed", "cpu", scaler=torch.amp.GradScaler("cpu"))]}
    return {"precision": precision}


def observed(logits: torch.Tensor, weight: torch.Tensor) -> str:
    """The precision that ran, from a forward's logits and one weight of the model.

    ``<compute>-true`` when the weights are in the compute dtype, else ``<compute>-mixed``.
    """
    compute = _PREFIX.get(logits.dtype, str(logits.dtype))
    return f"{compute}-{'true' if weight.dtype == logits.dtype else 'mixed'}"


def check_ran(requested: str, ran: str) -> None:
    """Raise ``RuntimeError`` when the precision that ran is not the one requested."""
    if ran != requested:
        raise RuntimeError(
            f"train.precision={requested} was requested but {ran} ran; refusing to record it as {requested}"
        )
