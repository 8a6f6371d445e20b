"""Wall time of `ablate --help` and `ablate list` (target < 1 s each): heavy imports (torch,
Lightning, W&B) must stay inside the commands that need them.

Usage: python benchmarks/cli_speed.py [--repeat 5]
Prints the best and the median of ``--repeat`` fresh processes per command, and whether torch
or Lightning were imported by it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ABLATE = Path(sys.executable).parent / "ablate"
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'command':16s} {'best':>7s} {'median':>7s}  target < 1 s  heavy modules imported")
    for cmd in (["--help"], ["list"]):
        times = [timed([str(ABLATE), *cmd]) for _ in range(args.repeat)]
        best, med = min(times), statistics.median(times)
        print(
            f"ablate {' '.join(cmd):9s} {best:6.2f}s {med:6.2f}s  {'ok' if med < 1 else 'MISSED':12s} "
            f"{heavy_imports(cmd)}"
        )
    base = min(timed([sys.executable, "-c", "pass"]) for _ in range(args.repeat))
    print(f"(a bare `python -c pass` takes {base:.2f}s here)")


if __name__ == "__main__":
    main()
