"""One run's record (``record.json``) as a typed, frozen object.

It says what the run was, how it ended, its numbers, timings and provenance.

The file is a JSON object with sorted keys and strict numbers (:mod:`harness.encode`) holding
exactly the keys the run set. :meth:`Record.to_json` gives that object back key for key (the
config's too), so a record read and written again is the same file: a key the writer left out
stays out (``target`` before reuse, ``metrics`` of a timeout), a null stays null, a key this code
does not know is kept. :func:`parse_record` turns a parsed ``record.json`` into a :class:`Record`
or says why it is not one (a ``store problem``): nothing that reads the store raises on a bad record.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, ValidationError, field_validator, model_validator

from harness.config import RunConfig
from harness.encode import number
from harness.errors import RunStatus, pydantic_message
from harness.threshold import Threshold

_CONFIG = {"model": ("d_model", "n_heads", "n_layers"), "train": ("steps", "batch_size", "seq_len")}
_CONFIG |= {"eval": ("length_multipliers",), "ffn": (), "block": (), "attention": ()}


class Record(BaseModel):
    """A finished run (:class:`~harness.errors.RunStatus`), as ``record.json`` holds it.

    Attributes beyond the run's identity are None when the record does not hold them; unknown keys
    are kept (``model_extra``). ``metrics`` are floats: NaN where the file holds null, +/-inf for
    ``"Infinity"`` / ``"-Infinity"`` (or the bare ``NaN`` / ``Infinity`` of older records).
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    status: RunStatus
    # what ran: from its RunSpec (harness.experiment.grid)
    run_id: StrictStr
    ablation: StrictStr
    profile: StrictStr
    task: StrictStr
    variant_label: StrictStr
    seed: StrictInt
    config: RunConfig  # the resolved config (a key the file lacks is unset: left out when written)
    task_params: dict[str, Any] | None = None
    task_version: str | None = None
    variant: dict[str, Any] | None = None  # {axis path: value}
    code_versions: dict[str, int] | None = None
    tuned_params: dict[str, Any] | None = None
    target: Threshold | None = None  # the convergence target steps_to_target was measured against
    design: str | None = None  # the fingerprint of its profile's design when it ran (harness.experiment.design)
    # how it ended
    reason: str | None = None
    metrics: dict[str, float] | None = None
    undefined_metrics: dict[str, str] | None = None  # metric -> why it is NaN (non-finite logits at its length)
    flags: dict[str, str] | None = None  # name -> why the run's numbers are suspect (harness.training.scoring)
    diverged_step: int | None = None
    last_finite_loss: float | None = None
    timeout_step: int | None = None
    run_timeout_s: float | None = None
    # what training reports (harness.training.loop.RunResult); seconds
    n_params: int | None = None
    wall_time_s: float | None = None
    train_step_s: float | None = None
    fit_s: float | None = None
    test_s: float | None = None
    device: str | None = None
    precision: str | None = None
    precision_requested: str | None = None
    adam_eps: float | None = None
    kernel_backend: str | None = None
    wandb_id: str | None = None
    resumed_from_step: int | None = None
    devices: int | str | None = None
    strategy: str | None = None
    # provenance
    started_at: str | None = None
    finished_at: str | None = None
    attempt: int = 1  # records written before attempts were counted: 1
    commit: str | None = None
    plugins: list[dict[str, Any]] | None = None  # the plugins loaded (harness.experiment.plugins.record)
    versions: dict[str, Any] | None = None
    host: str | None = None
    platform: str | None = None
    torch_threads: int | None = None
    cuda: str | None = None
    cpu_count: int | None = None
    took_over: dict[str, Any] | None = None  # the stale lease this attempt took over
    reused_from: str | None = None  # <ablation>/<profile>/<run id> this run was copied from

    @field_validator("status", mode="before")
    @classmethod
    def _status(cls, value: Any) -> Any:
        if value not in tuple(RunStatus):
            raise ValueError(f"status {value!r} is not one of {', '.join(RunStatus)}")
        return value

    @field_validator("config", mode="before")
    @classmethod
    def _config(cls, config: Any) -> Any:
        for section, keys in _CONFIG.items() if isinstance(config, dict) else ():
            sub = config.get(section)
            if not isinstance(sub, dict) or any(k not in sub for k in keys):
                raise ValueError(f"config.{section} missing or incomplete")
        return config

    @field_validator("metrics", mode="before")
    @classmethod
    def _numbers(cls, metrics: Any) -> Any:
        if not isinstance(metrics, dict):
            return metrics
        try:
            return {key: number(value) for key, value in metrics.items()}
        except (TypeError, ValueError):
            raise ValueError("metrics must map names to numbers") from None

    @model_validator(mode="after")
    def _ok_has_metrics(self) -> Record:
        if self.status.trained and self.metrics is None:
            raise ValueError(f"{'an' if self.status == RunStatus.OK else 'a'} {self.status} record without metrics")
        return self

    @property
    def where(self) -> str:
        """``<ablation>/<profile>/<run id>``: where the run lies in the store."""
        return f"{self.ablation}/{self.profile}/{self.run_id}"

    def metric(self, name: str) -> float | None:
        """The value of metric ``name`` (NaN when undefined), or None when the run has none."""
        return (self.metrics or {}).get(name)

    def to_json(self) -> dict[str, Any]:
        """The JSON object of ``record.json``: exactly the keys the record holds."""
        return self.model_dump(exclude_unset=True) | {"status": self.status.value}


def parse_record(raw: Any, folder_name: str | None = None) -> tuple[Record | None, str | None]:
    """``(record, None)`` for a parsed ``record.json`` that is a record of this harness, else ``(None, why)``.

    A record must lie in the folder ``folder_name``, when given. ``why`` is the first field readers could not use
    (``status 'weird' is not one of ...``, ``field 'seed': ...``, ``metrics must map names to numbers``, ``run_id 'x'
    does not match its folder 'y'``).
    """
    if not isinstance(raw, dict):
        return None, f"not a record (a JSON {type(raw).__name__}, expected an object)"
    try:
        rec = Record.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        if err["type"] == "value_error":
            return None, pydantic_message(err)
        return None, f"field {'.'.join(map(str, err['loc']))!r}: {err['msg']}"
    if folder_name is not None and rec.run_id != folder_name:
        return None, f"run_id {rec.run_id!r} does not match its folder {folder_name!r}"
    return rec, None
