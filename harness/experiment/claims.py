"""The practitioners' claims the harness tests, and the controls that guard them.

The claims: ``claims.yaml`` beside this module; docs/claims-audit.md. The controls (docs/statistics.md): a known bug
an ablation declares (``control:``) and the published results of ``reproductions.yaml`` (its header says each field).
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator

from harness.config import format_validation_error
from harness.errors import AblateError
from harness.experiment import metrics
from harness.experiment.declaration import Decl, repeated
from harness.registry import did_you_mean
from harness.yaml12 import YAMLError, load_yaml

CLAIMS = "claims.yaml"
REGISTRY = "reproductions.yaml"  # the positive controls' registry: each entry a published result to reproduce

Words = Annotated[str, Field(min_length=1)]
"""Text that must say something (at least one character)."""


class Trend(Decl):
    """A comparison along an ordered axis (docs/statistics.md, "Trends along an axis").

    The entry's paired difference at each of ``levels``, its slope per seed on the level (``log2``: on log2 of it).
    Per level, ``metrics`` / ``variants`` / ``against`` name what is compared there (default: the entry's own).
    """

    axis: Words = Field(description="what grows: the length multiple, the depth, the head count")
    unit: Words = Field(description="the slope's unit, printed: 'doubling of the length'")
    levels: list[float] = Field(min_length=2)
    log2: bool = False
    metrics: list[str] | None = None
    variants: list[str] | None = None
    against: list[str] | None = None

    @model_validator(mode="after")
    def _one_per_level(self) -> Trend:
        if sorted(set(self.levels)) != self.levels:
            raise ValueError("trend.levels: give distinct levels in increasing order")
        if self.log2 and min(self.levels) <= 0:
            raise ValueError("trend.levels: log2 needs positive levels")
        for key in ("metrics", "variants", "against"):
            if (given := getattr(self, key)) is not None and len(given) != len(self.levels):
                raise ValueError(f"trend.{key}: one per level ({len(self.levels)}), got {len(given)}")
        for name in self.metrics or []:
            metrics.known(name)
        return self


class Evidence(Decl, metrics.KnownMetric):
    """One comparison that decides a claim, and the verdict expected if the claim holds, or a premise.

    The comparison: ``variant`` against the baseline or ``against``; the verdict ``expect``-ed if it holds, or a
    ``premise``: whether its setting runs here (docs/claims-audit.md).
    """

    task: str
    variant: str
    expect: Literal["better", "worse", "equivalent"] | None = None
    against: str | None = None  # the variant it is compared with; None: the ablation's baseline
    part: str | None = None
    condition: str | None = None
    premise: str | None = None
    tests: str | None = None  # what the comparison shows when it tests less than the claim says
    trend: Trend | None = None  # the slope of the difference along an axis, not the difference at one point
    profile: str | None = None  # the one profile whose runs it reads (a setting only that profile runs)

    @model_validator(mode="after")
    def _expect_or_premise(self) -> Evidence:
        if (self.expect is None) == (self.premise is None):
            raise ValueError("give expect (the verdict if the claim holds) or premise (the setting that must run), one")
        if self.premise is not None and self.metric != metrics.OUTCOME:
            raise ValueError(f"a premise is read from metric {metrics.OUTCOME!r} (whether the runs finished)")
        return self


class Part(Decl):
    """One part of a claim's wording.

    ``not_tested``: why no comparison here tests it (without it, at least one evidence entry names the part).
    """

    words: str
    kind: Literal["effect", "mechanism", "condition"]
    not_tested: str | None = None


class Setting(Decl):
    """The setting a write-up names for its claim, in its own terms (None: the write-up does not say)."""

    model: str | None = None
    task: str | None = None
    learning_rate: str | None = None
    precision: str | None = None
    figure: str | None = None


class Source(Decl):
    """Where a claim comes from: the write-up, its words, the setting it names and the mechanism it gives.

    The write-up: its file name in the write-ups' folder, e.g. ``000_d260eea772721f72``; its words as written
    (``quote``) with a translation; the mechanism None where it gives none.
    """

    file: str = Field(pattern=r"^\d{3}_[0-9a-f]{16}$")
    quote: Words
    translation: Words
    setting: Setting = Setting()
    mechanism: str | None = None


Fidelity = Literal["faithful", "partly", "not tested as stated", "not"]
"""How far a claim's evidence tests what its write-up says (docs/claims-audit.md)."""


class Claim(Decl):
    """A claim, the figure given for it, the ablation that decides it and its audit (``parts``)."""

    id: str
    claim: str
    figure: str
    ablation: str
    sources: list[Source] = []
    rests_on: list[str] = []  # the mechanisms its verdict rests on; a control testing one guards the claim
    parts: list[Part] = []
    evidence: list[Evidence] = []

    def fidelity(self) -> Fidelity:
        """How far the claim's evidence tests what its write-up says (:data:`Fidelity`).

        ``faithful``: every part of the wording (effects, mechanism, conditions) is tested, none on a stand-in (an
        evidence entry with ``tests``); ``not tested as stated``: no effect or mechanism is tested, and the verdict says
        so; ``partly``: between (each untested part says why); ``not``: only stand-ins test its effects, a verdict on
        something else than the write-up says (the registry has none: tests/experiment/test_claims_registry.py).
        """
        said = [p for p in self.parts if p.kind != "condition"]
        direct = {ev.part for ev in self.evidence if ev.tests is None}
        if all(p.not_tested is not None for p in said):
            return "not tested as stated"
        if not any(p.words in direct for p in said):
            return "not"
        return "faithful" if all(p.words in direct for p in self.parts) else "partly"

    @model_validator(mode="after")
    def _audit(self) -> Claim:
        words = [p.words for p in self.parts]
        if dupes := repeated(words):
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


def parse_claims(data: Any) -> dict[str, Claim]:
    """Validated claims by id; AblateError."""
    if not isinstance(data, list):
        raise AblateError(f"{CLAIMS}: expected a list of claims, got {type(data).__name__}")
    out: dict[str, Claim] = {}
    for i, entry in enumerate(data):
        name = entry.get("id", f"#{i}") if isinstance(entry, dict) else f"#{i}"
        try:
            claim = Claim.model_validate(entry)
        except ValidationError as exc:
            keys = [*Claim.model_fields, *Evidence.model_fields, *Part.model_fields]
            raise AblateError(f"{CLAIMS}: {format_validation_error(exc, f'claim {name}', keys=keys)}") from None
        if claim.id in out:
            raise AblateError(f"{CLAIMS}: claim id {claim.id!r} appears twice")
        out[claim.id] = claim
    return out


def claimed_metrics(claim_ids: Collection[str], task: str) -> set[str]:
    """Metrics an evidence entry of the claims ``claim_ids`` names for ``task`` (e.g. ``train_tokens_per_s``)."""
    claims = load_claims()
    return {ev.metric for cid in claim_ids for ev in claims[cid].evidence if ev.task == task}


def guards_problem(ids: list[str], field: str = "guards") -> str | None:
    """What is wrong with the claim ids a control guards (each a claim of :func:`load_claims`, once), or None."""
    known = load_claims()
    for i, cid in enumerate(ids):
        if cid not in known:
            return (
                f"{field}.{i}: {cid!r} is not a claim of harness/experiment/claims.yaml{did_you_mean(cid, list(known))}"
            )
    if len(set(ids)) < len(ids):
        return f"{field}: a claim appears more than once"
    return None


@functools.cache
def load_claims() -> dict[str, Claim]:
    """The claims of ``claims.yaml`` beside this module, validated, by id (read once, then cached).

    Raises:
        AblateError: the file is not a list of valid claims, or an id appears twice (:func:`parse_claims`).
    """
    text = Path(__file__).with_name(CLAIMS).read_text(encoding="utf-8")
    return parse_claims(load_yaml(text))


class Control(Decl):
    """``kind: negative``: a known bug (e.g. a wrong head split) that the harness must catch.

    That is, judge ``expect`` (``worse``, adjusted p < 0.05) on a task's primary metric. The reports index shows each
    such ablation as ``caught`` or ``not caught``. ``guards``: the claims whose verdicts are withheld while the control
    is not caught in ``profile`` (a confirmatory profile): a harness that cannot see a known bug on a task cannot be
    trusted with smaller differences on it.
    """

    kind: Literal["negative"] = Field(description="negative: a variant carries a known bug")
    expect: Literal["better", "worse"] = Field("worse", description="the verdict the control variant must get")
    variant: str | None = Field(
        None, description="the grid point (label) that carries the bug; default: every point but the baseline"
    )

    guards: list[str] = Field(
        default_factory=list, description="claims (ids of claims.yaml) withheld while the control is not caught"
    )
    profile: str = Field("confirm", description="the confirmatory profile whose runs say whether it was caught")

    def check(self, labels: list[str], baseline: str, confirm: list[str], own: list[str]) -> None:
        """Check the control against the ablation that declares it (for pydantic).

        Args:
            labels: the labels of the grid's points.
            baseline: the baseline's label.
            confirm: the ablation's confirmatory profiles.
            own: the ablation's own claims.

        Raises:
            ValueError: unless ``variant`` is a grid label but the baseline, ``guards`` claims (once) not the
                ablation's ``own``, ``profile`` a confirmatory one (checked when it guards claims).
        """
        others = [x for x in labels if x != baseline]
        if self.variant is not None and self.variant not in others:
            raise ValueError(
                f"control.variant {self.variant!r} is "
                + ("the baseline" if self.variant == baseline else "not a point of the grid")
                + f"; the bug must be another point{did_you_mean(self.variant, others)}; other points: {others}"
            )
        if not self.guards:
            return
        if problem := guards_problem(self.guards, "control.guards"):
            raise ValueError(problem)
        if mine := [c for c in self.guards if c in own]:
            raise ValueError(
                f"control.guards: {mine[0]!r} is a claim of this ablation, whose verdict is the control's own "
                "outcome; a control guards the claims of other ablations"
            )
        if self.profile not in confirm:
            raise ValueError(
                f"control.profile {self.profile!r} is not a confirmatory profile of this ablation"
                + (did_you_mean(self.profile, confirm) if confirm else "")
                + f"; its guards need one to say whether it was caught; confirmatory profiles: {confirm or 'none'}"
            )


class Comparison(Decl, metrics.KnownMetric):
    """One comparison that tests a published result: ``variant`` against ``reference``, and the verdict expected.

    The runs are ``ablation``'s in ``profile`` on ``task``, compared on ``metric``; ``expect`` (if the published result
    holds) is oriented by the metric's direction; ``margin``: an ``equivalent``'s, in the metric's units (default: the
    task's sesoi); ``reference_min``: the reference's mean the published result needs (not a verdict rule).
    """

    ablation: str
    profile: str
    task: str
    variant: str
    reference: str
    expect: Literal["better", "worse", "equivalent"]
    margin: float | None = Field(None, gt=0)
    reference_min: float | None = None


class PositiveControl(Decl):
    """A positive control: a published result the harness should reproduce at CPU scale.

    An entry of ``reproductions.yaml``, the positive controls' registry (hence the ``reproduction`` the reports,
    ``ablate reproduce`` and its errors name).

    The file's header says each field: the ``paper`` and where in it (``source``), the published ``setting`` and
    ``result``, what the harness should see (``expected``), the ``differences`` from the published setting, the
    ``comparisons`` that test it (one Holm family), the claims it ``guards`` (``guards_why``: why) and the ``mechanism``
    it tests.
    """

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    paper: Words
    source: Words
    setting: Words
    result: Words
    expected: Words
    differences: Words
    comparisons: list[Comparison] = Field(min_length=1)
    guards: list[str] = Field(default_factory=list)
    guards_why: str | None = None
    mechanism: str | None = None  # what the published result tests; `guards`: every claim resting on it (rests_on)


def parse(data: object) -> list[PositiveControl]:
    """The validated entries of ``reproductions.yaml``, in order.

    Raises:
        AblateError: ``data`` is not a non-empty list, an entry fails validation (naming its first wrong field), or
            an id appears twice.
    """
    if not isinstance(data, list) or not data:
        raise AblateError(f"{REGISTRY}: expected a non-empty list of reproduction entries")
    out: dict[str, PositiveControl] = {}
    for i, raw in enumerate(data):
        name = raw.get("id", f"#{i + 1}") if isinstance(raw, dict) else f"#{i + 1}"
        try:
            entry = PositiveControl.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(x) for x in err["loc"]) or "(entry)"
            raise AblateError(f"{REGISTRY}: entry {name!r}, field {loc}: {err['msg']}") from None
        if entry.id in out:
            raise AblateError(f"{REGISTRY}: entry {entry.id!r}, field id: repeated; each id must appear once")
        out[entry.id] = entry
    return list(out.values())


@functools.cache
def load_registry() -> tuple[PositiveControl, ...]:
    """The entries of ``reproductions.yaml`` beside this module (read once, then cached).

    Raises:
        AblateError: the file is not valid YAML, or :func:`parse` refuses it.
    """
    text = Path(__file__).with_name(REGISTRY).read_text(encoding="utf-8")
    try:
        return tuple(parse(load_yaml(text)))
    except YAMLError as exc:
        raise AblateError(f"{REGISTRY}: not valid YAML ({' '.join(str(exc).split())})") from None
