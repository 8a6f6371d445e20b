"""The "Speed and memory" section of attention-kernel reports, from the JSON files that
``ablate bench attention`` writes (``<results>/bench/attention-DEVICE-DTYPE.json``, see
:mod:`harness.bench.attention`), and the table that command prints. No torch import: reports stay fast.

Ratios are to ``sdpa`` at the same length (> 1: slower, or more memory). Memory ratios use the
memory *added* by forward + backward (peak minus the level before the first call), because on
CPU the process peak also holds the interpreter and torch (about 150-300 MiB) whatever the kernel.
Peaks are those of the first timed-shape call (see :mod:`harness.bench.attention`); ``peak_mib_after_repeats``
stays in the JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.table import Table

from harness.encode import INF, NEG_INF, text
from harness.report.figures import _finish, new_figure

COLUMNS = (
    "kernel",
    "T",
    "ms fwd+bwd",
    "÷ sdpa",
    "tokens/s",
    "peak MiB",
    "added MiB",
    "added ÷ sdpa",
    "backend",
    "status",
)
BASELINE = "sdpa"
MIN_ADDED_MIB = 1.0  # no memory ratio to a baseline that added less (a few pages: 1.3 MiB / 0.01 MiB = 112)


def applies(abl: Any) -> bool:
    """The section belongs to ``attention_kernel`` and to any ablation with an ``attention.kernel`` axis."""
    return abl.name == "attention_kernel" or "attention.kernel" in abl.axes


def load(results: Path, folder: Path | None = None) -> list[tuple[Path, dict[str, Any] | str]]:
    """``(path, document)`` per ``<results>/bench/attention-*.json`` (``folder``: another folder of
    them, those of a report's data file); an unreadable file gives ``(path, reason)``
    instead of raising."""
    out: list[tuple[Path, dict[str, Any] | str]] = []
    for path in sorted(Path(folder if folder is not None else Path(results) / "bench").glob("attention-*.json")):
        try:
            doc = json.loads(path.read_text())
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
    peak, base = row.get("peak_mib"), row.get("base_mib")
    return None if peak is None or base is None else peak - base


def _ratio(a: float | None, b: float | None, floor: float = 0.0) -> float | None:
    return a / b if a is not None and b is not None and a > 0 and b > floor else None


def with_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows plus ``added_mib``, ``ms_ratio`` and ``mem_ratio`` (to :data:`BASELINE`, same length;
    no ``mem_ratio`` where the baseline added under :data:`MIN_ADDED_MIB`)."""
    base = {r["seq_len"]: r for r in rows if r["kernel"] == BASELINE and r["status"] == "ok"}
    out = []
    for r in rows:
        ref = base.get(r["seq_len"]) if r["status"] == "ok" else None
        out.append(
            r
            | {
                "added_mib": _added(r),
                "ms_ratio": _ratio(r.get("ms_fwd_bwd"), ref and ref["ms_fwd_bwd"]),
                "mem_ratio": _ratio(_added(r), ref and _added(ref), MIN_ADDED_MIB),
            }
        )
    return out


def _num(x: float | None, fmt: str) -> str:
    return text(x, fmt)  # – when missing or NaN, ∞ when infinite


def cells(row: dict[str, Any]) -> list[str]:
    """One row of :data:`COLUMNS` as text (a row of :func:`with_ratios`)."""
    return [
        row["kernel"],
        "–" if row["seq_len"] is None else str(row["seq_len"]),
        _num(row.get("ms_fwd_bwd"), ".4g"),
        _num(row["ms_ratio"], ".2f"),
        _num(row.get("tokens_per_s"), ",.0f"),
        _num(row.get("peak_mib"), ",.0f"),
        _num(row["added_mib"], ",.1f"),
        _num(row["mem_ratio"], ".2f"),
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
        f"{cfg.get('n_heads')} head{'' if cfg.get('n_heads') == 1 else 's'}, batch {cfg.get('batch')}: median of {cfg.get('repeats')} timed forward + "
        f"backward calls after {cfg.get('warmup')} untimed ones. Memory: {cfg.get('memory')}. "
        f"Written {doc.get('created')}, commit {env.get('commit')}."
    )


def markdown_table(doc: dict[str, Any]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cells(r)) + " |" for r in with_ratios(doc["rows"])]
    return "\n".join(lines)


def rich_table(doc: dict[str, Any]) -> Any:
    """The same table for the terminal (``ablate bench attention``)."""
    env = doc["env"]
    table = Table(
        title=f"attention kernels, forward + backward: {env['device']} ({env['device_name']}), {env['dtype']}"
    )
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
    ax_t.set_xlabel("sequence length T (tokens)")
    ax_t.set_ylabel("ms, forward + backward (median)")
    ax_t.set_title("time", fontsize=10)
    ax_t.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    return _finish(fig, ax_m, "sequence length T (tokens)", "MiB added by forward + backward", "peak memory", path)


def _at(row: dict[str, Any]) -> str:
    return "" if row["seq_len"] is None else f" T={row['seq_len']}"


def shown(abl: Any, results: Path) -> list[Path]:
    """The bench files of the store (``<results>/bench/attention-*.json``) that ``abl``'s report
    shows, which its data file keeps so that ``ablate report --from`` shows the same section."""
    return sorted((Path(results) / "bench").glob("attention-*.json")) if applies(abl) else []


def bench_section(abl: Any, results: Path, fig_dir: Path, md_dir: Path, folder: Path | None = None) -> list[str]:
    """Markdown lines of the section (none when it does not apply or no bench JSON exists).
    ``folder``: where the bench files lie when not in ``<results>/bench`` (a data file's)."""
    found = load(results, folder) if applies(abl) else []
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
        lines += [
            f"### {env.get('device')}, {env.get('dtype')} (`{path.name}`)",
            "",
            describe(doc),
            "",
            markdown_table(doc),
            "",
        ]
        failed = [
            f"- `{r['kernel']}`{_at(r)}: **{r['status']}** — {r['reason']}" for r in doc["rows"] if r["status"] != "ok"
        ]
        lines += [*failed, ""] if failed else []
        fig = figure(
            doc,
            f"attention kernels on {env.get('device')} ({env.get('dtype')}): forward + backward",
            Path(fig_dir) / f"{abl.name}-bench-{path.stem}.png",
        )
        lines += [f"![speed and memory against length]({fig.relative_to(md_dir).as_posix()})", ""]
    return lines
