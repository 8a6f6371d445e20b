"""Workers that pay: `ablate run` with its default number of workers against `--workers 1`, and two
workers against one, on two grids of 8 runs (copy, 4 positional encodings x 2 seeds, 1 thread):

- `small`: smoke-sized runs (d_model 32, 1 layer, 40 steps; well under a second each): the
  default must pick one worker here (a pool would not pay for its start), so the whole command is
  never slower than with `--workers 1` (target speed-up >= 1.0);
- `long`: runs of about 30 s each on an idle core (the cpu profile's copy size, 2,500 steps):
  the default must pick a worker per core (target whole-command speed-up >= 1.6 on 2 cores).

Figures, each mode in a fresh process on an empty store:

- whole command: `ablate run` from start to exit, as a user sees it (start-up, planning, the
  runs, the comparison); and its first line, which says how many workers and why;
- grid phase: the runs alone. `small`: :func:`harness.execution.local.run_grid` timed in a
  process that has already imported torch and Lightning (workers=1) or started and preloaded the
  pool's forkserver (workers=2). `long`: from the first run's start to the last run's end, read
  from the records of the two whole commands (`--workers 1` and the default), so no grid runs
  twice more.

Usage: python benchmarks/workers.py [--grid small|long|both] [--quick] [--json]
(`--quick`: the long grid at 250 steps, about 3 s a run.)
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import yaml

SMALL = {
    "name": "bench_workers",
    "question": "How fast does a grid of 8 smoke runs go?",
    "axes": {"model.position": ["sinusoidal", "learned", "rope", "alibi"]},
    "baseline": {"model.position": "sinusoidal"},
    "base": {
        "model.d_model": 32,
        "model.n_heads": 4,
        "model.n_layers": 1,
        "train.steps": 40,
        "train.val_every": 20,
        "train.warmup_steps": 10,
        "train.seq_len": 8,
        "train.batch_size": 32,
        "eval.length_multipliers": [1, 2, 4],
        "eval.n_examples": 32,
        "eval.val_examples": 32,
    },
    "tasks": {
        "copy": {"params": {"n_symbols": 16}, "primary": {"metric": "acc@x4", "higher_is_better": True, "sesoi": 0.05}}
    },
    "profiles": {"smoke": {"seeds": [0, 1], "confirmatory": False}},
    "default_profile": "smoke",
}
LONG_STEPS = 2500  # about 30 s per run at the cpu profile's copy size on an idle core


def long_grid(steps: int = LONG_STEPS) -> dict:
    """8 runs of about 30 s each (``steps`` steps of the cpu profile's copy size)."""
    decl = copy.deepcopy(SMALL)
    decl["name"] = "bench_workers_long"
    decl["question"] = "How fast does a grid of 8 runs of about 30 s go?"
    decl["base"].update(
        {
            "model.d_model": 64,
            "model.n_layers": 3,
            "train.steps": steps,
            "train.val_every": max(steps // 10, 1),
            "train.warmup_steps": 100,
            "train.seq_len": 16,
            "eval.n_examples": 256,
            "eval.val_examples": 256,
        }
    )
    return decl


GRID_PHASE = """
import json, sys, time
from pathlib import Path
from harness.experiment.ablation import load
from harness.execution.local import pool_context, run_grid
from harness.experiment.grid import plan
path, results, workers = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
abl = load(path)
specs = plan(abl, None)[1]
if workers == 1:
    import harness.training.loop  # noqa: F401  (imported for its start-up cost)
else:
    p = pool_context().Process(target=time.sleep, args=(0,)); p.start(); p.join()  # forkserver up, preloaded
t0 = time.perf_counter()
recs = run_grid(specs, results, abl, workers=workers, threads=1)
print(json.dumps({"seconds": time.perf_counter() - t0, "ok": sum(r.status == "ok" for r in recs)}))
"""


def whole_command(path: Path, results: Path, workers: int | None) -> tuple[float, str]:
    """Seconds of ``ablate run`` (``workers`` None: its default) and the first line it prints."""
    args = [
        str(Path(sys.executable).parent / "ablate"),
        "run",
        str(path),
        "--wandb",
        "off",
        "--results-dir",
        str(results),
    ]
    if workers is not None:
        args += ["--workers", str(workers)]
    t0 = time.perf_counter()
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - t0, out.strip().splitlines()[0]


def grid_phase(path: Path, results: Path, workers: int) -> float:
    out = subprocess.run(
        [sys.executable, "-c", GRID_PHASE, str(path), str(results), str(workers)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    got = json.loads(out.strip().splitlines()[-1])
    assert got["ok"] == 8, got
    return got["seconds"]


def records_span(results: Path) -> float:
    """Seconds from the first run's start to the last run's end, from the records."""
    starts, ends = [], []
    for path in results.rglob("record.json"):
        rec = json.loads(path.read_text())
        starts.append(datetime.fromisoformat(rec["started_at"]))
        ends.append(datetime.fromisoformat(rec["finished_at"]))
    assert len(starts) == 8, len(starts)
    return (max(ends) - min(starts)).total_seconds()


def _workers_of(first_line: str) -> str:
    """``1 worker(s) x 1 thread(s): <why>`` out of the first line of ``ablate run``."""
    start = first_line.find("to run (")
    return first_line[start + len("to run (") :].rsplit(", W&B", 1)[0] if start >= 0 else first_line


def measure(grid: str, quick: bool = False) -> dict:
    """Whole command (default workers vs 1) and grid phase (2 workers vs 1) on ``grid``."""
    decl = SMALL if grid == "small" else long_grid(250 if quick else LONG_STEPS)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{decl['name']}.yaml"
        path.write_text(yaml.safe_dump(decl))
        one, one_line = whole_command(path, Path(tmp) / "whole1", 1)
        default, default_line = whole_command(path, Path(tmp) / "whole_default", None)
        if grid == "small":
            phase1 = grid_phase(path, Path(tmp) / "phase1", 1)
            phase2 = grid_phase(path, Path(tmp) / "phase2", 2)
        else:  # the runs of the whole commands
            phase1, phase2 = records_span(Path(tmp) / "whole1"), records_span(Path(tmp) / "whole_default")
    n = 2 if grid == "small" else int(_workers_of(default_line).split(" ", 1)[0])
    return {
        "grid": grid,
        "runs": 8,
        "steps": decl["base"]["train.steps"],
        "whole_1": one,
        "whole_default": default,
        "default_workers": _workers_of(default_line),
        "whole_speedup": one / default,
        "phase_1": phase1,
        "phase_n": phase2,
        "phase_workers": n,
        "phase_speedup": phase1 / phase2,
        "goal_whole": 1.0 if grid == "small" else 1.6,
        "goal_phase": 1.8 if grid == "small" else 1.6,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", choices=["small", "long", "both"], default="both")
    parser.add_argument("--quick", action="store_true", help="the long grid at 250 steps (about 3 s a run)")
    parser.add_argument("--json", action="store_true", help="one JSON object per grid on stdout")
    args = parser.parse_args(argv)
    for grid in ("small", "long") if args.grid == "both" else (args.grid,):
        r = measure(grid, args.quick)
        if args.json:
            print(json.dumps(r))
            continue
        print(f"{grid} grid, 8 runs of {r['steps']} steps:")
        print(f"  whole command: --workers 1 {r['whole_1']:6.2f} s, default {r['whole_default']:6.2f} s")
        print(f"    ({r['default_workers']})")
        print(f"    speed-up {r['whole_speedup']:.2f}x (target >= {r['goal_whole']}x)")
        print(
            f"  grid phase: 1 worker {r['phase_1']:6.2f} s, {r['phase_workers']} workers {r['phase_n']:6.2f} s: "
            f"{r['phase_speedup']:.2f}x (target >= {r['goal_phase']}x)"
        )


if __name__ == "__main__":
    main()
