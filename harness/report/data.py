"""The data file of a report: the tidy table of the runs a report was made from, committed beside
it (``reports/data/NAME[.PROFILE].csv`` or ``.csv.gz``), so that the report and its statistics can
be regenerated without the run store (``ablate report NAME --from FILE``, ``ablate compare NAME
--from FILE``).

One row per run and metric (``kind`` = ``metric``), per run, validation step and history column
(``kind`` = ``history``, with ``step``), one row for a run without metrics (``kind`` = ``run``),
and one per unreadable store entry the report listed (``kind`` = ``problem``, the text in
``reason``; ``metric`` = ``history`` and the run id for a run's unreadable ``history.csv``).
The tuned runs a report's Tuning section compares (``ablate run --tuned``, profile
``PROFILE+tuned``) follow, as ``metric`` and ``run`` rows only (that section draws no curve); the
studies it lists are kept beside the file (:mod:`harness.report.tuning_data`), and so are the
``ablate bench attention`` files a kernel ablation's Speed section shows (``data/bench/``,
:func:`harness.report.bench.keep`). The last row (``kind`` = ``end``) marks the end of the table
and gives, in ``value``, the number of rows above it: a file cut short at a line end lacks it, and
one whose rows were taken out or added has another count; both are refused. Every row gives the file's format
(column ``format``: 2); a file without that column was written before the end row and is read
without one.
Every row of a run repeats the run's fields: ids, status and reason, commit and versions,
timings, hardware, and its whole config, one column per key (``config.train.lr``).
Cells are plain text: an empty cell is a missing value (None), lists and mappings are JSON, and
floats are written with ``repr`` (the shortest text that reads back to the same float), so the
records rebuilt from the file equal the ones the report read, and the report made from them is the
same byte for byte apart from its timestamp (``tests/report/test_report_data.py``). Written here,
read back by :mod:`harness.report.source`.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path
from typing import Any

import pandas as pd

from harness.store.record import Record

KINDS = ("metric", "history", "run", "problem", "end")
END = "end"
"""The kind of the file's last row: a file without it was cut short at a line end (a copy or a
download that stopped), which no other check can see; a row after it was added by hand."""
FORMAT = "format"
"""The column that gives the file's format on every row: 2 since the end row; a file without the
column (format 1) was written before it, and is read without one."""
VERSION = 2
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
    ("code_versions", "json"),
    ("undefined_metrics", "json"),
    ("flags", "json"),
)
OPTIONAL_FIELDS = frozenset({"plugins", "code_versions", "undefined_metrics", "flags"})
"""Run fields a data file written before they existed lacks (read as missing)."""
# record keys whose column has another name
RENAMED = {"variant": "variant_label", "variant_axes": "variant"}
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
    cells = {STORE: store, FORMAT: str(VERSION)}
    for col, kind in RUN_FIELDS:
        if col == "torch_version":
            cells[col] = _cell((rec.versions or {}).get("torch"))
        else:  # by the key record.json holds it under (older records hold train_time_s, test_time_s)
            cells[col] = _cell(rec.get(RENAMED.get(col, col)), kind)
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


class _Counted:
    """A csv writer that counts the rows it wrote (the end row gives the count)."""

    def __init__(self, writer: csv.DictWriter) -> None:
        self.writer, self.rows = writer, 0

    def writerow(self, row: dict[str, str]) -> None:
        self.writer.writerow(row)
        self.rows += 1


def write_data(
    records: list[Record],
    history: dict[str, pd.DataFrame | str],
    problems: list[str],
    store: str | Path,
    report: Path,
    tuned: list[Record] | None = None,
) -> Path:
    """Write the data file of ``report`` (see the module docstring); returns its path.

    Args:
        records: the finished records the report was made from (``Analysis.scan.records``).
        history: each run's validation history (columns ``step`` and the metrics), or the problem
            line of an unreadable one (a ``problem`` row with the run's id), by run id.
        problems: the unreadable store entries the report lists (those of ``history`` aside).
        store: the run store's path as the report names it.
        tuned: the tuned runs the report's Tuning section compares (their metrics, no history).
    """
    runs = [*records, *(tuned or [])]  # a tuned run has no entry in ``history``
    config_cols: list[str] = []
    for rec in runs:
        config_cols += [CONFIG + k for k in _flatten(rec.config) if CONFIG + k not in config_cols]
    columns = [*ROW_FIELDS[:1], *(c for c, _ in RUN_FIELDS), *ROW_FIELDS[1:], STORE, FORMAT, *config_cols]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n", restval="")
    writer.writeheader()
    out = _Counted(writer)
    for rec in runs:
        cells = _run_cells(rec, str(store), config_cols)
        if not rec.metrics:
            out.writerow({**cells, "kind": "run"})
        for name, value in (rec.metrics or {}).items():
            out.writerow({**cells, "kind": "metric", "metric": name, "value": _cell(value)})
        frame = history.get(rec.run_id)
        if isinstance(frame, str):
            out.writerow(
                {
                    "kind": "problem",
                    "run_id": rec.run_id,
                    "metric": "history",
                    "reason": frame,
                    STORE: str(store),
                    FORMAT: str(VERSION),
                }
            )
        elif frame is not None:
            for row in frame.to_dict("records"):  # not itertuples: it renames a column such as acc@x1
                for name in frame.columns:
                    if name != "step":
                        out.writerow(
                            {
                                **cells,
                                "kind": "history",
                                "metric": name,
                                "step": _cell(row["step"]),
                                "value": _cell(row[name]),
                            }
                        )
    damaged = {v for v in history.values() if isinstance(v, str)}
    for problem in (p for p in problems if p not in damaged):
        out.writerow({"kind": "problem", "reason": problem, STORE: str(store), FORMAT: str(VERSION)})
    ends = f"the end of the table: {len(records)} runs and {len(tuned or [])} tuned runs above"
    out.writerow({"kind": END, "value": str(out.rows), "reason": ends, STORE: str(store), FORMAT: str(VERSION)})
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
