"""The practitioners' claims the harness tests (``claims.yaml`` beside this module), as data: each
claim names the comparisons (task, metric, variant against the baseline) that decide it."""

from __future__ import annotations

import functools
import importlib.resources
from typing import Any

import yaml


@functools.cache
def load_claims() -> dict[str, dict[str, Any]]:
    """The claims of ``harness/experiment/claims.yaml``, by id (parsed once per process)."""
    text = importlib.resources.files("harness.experiment").joinpath("claims.yaml").read_text()
    return {c["id"]: c for c in yaml.safe_load(text)}
