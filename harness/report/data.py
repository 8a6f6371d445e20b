"""The data file of a report: the tidy table of the runs a report was made from, committed beside
it (``reports/data/NAME[.PROFILE].csv`` or ``.csv.gz``), so that the report and its statistics can
be regenerated without the run store (``ablate report NAME --from FILE``, ``ablate compare NAME
--from FILE``).

One row per run and metric (``kind`` = ``metric``), per run, validation step and history column
(``kind`` = ``history``, with ``step``), one row for a run without metrics (``kind`` = ``run``),
and one per unreadable store entry the report listed (``kind`` = ``problem``, the text in
``reason``; ``metric`` = ``history`` and the run id for a run's unreadable ``history.csv``). Every row of a run repeats the run's fields: ids, status and reason, commit and
versions, timings, hardware, and its whole config, one column per key (``config.train.lr``).
Cells are plain text: an empty cell is a missing value (None), lists and mappings are JSON, and
floats are written with ``repr`` (the shortest text that reads back to the same float), so the
records rebuilt from the file equal the ones the report read, and the report made from them is the
same byte for byte apart from its timestamp (``tests/test_report_data.py``). The config columns
are read back through :class:`harness.experiment.config.RunConfig`, which gives each value its type.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from harness.errors import AblateError
from harness.experiment.ablation import Ablation
from harness.experiment.config import RunConfig
from harness.experiment.selection import Selection
from harness.store.record import Record, parse_record
from harness.store.runs import StoreScan, run_dir

KINDS = ("metric", "history", "run", "problem")
# (column, type) of the run-level fields every row of a run repeats: str, int, float or json
RUN_FIELDS: tuple[tuple[str, str], ...] = (
    ("run_id", "str"),
    ("ablation", "str"),
    ("profile", "str"),
    ("task", "str"),
    ("variant", "str"),
    ("seed", "int"),
    ("status", "str"),
    ("reason", "str"),
    ("commit", "str"),
    ("task_version", "str"),
    ("torch_version", "str"),
    ("n_params", "int"),
    ("wall_time_s", "float"),
    ("train_time_s", "float"),
    ("test_time_s", "float"),
    ("started_at", "str"),
    ("finished_at", "str"),
    ("attempt", "int"),
    ("precision", "str"),
    ("precision_requested", "str"),
    ("device", "str"),
    ("cuda", "str"),
    ("platform", "str"),
    ("cpu_count", "int"),
    ("torch_threads", "int"),
    ("kernel_backend", "str"),
    ("diverged_step", "int"),
    ("last_finite_loss", "float"),
    ("timeout_step", "int"),
    ("task_params", "json"),
    ("variant_axes", "json"),
    ("versions", "json"),
    ("tuned_params", "json"),
    ("plugins", "json"),
)
OPTIONAL_FIELDS = frozenset({"plugins"})
"""Run fields a data file written before they existed lacks (read as missing)."""
# record keys whose column has another name
_RENAMED = {"variant": "variant_label", "variant_axes": "variant"}
ROW_FIELDS = ("kind", "metric", "step", "value")
STORE = "store"  # the run store the report was made from (named in the report's header)
CONFIG = "config."
GZIP_ABOVE = 256 * 1024  # bytes of CSV text above which the file is written gzipped


def data_path(report: Path) -> Path:
    """``reports/data/NAME[.PROFILE].csv`` beside ``reports/NAME[.PROFILE].md`` (``.csv.gz`` is
    chosen when the table is large; :func:`existing` finds either)."""
    return Path(report).parent / "data" / f"{Path(report).stem}.csv"


def existing(report: Path) -> Path | None:
    """The data file written for ``report``, gzipped or not, if any."""
    plain = data_path(report)
    return next((p for p in (plain, plain.with_suffix(".csv.gz")) if p.is_file()), None)


def _cell(value: Any, kind: str = "str") -> str:
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        value = value.item()  # a numpy scalar from a history frame: its Python value
    if value is None:
        return ""
    if kind == "json" or isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _run_cells(rec: Record, store: str, config_cols: list[str]) -> dict[str, str]:
    cells = {STORE: store}
    for col, kind in RUN_FIELDS:
        if col == "torch_version":
            cells[col] = _cell((rec.versions or {}).get("torch"))
        else:  # by the key record.json holds it under (older records hold train_time_s, test_time_s)
            cells[col] = _cell(rec.get(_RENAMED.get(col, col)), kind)
    flat = _flatten(rec.config)
    cells.update({c: _cell(flat.get(c[len(CONFIG) :])) for c in config_cols})
    return cells


def _flatten(config: dict[str, Any]) -> dict[str, Any]:
    return {
        f"{section}.{key}": value
        for section, keys in config.items()
        if isinstance(keys, dict)
        for key, value in keys.items()
    }


def write_data(
    records: list[Record],
    history: dict[str, pd.DataFrame | str],
    problems: list[str],
    store: str | Path,
    report: Path,
) -> Path:
    """Write the data file of ``report`` (see the module docstring); returns its path.

    Args:
        records: the finished records the report was made from (``Analysis.scan.records``).
        history: each run's validation history (columns ``step`` and the metrics), or the problem
            line of an unreadable one (a ``problem`` row with the run's id), by run id.
        problems: the unreadable store entries the report lists (those of ``history`` aside).
        store: the run store's path as the report names it.
    """
    config_cols: list[str] = []
    for rec in records:
        config_cols += [CONFIG + k for k in _flatten(rec.config) if CONFIG + k not in config_cols]
    columns = [*ROW_FIELDS[:1], *(c for c, _ in RUN_FIELDS), *ROW_FIELDS[1:], STORE, *config_cols]
    buf = io.StringIO()
    out = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    out.writeheader()
    for rec in records:
        cells = _run_cells(rec, str(store), config_cols)
        if not rec.metrics:
            out.writerow({**cells, "kind": "run"})
        for name, value in (rec.metrics or {}).items():
            out.writerow({**cells, "kind": "metric", "metric": name, "value": _cell(value)})
        frame = history.get(rec.run_id)
        if isinstance(frame, str):
            out.writerow(
                {"kind": "problem", "run_id": rec.run_id, "metric": "history", "reason": frame, STORE: str(store)}
            )
        elif frame is not None:
            for row in frame.itertuples(index=False):
                step = row.step
                for name in frame.columns:
                    if name != "step":
                        out.writerow(
                            {
                                **cells,
                                "kind": "history",
                                "metric": name,
                                "step": _cell(step),
                                "value": _cell(getattr(row, name)),
                            }
                        )
    damaged = {v for v in history.values() if isinstance(v, str)}
    for problem in (p for p in problems if p not in damaged):
        out.writerow({"kind": "problem", "reason": problem, STORE: str(store)})
    text = buf.getvalue()
    path = data_path(report)
    path.parent.mkdir(parents=True, exist_ok=True)
    gz = path.with_suffix(".csv.gz")
    if len(text.encode()) > GZIP_ABOVE:
        with open(gz, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as fh:
            fh.write(text.encode())  # mtime 0 and no name: the same table gives the same bytes
        path.unlink(missing_ok=True)
        return gz
    path.write_text(text)
    gz.unlink(missing_ok=True)
    return path


def run_history(scan: StoreScan, results: Path, rec: Record) -> pd.DataFrame | str | None:
    """A finished run's validation history as the report draws it: the frame of its
    ``history.csv`` (``scan.history`` when the scan came from a data file), the problem line when
    that file is unreadable, None when there is none (or it lacks ``step`` and ``loss``)."""
    if scan.history is not None:
        return scan.history.get(rec.run_id)
    f = run_dir(results, rec.ablation, rec.profile, rec.run_id) / "history.csv"
    try:
        frame = pd.read_csv(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return f"{f}: unreadable validation history ({type(exc).__name__})"
    return frame if {"step", "loss"} <= set(frame.columns) else None


def history_of(scan: StoreScan, results: Path) -> dict[str, pd.DataFrame | str]:
    """:func:`run_history` of every ok run that has one, by run id."""
    out = {}
    for rec in scan.records:
        if rec.status == "ok" and (frame := run_history(scan, results, rec)) is not None:
            out[rec.run_id] = frame
    return out


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


def _config_cell(text: str) -> Any:
    if text == "":
        return None
    if text[0] in "[{":
        return json.loads(text)
    return text


def read_data(path: Path, ablation: str, profile: str | None) -> tuple[StoreScan, str, Path]:
    """The records, histories and store problems of a data file, as a :class:`StoreScan`, with the
    profile and the store path it names.

    Args:
        ablation: the ablation the file must hold.
        profile: the profile it must hold (None: the file's own).

    Raises:
        AblateError: a missing or unreadable file, a file that is not a report's data file (columns),
            of another ablation or profile, or whose cells do not rebuild valid run records.
    """
    path = Path(path)
    if not path.is_file():
        raise AblateError(
            f"--from {path}: no such file; pass a report's data file (reports/data/NAME.PROFILE.csv[.gz])"
        )
    try:
        raw = path.read_bytes()
        text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()
        rows = list(csv.DictReader(io.StringIO(text)))
    except (OSError, EOFError, UnicodeDecodeError, gzip.BadGzipFile, csv.Error) as exc:
        raise AblateError(
            f"--from {path}: unreadable ({type(exc).__name__}: {exc}); pass a report's data file (CSV, or CSV gzipped)"
        ) from None
    need = {"kind", *(c for c, _ in RUN_FIELDS if c not in OPTIONAL_FIELDS), "metric", "step", "value", STORE}
    header = set(rows[0]) if rows else set()
    if not rows or not need <= header or None in header:
        missing = sorted(need - header)
        raise AblateError(
            f"--from {path}: not a report's data file (missing columns {missing[:6]}"
            f"{' ...' if len(missing) > 6 else ''}); regenerate it with `ablate report NAME`"
        )
    if any(None in r or r["kind"] not in KINDS for r in rows):
        bad = next(i for i, r in enumerate(rows, 2) if None in r or r["kind"] not in KINDS)
        raise AblateError(
            f"--from {path}: line {bad} is not a row of a report's data file (kind one of "
            f"{', '.join(KINDS)}, as many cells as columns)"
        )
    names = {(r["ablation"], r["profile"]) for r in rows if r["kind"] != "problem"}
    if any(a != ablation for a, _ in names):
        other = sorted({a for a, _ in names} - {ablation})
        raise AblateError(
            f"--from {path}: holds runs of {', '.join(other)}, not of {ablation}; pass the data file of "
            f"{ablation} (reports/data/{ablation}[.PROFILE].csv)"
        )
    profiles = sorted({p for _, p in names})
    if len(profiles) > 1 or (profile is not None and profiles and profiles != [profile]):
        raise AblateError(
            f"--from {path}: holds runs of profile(s) {', '.join(profiles)}"
            f"{'' if profile is None else f', not {profile}'}; pass that profile's data file or drop --profile"
        )
    config_cols = [c for c in rows[0] if c.startswith(CONFIG)]
    found = StoreScan(history={})
    records: dict[str, dict[str, Any]] = {}
    frames: dict[str, list[tuple[int, str, Any]]] = {}
    for line, r in enumerate(rows, 2):
        where = f"--from {path}, line {line}"
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
                    rec[_RENAMED.get(col, col)] = _value(r[col], kind, f"{where}, column {col}")
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
            records[rid]["metrics"][r["metric"]] = _value(r["value"], "number", f"{where}, column value")
        elif r["kind"] == "history":
            frames.setdefault(rid, []).append(
                (
                    _value(r["step"], "int", f"{where}, column step"),
                    r["metric"],
                    _value(r["value"], "number", f"{where}, column value"),
                )
            )
    for rid, raw in records.items():
        rec, problem = parse_record(raw, rid)
        if rec is None:
            raise AblateError(f"--from {path}: run {rid} is not a valid run record ({problem})")
        found.records.append(rec)
    for rid, points in frames.items():
        found.history[rid] = _wide(points)
    return found, (profiles[0] if profiles else profile or ""), Path(rows[0][STORE])


def load_source(
    path: Path, abl: Ablation, profile: str | None, select_of: Callable[[str | None], Selection]
) -> tuple[StoreScan, Selection, Path]:
    """:func:`read_data` checked against the grid: ``(scan, selection, store)``.

    Args:
        abl: the ablation named on the command line.
        profile: the profile named on the command line (None: the file's).
        select_of: ``profile -> Selection`` of the grid the command's overrides describe.

    Raises:
        AblateError: as :func:`read_data`; a profile the ablation does not declare; runs that are not
            of that grid (made with other overrides, or an older declaration).
    """
    found, prof, store = read_data(path, abl.name, profile)
    sel = select_of(prof or None)
    strays = [r.run_id for r in found.records if r.run_id not in sel.run_ids]
    if strays:
        raise AblateError(
            f"--from {path}: {len(strays)} of its {len(found.records)} runs (e.g. {strays[0]}) are not runs "
            f"of the {abl.name} / {sel.profile} grid with these overrides; pass the key=value overrides the "
            "report was made with (its Reproduce section names them)"
        )
    return found, sel, store


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
