"""Validated run configs, addressed by dotted keys, and a stable config hash.

The dotted keys (``model.position``, ``train.steps``) are ablation axes, profile and CLI overrides, given as
``key=value`` with the value read as YAML. Imports neither torch nor Lightning.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from harness.bounds import IntBounded
from harness.dtypes import PRECISION_DTYPES
from harness.errors import AblateError, pydantic_message
from harness.registry import MASK_FILLS, did_you_mean
from harness.yaml12 import YAMLError, load_yaml


def _spells(name: str, value: float) -> bool:
    """Whether the registry name ``name`` is the number ``value`` spelled (``"-1e9"`` and -1e9)."""
    try:
        return float(name) == value
    except ValueError:
        return False


class _Section(IntBounded):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_as_number(cls, value: Any, info: ValidationInfo) -> Any:
        """Pydantic's lax mode would read ``train.steps=true`` as 1, silently."""
        ann = cls.model_fields[info.field_name].annotation
        numeric = {int, float} & {ann, *get_args(ann)}
        items = value if isinstance(value, list) else [value]
        if numeric and any(isinstance(v, bool) for v in items):
            raise ValueError("expected a number, not a boolean")
        return value


class ModelSection(_Section):
    """Model shape and positional encoding (Transformer LM, decoder-only)."""

    d_model: int = Field(64, gt=0, description="model width C; model.n_heads must divide it")
    n_heads: int = Field(4, gt=0, description="attention heads H; head width D = d_model / n_heads")
    n_layers: int = Field(2, gt=0, description="Transformer blocks")
    position: str = Field("sinusoidal", description="positional encoding (registry: position)")
    dropout: float = Field(0.0, ge=0.0, lt=1.0, description="dropout probability")
    max_len: int | None = Field(None, gt=0, description="learned table size; None: longest eval length")
    learned_init_std: float = Field(0.02, gt=0, description="init std of the learned position table")
    init: str = Field(
        "normal_0.02",
        description=(
            "initialisation of the linear layers (registry: init): normal_0.02 (GPT-2: N(0, 0.02)) or "
            "xavier (N(0, 2 / (fan_in + fan_out)))"
        ),
    )
    tie_embeddings: bool = Field(True, description="the output layer shares the token embedding's weights")


class AttentionSection(_Section):
    """Attention, each key a registry name checked when the model config is built (``harness.modules``)."""

    kernel: str = Field("sdpa", description="how scores and weights are computed (registry: kernel)")
    qkv: str = Field("separate", description="the q/k/v projections: separate, one fused matrix, or shared")
    scale: str = Field("d_head", description="score scale: d_head 1/sqrt(D), d_model 1/sqrt(C)")
    mask_fill: str = Field("-inf", description="the value masked scores get (kernel math only; others: -inf)")
    head_split: str = Field("correct", description="how heads are split; transpose_missing is a bug on purpose")

    @field_validator("mask_fill", mode="before")
    @classmethod
    def _spelled(cls, value: Any) -> Any:
        """A number where a mask fill is named (YAML 1.2 reads ``-1e9`` as one): the name that spells it."""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return next((n for n in MASK_FILLS.names() if _spells(n, value)), str(value))
        return value


class BlockSection(_Section):
    """Residual blocks: the normalisation layer and pre- or post-norm placement, each a registry name."""

    norm: str = Field("layernorm", description="the normalisation layer (registry: norm)")
    norm_position: str = Field("pre", description="pre-norm or post-norm residual blocks (registry: norm_position)")


FFN_MULT = 4  # the FFN's default hidden width in d_model's (no ffn.d_ff nor d_ff_mult; TransformerConfig's too)


