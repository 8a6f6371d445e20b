"""An ablation that is a control of the harness (``control:`` in its declaration,
:class:`harness.experiment.ablation.Ablation`): a negative control is a known bug the harness must
catch. Whether it did is :func:`harness.analysis.claims.control_outcomes`."""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.experiment.claims import guards_problem
from harness.registry import did_you_mean


class Control(BaseModel):
    """``kind: negative``: a known bug (e.g. a wrong head split) that the harness must catch, i.e.
    judge ``expect`` (``worse``, adjusted p < 0.05) on a task's primary metric. The reports index
    shows each such ablation as ``caught`` or ``not caught``. ``guards``: the claims whose verdicts
    are withheld while the control is not caught in ``profile`` (a confirmatory profile): a harness
    that cannot see a known bug on a task cannot be trusted with smaller differences on it."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["negative"] = Field(description="negative: a variant carries a known bug")
    expect: Literal["better", "worse"] = Field("worse", description="the verdict the control variant must get")
    variant: str | None = Field(
        None, description="the grid point (label) that carries the bug; default: every point but the baseline"
    )

    guards: list[str] = Field(
        default_factory=list, description="claims (ids of claims.yaml) withheld while the control is not caught"
    )
    profile: str = Field("confirm", description="the confirmatory profile whose runs say whether it was caught")

    def check(
        self,
        labels: list[str],
        baseline: str,
        claims: Collection[str] = (),
        confirmatory: dict[str, bool] | None = None,
        own: Collection[str] = (),
    ) -> None:
        """Raises ValueError (for pydantic) unless ``variant`` is a grid label other than ``baseline``;
        with ``guards``, unless each is one of ``claims`` (once) and not one of the ablation's ``own``
        claims (the control's own verdict cannot wait for itself), and ``profile`` is one of the
        ``confirmatory`` profiles (profile name -> confirmatory)."""
        others = [x for x in labels if x != baseline]
        if self.variant is not None and self.variant not in others:
            raise ValueError(
                f"control.variant {self.variant!r} is "
                + ("the baseline" if self.variant == baseline else "not a point of the grid")
                + f"; the bug must be another point{did_you_mean(self.variant, others)}; other points: {others}"
            )
        if not self.guards:
            return
        if problem := guards_problem(self.guards, claims, "control.guards"):
            raise ValueError(problem)
        if mine := [c for c in self.guards if c in own]:
            raise ValueError(
                f"control.guards: {mine[0]!r} is a claim of this ablation, whose verdict is the control's own "
                "outcome; a control guards the claims of other ablations"
            )
        confirm = [name for name, yes in (confirmatory or {}).items() if yes]
        if self.profile not in confirm:
            raise ValueError(
                f"control.profile {self.profile!r} is not a confirmatory profile of this ablation"
                + (did_you_mean(self.profile, confirm) if confirm else "")
                + f"; its guards need one to say whether it was caught; confirmatory profiles: {confirm or 'none'}"
            )
