"""The store's name for the runs of ``ablate run --tuned``.

Profile P's runs at each study's best parameters are stored as profile ``P+tuned`` (so ``+`` is reserved in a
profile's own name: :func:`harness.experiment.declaration.check_name`).
"""

from __future__ import annotations

TUNED = "+tuned"
"""The suffix of a tuned profile's store folder."""


def tuned_profile(profile: str) -> str:
    """The store folder of ``ablate run --tuned`` runs of ``profile``."""
    return f"{profile}{TUNED}"