class FFNSection(_Section):
    """Feed-forward width and activation.

    The hidden width is ``d_ff`` or ``d_ff_mult`` x ``model.d_model`` (rounded; at most one of them), else 4 x d_model.
    """

    d_ff: int | None = Field(None, gt=0, description=f"None: d_ff_mult x d_model, else {FFN_MULT} x d_model")
    d_ff_mult: float | None = Field(None, gt=0, description="hidden width as a multiple of d_model")
    activation: str = Field(
        "gelu",
        description=(
            "the FFN's activation (registry: activation); swiglu is gated: 3 matrices of C x d_ff instead "
            "of 2, so at the same width it has 1.5 x the FFN's parameters (set ffn.d_ff_mult: 2.667 for "
            "those of a 4 x ungated FFN, as LLaMA does)"
        ),
    )

    @model_validator(mode="after")
    def _one_width(self) -> FFNSection:
        if self.d_ff is not None and self.d_ff_mult is not None:
            raise ValueError(f"set ffn.d_ff ({self.d_ff}) or ffn.d_ff_mult ({self.d_ff_mult}), not both")
        return self

    def width(self, d_model: int) -> int:
        """The hidden width at ``d_model``: ``d_ff_mult`` x it rounded (at least 1), else ``d_ff``, else FFN_MULT x."""
        return max(1, round(self.d_ff_mult * d_model)) if self.d_ff_mult else self.d_ff or FFN_MULT * d_model


class TrainSection(_Section):
    """Optimisation: AdamW, linear warm-up then cosine decay to ``min_lr_ratio`` x lr.

    ``16-mixed`` is float16 autocast with a gradient scaler on CPU too (Lightning alone would run bfloat16 there).
    """

    steps: int = Field(1000, gt=0, description="optimiser steps (the step budget)")
    batch_size: int = Field(32, gt=0, description="sequences per training step")
    seq_len: int = Field(32, gt=0, description="training length L in tokens")
    lr: float = Field(1e-3, gt=0, description="peak learning rate of AdamW")
    warmup_steps: int = Field(100, ge=0, description="linear warm-up steps; at most train.steps")
    min_lr_ratio: float = Field(
        0.1, ge=0, le=1, description="the cosine decay ends at min_lr_ratio x lr; 1: a constant lr after the warm-up"
    )
    weight_decay: float = Field(
        0.1, ge=0, description="AdamW weight decay, on Linear weights only (no embedding is decayed)"
    )
    grad_clip: float = Field(1.0, ge=0, description="0 disables clipping")
    precision: Literal[tuple(PRECISION_DTYPES)] = Field(  # "32-true", "bf16-mixed", "16-mixed", "16-true"
        "32-true", description="16-mixed on CPU: float16 autocast (never bf16); 16-true: AdamW eps 1e-4"
    )
    val_every: int = Field(100, gt=0, description="steps between validation passes at length L")
    seed_salt: int = Field(
        0,
        ge=0,
        description=(
            "draw other init, data and dropout streams for the same seed (evaluation sets unchanged): the "
            "arms of an A/A check; 0 = the seed's own streams"
        ),
    )


class EvalSection(_Section):
    """Evaluation: the test lengths, the test and validation set sizes, the batch size and the extra probes."""

    length_multipliers: list[int] = Field(
        default_factory=lambda: [1],
        description="test lengths as multiples of train.seq_len; metric@xN is measured at N x L",
        json_schema_extra={"items": {"type": "integer", "minimum": 1}, "minItems": 1, "uniqueItems": True},
    )
    n_examples: int = Field(256, gt=0, description="test examples per evaluation length")
    val_examples: int = Field(128, gt=0, description="validation examples (length L) per pass")
    batch_size: int = Field(64, gt=0, description="sequences per evaluation batch")
    probes: list[Literal["grad_norm_init", "leakage", "masked_attention"]] = Field(
        default_factory=list,
        description=(
            "extra measurements (harness/training/probes.py): gradient norm per layer at init, causal "
            "leakage and attention on masked keys at init and after training"
        ),
    )

    @field_validator("length_multipliers")
    @classmethod
    def _distinct_ascending(cls, mults: list[int]) -> list[int]:
        """Each multiplier once, in ascending order: ``[2, 1]`` and ``[1, 2]`` are one run id."""
        if dupes := sorted({m for m in mults if mults.count(m) > 1}):
            raise ValueError(f"length_multipliers repeats {dupes}; each evaluation length must appear once")
        return sorted(mults)

    @model_validator(mode="after")
    def _multipliers(self) -> EvalSection:
        if not self.length_multipliers or any(m < 1 for m in self.length_multipliers):
            raise ValueError("length_multipliers must be a non-empty list of integers >= 1")
        return self


