"""Every metric a run is compared on, declared once (docs/ablation-files.md lists them).

``acc@x4`` is the test pass at 4L; the validation pass at L logs it under its bare name (``acc``). A new metric is
produced in ``harness/training/`` and declared here only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field, StrictBool, model_validator

TEST = "test pass at every evaluation length (harness/training/loop.py)"
TRAINING_LOOP = "training loop (harness/training/loop.py)"
PROBE = "probe (harness/training/probes.py), when eval.probes asks for it"
ANALYSIS = "analysis, one per run from its status (harness/analysis/comparisons.py)"


@dataclass(frozen=True)
class Metric:
    """One metric, or one family of per-length, per-layer or init/final metrics."""

    name: str  # ``<i>`` stands for a layer index (``grad_norm_init_l<i>``)
    higher_is_better: bool  # every comparison is oriented so that a positive difference is better
    unit: str
    source: str  # where it is produced: TEST, TRAINING_LOOP, PROBE or ANALYSIS
    per_length: bool = False  # ``<name>@x<N>`` per length multiplier N; the validation pass logs ``<name>``
    kinds: tuple[str, ...] | None = None  # the task kinds (``Task.kind``) that produce it; None: every task
    probe: str | None = None  # the ``eval.probes`` entry that produces it
    at_init: bool = False  # a probe also measured at initialisation, as ``<name>_init``
    padded: bool = False  # produced only for a task with a padding token
    byte_level: bool = False  # produced only for a task that states its tokens' bytes (``Task.token_bytes``)
    rankable: bool = True  # a task's primary or gate metric may name it
    compared: bool = False  # every analysis compares it; the others, when a primary metric or claim names them
    # the best value a run can score (1 for a fraction right), None when unbounded: a baseline at it on
    # every seed leaves nothing to be better (harness.analysis.verdicts.RULES)
    best: float | None = None
    # the value it never goes below (0 for a loss, 1 for a perplexity), None when not stated: a
    # lower-is-better bound at or below it is unreachable, a higher-is-better one met by every run
    floor: float | None = None
    # compared as the per-seed ratio of a variant to the baseline (the paired difference of logs): what scales both
    # arms of a seed alike, as the machine's load does for runs made one after the other, cancels
    ratio: bool = False
    # a measure of the machine the run ran on, not of the run (speed, memory): never the same twice, so a record the
    # store holds is not said to differ from a data file's on it (harness.store.archive.unpack)
    machine: bool = False

    def names(self, multipliers: tuple[int, ...] = (), n_layers: int = 0) -> list[str]:
        """The concrete names this metric stands for, given the length ``multipliers`` and the layer count.

        ``<name>@x<N>`` per multiplier N of a per-length metric, one name per layer i < ``n_layers`` of a per-layer
        one, else its name (and ``<name>_init`` for a probe also measured at initialisation).
        """
        if self.per_length:
            return [f"{self.name}@x{m}" for m in multipliers]
        if "<i>" in self.name:
            return [self.name.replace("<i>", str(i)) for i in range(n_layers)]
        return [self.name, f"{self.name}_init"] if self.at_init else [self.name]

    @property
    def pattern(self) -> re.Pattern[str]:
        """The regex that a concrete name of this metric matches (any layer index, any length multiplier)."""
        text = re.escape(self.name).replace(re.escape("<i>"), r"\d+")
        return re.compile(text + (r"@x\d+" if self.per_length else "(_init)?" if self.at_init else "") + "$")

    @property
    def shown(self) -> str:
        """The name as the documentation writes it (``acc@x<N>``, ``leak_logits[_init]``)."""
        return self.name + ("@x<N>" if self.per_length else "[_init]" if self.at_init else "")


def _tested(name: str, higher_is_better: bool, unit: str, **kw: Any) -> Metric:
    return Metric(name, higher_is_better, unit, TEST, per_length=True, compared=True, **kw)


def _loop(name: str, higher_is_better: bool, unit: str, **kw: bool) -> Metric:
    return Metric(name, higher_is_better, unit, TRAINING_LOOP, **kw)


def _probe(name: str, probe: str, unit: str, **kw: bool) -> Metric:
    return Metric(name, False, unit, PROBE, probe=probe, **kw)


_ZERO_ONE, _GN = "0 or 1", "grad_norm_init"
_SWING = "std of log gradient norm about its 51-step rolling median, steps after warm-up (relative swings)"
_CHANCE = "nats per scored token: the task's chance level (unigram entropy; uniform answers)"
METRICS: tuple[Metric, ...] = (
    _tested("loss", False, "nats per scored token", floor=0.0),
    _tested("acc", True, "fraction of scored tokens right", kinds=("synthetic",), best=1.0, floor=0.0),
    _tested("exact", True, "fraction of sequences right", kinds=("synthetic",), best=1.0, floor=0.0),
    _tested("ppl", False, "perplexity, exp(loss)", kinds=("lm",), floor=1.0),
    _tested("bpb", False, "bits per byte of the scored text", byte_level=True, floor=0.0),
    _loop("steps_to_target", False, "optimiser steps (the step budget if never)", compared=True),
    _loop("target_reached", True, _ZERO_ONE),
    _loop("train_loss_final", False, "nats per scored token"),
    _loop("val_loss_best", False, "nats per scored token, lowest validation loss at L"),
    _loop("chance_loss", False, _CHANCE, rankable=False),
    _loop("train_tokens_per_s", True, "tokens per second of training steps", ratio=True, machine=True),
    _loop("grad_norm_mean", False, "L2 norm of the gradient, mean over steps"),
    _loop("grad_norm_cv", False, "std / mean of the gradient norm over every step, warm-up and early fall included"),
    _loop("grad_norm_cv_detrended", False, _SWING),
    _loop("nonfinite_grad_steps", False, "steps"),
    _loop("peak_mem_mb", False, "MiB (CUDA runs only)", machine=True),
    _probe("grad_norm_init_l<i>", _GN, "L2 norm of block i's gradient at init, its norms included"),
    _probe("grad_norm_init_top_over_bottom", _GN, "ratio, last block over first"),
    _probe("grad_norm_init_ffn_out_l<i>", _GN, "L2 norm of the gradient of block i's FFN output weight"),
    _probe("grad_norm_init_ffn_out_top_over_bottom", _GN, "ratio, last block's FFN output weight over first's"),
    _probe("grad_norm_init_ffn_out_top", _GN, "L2 norm of the gradient of the last block's FFN output weight"),
    _probe("resid_growth_init", _GN, "|x_L| / |x_0| of the residual stream at init"),
    _probe("grad_norm_init_raised", _GN, _ZERO_ONE),
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
    Metric(
        "finished",
        True,
        "1 when a run finished and learned (ok); 0 stalled, diverged, failed",
        ANALYSIS,
        rankable=False,
    ),
)
"""Every metric, in the order the documentation lists them."""

# the metrics the analysis reads by name (their units are the table's)
OUTCOME, STEPS_TO_TARGET, TARGET_REACHED = "finished", "steps_to_target", "target_reached"

_LENGTH = re.compile(r"^(?P<base>[a-z_]+)@x(?P<mult>\d+)$")


def lookup(name: str) -> Metric | None:
    """The :class:`Metric` a concrete name (``acc@x4``, ``leak_logits_init``) belongs to, or None."""
    return next((m for m in METRICS if m.pattern.match(name)), None)


def is_ratio(name: str) -> bool:
    """Whether the metric ``name`` is compared as per-seed ratios (its tables read its log; Δ is a log ratio)."""
    metric = lookup(name)
    return metric is not None and metric.ratio


def higher_is_better(name: str) -> bool:
    """Whether a higher value of the metric ``name`` (``acc@x4``) is better.

    Raises:
        ValueError: no metric of the table matches ``name`` (:func:`known`).
    """
    return lookup(known(name)).higher_is_better


def length_of(name: str) -> tuple[str, int] | None:
    """``(base, N)`` for a per-length name ``<base>@x<N>`` (``("acc", 4)`` for ``acc@x4``), else None."""
    match = _LENGTH.match(name)
    return (match.group("base"), int(match.group("mult"))) if match else None


def best_value(name: str) -> float | None:
    """The best value a run can score on ``name`` (1.0 for ``acc@x1``); None: unknown or unbounded."""
    return metric.best if (metric := lookup(name)) else None


def of_bound(name: str) -> Metric | None:
    """The :class:`Metric` a gate or target names (``acc@x1``, or ``acc`` at L), or None."""
    return lookup(name) or next((m for m in METRICS if m.per_length and m.name == name), None)


def beyond_training(name: str) -> bool:
    """Whether the metric ``name`` is measured beyond the training length L (``acc@x2``, ``loss@x4``)."""
    return (length := length_of(name)) is not None and length[1] > 1


def unmoved_by_learning(name: str) -> bool:
    """Whether ``name`` is a probe at initialisation (``leak_logits_init``) or a speed (the ``ratio`` metrics).

    What training learned cannot move it, so a task the baseline did not learn still decides it.
    """
    metric = lookup(name)
    return metric is not None and (metric.ratio or (metric.at_init and name.endswith("_init")))


def of_machine(name: str) -> bool:
    """Whether the metric ``name`` measures the machine a run ran on, not the run (``train_tokens_per_s``)."""
    return (metric := lookup(name)) is not None and metric.machine


def compared(name: str) -> bool:
    """Whether every analysis compares the metric ``name`` (per-length metrics, ``steps_to_target``)."""
    return (metric := lookup(name)) is not None and metric.compared


def produced(
    kind: str,
    multipliers: tuple[int, ...],
    probes: tuple[str, ...],
    n_layers: int,
    padded: bool,
    byte_level: bool = False,
) -> list[str]:
    """Every metric a run of a task of ``kind`` makes that its primary or gate may name."""
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
    """The metrics the validation pass at L logs for a task of ``kind``: what a convergence target names."""
    return [m.name for m in METRICS if m.per_length and _made_for(m, kind, byte_level)]


def _made_for(metric: Metric, kind: str, byte_level: bool) -> bool:
    return (metric.kinds is None or kind in metric.kinds) and (byte_level or not metric.byte_level)


def validation_name(name: str) -> str | None:
    """The validation-pass metric of ``name`` (``acc`` for ``acc@x4``), or None."""
    length = length_of(name)
    return length[0] if length and lookup(name) is not None else None


def known(name: str) -> str:
    """``name``, when a metric of the table matches it; else ValueError with the metrics it knows."""
    if lookup(name) is None:
        raise ValueError(f"unknown metric {name!r}; metrics: {', '.join(m.shown for m in METRICS)}")
    return name


class NamedMetric(BaseModel):
    """A declaration's reference to a metric, and a direction it may restate (as the table has it)."""

    metric: str = Field(description="a metric name: acc@x4 (at 4L), loss@x1, steps_to_target, ...")
    higher_is_better: StrictBool | None = Field(
        None, description="the direction; optional: the metrics table decides it, and this must agree"
    )

    @model_validator(mode="after")
    def _direction(self) -> NamedMetric:
        metric, stated = lookup(self.metric), self.higher_is_better
        if stated is not None and metric is not None and stated != metric.higher_is_better:
            raise ValueError(
                f"{self.metric} is {'higher' if metric.higher_is_better else 'lower'}-is-better (harness/experiment/"
                f"metrics.py); drop higher_is_better or set it to {str(metric.higher_is_better).lower()}"
            )
        return self


class KnownMetric(NamedMetric):
    """A :class:`NamedMetric` whose name the table must know (claims' evidence, positive controls)."""

    metric: Annotated[str, AfterValidator(known)]
