"""One place decides how an attempt that raised ended, for grid runs and tuning trials alike:
the exception classes of harness.errors."""

from __future__ import annotations

from harness.errors import Diverged, RunFailed, TimedOut, run_error


def test_each_exception_is_one_outcome_with_its_fields() -> None:
    diverged = Diverged(7, 2.5)
    diverged.metrics = {"leak_logits_init": 0.0}  # probes at init, measured before the loss went NaN
    out = run_error(diverged)
    assert out is diverged and out.status == "diverged" and "step 7" in out.reason
    assert out.fields() == {
        "status": "diverged",
        "reason": out.reason,
        "metrics": {"leak_logits_init": 0.0},
        "diverged_step": 7,
        "last_finite_loss": 2.5,
    }

    out = run_error(TimedOut(3, 12.0, 10.0))
    assert out.status == "timeout"
    # a record of a timeout holds no metrics key
    assert out.fields() == {"status": "timeout", "reason": out.reason, "timeout_step": 3, "run_timeout_s": 10.0}

    cause = RuntimeError("cannot reach postgresql://bob:hunter22@db/optuna")
    out = run_error(cause)
    assert isinstance(out, RunFailed) and out.__cause__ is cause
    assert out.status == "failed" and out.reason == "RuntimeError: cannot reach postgresql://bob:***@db/optuna"
    assert out.fields() == {"status": "failed", "reason": out.reason, "metrics": {}}
