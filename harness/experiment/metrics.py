"""Every metric a run is compared on, declared once: its name, which direction is better, its
unit, where it is produced and whether a declaration may name it as a task's primary or gate metric.

Names. A per-length metric is named relative to the training length L: ``acc@x4`` is the accuracy
of the test pass at 4L (``@x<N>`` for every ``eval.length_multipliers`` entry N); the validation
pass at L logs the same quantity under its bare name (``acc``), which a convergence target names.
A probe measured at initialisation as well as after training carries ``_init`` at initialisation
(``leak_logits_init``); ``grad_norm_init_l<i>`` is one metric per layer i.

Readers: the pre-run checks (:func:`produced`, :func:`validation_metrics`: what a task's primary,
gate and target may name, :mod:`harness.experiment.grid`), the declarations (a task's
``higher_is_better`` must agree), the claims and the positive controls (likewise), the analysis
(:func:`higher_is_better`, :func:`compared`, :func:`length_of`) and the tuner (the validation
metric its pruner watches, :func:`validation_name`). A new metric is produced in
``harness/training/`` and declared here; nothing else restates it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, Field, StrictBool, field_validator, model_validator

TEST = "test pass at every evaluation length (harness/training/loop.py)"
TRAINING = "training loop (harness/training/loop.py)"
PROBE = "probe (harness/training/probes.py), when eval.probes asks for it"
ANALYSIS = "analysis, one per run from its status (harness/analysis/comparisons.py)"


@dataclass(frozen=True)
class Metric:
    """One metric, or one family of per-length, per-layer or init/final metrics.

    Attributes:
        name: the name; ``<i>`` in it stands for a layer index (``grad_norm_init_l<i>``).
        higher_is_better: the direction in which a value is better (every comparison is
            oriented so that a positive difference means better).
        unit: what a value measures.
        source: where it is produced (:data:`TEST`, :data:`TRAINING`, :data:`PROBE`, :data:`ANALYSIS`).
        per_length: named ``<name>@x<N>``, one per evaluation length multiplier N (the test
            pass); the validation pass at L logs ``<name>`` (a convergence target may name it).
        kinds: the task kinds (``Task.kind``) that produce it; None: every task.
        probe: the ``eval.probes`` entry that produces it.
        at_init: a probe also measured at initialisation, as ``<name>_init``.
        padded: produced only for a task with a padding token.
        byte_level: produced only for a task that states the bytes of its tokens (``Task.token_bytes``).
        rankable: whether a task's primary or gate metric may name it.
        compared: whether every analysis compares it; the others are compared when a task's
            primary metric or a claim names them.
        best: the best value a run can score (1 for a fraction right), or None when unbounded in
            the better direction; a baseline at it on every seed leaves nothing to be better
            (:data:`harness.analysis.verdicts.RULES`).
        floor: the value it never goes below (0 for a loss or a fraction right, 1 for a
            perplexity), or None when not stated; a lower-is-better metric never reaches it in
            practice (a loss of 0 needs every scored token at probability 1), so a bound at or
            below it is unreachable, and a higher-is-better one at or below it is met by every run.
    """

    name: str
    higher_is_better: bool
    unit: str
    source: str
    per_length: bool = False
    kinds: tuple[str, ...] | None = None
    probe: str | None = None
    at_init: bool = False
    padded: bool = False
    byte_level: bool = False
    rankable: bool = True
    compared: bool = False
    best: float | None = None
    floor: float | None = None

    def names(self, multipliers: tuple[int, ...] = (), n_layers: int = 0) -> list[str]:
        """The concrete names of this metric for the evaluated ``multipliers`` and ``n_layers``."""
        if self.per_length:
            return [f"{self.name}@x{m}" for m in multipliers]
        if "<i>" in self.name:
            return [self.name.replace("<i>", str(i)) for i in range(n_layers)]
        return [self.name, f"{self.name}_init"] if self.at_init else [self.name]

    @property
    def pattern(self) -> re.Pattern[str]:
        """What every concrete name of this metric matches."""
        text = re.escape(self.name).replace(re.escape("<i>"), r"\d+")
        return re.compile(text + (r"@x\d+" if self.per_length else "(_init)?" if self.at_init else "") + "$")

    @property
    def shown(self) -> str:
        """The name as the documentation writes it (``acc@x<N>``, ``leak_logits[_init]``)."""
        return self.name + ("@x<N>" if self.per_length else "[_init]" if self.at_init else "")


def _probe(name: str, probe: str, unit: str, **kw: bool) -> Metric:
    return Metric(name, False, unit, PROBE, probe=probe, **kw)


def _fraction(name: str, unit: str) -> Metric:
    """A per-length fraction right of a synthetic task: higher is better, between 0 and 1."""
    return Metric(name, True, unit, TEST, per_length=True, kinds=("synthetic",), compared=True, best=1.0, floor=0.0)


_ZERO_ONE = "0 or 1"
METRICS: tuple[Metric, ...] = (
    Metric("loss", False, "nats per scored token", TEST, per_length=True, compared=True, floor=0.0),
    _fraction("acc", "fraction of scored tokens right"),
    _fraction("exact", "fraction of sequences right"),
    Metric("ppl", False, "perplexity, exp(loss)", TEST, per_length=True, kinds=("lm",), compared=True, floor=1.0),
    Metric(
        "bpb",
        False,
        "bits per byte of the scored text",
        TEST,
        per_length=True,
        byte_level=True,
        compared=True,
        floor=0.0,
    ),
    Metric("steps_to_target", False, "optimiser steps (the step budget if never)", TRAINING, compared=True),
    Metric("target_reached", True, _ZERO_ONE, TRAINING),
    Metric("train_loss_final", False, "nats per scored token", TRAINING),
    Metric("train_tokens_per_s", True, "tokens per second of training steps", TRAINING),
    Metric("grad_norm_mean", False, "L2 norm of the gradient, mean over steps", TRAINING),
    Metric("grad_norm_cv", False, "std / mean of the gradient norm over steps", TRAINING),
    Metric("nonfinite_grad_steps", False, "steps", TRAINING),
    Metric("peak_mem_mb", False, "MiB (CUDA runs only)", TRAINING),
    _probe("grad_norm_init_l<i>", "grad_norm_init", "L2 norm of block i's gradient at init, its norms included"),
    _probe("grad_norm_init_top_over_bottom", "grad_norm_init", "ratio, last block over first"),
    _probe("grad_norm_init_ffn_out_l<i>", "grad_norm_init", "L2 norm of the gradient of block i's FFN output weight"),
    _probe(
        "grad_norm_init_ffn_out_top_over_bottom", "grad_norm_init", "ratio, last block's FFN output weight over first's"
    ),
    _probe(
        "grad_norm_init_ffn_out_top", "grad_norm_init", "L2 norm of the gradient of the last block's FFN output weight"
    ),
    _probe("resid_growth_init", "grad_norm_init", "|x_L| / |x_0| of the residual stream at init"),
    _probe("grad_norm_init_raised", "grad_norm_init", _ZERO_ONE),
    _probe("leak_logits", "leakage", "largest change of a logit", at_init=True),
    _probe("leak_grad", "leakage", "largest gradient of a logit", at_init=True),
    _probe("leak_logits_real", "leakage", "largest change of a logit", at_init=True, padded=True),
    _probe("leak_grad_real", "leakage", "largest gradient of a logit", at_init=True, padded=True),
    _probe("nonfinite_logits", "leakage", "fraction of logits at <= t that are NaN/inf", at_init=True),
    _probe("nonfinite_grad", "leakage", "fraction of embedding gradients that are NaN/inf", at_init=True),
    _probe("leak_raised", "leakage", _ZERO_ONE, at_init=True),
    _probe("attn_masked_max", "masked_attention", "probability", at_init=True),
    _probe("attn_fully_masked_rows", "masked_attention", "fraction of rows", at_init=True),
    _probe("attn_fully_masked_mass", "masked_attention", "probability mass", at_init=True),
    _probe("attn_nonfinite_rows", "masked_attention", "fraction of rows", at_init=True),
    _probe("attn_raised", "masked_attention", _ZERO_ONE, at_init=True),
    Metric("finished", True, "1 when a run finished, 0 otherwise", ANALYSIS, rankable=False),
)
"""Every metric, in the order the documentation lists them."""

OUTCOME = "finished"
"""The outcome metric: 1 when a run finished, 0 when it diverged, raised or timed out."""
STEPS_TO_TARGET = "steps_to_target"
"""Steps until the validation metric first met the task's convergence target (censored at the budget)."""
TARGET_REACHED = "target_reached"
"""1 when the run met its task's convergence target within the step budget."""

