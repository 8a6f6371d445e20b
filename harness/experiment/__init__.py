"""What runs: validated run configs, ablation declarations, their grids, the claims they test and
the Optuna search space. Imports neither torch nor Lightning at module level."""
