"""What runs: validated run configs, ablation declarations, their grids, the claims they test, the search space.

The search space is Optuna's. Imports neither torch nor Lightning at module level.
"""
