"""A report's data file read back (``ablate report NAME --from FILE``, ``ablate compare NAME --from
FILE``): the records, histories and store problems it holds, as the :class:`StoreScan` a report is
made from, checked against the grid the command names, its tuned runs as another, and the studies
kept beside it (:mod:`harness.report.tuning_data`). The format is :mod:`harness.report.data`'s:
an empty cell is None, lists and mappings are JSON, floats their ``repr``; the config columns are
read back through :class:`harness.config.RunConfig`, which gives each value its type.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from harness.config import RunConfig
from harness.errors import AblateError
from harness.experiment import metrics as metrics_mod
from harness.experiment.ablation import Ablation
from harness.experiment.grid import RunSpec
from harness.experiment.selection import Selection
from harness.registry import did_you_mean
from harness.report.data import (
    CONFIG,
    END,
    FORMAT,
    KINDS,
    OPTIONAL_FIELDS,
    RENAMED,
    ROW_FIELDS,
    RUN_FIELDS,
    STORE,
)
from harness.report.guards import Guards, read_guards
from harness.report.tuning_data import TuningData, check_studies, read_studies
from harness.store.record import Record, parse_record
from harness.store.runs import StoreScan
from harness.tune.studies import tuned_profile

TUNED = tuned_profile("")  # the suffix of a tuned runs' profile: ``PROFILE+tuned``


@dataclass
class DataFile:
    """What a data file holds: the runs of one profile (``scan``), the tuned runs its report's
    Tuning section compares (``tuned``, profile ``PROFILE+tuned``; empty when none), the profile,
    the store it names, the studies kept beside it (None: no Tuning section) and the positive
    controls of its claims kept beside it (:mod:`harness.report.guards`)."""

    scan: StoreScan
    profile: str
    store: Path
    tuned: StoreScan = field(default_factory=lambda: StoreScan(history={}))
    tuning: TuningData | None = None
    guards: Guards | None = None  # None: no controls' file beside the data file
    config_columns: frozenset[str] = frozenset()  # the file's ``config.*`` columns
    ablation: str = ""  # the ablation its runs are of


def _value(text: str, kind: str, where: str) -> Any:
    if text == "":
        return None
    try:
        if kind == "json":
            return json.loads(text)
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind == "number":
            return int(text) if text.lstrip("-").isdigit() else float(text)
    except ValueError as exc:
        raise AblateError(
            f"{where}: {text!r} is not a valid {kind} ({exc}); regenerate the file with "
            "`ablate report NAME` from the store"
        ) from None
    return text


def same_value(a: Any, b: Any) -> bool:
    """Equal values, NaN equal to NaN (two rows of one run and metric that agree)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _config_cell(text: str) -> Any:
    if text == "":
        return None
    if text[0] in "[{":
        return json.loads(text)
    return text


def _folder_hint(folder: Path, ablation: str) -> str:
    """What to pass instead of a folder: a data file of ``ablation`` that ``folder`` or its
    ``data/`` holds (a reports folder), or the file name to look for."""
    found = sorted(
        str(p)
        for d in (folder, folder / "data")
        for p in d.glob(f"{ablation}*.csv*")
        if p.is_file() and p.name.endswith((".csv", ".csv.gz")) and p.name.split(".")[0] == ablation
    )
    if found:
        more = f" ({len(found)} data files of {ablation} there, one per profile)" if len(found) > 1 else ""
        return f"is a folder, not a report's data file; pass one file, e.g. --from {found[0]}{more}"
    return (
        f"is a folder, not a report's data file, and holds none of {ablation}; pass the file "
        f"`ablate report {ablation}` wrote (reports/data/{ablation}[.PROFILE].csv[.gz])"
    )


def _spreadsheet_text(text: str) -> str:
    """A data file's text as :mod:`harness.report.data` wrote it, after a spreadsheet tool saved it
    again: the UTF-8 byte-order mark is already gone (``utf-8-sig``); CRLF line ends become LF.
    The writer ends lines with LF only, so a header ending in CRLF means the whole file was
    converted, the line breaks inside quoted cells too (the csv module would keep those CRs in
    the cell); a file whose header ends in LF is left as it is."""
    head, sep, _ = text.partition("\n")
    return text.replace("\r\n", "\n") if sep and head.endswith("\r") else text


