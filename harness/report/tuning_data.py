"""What a report's "Tuning" section prints of each Optuna study, kept in its data file
(``restored/NAME.PROFILE.tuning.json``) so that ``--from`` and a restored store print the same section
without the Optuna storage. Plain JSON, no timestamp: the same studies give the same bytes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path, PurePosixPath
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from harness.errors import AblateError

M = TypeVar("M", bound=BaseModel)


def read_sidecar(
    path: Path, model: type[M], data_file: Path, what: str, ablation: str, profile: str, fix: str
) -> M | None:
    """A JSON file of one report's ablation and profile validated as ``model``; None when there is none.
    AblateError: not JSON of this model (naming it as ``what``, with ``fix``), or of another ablation or profile."""
    if not path.is_file():
        return None
    try:
        data = model.model_validate(json.loads(path.read_text()))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValidationError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise AblateError(f"{data_file}: its {what} {path} is unreadable ({first}); {fix}") from None
    found = (getattr(data, "ablation"), getattr(data, "profile"))  # noqa: B009 - fields of the model
    if found != (ablation, profile):
        raise AblateError(
            f"{data_file}: its {what} {path} is of {found[0]} / {found[1]}, not of {ablation} / {profile}; "
            "regenerate it with `ablate report NAME`"
        )
    return data


Param = bool | int | float | str | None  # a number, a categorical choice


class StudyFigure(BaseModel):
    """One figure drawn for a study: its kind and its path in the report's folder (``figures/...png``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: str
    path: str

    @field_validator("path")
    @classmethod
    def _under_figures(cls, path: str) -> str:
        # copied by this path (--from, restore): never from or to outside the report's figures/
        parts = PurePosixPath(path).parts
        if len(parts) != 2 or parts[0] != "figures" or not path.endswith(".png") or "\\" in path:
            raise ValueError(f"a figure's path is figures/NAME.png, not {path!r}")
        return path


class StudySummary(BaseModel):
    """What the section prints of one (task, variant) study (``objectives`` above 1: not ablate tune's)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    task: str
    variant: str
    name: str
    objectives: int = 1
    complete: int = 0
    pruned: int = 0
    failed: int = 0
    diverged: int = 0
    best_value: float | None = None
    best_params: dict[str, Param] | None = None
    last_reason: str | None = None
    importances: dict[str, float] | None = None
    importance_problem: str | None = None
    figures: list[StudyFigure] = []

    @property
    def finished(self) -> int:
        """The trials ``ablate tune --trials`` counts (``diverged`` is a part of ``failed``)."""
        return self.complete + self.pruned + self.failed


class TuningData(BaseModel):
    """Every study of one ablation and profile, and the storage (password masked)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    ablation: str
    profile: str
    storage: str
    studies: list[StudySummary]


def restored_studies_path(results: Path, ablation: str, profile: str) -> Path:
    """Where ``ablate restore`` puts the studies' summary of ``ablation`` / ``profile`` (and beside it their figures)."""
    return Path(results) / "restored" / f"{ablation}.{profile}.tuning.json"


def check_studies(data: TuningData | None, tasks: list[str], variants: list[str], where: str) -> None:
    """Raises AblateError for a study of ``data`` whose task or variant the ablation does not have."""
    for s in data.studies if data is not None else []:
        if s.task not in tasks or s.variant not in variants:
            raise AblateError(
                f"{where}: study {s.name!r} is of task {s.task!r} / variant {s.variant!r}, which the ablation does "
                f"not have (tasks {', '.join(tasks)}; variants {', '.join(variants)}); regenerate the summary with "
                "`ablate report NAME` from the store, or delete it to leave the Tuning section out"
            )


def read_restored(results: Path, ablation: str, profile: str, out: Path) -> TuningData | None:
    """The studies' summary ``ablate restore`` copied (None: none), its figures copied into ``out``."""
    path = restored_studies_path(results, ablation, profile)
    fix = f"run `ablate restore` on the data file again, or delete {path}"
    data = read_sidecar(path, TuningData, path, "studies' summary", ablation, profile, fix)
    if data is not None:
        copy_figures(data, path.parent, out)
    return data


def studies_json(data: TuningData) -> bytes:
    return (json.dumps(data.model_dump(mode="python"), indent=1, ensure_ascii=False) + "\n").encode()


def copy_figures(data: TuningData, source: Path, out: Path) -> list[str]:
    """Copy the studies' figures from the report folder ``source`` to ``out``; returns those found in neither."""
    missing = []
    for fig in (f for s in data.studies for f in s.figures):
        src, dst = Path(source) / fig.path, Path(out) / fig.path
        if src.is_file() and src.resolve() != dst.resolve():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
        elif not dst.is_file():
            missing.append(str(src))
    return missing