class RunConfig(_Section):
    """Everything that determines a run's numbers, except the seed and the task."""

    model: ModelSection = Field(default_factory=ModelSection)
    attention: AttentionSection = Field(default_factory=AttentionSection)
    block: BlockSection = Field(default_factory=BlockSection)
    ffn: FFNSection = Field(default_factory=FFNSection)
    train: TrainSection = Field(default_factory=TrainSection)
    eval: EvalSection = Field(default_factory=EvalSection)

    @model_validator(mode="after")
    def _heads_divide(self) -> RunConfig:
        if self.model.d_model % self.model.n_heads:
            raise ValueError(
                f"model.d_model={self.model.d_model} is not divisible by "
                f"model.n_heads={self.model.n_heads}; pick n_heads among "
                f"{[h for h in range(1, self.model.d_model + 1) if self.model.d_model % h == 0][:8]}"
            )
        return self

    def hash_dump(self) -> dict[str, Any]:
        """What a run id hashes: ``model_dump(mode="json")`` without the :data:`ADDED_KEYS` at their default."""
        data = self.model_dump(mode="json")
        for path, default in ADDED_KEYS.items():
            section, key = path.split(".")
            if data[section].get(key) == default:
                data[section].pop(key, None)
        return data

    def eval_lengths(self) -> list[int]:  # in tokens
        """The test lengths in tokens, ascending: each of ``eval.length_multipliers`` x ``train.seq_len``."""
        return [m * self.train.seq_len for m in self.eval.length_multipliers]


ADDED_KEYS: dict[str, Any] = {  # keys added after run ids were first stored, with their defaults
    "attention.qkv": "separate",
    "attention.scale": "d_head",
    "attention.mask_fill": "-inf",
    "attention.head_split": "correct",
    "ffn.d_ff_mult": None,
    "eval.probes": [],
    "train.seed_salt": 0,
    "model.init": "normal_0.02",
}


def valid_paths(model: type[BaseModel] = RunConfig, prefix: str = "") -> list[str]:
    """Every dotted key a config accepts (``model.d_model``, ``train.steps``, ...)."""
    paths = []
    for name, field in model.model_fields.items():
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            paths += valid_paths(ann, f"{prefix}{name}.")
        else:
            paths.append(f"{prefix}{name}")
    return paths


def check_path(path: str) -> None:
    """Raise :class:`AblateError` (naming the closest valid key) unless ``path`` is a config key."""
    paths = valid_paths()
    if inside := [p for p in paths if p.startswith(f"{path}.")]:
        raise AblateError(
            f"config key {path!r} is a section; name one of its keys, dotted (e.g. {inside[0]}): {', '.join(inside)}"
        )
    if path not in paths:
        raise AblateError(f"unknown config key {path!r}{did_you_mean(path, paths)}; valid keys: {', '.join(paths)}")


def check_key(path: str, where: str) -> None:
    """:func:`check_path` as a ValueError naming the declaration section ``where`` (for pydantic)."""
    try:
        check_path(path)
    except AblateError as exc:
        raise ValueError(f"{where}: {exc}") from None


def build_config(data: Mapping[str, Any], context: str = "", overridden: Collection[str] = ()) -> RunConfig:
    """``data`` validated as a :class:`RunConfig`.

    Raises:
        AblateError: naming ``context`` (a variant and task), or naming the command line when every key at fault is
            one of the command-line ``overridden`` keys (its value is then wrong for every variant: an override may
            not touch an axis).
    """
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        locs = {".".join(map(str, e["loc"])) for e in exc.errors()}  # eval.probes.0: an item of eval.probes
        if overridden and all(any(loc == k or loc.startswith(f"{k}.") for k in overridden) for loc in locs):
            raise AblateError(format_validation_error(exc, what="override")) from None
        raise AblateError(format_validation_error(exc, context)) from None


