"""The "Speed and memory" section of attention-kernel reports, and the table ``ablate bench attention`` prints.

The section is made from the JSON files ``ablate bench attention`` writes (:mod:`harness.bench.attention`). No torch
import. Memory ratios use the memory *added* by forward + backward: on CPU the process peak also holds the interpreter
and torch (about 150-300 MiB) whatever the kernel.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.table import Table

from harness.encode import INF, NEG_INF, text
from harness.report.figures import _finish, new_figure
from harness.report.tables import md_table

COLUMNS = ("kernel", "T", "ms fwd+bwd", "÷ sdpa", "tokens/s", "peak MiB", "added MiB", "added ÷ sdpa", "backend")
COLUMNS += ("status",)
BASELINE = "sdpa"
MIN_ADDED_MIB = 1.0  # no memory ratio to a baseline that added less (a few pages: 1.3 MiB / 0.01 MiB = 112)


def files(abl: Any, folder: Path) -> list[Path]:
    """The bench files of ``folder`` that ``abl``'s report shows.

    Those are the files of the report of an ablation with an ``attention.kernel`` axis (attention_kernel's).
    """
    return sorted(Path(folder).glob("attention-*.json")) if "attention.kernel" in abl.axes else []


def load(folder: Path) -> list[tuple[Path, dict[str, Any] | str]]:
    """``(path, document)`` per ``folder/attention-*.json``; ``(path, reason)`` for an unreadable one."""
    out: list[tuple[Path, dict[str, Any] | str]] = []
    for path in sorted(Path(folder).glob("attention-*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(doc.get("rows"), list):
                raise ValueError("no 'rows' list")
            for row in doc["rows"]:  # infinite values are written as "Infinity" (harness.encode)
                if isinstance(row, dict):
                    row.update({k: float(v) for k, v in row.items() if v in (INF, NEG_INF)})
            out.append((path, doc))
        except (OSError, ValueError, AttributeError) as exc:
            out.append((path, f"{type(exc).__name__}: {exc}"))
    return out


def _added(row: dict[str, Any]) -> float | None:
    return None if row.get("peak_mib") is None or row.get("base_mib") is None else row["peak_mib"] - row["base_mib"]


def _ratio(a: float | None, b: float | None, floor: float = 0.0) -> float | None:
    return a / b if a is not None and b is not None and a > 0 and b > floor else None


def with_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows plus ``added_mib``, and ``ms_ratio`` and ``mem_ratio`` to :data:`BASELINE` at the same length."""
    base = {r["seq_len"]: r for r in rows if r["kernel"] == BASELINE and r["status"] == "ok"}
    refs = [base.get(r["seq_len"]) if r["status"] == "ok" else None for r in rows]
    return [
        r
        | {"added_mib": _added(r), "ms_ratio": _ratio(r.get("ms_fwd_bwd"), ref and ref["ms_fwd_bwd"])}
        | {"mem_ratio": _ratio(_added(r), ref and _added(ref), MIN_ADDED_MIB)}
        for r, ref in zip(rows, refs)
    ]


def cells(row: dict[str, Any]) -> list[str]:
    """One row of :data:`COLUMNS` as text (a row of :func:`with_ratios`)."""
    return [
        row["kernel"],
        "–" if row["seq_len"] is None else str(row["seq_len"]),
        text(row.get("ms_fwd_bwd"), ".4g"),
        text(row["ms_ratio"], ".2f"),
        text(row.get("tokens_per_s"), ",.0f"),
        text(row.get("peak_mib"), ",.0f"),
        text(row["added_mib"], ",.1f"),
        text(row["mem_ratio"], ".2f"),
        row.get("backend") or "–",
        row["status"],
    ]


def describe(doc: dict[str, Any]) -> str:
    """One sentence: what ran, where, and how loaded the machine was."""
    env, cfg = doc.get("env", {}), doc.get("config", {})
    load = ""
    if env.get("loadavg_start") is not None:
        load = (
            f"; 1-minute load average {env['loadavg_start']:.2f} at the start and "
            f"{text(env.get('loadavg_end'), '.2f')} at the end ({env.get('cpu_count')} CPUs)"
        )
    return (
        f"torch {env.get('torch')} on {env.get('device')} ({env.get('device_name')}), {env.get('dtype')}, "
        f"{env.get('threads')} thread(s){load}. One attention layer, d_model {cfg.get('d_model')}, "
        f"{cfg.get('n_heads')} head{'' if cfg.get('n_heads') == 1 else 's'}, batch {cfg.get('batch')}: "
        f"median of {cfg.get('repeats')} timed forward + "
        f"backward calls after {cfg.get('warmup')} untimed ones. Memory: {cfg.get('memory')}. "
        f"Written {doc.get('created')}, commit {env.get('commit')}."
    )


def rich_table(doc: dict[str, Any]) -> Any:
    """The same table for the terminal (``ablate bench attention``)."""
    env = doc["env"]
    title = f"attention kernels, forward + backward: {env['device']} ({env['device_name']}), {env['dtype']}"
    table = Table(title=title)
    for col in COLUMNS:
        table.add_column(col, justify="left" if col in ("kernel", "backend", "status") else "right")
    for r in with_ratios(doc["rows"]):
        table.add_row(*cells(r))
    return table


def figure(doc: dict[str, Any], title: str, path: Path) -> Path:
    """Log-log: time (left) and added memory (right) against T, one line per kernel."""
    fig = new_figure(9.6, 4.0)
    from matplotlib.ticker import NullLocator  # after new_figure: matplotlib imported whatever MPLBACKEND says

    ax_t, ax_m = fig.subplots(1, 2)
    for kernel in dict.fromkeys(r["kernel"] for r in doc["rows"]):
        ok = [r for r in with_ratios(doc["rows"]) if r["kernel"] == kernel and r["status"] == "ok"]
        if ok:
            ax_t.plot([r["seq_len"] for r in ok], [r["ms_fwd_bwd"] for r in ok], marker="o", label=kernel)
            mem = [(r["seq_len"], r["added_mib"]) for r in ok if (r["added_mib"] or 0) > 0]  # log axis: > 0 only
            ax_m.plot([m[0] for m in mem], [m[1] for m in mem], marker="o", label=kernel)
    ticks = sorted({r["seq_len"] for r in doc["rows"] if r["status"] == "ok"})
    for ax in (ax_t, ax_m):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.xaxis.set_minor_locator(NullLocator())
    ax_t.set(xlabel="sequence length T (tokens)", ylabel="ms, forward + backward (median)")
    ax_t.set_title("time", fontsize=10)
    ax_t.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    return _finish(ax_m, "sequence length T (tokens)", "MiB added by forward + backward", "peak memory", path)


def bench_section(abl: Any, folder: Path, fig_dir: Path, md_dir: Path) -> list[str]:
    """Markdown lines of the section of the bench files in ``folder``; none where :func:`files` finds none."""
    found = load(folder) if files(abl, folder) else []
    if not found:
        return []
    lines = [
        "## Speed and memory (`ablate bench attention`)",
        "",
        "The kernels alone, outside training and the run store: forward + backward of one attention layer "
        f"over sequence lengths. `÷ sdpa`: ratio to `{BASELINE}` at the same length (> 1 = slower, or more "
        f"memory; none where `{BASELINE}` added under {MIN_ADDED_MIB:g} MiB); `added MiB`: peak minus the memory "
        "in use before the call. `backend`: the SDPA backend whose ops ran (the kernel's own name for kernels "
        "that call no SDPA op).",
        "",
    ]
    for path, doc in found:
        if isinstance(doc, str):
            lines += [f"- unreadable bench file `{path}`: {doc}", ""]
            continue
        env = doc.get("env", {})
        lines += [f"### {env.get('device')}, {env.get('dtype')} (`{path.name}`)", "", describe(doc), ""]
        lines += [*md_table(COLUMNS, map(cells, with_ratios(doc["rows"]))), ""]
        failed = [r for r in doc["rows"] if r["status"] != "ok"]
        at = ["" if r["seq_len"] is None else f" T={r['seq_len']}" for r in failed]
        lines += [f"- `{r['kernel']}`{t}: **{r['status']}** — {r['reason']}" for r, t in zip(failed, at)]
        lines += [""] if failed else []
        fig = figure(
            doc,
            f"attention kernels on {env.get('device')} ({env.get('dtype')}): forward + backward",
            Path(fig_dir) / f"{abl.name}-bench-{path.stem}.png",
        )
        lines += [f"![speed and memory against length]({fig.relative_to(md_dir).as_posix()})", ""]
    return lines
