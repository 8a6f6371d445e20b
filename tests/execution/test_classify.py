"""One function decides how an attempt that raised ended, for grid runs and tuning trials alike."""

from __future__ import annotations

from harness.execution.outcome import classify
from harness.training.callbacks import TimedOut
from harness.training.loop import Diverged


def test_each_exception_is_one_outcome_with_its_fields() -> None:
    diverged = Diverged(7, 2.5)
    diverged.partial_metrics = {"leak_logits_init": 0.0}  # probes at init, measured before the loss went NaN
    out = classify(diverged)
    assert (out.status, out.details) == ("diverged", {"diverged_step": 7, "last_finite_loss": 2.5})
    assert out.fields()["metrics"] == {"leak_logits_init": 0.0} and "step 7" in out.reason

    out = classify(TimedOut(3, 12.0, 10.0))
    assert out.status == "timeout" and out.details == {"timeout_step": 3, "run_timeout_s": 10.0}
    assert "metrics" not in out.fields()  # a record of a timeout holds no metrics key

    out = classify(RuntimeError("cannot reach postgresql://bob:hunter22@db/optuna"))
    assert out.status == "failed" and out.reason == "RuntimeError: cannot reach postgresql://bob:***@db/optuna"
    assert out.fields() == {"status": "failed", "reason": out.reason, "metrics": {}}
