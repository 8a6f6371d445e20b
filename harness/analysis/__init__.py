"""Statistics over stored runs: paired comparisons and their verdicts (comparisons), the
statistical tests themselves (stats, which knows nothing of runs), the omnibus test across variants,
and seed planning."""