def format_validation_error(
    exc: ValidationError, context: str = "", keys: list[str] | None = None, what: str = "config"
) -> str:
    """``invalid WHAT for CONTEXT: `` and one line per problem of ``exc``.

    Each names its dotted location, and a close ``keys`` for an unknown one.
    """
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        msg = pydantic_message(err)
        if err["type"] == "extra_forbidden":
            hint = did_you_mean(loc, valid_paths()) if keys is None else did_you_mean(str(err["loc"][-1]), keys)
            msg = f"unknown key{hint}"
        # a missing key's "input" is the whole enclosing mapping: not worth quoting
        got = f" (got {err['input']!r})" if "input" in err and err["type"] not in ("extra_forbidden", "missing") else ""
        if err["type"] == "list_type" and isinstance(err.get("input"), str):
            got += f"; write a list in brackets: [{err['input']}]"
        lines.append(f"{loc}: {msg}{got}" if loc else f"{msg}")
    head = f"invalid {what}{' for ' + context if context else ''}: "
    return head + "; ".join(lines)


def check_schedule(cfg: RunConfig, where: str) -> None:
    """Check that no step count of ``train`` exceeds ``train.steps``.

    Checked before any run and on every bound of a tuning space, never on a stored record.

    Raises:
        AblateError: naming ``where``, when ``train.warmup_steps`` or ``train.val_every`` exceeds ``train.steps``.
    """
    t = cfg.train
    why = {
        "warmup_steps": f"the learning rate would never reach train.lr={t.lr:g}",
        "val_every": (
            "validation would run only once, at the last step (no validation curve, a convergence target checked "
            "only there, no checkpoint before it)"
        ),
    }
    for key, what in why.items():
        if (n := getattr(t, key)) > t.steps:
            raise AblateError(
                f"{where}: train.{key}={n} is greater than train.steps={t.steps}, so {what}; lower train.{key} to "
                f"at most {t.steps} or raise train.steps"
            )


def get_path(cfg: RunConfig, path: str) -> Any:
    """The value of ``cfg`` at the dotted key ``path`` (``train.steps``); AttributeError for no such key."""
    return functools.reduce(getattr, path.split("."), cfg)


def config_hash(payload: Mapping[str, Any], length: int = 12) -> str:
    """Stable hex digest of a JSON-serialisable mapping (sorted keys, no whitespace)."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def parse_override(text: str) -> tuple[str, Any]:
    """One ``key=value`` argument, its value read as YAML 1.2 as the ablation file's are.

    :mod:`harness.yaml12`: ``128`` an int, ``1e-4`` a float, ``yes`` a string; text that is not YAML stays text.

    Raises:
        AblateError: without a key.
    """
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise AblateError(f"override {text!r} is not of the form key=value (e.g. model.d_model=128)")
    try:
        value = load_yaml(raw) if raw.strip() else ""
    except YAMLError:
        value = raw
    return key.strip(), value


def parse_overrides(overrides: Iterable[str]) -> dict[str, Any]:
    """:func:`parse_override` of each ``key=value``, as one mapping; AblateError for a key given twice."""
    out: dict[str, Any] = {}
    for text in overrides:
        key, value = parse_override(text)
        if key in out:
            raise AblateError(f"override {key!r} is given twice ({out[key]!r} and {value!r}); give it once")
        out[key] = value
    return out


def apply_overrides(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` deep-copied, each dotted key of ``overrides`` set to its value; AblateError for an unknown key."""
    out = copy.deepcopy(dict(base))
    for path, value in overrides.items():
        check_path(path)
        node = out
        *parents, leaf = path.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out
