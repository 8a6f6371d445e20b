"""Formatting comparison tables: rich in a terminal, markdown for reports, CSV and JSON raw."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import pandas as pd
from rich import box
from rich.cells import cell_len
from rich.console import Group
from rich.table import Table as RichTable
from rich.text import Text

from harness import encode
from harness.analysis import verdicts as vd
from harness.analysis.table import Table
from harness.experiment import metrics

HEADERS = ("variant", "n", "excluded", "mean ± SD", "95% CI", "Δ (+ = better)", "95% CI of Δ", "W/T/L", "d_z")
HEADERS += ("p (t)", "p (perm)", "p adj", "p adj (perm)", "MDE", "verdict", "params", "s/run")


def _num(x: Any, digits: int = 4) -> str:
    if encode.text(x) in (encode.UNDEFINED, "∞", "-∞"):
        return encode.text(x)
    x = float(x)
    big = abs(x) >= 10**digits  # e.g. steps: 1267, not 1.27e+03
    return format(x, ".2e" if x != 0 and (abs(x) >= 1e6 or abs(x) < 1e-3) else ".0f" if big else f".{digits}g")


def _p(x: Any) -> str:
    return encode.text(x) if encode.text(x) == encode.UNDEFINED else "<0.001" if x < 1e-3 else f"{x:.3f}"


def bounds(metric: str, higher_is_better: bool) -> tuple[float | None, float | None]:
    """The range of ``metric``.

    ``(0, 1)`` where its best value is 1, ``(0, None)`` where it is 0 and lower is better.
    """
    best = metrics.best_value(metric)
    if best == 1.0 and higher_is_better:
        return 0.0, 1.0
    if best == 0.0 and not higher_is_better:
        return 0.0, None
    return None, None


def clipped_ci(table: Table, low: Any, high: Any) -> tuple[Any, Any, bool]:
    """A variant's 95% CI of the mean clipped to the metric's :func:`bounds`: ``(low, high, moved)``."""
    lo, hi = bounds(table.metric, table.higher_is_better)
    lo, hi = -math.inf if lo is None else lo, math.inf if hi is None else hi
    out = [min(max(x, lo), hi) if isinstance(x, (int, float)) and math.isfinite(x) else x for x in (low, high)]
    moved = any(a is not b and a != b for a, b in zip(out, (low, high), strict=True))
    return out[0], out[1], moved


_EXCLUDED = (("below_gate", "below gate"), ("not_ok", "failed/diverged/timeout"), ("no_value", "without a value"))


def formatted(table: Table) -> pd.DataFrame:
    """The table's rows as display strings, one column per :data:`HEADERS` entry.

    In the baseline's row, those of a comparison with it (Δ to the verdict) are blank.
    """
    rows = []
    for _, r in table.frame.iterrows():
        base = r.get("verdict") == vd.BASELINE
        n = ("0" if pd.isna(r.get("n")) else str(int(r["n"]))) + (f"/{int(r['planned'])}" if r.get("planned") else "")
        n += f" ({int(r['stalled'])} stalled)" if r.get("stalled") else ""  # in n, flagged: learned nothing
        excluded = ", ".join(f"{int(r[k])} {why}" for k, why in _EXCLUDED if r.get(k)) or "0"
        ci = "[{}, {}]".format(*map(_num, clipped_ci(table, r.get("ci_low"), r.get("ci_high"))[:2]))
        compared = [  # Δ (+ = better) ... verdict
            _num(r.get("delta"), 3),
            f"[{_num(r.get('delta_ci_low'), 3)}, {_num(r.get('delta_ci_high'), 3)}]",
            "" if pd.isna(r.get("wins")) else f"{r['wins']}/{r['ties']}/{r['losses']}",
            _num(r.get("d_z"), 3),
            *(_p(r.get(k)) for k in ("p", "p_perm", "p_adj", "p_perm_adj")),
            _num(r.get("mde"), 3),
            r.get("verdict") if isinstance(r.get("verdict"), str) else "–",
        ]
        rows.append(
            [f"{r['variant']} (baseline)" if base else r["variant"], n, excluded]
            + [f"{_num(r.get('mean'))} ± {_num(r.get('sd'), 2)}", ci, *([""] * len(compared) if base else compared)]
            + [f"{int(r['n_params']):,}" if not pd.isna(r.get("n_params")) else "–", _num(r.get("wall_time_s"), 3)]
        )
    return pd.DataFrame(rows, columns=HEADERS)


def md_table(columns: Iterable[Any], rows: Iterable[Iterable[Any]]) -> list[str]:
    """A markdown table's lines, header and rule first; in a cell, whitespace reads as one space, ``|`` escaped."""

    def line(cells: Iterable[Any]) -> str:
        return "| " + " | ".join(" ".join(str(c).split()).replace("|", "\\|") for c in cells) + " |"

    header = list(columns)
    return [line(header), "|" + "---|" * len(header), *map(line, rows)]


