"""A profile's confirmatory design, declared before its data: what decides its verdicts, and its fingerprint.

What decides its verdicts: the seeds, each task's primary metric and smallest effect of interest, the ``sequential:``
block. Every run's record holds the fingerprint (docs/sequential.md, "A design declared before its data").
"""

from __future__ import annotations

from typing import Any

from harness.config import config_hash
from harness.experiment.ablation import Ablation


def design_of(abl: Ablation, profile: str) -> dict[str, Any]:
    """The design of ``profile`` (a ``<profile>+tuned`` folder: its profile's) as plain data."""
    name, prof = abl.profile(profile.split("+", 1)[0])
    tasks = abl.for_profile(name).tasks
    primaries = {t: {"metric": e.primary.metric, "sesoi": e.primary.sesoi} for t, e in sorted(tasks.items())}
    seq = prof.sequential.model_dump(mode="json") if prof.sequential is not None else None
    return {"seeds": list(prof.seeds), "primary": primaries, "sequential": seq}


def fingerprint(abl: Ablation, profile: str) -> str:
    """The first 12 hex digits of the SHA-256 of :func:`design_of`, as canonical JSON (:func:`config_hash`)."""
    return config_hash(design_of(abl, profile))