_LENGTH = re.compile(r"^(?P<base>[a-z_]+)@x(?P<mult>\d+)$")


def lookup(name: str) -> Metric | None:
    """The :class:`Metric` a concrete name (``acc@x4``, ``leak_logits_init``) belongs to, or None."""
    return next((m for m in METRICS if m.pattern.match(name)), None)


def higher_is_better(name: str) -> bool:
    """Whether a higher value of the metric ``name`` is better.

    Raises:
        ValueError: a name no metric of :data:`METRICS` matches (:func:`known`).
    """
    return lookup(known(name)).higher_is_better


def length_of(name: str) -> tuple[str, int] | None:
    """``(base, N)`` of a per-length name ``<base>@x<N>``, else None."""
    match = _LENGTH.match(name)
    return (match.group("base"), int(match.group("mult"))) if match else None


def best_value(name: str) -> float | None:
    """The best value a run can score on the metric ``name`` (1.0 for ``acc@x1``), or None when the
    metric is unknown or unbounded in its better direction."""
    metric = lookup(name)
    return None if metric is None else metric.best


def of_bound(name: str) -> Metric | None:
    """The :class:`Metric` a gate or convergence target names: a concrete name (``acc@x1``) or
    the validation pass's name at L (``acc``, ``loss``); None when the table knows neither."""
    return lookup(name) or next((m for m in METRICS if m.per_length and m.name == name), None)