def title(table: Table) -> str:
    """The heading of a comparison table: ``task · metric (higher is better) · family``."""
    arrow = "higher is better" if table.higher_is_better else "lower is better"
    if metrics.is_ratio(table.metric):
        return f"{table.task} · log {table.metric} ({arrow}; Δ: log of the per-seed ratio) · {table.family}"
    return f"{table.task} · {table.metric} ({arrow}) · {table.family}"


def markdown(table: Table) -> str:
    """The table as markdown, its cells as :func:`formatted` writes them (numbers left as text)."""
    return formatted(table).to_markdown(index=False, disable_numparse=True)


def render(tables: list[Table], fmt: str, console: Any = None) -> Any:
    """Render tables as rich renderables (``table``), markdown, CSV or JSON text."""
    if fmt == "md":
        return _md(tables, formatted)
    if fmt in ("csv", "json"):  # raw values; undefined and infinite ones as harness.encode says
        raw = pd.concat(
            [t.frame.assign(task=t.task, metric=t.metric, family=t.family) for t in tables], ignore_index=True
        )
        if fmt == "csv":
            return encode.to_csv(raw)
        return encode.dumps(raw.astype(object).to_dict(orient="records"), indent=1)

    return summary(tables, console.width if console is not None else 100)


SUMMARY = ("variant", "n", "mean ± SD", "Δ (+ = better) [95% CI]", "p adj", "verdict")
"""The columns of a terminal's comparison (``ablate run``, ``ablate compare``): those a reader decides from."""
SUMMARY_DROPS = ("n", "mean ± SD", "p adj")
"""The columns a terminal too narrow for all of :data:`SUMMARY` loses, in this order."""


def summary_frame(table: Table) -> pd.DataFrame:
    """The table's rows as the display strings of :data:`SUMMARY`."""
    full = formatted(table)
    base = [r.get("verdict") == vd.BASELINE for _, r in table.frame.iterrows()]  # no column: no run compared
    full["Δ (+ = better) [95% CI]"] = [
        "" if b else f"{d} {ci}" for b, d, ci in zip(base, full["Δ (+ = better)"], full["95% CI of Δ"])
    ]
    # runs left out (below the gate, failed) are said where the verdict is: no other column says it
    full["verdict"] = [
        "; ".join(x for x in (vd.BASELINE if b else v, "" if e == "0" else e) if x)
        for b, v, e in zip(base, full["verdict"], full["excluded"])
    ]
    full["variant"] = table.frame["variant"].astype(str).to_list()
    return full[list(SUMMARY)]


def summary_markdown(tables: list[Table]) -> str:
    """The :data:`SUMMARY` columns of ``tables`` as markdown (``ablate run`` piped or captured)."""
    return _md(tables, summary_frame)


def _md(tables: list[Table], frame: Any) -> str:
    return "\n\n".join(f"**{title(t)}**\n\n" + frame(t).to_markdown(index=False, disable_numparse=True) for t in tables)


def summary(tables: list[Table], width: int) -> Group:
    """The :data:`SUMMARY` columns as rich tables no wider than ``width``.

    Only the verdict wraps; else the columns of :data:`SUMMARY_DROPS` go from every table alike, and at last the
    variant name folds.
    """
    frames = [summary_frame(t) for t in tables]
    columns = list(SUMMARY)
    for dropped in SUMMARY_DROPS:
        if all(_least_width(_fitted(f, columns)) <= width for f in frames):
            break
        columns.remove(dropped)
    out: list[Any] = []
    for t, frame in zip(tables, frames):
        table = _fitted(frame, columns)
        excess = _least_width(table) - width
        if excess > 0:  # the last resort: the variant name folds, the numbers stay whole
            table.columns[0].width = max(8, (table.columns[0].width or 0) - excess)
        out += [*([Text("")] if out else []), Text(title(t), style="bold"), table]
    return Group(*out)


def _fitted(frame: pd.DataFrame, columns: list[str]) -> RichTable:
    table = RichTable(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
    for name in columns:
        cells = [name, *frame[name]]
        if name == "verdict":  # words wrap, each word whole (numbers hold no spaces)
            table.add_column(name, min_width=max(cell_len(w) for c in cells for w in (c.split() or [""])))
        else:
            table.add_column(name, width=max(map(cell_len, cells)), no_wrap=name != "variant", overflow="fold")
    for _, row in frame.iterrows():
        table.add_row(*(Text(row[c]) for c in columns))  # a name is text, never rich markup
    return table


def _least_width(table: RichTable) -> int:
    """The fewest terminal columns ``table`` takes with each column at its width or least width."""
    _, right, _, left = table.padding
    gaps = (len(table.columns) - 1) * (1 + right + left)  # a separator and the padding between columns
    return gaps + sum(c.width if c.width is not None else (c.min_width or 0) for c in table.columns)
