"""Start-up: the time from `ablate run` to the first training step, broken down, and the whole smoke
command.

- first step: `ablate run` of an 8-run smoke-sized grid (benchmarks/workers.py's `small`), timed
  from its start to the first `progress.json` in the store, which a run writes right after its
  first step (target <= 3 s on idle cores); with the default workers (one, in-process, for this
  grid) and with `--workers 2` (a process pool).
- breakdown, in a fresh process doing what `ablate run` does, one phase after another: the
  interpreter (`python -c pass`), the command line (`ablate --help`), importing `ablate run`'s
  module, planning (the ablation, its grid and the pre-run checks, which import torch), the
  store's state, importing Lightning (an in-process run) or starting the pool's forkserver (which
  imports torch and Lightning afresh), and the first run up to its first batch (task, model,
  loggers, Trainer, the probes at initialisation, the data) and through its first step.
- whole smoke command: `ablate run pe_extrapolation --profile smoke` (20 runs) from start to exit,
  split into up to the first step, the runs (first start to last end, from the records) and what
  follows the last run (the comparison and its statistics imports).

Usage: python benchmarks/startup.py [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workers import SMALL  # noqa: E402

ABLATE = str(Path(sys.executable).parent / "ablate")
GOAL_S = 3.0

PHASES = """
import json, sys, time
from pathlib import Path
path, results = sys.argv[1], Path(sys.argv[2])
t = [("start", time.perf_counter())]
from harness.cli import run as run_cmd  # noqa: F401  what `ablate run` imports
from harness.cli import output
from harness.experiment import ablation as ablation_mod
from harness.experiment import grid
from harness.execution.launch import select
from harness.run_options import RunOptions
t.append(("import ablate run", time.perf_counter()))
abl = ablation_mod.load(path)
profile, specs = grid.plan(abl, None, [], output.data_dir())
t.append(("planning (imports torch)", time.perf_counter()))
chosen = select(RunOptions(), specs, results, ())
t.append(("store state", time.perf_counter()))
from harness.execution.local import pool_context
p = pool_context().Process(target=time.sleep, args=(0,)); p.start(); p.join()
t.append(("pool: forkserver start (torch, Lightning)", time.perf_counter()))
import lightning.pytorch as L
from harness.training.loop import TrainOptions, train
t.append(("in-process: import Lightning", time.perf_counter()))
from harness.tasks import build_task
class First(L.Callback):
    def on_train_batch_start(self, trainer, module, batch, i):
        if i == 0: t.append(("first run: task, model, Trainer, probes, first batch", time.perf_counter()))
    def on_train_batch_end(self, trainer, module, out, batch, i):
        if i == 0: t.append(("first step", time.perf_counter()))
spec = chosen.todo[0]
task = build_task(spec.task, spec.task_params)
train(spec.config, task, spec.seed, results / "run", TrainOptions(callbacks=(First(),)))
print(json.dumps([(name, b - a) for (_, a), (name, b) in zip(t, t[1:])]))
"""


def _timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t0


def to_first_step(
    path: Path, results: Path, workers: int | None = None, timeout: float = 600, profile: str | None = None
) -> tuple[float, float]:
    """Seconds from starting ``ablate run`` to its first ``progress.json`` (the first step done),
    and to its exit. ``profile``: None for the ablation's default profile."""
    args = [ABLATE, "run", str(path), "--wandb", "off", "--results-dir", str(results)]
    if profile is not None:
        args += ["--profile", profile]
    if workers is not None:
        args += ["--workers", str(workers)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = None
    while proc.poll() is None and time.perf_counter() - t0 < timeout:
        if first is None and any(results.glob("*/*/*/progress.json")):
            first = time.perf_counter() - t0
        time.sleep(0.002)
    proc.wait(timeout=timeout)
    end = time.perf_counter() - t0
    assert proc.returncode == 0, proc.returncode
    return (first if first is not None else float("nan")), end


def phases(path: Path, results: Path) -> list[tuple[str, float]]:
    """The breakdown: ``(phase, seconds)`` in order (see the module docstring)."""
    out = subprocess.run(
        [sys.executable, "-c", PHASES, str(path), str(results)], check=True, capture_output=True, text=True
    ).stdout
    found = [tuple(x) for x in json.loads(out.strip().splitlines()[-1])]
    interpreter = min(_timed([sys.executable, "-c", "pass"]) for _ in range(3))
    cli = min(_timed([ABLATE, "--help"]) for _ in range(3))
    return [("interpreter (python -c pass)", interpreter), ("command line (ablate --help)", cli), *found]


def smoke_command(results: Path) -> dict[str, float]:
    """``ablate run pe_extrapolation --profile smoke``: total, to the first step, before the first
    run starts, the runs (first start to last end, from the records) and after the last one."""
    launched = datetime.now(timezone.utc)
    first, total = to_first_step(Path("pe_extrapolation"), results, timeout=1800, profile="smoke")
    starts, ends = [], []
    for rec_path in results.rglob("record.json"):
        rec = json.loads(rec_path.read_text())
        starts.append(datetime.fromisoformat(rec["started_at"]))
        ends.append(datetime.fromisoformat(rec["finished_at"]))
    before = (min(starts) - launched).total_seconds()
    runs = (max(ends) - min(starts)).total_seconds()
    return {
        "total": total,
        "first_step": first,
        "before_runs": before,
        "runs": runs,
        "after_runs": total - before - runs,
        "n_runs": len(starts),
    }


def measure(smoke: bool = True) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench_startup.yaml"
        decl = {**SMALL, "name": "bench_startup", "base": {**SMALL["base"], "train.steps": 300}}
        path.write_text(yaml.safe_dump(decl))
        first_default, _ = to_first_step(path, Path(tmp) / "default")
        first_pool, _ = to_first_step(path, Path(tmp) / "pool", workers=2)
        breakdown = phases(path, Path(tmp) / "phases")
        whole = smoke_command(Path(tmp) / "smoke") if smoke else None
    return {
        "first_step_default": first_default,
        "first_step_pool": first_pool,
        "phases": breakdown,
        "smoke": whole,
        "goal": GOAL_S,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-smoke", action="store_true", help="skip the whole smoke command")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)
    r = measure(smoke=not args.no_smoke)
    if args.json:
        print(json.dumps(r))
        return
    print(f"to the first step: {r['first_step_default']:.2f} s (default workers), {r['first_step_pool']:.2f} s ")
    print(f"  (--workers 2)   target <= {GOAL_S:g} s")
    print("breakdown (one phase after another; the pool and in-process lines are alternatives):")
    for name, seconds in r["phases"]:
        print(f"  {seconds:6.2f} s  {name}")
    if r["smoke"]:
        s = r["smoke"]
        print(
            f"whole smoke command ({s['n_runs']} runs): {s['total']:.2f} s = {s['before_runs']:.2f} s before the "
            f"first run + {s['runs']:.2f} s of runs + {s['after_runs']:.2f} s after them (comparison); "
            f"first step at {s['first_step']:.2f} s"
        )


if __name__ == "__main__":
    main()
