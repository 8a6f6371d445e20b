"""optuna-integration's pruning callback, adapted to ablate's training loop.

Lightning: it lives here, the only package that imports Lightning; :mod:`harness.tune.objective`
wires it in.
"""

from __future__ import annotations

from typing import Any

import optuna
from optuna_integration import PyTorchLightningPruningCallback


class StepPruningCallback(PyTorchLightningPruningCallback):
    """optuna-integration's callback, reporting at the global step instead of the epoch.

    ablate trains one epoch of ``train.steps`` batches and validates every ``train.val_every``
    steps, so the parent's ``step=current_epoch`` would give every validation pass step 0 and
    Optuna would ignore all but the first. Distributed (DDP) runs keep the parent's behaviour.
    """

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        """Report the monitored validation metric to the trial at the global step; prune if Optuna says so.

        While Lightning's sanity check runs, under DDP, or without the metric (the parent warns), the
        parent's behaviour.

        Raises:
            optuna.TrialPruned: the study's pruner prunes the trial at this step.
        """
        if trainer.sanity_checking or self.is_ddp_backend:
            return super().on_validation_end(trainer, pl_module)
        score = trainer.callback_metrics.get(self.monitor)
        if score is None:
            return super().on_validation_end(trainer, pl_module)  # warns about the missing metric
        value, step = float(score), int(trainer.global_step)
        self._trial.report(value, step=step)
        if self._trial.should_prune():
            raise optuna.TrialPruned(f"pruned at step {step} ({self.monitor} = {value:.4g})")
        return None
