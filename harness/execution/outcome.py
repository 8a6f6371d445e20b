"""How a training attempt that raised ended: one function decides it for a grid's runs
(:mod:`harness.execution.attempt`) and for a tuning trial (:mod:`harness.tune.objective`).

- ``diverged``: the training loss became NaN or inf (:class:`harness.training.loop.Diverged`);
  the step and the last finite loss are kept.
- ``timeout``: the run went over its ``--run-timeout`` (:class:`harness.training.callbacks.TimedOut`);
  the step and the limit are kept.
- ``failed``: any other exception; the reason is its type and message with secrets redacted
  (:mod:`harness.redact`).

A diverged or failed run keeps the probe metrics measured before it raised (an outcome too: the
float16 overflow of a -1e9 mask fill is seen by the probes at initialisation); a timed-out run has none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.redact import redact


@dataclass(frozen=True)
class Outcome:
    """How an attempt that raised ended, as its record holds it.

    Attributes:
        status: ``diverged``, ``timeout`` or ``failed``.
        reason: one line for people.
        details: the record fields of that status (``diverged_step``, ``last_finite_loss``;
            ``timeout_step``, ``run_timeout_s``).
        metrics: the metrics measured before the exception; None for a timeout (the record
            then holds no ``metrics``).
    """

    status: str
    reason: str
    details: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float] | None = None

    def fields(self) -> dict[str, Any]:
        """The record fields this outcome sets."""
        return {
            "status": self.status,
            "reason": self.reason,
            **self.details,
            **({"metrics": self.metrics} if self.metrics is not None else {}),
        }


def classify(exc: BaseException) -> Outcome:
    """The :class:`Outcome` of a training attempt that raised ``exc``."""
    from harness.training.callbacks import TimedOut
    from harness.training.loop import Diverged

    partial = dict(getattr(exc, "partial_metrics", {}))
    if isinstance(exc, Diverged):
        return Outcome("diverged", str(exc), {"diverged_step": exc.step, "last_finite_loss": exc.last_finite}, partial)
    if isinstance(exc, TimedOut):
        return Outcome("timeout", str(exc), {"timeout_step": exc.step, "run_timeout_s": exc.limit})
    return Outcome("failed", redact(f"{type(exc).__name__}: {exc}"), metrics=partial)
