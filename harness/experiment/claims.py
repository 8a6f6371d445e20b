"""The practitioners' claims the harness tests (``claims.yaml`` beside this module), as data: each
claim names the comparisons (task, metric, variant against the baseline) that decide it.

The file is validated like a declaration (:class:`Claim`, :class:`Evidence`: unknown keys, a
missing key or an ``expect`` that is not a verdict are refused with the entry and the key), and
parsed once per process."""

from __future__ import annotations

import functools
import importlib.resources
from collections.abc import Collection
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.errors import AblateError
from harness.experiment import metrics
from harness.experiment.config import format_validation_error
from harness.experiment.yaml_files import load_yaml
from harness.registry import did_you_mean

CLAIMS = "claims.yaml"


class Evidence(metrics.KnownMetric):
    """One comparison that decides a claim: ``variant`` against the ablation's baseline on
    ``metric`` of ``task``, and the verdict expected if the claim holds (a ``higher_is_better``
    it restates must agree with the metrics table)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: str
    variant: str
    expect: Literal["better", "worse", "equivalent"]
    tests: str | None = None  # what the comparison shows when it tests less than the claim says


class Claim(BaseModel):
    """A practitioners' claim, the figure given for it and the ablation whose evidence decides it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    claim: str
    figure: str
    ablation: str
    evidence: list[Evidence] = []


def parse_claims(data: Any, where: str = CLAIMS) -> dict[str, dict[str, Any]]:
    """Validated claims by id, each as the plain dict its readers use (the keys the file sets).

    Raises:
        AblateError: not a list, an invalid entry (its index, id and the key), or a repeated id.
    """
    if not isinstance(data, list):
        raise AblateError(f"{where}: expected a list of claims, got {type(data).__name__}")
    out: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(data):
        name = entry.get("id", f"#{i}") if isinstance(entry, dict) else f"#{i}"
        try:
            claim = Claim.model_validate(entry)
        except ValidationError as exc:
            keys = [*Claim.model_fields, *Evidence.model_fields]
            raise AblateError(f"{where}: {format_validation_error(exc, f'claim {name}', keys=keys)}") from None
        if claim.id in out:
            raise AblateError(f"{where}: claim id {claim.id!r} appears twice")
        out[claim.id] = claim.model_dump(exclude_unset=True)
    return out


def guards_problem(ids: list[str], known: Collection[str], field: str = "guards") -> str | None:
    """What is wrong with the claim ids a control guards (``field.i: 'x' is not a claim ...`` or a
    repeated id), or None: each must be a claim of ``claims.yaml`` (``known``), once."""
    for i, cid in enumerate(ids):
        if cid not in known:
            return (
                f"{field}.{i}: {cid!r} is not a claim of harness/experiment/claims.yaml{did_you_mean(cid, list(known))}"
            )
    if len(set(ids)) < len(ids):
        return f"{field}: a claim appears more than once"
    return None


@functools.cache
def load_claims() -> dict[str, dict[str, Any]]:
    """The claims of ``harness/experiment/claims.yaml``, validated, by id (parsed once per process)."""
    text = importlib.resources.files("harness.experiment").joinpath(CLAIMS).read_text()
    return parse_claims(load_yaml(text))
