"""The smoke profile of every ablation: `ablate run NAME --profile smoke` from start to exit, one
after another on an empty store, with the default workers (what CI and a newcomer run first).

Usage: python benchmarks/smoke_suite.py [--only NAME,NAME] [--json]
Prints each ablation's runs and seconds, and the total.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ABLATE = str(Path(sys.executable).parent / "ablate")
ABLATIONS = Path(__file__).resolve().parents[1] / "ablations"


def measure(only: list[str] | None = None) -> dict:
    """Seconds and exit code of each ablation's smoke command, and the total."""
    names = only or sorted(p.stem for p in ABLATIONS.glob("*.yaml"))
    out: dict = {"ablations": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            results = Path(tmp) / name
            t0 = time.perf_counter()
            proc = subprocess.run(
                [ABLATE, "run", name, "--profile", "smoke", "--wandb", "off", "--results-dir", str(results)],
                capture_output=True,
                text=True,
            )
            runs = len(list(results.rglob("record.json")))
            out["ablations"][name] = {"seconds": time.perf_counter() - t0, "exit": proc.returncode, "runs": runs}
    out["total"] = sum(a["seconds"] for a in out["ablations"].values())
    out["runs"] = sum(a["runs"] for a in out["ablations"].values())
    out["failed"] = [n for n, a in out["ablations"].items() if a["exit"] != 0]
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated ablation names (default: every one)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)
    r = measure(args.only.split(",") if args.only else None)
    if args.json:
        print(json.dumps(r))
        return
    for name, a in r["ablations"].items():
        print(f"{name:24s} {a['runs']:4d} runs {a['seconds']:7.1f} s  exit {a['exit']}")
    print(f"{'total':24s} {r['runs']:4d} runs {r['total']:7.1f} s; failed: {', '.join(r['failed']) or 'none'}")


if __name__ == "__main__":
    main()
