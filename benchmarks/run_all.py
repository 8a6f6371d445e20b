"""Every benchmark of benchmarks/, one after another in one process tree on the same machine state,
and one table of the figures with each goal: harness overhead at two model sizes and the cost of
the progress display (overhead.py), workers on two grids (workers.py), start-up to the first step
and the whole smoke command (startup.py), `ablate --help` and `ablate list` (cli_speed.py), and the
smoke profile of every ablation (smoke_suite.py). Each runs as a fresh process (`--json`), so no
benchmark inherits another's imports. The load average is read at the start and at the end: on
a machine with other work, the ratios measured side by side hold better than the seconds.

Usage: python benchmarks/run_all.py [--quick] [--only overhead,workers,startup,cli,smoke] [--json]
`--quick`: every benchmark at a small size (a sanity run of a few minutes; its figures are not the
goals' figures). docs/benchmarks.md's first table is this command's output on idle cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SECTIONS = ("overhead", "workers", "startup", "cli", "smoke")


@dataclass(frozen=True)
class Row:
    """One line of the table: what, the figure as text, the goal as text, and whether it is met
    (None: no goal)."""

    figure: str
    value: str
    goal: str
    met: bool | None


def _script(name: str, *args: str) -> list[dict]:
    """Run ``benchmarks/<name>.py --json ARGS`` and parse its JSON lines; one line on stderr when it
    ends (the table comes at the end, after minutes)."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(HERE / f"{name}.py"), "--json", *args], capture_output=True, text=True, cwd=HERE.parent
    )
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{name}.py {' '.join(args)}: {time.perf_counter() - t0:.0f} s (load average {load})", file=sys.stderr)
    if proc.returncode:
        raise RuntimeError(f"{name}.py {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def collect(sections: tuple[str, ...], quick: bool) -> dict:
    """Run the benchmarks of ``sections``; their JSON figures by section. A benchmark that fails
    is reported in ``failed`` (its stderr's end) and the others still run: a table of the rest
    beats none after half an hour."""
    overhead_steps = {"copy": 100, "tinyshakespeare": 50} if quick else {"copy": 1000, "tinyshakespeare": 500}
    jobs = {
        "overhead": lambda: [
            _script("overhead", "--task", task, "--steps", str(n), "--repeat", "5" if quick else "15")[0]
            for task, n in overhead_steps.items()
        ],
        "workers": lambda: _script("workers", *(["--quick"] if quick else [])),
        "startup": lambda: _script("startup", *(["--no-smoke"] if quick else []))[0],
        "cli": lambda: _script("cli_speed", "--repeat", "1" if quick else "5")[0],
        "smoke": lambda: _script("smoke_suite", *(["--only", "pe_extrapolation"] if quick else []))[0],
    }
    out: dict = {"failed": {}}
    for section in sections:
        try:
            out[section] = jobs[section]()
        except RuntimeError as exc:
            out["failed"][section] = str(exc)
            print(exc, file=sys.stderr)
    return out


def rows(figures: dict) -> list[Row]:
    """The table, from :func:`collect`'s figures."""
    out: list[Row] = []
    for o in figures.get("overhead", []):
        out.append(
            Row(
                f"overhead, ablate / bare loop: {o['task']} ({o['size']}), {o['steps']} steps, 1 thread",
                f"{o['ratio']:.3f}, median of {o['pairs']} pairs (min {o['ratio_range'][0]:.3f}, max "
                f"{o['ratio_range'][1]:.3f}; {o['per_step_ms']:+.2f} ms per step; cpu time {o['ratio_cpu']:.3f}, "
                f"{o['per_step_cpu_ms']:+.2f} ms)",
                f"<= {o['goal']}",
                o["ratio"] <= o["goal"],
            )
        )
    if figures.get("overhead"):
        d = figures["overhead"][0]["display"]
        out.append(
            Row(
                "progress display (a progress.json write every 2 s, a poll of 16 run folders every 2 s)",
                f"{100 * d['fraction']:.3f} % of the time ({1e6 * d['write_s']:.0f} us per write, "
                f"{1e6 * d['poll_s']:.0f} us per poll)",
                "< 1 %",
                d["fraction"] < 0.01,
            )
        )
    for w in figures.get("workers", []):
        size = "smoke-sized runs" if w["grid"] == "small" else f"runs of {w['steps']} steps"
        if w["grid"] == "long" and w["steps"] >= 2500:
            size += " (~30 s each on an idle core)"
        out.append(
            Row(
                f"workers, whole command, default vs --workers 1: 8 {size}",
                f"{w['whole_speedup']:.2f}x ({w['whole_1']:.1f} s vs {w['whole_default']:.1f} s; default: "
                f"{w['default_workers']})",
                f">= {w['goal_whole']}x",
                w["whole_speedup"] >= w["goal_whole"],
            )
        )
        out.append(
            Row(
                f"workers, grid phase, {w['phase_workers']} workers vs 1: 8 {size}",
                f"{w['phase_speedup']:.2f}x ({w['phase_1']:.1f} s vs {w['phase_n']:.1f} s)",
                f">= {w['goal_phase']}x",
                w["phase_speedup"] >= w["goal_phase"],
            )
        )
    if s := figures.get("startup"):
        phases = "; ".join(f"{name} {sec:.2f} s" for name, sec in s["phases"])
        out.append(
            Row(
                "start-up, `ablate run` to the first training step (8-run smoke grid)",
                f"{s['first_step_default']:.2f} s default workers, {s['first_step_pool']:.2f} s --workers 2 "
                f"(phases: {phases})",
                f"<= {s['goal']:g} s",
                s["first_step_default"] <= s["goal"],
            )
        )
        if m := s.get("smoke"):
            out.append(
                Row(
                    f"`ablate run pe_extrapolation --profile smoke` ({m['n_runs']} runs), whole command",
                    f"{m['total']:.1f} s ({m['before_runs']:.1f} s before the first run, {m['runs']:.1f} s of runs, "
                    f"{m['after_runs']:.1f} s after them)",
                    "-",
                    None,
                )
            )
    if c := figures.get("cli"):
        for cmd, t in c["commands"].items():
            out.append(
                Row(
                    f"`ablate {cmd}` (median)",
                    f"{t['median']:.2f} s (heavy modules imported: {t['heavy']}; python -c pass {c['python']:.2f} s)",
                    f"< {t['goal']:g} s",
                    t["median"] < t["goal"],
                )
            )
    if m := figures.get("smoke"):
        out.append(
            Row(
                f"smoke profile of every ablation ({len(m['ablations'])} ablations, {m['runs']} runs), one "
                "after another",
                f"{m['total']:.1f} s; failed: {', '.join(m['failed']) or 'none'}",
                "all pass",
                not m["failed"],
            )
        )
    for section, message in figures.get("failed", {}).items():
        out.append(Row(f"{section} benchmark", f"failed: {message.splitlines()[0]}", "runs", False))
    return out


def table(found: list[Row]) -> str:
    """The rows as a markdown table."""
    mark = {True: "met", False: "MISSED", None: ""}
    lines = ["| figure | measured | goal | |", "| --- | --- | --- | --- |"]
    lines += [f"| {r.figure} | {r.value} | {r.goal} | {mark[r.met]} |" for r in found]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every benchmark at a small size: a sanity run")
    parser.add_argument("--only", help=f"comma-separated sections among {', '.join(SECTIONS)}")
    parser.add_argument("--json", action="store_true", help="the figures and the table as one JSON object")
    args = parser.parse_args(argv)
    sections = tuple(args.only.split(",")) if args.only else SECTIONS
    if unknown := [s for s in sections if s not in SECTIONS]:
        parser.error(f"unknown section(s) {', '.join(unknown)}; choose among {', '.join(SECTIONS)}")
    load_start, t0 = os.getloadavg(), time.perf_counter()
    figures = collect(sections, args.quick)
    load_end = os.getloadavg()
    found = rows(figures)
    machine = {
        "cores": os.cpu_count(),
        "load_start": list(load_start),
        "load_end": list(load_end),
        "seconds": time.perf_counter() - t0,
        "quick": args.quick,
    }
    if args.json:
        print(json.dumps({"machine": machine, "figures": figures, "table": [asdict(r) for r in found]}))
        return
    print(table(found))
    print(
        f"\n{machine['cores']} cores; load average (1, 5, 15 min) {', '.join(f'{x:.2f}' for x in load_start)} at the "
        f"start, {', '.join(f'{x:.2f}' for x in load_end)} at the end; {machine['seconds']:.0f} s"
        f"{' (--quick: small sizes, not the goals figures)' if args.quick else ''}"
    )


if __name__ == "__main__":
    main()
