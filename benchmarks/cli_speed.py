"""Wall time of `ablate --help` and `ablate list` (target < 1 s each): heavy imports (torch,
Lightning, W&B) must stay inside the commands that need them. Also `ablate run pe_extrapolation
--profile cpu` with nothing left to run and `ablate status` of that grid (target < 3 s each), on a
store restored from the grid's report data file.

Usage: python benchmarks/cli_speed.py [--repeat 5] [--json]
Prints the best and the median of ``--repeat`` fresh processes per command, and whether torch
or Lightning were imported by it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ABLATE = Path(sys.executable).parent / "ablate"
GOAL_S = 1.0
PLANNED_GOAL_S = 3.0
DATA = Path(__file__).resolve().parents[1] / "reports" / "data" / "pe_extrapolation.tar.gz"
PROBE = (
    "import sys, runpy; sys.argv = ['ablate', *sys.argv[1:]]\n"
    "try:\n    runpy.run_module('harness.cli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
    "print('HEAVY', sorted(m for m in ('torch', 'lightning', 'wandb') if m in sys.modules), file=sys.stderr)"
)


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t0


def heavy_imports(args: list[str]) -> str:
    err = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True).stderr
    return next((line[6:] for line in err.splitlines() if line.startswith("HEAVY ")), "?")


def measure(repeat: int = 5) -> dict:
    """Best and median seconds of ``ablate --help`` and ``ablate list``, their heavy imports, and a
    bare interpreter's start for reference."""
    out: dict = {"commands": {}}
    with tempfile.TemporaryDirectory() as store:
        subprocess.run([str(ABLATE), "restore", str(DATA), "--results-dir", store], check=True, capture_output=True)
        grid = ["pe_extrapolation", "--profile", "cpu", "--results-dir", store]
        for cmd, goal in (
            (["--help"], GOAL_S),
            (["list"], GOAL_S),
            (["run", *grid], PLANNED_GOAL_S),
            (["status", *grid], PLANNED_GOAL_S),
        ):
            times = [timed([str(ABLATE), *cmd]) for _ in range(repeat)]
            name = " ".join(cmd[:4]) + (" (nothing left to run)" if cmd[0] == "run" else "")
            out["commands"][name] = {
                "best": min(times),
                "median": statistics.median(times),
                "heavy": heavy_imports(cmd),
                "goal": goal,
            }
    out["python"] = min(timed([sys.executable, "-c", "pass"]) for _ in range(repeat))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)
    r = measure(args.repeat)
    if args.json:
        print(json.dumps(r))
        return
    print(f"{'command':60s} {'best':>7s} {'median':>7s}  target  heavy modules imported")
    for cmd, c in r["commands"].items():
        ok = f"< {c['goal']:g} s " + ("ok" if c["median"] < c["goal"] else "MISSED")
        print(f"ablate {cmd:53s} {c['best']:6.2f}s {c['median']:6.2f}s  {ok:12s} {c['heavy']}")
    print(f"(a bare `python -c pass` takes {r['python']:.2f}s here)")


if __name__ == "__main__":
    main()
