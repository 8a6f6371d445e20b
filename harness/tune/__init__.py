"""Per-variant hyper-parameter tuning with Optuna: studies, their storage and the objective."""