def read_data(
    path: Path, ablation: str | None, profile: str | None, controls: bool = True, at: str | None = None
) -> DataFile:
    """The records, histories and store problems of a data file, as a :class:`StoreScan`, with the
    profile and the store path it names, its tuned runs and the studies beside it (and the controls'
    file, unless ``controls`` is False: ``ablate restore`` needs none). A UTF-8
    byte-order mark and CRLF line ends (what a spreadsheet tool writes) are accepted, gzipped too.

    Args:
        ablation: the ablation the file must hold (None: the file's own, that of its first run).
        profile: the profile it must hold (None: the file's own).
        at: how messages name the file (default ``--from PATH``; ``ablate restore`` names the path).

    Raises:
        AblateError: a missing, empty or unreadable file, a file that is not a report's data file (columns),
            a line with fewer cells than the header (a file cut short), of another ablation or profile, or whose cells do not rebuild valid run records; an
            unreadable studies' file beside it; rows of one run that disagree on a run-level cell.
    """
    path = Path(path)
    at = at if at is not None else f"--from {path}"
    if path.is_dir():
        raise AblateError(f"{at}: {_folder_hint(path, ablation or 'NAME')}")
    if path.exists() and not path.is_file():  # /dev/null, /dev/zero, a FIFO: reading would mislead or block
        raise AblateError(
            f"{at}: not a regular file (a device, a FIFO or a socket); pass a report's data file "
            "(reports/data/NAME.PROFILE.csv[.gz])"
        )
    if not path.is_file():
        raise AblateError(f"{at}: no such file; pass a report's data file (reports/data/NAME.PROFILE.csv[.gz])")
    try:
        raw = path.read_bytes()
        text = _spreadsheet_text((gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8-sig"))
        reader = csv.DictReader(io.StringIO(text))
        rows = list(reader)
        columns = reader.fieldnames or []
    except (OSError, EOFError, UnicodeDecodeError, gzip.BadGzipFile, csv.Error) as exc:
        raise AblateError(
            f"{at}: unreadable ({type(exc).__name__}: {exc}); pass a report's data file (CSV, or CSV gzipped)"
        ) from None
    if not text.strip():
        empty = "0 bytes" if not raw else "gzipped, 0 bytes inside" if raw[:2] == b"\x1f\x8b" else "blank"
        raise AblateError(
            f"{at}: empty ({empty}): a copy or download that did not happen, or a file truncated; "
            "pass a report's data file (reports/data/NAME.PROFILE.csv[.gz]), or regenerate it with "
            "`ablate report NAME` from the store"
        )
    need = {"kind", *(c for c, _ in RUN_FIELDS if c not in OPTIONAL_FIELDS), "metric", "step", "value", STORE}
    header = set(rows[0]) if rows else set(columns)
    if not rows and header and need <= header:
        raise AblateError(
            f"{at}: holds no rows (a header only); regenerate it with `ablate report NAME` from a store that holds runs"
        )
    if not rows or not need <= header or None in header:
        missing = sorted(need - header)
        raise AblateError(
            f"{at}: not a report's data file (missing columns {missing[:6]}"
            f"{' ...' if len(missing) > 6 else ''}); regenerate it with `ablate report NAME`"
        )
    # csv.DictReader fills the cells a short line lacks with None
    line, short = next(((i, r) for i, r in enumerate(rows, 2) if None in r.values()), (0, None))
    if short is not None:
        cells = sum(v is not None for v in short.values())
        first = next((r for r in rows if r.get("ablation") and r.get("profile")), None)  # the file's own grid
        name = f"{first['ablation']} --profile {first['profile'].removesuffix(TUNED)}" if first else ablation
        raise AblateError(
            f"{at}, line {line}: {cells} cells where the header has {len(columns)}: the file is cut "
            "short (a copy or download that stopped) or the line was edited; regenerate it with "
            f"`ablate report {name}` from the store"
        )
    if any(None in r or r["kind"] not in KINDS for r in rows):
        bad = next(i for i, r in enumerate(rows, 2) if None in r or r["kind"] not in KINDS)
        raise AblateError(
            f"{at}: line {bad} is not a row of a report's data file (kind one of "
            f"{', '.join(KINDS)}, as many cells as columns)"
        )
    rows = _without_end(at, rows)
    if not rows:
        raise AblateError(
            f"{at}: holds no rows (an end row only); regenerate it with `ablate report NAME` "
            "from a store that holds runs"
        )
    names = {(r["ablation"], r["profile"]) for r in rows if r["kind"] != "problem"}
    if ablation is None:
        ablation = next(r["ablation"] for r in rows if r["kind"] != "problem")
    if any(a != ablation for a, _ in names):
        other = sorted({a for a, _ in names} - {ablation})
        mixed = any(a == ablation for a, _ in names)  # a file of this ablation with rows of another
        raise AblateError(
            f"{at}: holds runs of {', '.join(other)}"
            + (
                f" beside those of {ablation}; a data file holds one ablation: regenerate it with `ablate report "
                f"{ablation}` from the store"
                if mixed
                else f", not of {ablation}; pass the data file of {ablation} (reports/data/{ablation}[.PROFILE].csv[.gz])"
            )
        )
    profiles = sorted({p.removesuffix(TUNED) for _, p in names})  # a profile and its tuned runs
    if len(profiles) > 1:
        raise AblateError(
            f"{at}: holds runs of profiles {', '.join(profiles)}; a data file holds one profile (and its "
            f"tuned runs): regenerate it with `ablate report {ablation} --profile PROFILE` from the store"
        )
    if profile is not None and profiles and profiles != [profile]:
        raise AblateError(
            f"{at}: holds runs of profile {profiles[0]}, not {profile}; pass that profile's data file or drop --profile"
        )
    config_cols = [c for c in rows[0] if c.startswith(CONFIG)]
    found = StoreScan(history={})
    records: dict[str, dict[str, Any]] = {}
    frames: dict[str, list[tuple[int, str, Any]]] = {}
    for line, r in enumerate(rows, 2):
        where = f"{at}, line {line}"
        if r["kind"] == "problem":
            if r["metric"] == "history":  # the run's unreadable history.csv: the report lists it again
                found.history[r["run_id"]] = r["reason"]
            else:
                found.problems.append(r["reason"])
            continue
        rid = r["run_id"]
        if rid not in records:
            rec: dict[str, Any] = {}
            for col, kind in RUN_FIELDS:
                if col != "torch_version" and r.get(col, "") != "":
                    rec[RENAMED.get(col, col)] = _value(r[col], kind, f"{where}, column {col}")
            nested: dict[str, dict[str, Any]] = {}
            for col in config_cols:
                section, _, key = col[len(CONFIG) :].partition(".")
                try:
                    nested.setdefault(section, {})[key] = _config_cell(r[col])
                except ValueError as exc:
                    raise AblateError(f"{where}, column {col}: {exc}") from None
            try:
                rec["config"] = RunConfig.model_validate(nested).model_dump(mode="json")
            except Exception as exc:  # noqa: BLE001 - pydantic's ValidationError: one line for the user
                first = str(exc).splitlines()[:3]
                raise AblateError(
                    f"{where}: the config columns do not make a valid config ({' '.join(first)})"
                ) from None
            rec.setdefault("reason", None)
            rec["metrics"] = {}
            records[rid] = rec
        if r["kind"] == "metric":
            value = _value(r["value"], "number", f"{where}, column value")
            _check_metric(r["metric"], value, where)
            held = records[rid]["metrics"]
            if r["metric"] in held and not same_value(held[r["metric"]], value):  # an exact duplicate is harmless
                raise AblateError(
                    f"{where}: run {rid} has two different values of metric {r['metric']} "
                    f"({held[r['metric']]!r} and {value!r}); a data file holds one per run and metric: "
                    "regenerate it with `ablate report NAME` from the store"
                )
            held[r["metric"]] = value
        elif r["kind"] == "history":
            step = _value(r["step"], "int", f"{where}, column step")
            if step is None or not r["metric"] or r["metric"] == "step":
                raise AblateError(
                    f"{where}: a history row needs a step and a metric (step {r['step']!r}, metric {r['metric']!r}); "
                    "a data file is written by `ablate report NAME` from the store, not edited"
                )
            frames.setdefault(rid, []).append(
                (step, r["metric"], _value(r["value"], "number", f"{where}, column value"))
            )
    _check_rows_agree(at, rows)
    tuned = StoreScan(history={})
    for rid, raw in records.items():
        rec, problem = parse_record(raw, rid)
        if rec is None:
            raise AblateError(f"{at}: run {rid} is not a valid run record ({problem})")
        (tuned if rec.profile.endswith(TUNED) else found).records.append(rec)
    for rid, points in frames.items():
        found.history[rid] = _wide(points)
    prof = profiles[0] if profiles else profile or ""
    return DataFile(
        found,
        prof,
        Path(rows[0][STORE]),
        tuned,
        read_studies(path, ablation, prof),
        read_guards(path, ablation, prof) if controls else None,
        frozenset(config_cols),
        ablation,
    )


def _check_metric(name: str, value: Any, where: str) -> None:
    """A metric row names a metric of :data:`harness.experiment.metrics.METRICS` and holds a value
    a run can score: a fraction right between 0 and 1, a loss not below 0, a perplexity not
    below 1 (the table's ``floor`` and, in the better direction, ``best``). NaN and an infinite
    loss are values a run can end with (a diverged one).

    Raises:
        AblateError: an unknown name (a renamed metric) or a value out of range (an edited cell).
    """
    metric = metrics_mod.lookup(name)
    regenerate = "a data file is written by `ablate report NAME` from the store, not edited"
    if metric is None:
        known = did_you_mean(name, [n for m in metrics_mod.METRICS for n in m.names((1, 2, 4), 2)])
        raise AblateError(
            f"{where}: {name!r} is not a metric ablate produces{known} (harness/experiment/metrics.py); {regenerate}"
        )
    if not isinstance(value, (int, float)) or math.isnan(value):
        return
    low, high = metric.floor, metric.best if metric.higher_is_better else None
    if (low is not None and value < low) or (high is not None and value > high):
        span = f"[{low:g}, {high:g}]" if high is not None else f"at least {low:g}"
        raise AblateError(f"{where}: {name} = {value!r}, where a run's {name} is {span} ({metric.unit}); {regenerate}")


def _without_end(at: str, rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """The rows above the file's last row, which must be its end row (:data:`harness.report.data.END`);
    all the rows of a file written before the end row (no ``format`` column).

    Raises:
        AblateError: no end row (the file was cut short at a line end, or written by an ablate
            older than its end row), or a row after it (added by hand).
    """
    ends = [i for i, r in enumerate(rows) if r["kind"] == END]
    if not ends and not rows[0].get(FORMAT):  # format 1: written before the end row
        return rows
    if not ends:
        raise AblateError(
            f"{at}: no end row (its last row, kind {END}, which a file of format {rows[0][FORMAT]} ends with): "
            "the file was cut short at a line end (a copy or download that stopped); copy it again, or regenerate "
            "it with `ablate report NAME` from the store"
        )
    if ends[0] != len(rows) - 1:
        raise AblateError(
            f"{at}, line {ends[0] + 3}: a row after the end row (line {ends[0] + 2}): rows were added to "
            "the file by hand; a data file is written by `ablate report NAME` from the store, not edited"
        )
    said = rows[-1]["value"]
    if said.isdigit() and int(said) != len(rows) - 1:
        raise AblateError(
            f"{at}: {len(rows) - 1} rows above the end row, which says {said}: rows were taken out of the "
            "file or added to it by hand; a data file is written by `ablate report NAME` from the store, not edited"
        )
    return rows[:-1]


def _check_rows_agree(at: str, rows: list[dict[str, str]]) -> None:
    """Every row of a run repeats the run's fields and config cells (:mod:`harness.report.data`);
    the records are rebuilt from each run's first row, so a later row that disagrees (a cell edited
    by hand in one row) would otherwise be read as if it agreed.

    Raises:
        AblateError: the first row whose run-level cell differs from its run's first row.
    """
    first: dict[str, tuple[int, dict[str, str]]] = {}
    for line, r in enumerate(rows, 2):
        if r["kind"] == "problem":
            continue
        line0, r0 = first.setdefault(r["run_id"], (line, r))
        for col, cell in r.items():
            if col not in ROW_FIELDS and cell != r0[col]:
                raise AblateError(
                    f"{at}, line {line}: the rows of run {r['run_id']} disagree on {col} ({cell!r} here, "
                    f"{r0[col]!r} on line {line0}); every row of a run repeats its fields: regenerate the file "
                    "with `ablate report NAME` from the store"
                )


def load_source(
    path: Path, abl: Ablation, profile: str | None, select_of: Callable[[str | None], Selection]
) -> tuple[DataFile, Selection]:
    """:func:`read_data` checked against the grid: ``(data file, selection)``.

    Args:
        abl: the ablation named on the command line.
        profile: the profile named on the command line (None: the file's).
        select_of: ``profile -> Selection`` of the grid the command's overrides describe.

    Raises:
        AblateError: as :func:`read_data`; a profile the ablation does not declare; runs that are not
            of that grid (made with other overrides, or an older declaration).
    """
    data = read_data(path, abl.name, profile)
    sel = select_of(data.profile or None)
    strays = [r.run_id for r in data.scan.records if r.run_id not in sel.run_ids]
    if strays:
        raise AblateError(
            f"--from {path}: {len(strays)} of its {len(data.scan.records)} runs (e.g. {strays[0]}) are not runs "
            f"of the {abl.name} / {sel.profile} grid with these overrides; pass the key=value overrides the "
            "report was made with (its Reproduce section names them), or, if the file was edited, regenerate it "
            f"with `ablate report {abl.name}` from the store"
        )
    where = f"--from {path}: its studies' summary"
    check_studies(data.tuning, list(abl.tasks), [abl.label(v) for v in abl.variants()], where)
    specs = {s.run_id: s for s in sel.specs}
    for rec in data.scan.records:
        if edited := _edited(rec, specs[rec.run_id], data.config_columns):
            raise AblateError(
                f"--from {path}: run {rec.run_id} is not the run its id names: {edited}; a data file is "
                f"written by `ablate report {abl.name}` from the store, not edited"
            )
    return data, sel


def _edited(rec: Record, spec: RunSpec, columns: frozenset[str] = frozenset()) -> str | None:
    """What a data file's run holds that the grid's run of the same id does not (its seed, task,
    variant, task parameters or a config value the id hashes), or None: the id is a hash of these,
    so a row edited by hand that keeps the id would otherwise pass as that run. ``columns``: the
    file's config columns, to say when a value differs because its column is missing."""
    for name, held, planned in (
        ("seed", rec.seed, spec.seed),
        ("task", rec.task, spec.task),
        ("variant", rec.variant_label, spec.variant_label),
    ):
        if held != planned:
            return f"{name} {held!r}, where the grid's run has {planned!r}"
    if rec.task_params is not None and rec.task_params != spec.task_params:
        return f"task parameters {rec.task_params}, where the grid's run has {spec.task_params}"
    held_cfg, planned_cfg = RunConfig.model_validate(rec.config).hash_dump(), spec.config.hash_dump()
    for section, keys in planned_cfg.items():
        for key, value in keys.items():
            if held_cfg.get(section, {}).get(key) != value:
                col = f"{CONFIG}{section}.{key}"
                if columns and col not in columns:
                    return f"the file has no column {col} (its default was read), where the grid's run has {value!r}"
                return f"{col} {held_cfg.get(section, {}).get(key)!r}, where the grid's run has {value!r}"
    return None


def _wide(points: list[tuple[int, str, Any]]) -> pd.DataFrame:
    """History rows back to the ``history.csv`` frame: one row per step, columns in file order."""
    cols: list[str] = []
    table: dict[int, dict[str, Any]] = {}
    for step, name, value in points:
        if name not in cols:
            cols.append(name)
        table.setdefault(step, {})[name] = math.nan if value is None else value
    frame = pd.DataFrame([{"step": s, **v} for s, v in table.items()], columns=["step", *cols])
    return frame.astype({c: "float64" for c in cols if frame[c].dtype == object})
