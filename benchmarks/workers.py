"""`--workers 2` against `--workers 1` on a grid of 8 smoke-sized runs (target >= 1.8x on 2 cores).

The grid: copy at pe_extrapolation's smoke sizes, 4 positional encodings x 2 seeds. Each mode
runs in a fresh process on an empty store. Two figures per mode:

- whole command: `ablate run` from start to exit, as a user sees it (includes importing torch
  and Lightning once, in the main process or in the pool's forkserver);
- grid phase: :func:`harness.execution.local.run_grid` alone, with those imports already done
  (workers=1: imported in the process; workers=2: the forkserver started and preloaded).

Usage: python benchmarks/workers.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

DECL = {
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
print(json.dumps({"seconds": time.perf_counter() - t0, "ok": sum(r["status"] == "ok" for r in recs)}))
"""


def whole_command(path: Path, results: Path, workers: int) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [
            str(Path(sys.executable).parent / "ablate"),
            "run",
            str(path),
            "--workers",
            str(workers),
            "--wandb",
            "off",
            "--results-dir",
            str(results),
        ],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - t0


def grid_phase(path: Path, results: Path, workers: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", GRID_PHASE, str(path), str(results), str(workers)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench_workers.yaml"
        path.write_text(yaml.safe_dump(DECL))
        figures = {}
        for workers in (1, 2):
            whole = whole_command(path, Path(tmp) / f"whole{workers}", workers)
            phase = grid_phase(path, Path(tmp) / f"phase{workers}", workers)
            assert phase["ok"] == 8, phase
            figures[workers] = (whole, phase["seconds"])
            print(f"--workers {workers}: whole command {whole:6.2f} s, grid phase {phase['seconds']:6.2f} s (8 runs)")
        w1, w2 = figures[1], figures[2]
        print(f"speed-up, whole command: {w1[0] / w2[0]:.2f}x; grid phase: {w1[1] / w2[1]:.2f}x  (target >= 1.8x)")


if __name__ == "__main__":
    main()
