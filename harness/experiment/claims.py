"""The practitioners' claims the harness tests (``claims.yaml`` beside this module), validated like a
declaration: each names the comparisons that decide it and the parts of its wording each tests
(docs/claims-audit.md)."""

from __future__ import annotations

import functools
import importlib.resources
from collections.abc import Collection
from typing import Any, Literal

from pydantic import ValidationError, model_validator

from harness.config import format_validation_error
from harness.errors import AblateError
from harness.experiment import metrics
from harness.experiment.declaration import Decl, load_yaml
from harness.registry import did_you_mean

CLAIMS = "claims.yaml"


class Evidence(Decl, metrics.KnownMetric):
    """One comparison that decides a claim (``variant`` against the baseline or ``against``), and the
    verdict ``expect``-ed if it holds, or a ``premise``: whether its setting runs here (docs/claims-audit.md)."""

    task: str
    variant: str
    expect: Literal["better", "worse", "equivalent"] | None = None
    against: str | None = None  # the variant it is compared with; None: the ablation's baseline
    part: str | None = None
    condition: str | None = None
    premise: str | None = None
    tests: str | None = None  # what the comparison shows when it tests less than the claim says

    @model_validator(mode="after")
    def _expect_or_premise(self) -> Evidence:
        if (self.expect is None) == (self.premise is None):
            raise ValueError("give expect (the verdict if the claim holds) or premise (the setting that must run), one")
        if self.premise is not None and self.metric != metrics.OUTCOME:
            raise ValueError(f"a premise is read from metric {metrics.OUTCOME!r} (whether the runs finished)")
        return self


class Part(Decl):
    """One part of a claim's wording; ``not_tested``: why no comparison here tests it (without it,
    at least one evidence entry names the part)."""

    words: str
    kind: Literal["effect", "mechanism", "condition"]
    not_tested: str | None = None


class Claim(Decl):
    """A claim, the figure given for it, the ablation that decides it and its audit (``parts``)."""

    id: str
    claim: str
    figure: str
    ablation: str
    parts: list[Part] = []
    evidence: list[Evidence] = []

    @model_validator(mode="after")
    def _audit(self) -> Claim:
        words = [p.words for p in self.parts]
        if dupes := sorted({w for w in words if words.count(w) > 1}):
            raise ValueError(f"parts: {dupes[0]!r} appears more than once")
        for i, ev in enumerate(self.evidence):
            if self.parts and ev.part not in words:
                raise ValueError(f"evidence.{i}.part: {ev.part!r} is not the words of a part; parts: {words}")
        conditions = {ev.condition for ev in self.evidence if ev.premise is None}
        if None in conditions and len(conditions) > 1:
            raise ValueError("evidence: give every comparison a condition, or none")
        for part in self.parts:
            tested = [ev for ev in self.evidence if ev.part == part.words]
            if part.not_tested is None and not tested:
                raise ValueError(
                    f"parts: {part.words!r} has no comparison; name it in an evidence entry or say why not_tested"
                )
            if part.not_tested is not None and tested:
                raise ValueError(f"parts: {part.words!r} is not_tested, yet evidence names it")
        return self


def parse_claims(data: Any, where: str = CLAIMS) -> dict[str, dict[str, Any]]:
    """Validated claims by id, each as the plain dict of the keys the file sets; AblateError."""
    if not isinstance(data, list):
        raise AblateError(f"{where}: expected a list of claims, got {type(data).__name__}")
    out: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(data):
        name = entry.get("id", f"#{i}") if isinstance(entry, dict) else f"#{i}"
        try:
            claim = Claim.model_validate(entry)
        except ValidationError as exc:
            keys = [*Claim.model_fields, *Evidence.model_fields, *Part.model_fields]
            raise AblateError(f"{where}: {format_validation_error(exc, f'claim {name}', keys=keys)}") from None
        if claim.id in out:
            raise AblateError(f"{where}: claim id {claim.id!r} appears twice")
        out[claim.id] = claim.model_dump(exclude_unset=True)
    return out


def guards_problem(ids: list[str], known: Collection[str], field: str = "guards") -> str | None:
    """What is wrong with the claim ids a control guards (each a claim of ``known``, once), or None."""
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
    text = importlib.resources.files("harness.experiment").joinpath(CLAIMS).read_text()
    return parse_claims(load_yaml(text))