def beyond_training(name: str) -> bool:
    """Whether the metric ``name`` is measured beyond the training length L (``acc@x2``, ``loss@x4``)."""
    length = length_of(name)
    return length is not None and length[1] > 1


def compared(name: str) -> bool:
    """Whether every analysis compares the metric ``name`` (per-length metrics, ``steps_to_target``)."""
    metric = lookup(name)
    return metric is not None and metric.compared


def produced(
    kind: str,
    multipliers: tuple[int, ...],
    probes: tuple[str, ...],
    n_layers: int,
    padded: bool,
    byte_level: bool = False,
) -> list[str]:
    """Every metric a run makes that a task's primary or gate may name, for a task of ``kind``
    evaluated at ``multipliers``, asking for ``probes``, with ``n_layers`` blocks; ``padded``: the
    task pads its rows; ``byte_level``: it states the bytes of its tokens."""
    return [
        name
        for m in METRICS
        if m.rankable
        and _made_for(m, kind, byte_level)
        and (m.probe is None or m.probe in probes)
        and (padded or not m.padded)
        for name in m.names(multipliers, n_layers)
    ]


def validation_metrics(kind: str, byte_level: bool = False) -> list[str]:
    """The metrics the validation pass at L logs for a task of ``kind`` (``byte_level``: one that
    states the bytes of its tokens): what a convergence target names."""
    return [m.name for m in METRICS if m.per_length and _made_for(m, kind, byte_level)]


def _made_for(metric: Metric, kind: str, byte_level: bool) -> bool:
    return (metric.kinds is None or kind in metric.kinds) and (byte_level or not metric.byte_level)


def validation_name(name: str) -> str | None:
    """The validation-pass metric that measures the same quantity as ``name`` (``acc`` for
    ``acc@x4``), or None when the validation pass logs none."""
    length = length_of(name)
    return length[0] if length and lookup(name) is not None else None


def known(name: str) -> str:
    """``name``, when a metric of the table matches it (a pydantic validator of a declared name).

    Raises:
        ValueError: an unknown name, with the metrics the table knows.
    """
    if lookup(name) is None:
        raise ValueError(f"unknown metric {name!r}; metrics: {', '.join(m.shown for m in METRICS)}")
    return name


def check_direction(name: str, stated: bool | None) -> None:
    """Nothing when ``higher_is_better: stated`` agrees with the table for the metric ``name``
    (or nothing is stated, or the table does not know the metric).

    Raises:
        ValueError: the stated direction is the other one, with how to mend it.
    """
    metric = lookup(name)
    if stated is not None and metric is not None and stated != metric.higher_is_better:
        raise ValueError(
            f"{name} is {'higher' if metric.higher_is_better else 'lower'}-is-better "
            f"(harness/experiment/metrics.py); drop higher_is_better or set it to {str(metric.higher_is_better).lower()}"
        )


class NamedMetric(BaseModel):
    """A declaration's reference to a metric: its name, and a direction it may restate, which must
    agree with the table (a task's primary metric; its name is checked against what the task
    produces by :mod:`harness.experiment.grid`)."""

    metric: str = Field(description="a metric name: acc@x4 (at 4L), loss@x1, steps_to_target, ...")
    higher_is_better: StrictBool | None = Field(
        None, description="the direction; optional: the metrics table decides it, and this must agree"
    )

    @model_validator(mode="after")
    def _direction(self) -> NamedMetric:
        check_direction(self.metric, self.higher_is_better)
        return self


class KnownMetric(NamedMetric):
    """A :class:`NamedMetric` whose name the table must know (claims' evidence, positive controls)."""

    @field_validator("metric")
    @classmethod
    def _known(cls, name: str) -> str:
        return known(name)
